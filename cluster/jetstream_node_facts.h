// The cluster backend of the node facts (collector/declared/node_facts.h):
// every node's LLDP neighbors and GPU-NIC pairs in one replicated JetStream
// key-value bucket that every collector writes and watches, so that each
// collector holds the facts of every node, whichever collector the node's
// agent streams to, and draws the same topology.
//
// Bucket "fabricdiag_node_facts" (created by the first collector, with
// --nats_replicas replicas, file storage, one version per key):
//   node.<node>   the node's merged v1::NodeFacts, binary protobuf
//                 (gzip-compressed when large: cluster/kv_payload.h); "." in
//                 a node name is written "=2E" (a key is a NATS subject,
//                 where "." separates tokens)
//
// Put never blocks the ingest thread: it merges the facts with what this
// collector holds (the bucket as watched) and, when they differ, queues them
// for this store's writer thread. The queue holds one entry per node (a
// newer Put of a queued node replaces it: counted in queue_dropped) and at
// most Options::queue_limit nodes (beyond: dropped and counted; that node's
// next inventory writes it). Facts equal to the held ones write nothing, so
// agents reconnecting after a collector restart write nothing either. A
// write that fails for want of an answer (NATS away) is queued again, unless
// a newer one of the node came meanwhile, and retried once a server answers.
//
// Writes are plain puts, the latest wins: a node's facts come from that node
// alone, and two collectors write one node only while its agent moves from
// one to the other, when the newer inventory is the truth.
//
// A watcher thread applies every value of the bucket to the local copy
// (collector/declared/node_facts_cache.h): what this collector wrote comes
// back the same way, so Snapshot() shows a Put once it is in the bucket, and
// Generation() moves at every change written by any collector. The watcher
// is recreated when it fails or falls behind the bucket (a NATS server
// died); its replay of every key changes only what changed meanwhile. A
// value that is not a node's facts (undecodable, another node's, an invalid
// name) is skipped and counted, never applied.
//
// Delete (`fabricdiag nodes forget`) drops the node from the local copy at
// once and queues a delete of its key like a Put (a Put of the node after
// it is queued behind the delete and starts from nothing). Every watcher
// applies a deleted or purged key by dropping the node's facts, so a key
// deleted by hand (`nats kv del`) forgets the node's facts on every
// collector just as `nodes forget` does; its agent writes them again at its
// next stream.
//
//   ASSIGN_OR_RETURN(auto facts, JetStreamNodeFacts::Open(nats, {}));
//   IngestService ingest(..., {*facts, switches});
//   std::shared_ptr<const NodeFactsMap> all = facts->Snapshot();
//
// Thread-safe.
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "cluster/nats_connection.h"
#include "collector/declared/node_facts.h"
#include "collector/declared/node_facts_cache.h"

namespace fabricdiag::cluster {

inline constexpr char kNodeFactsBucket[] = "fabricdiag_node_facts";

// "node.<node>" with "." written "=2E", and back; nullopt for a key that is
// not a node's (or names no valid node).
std::string NodeFactsKey(absl::string_view node);
std::optional<std::string> NodeOfFactsKey(absl::string_view key);

class JetStreamNodeFacts final : public collector::NodeFactsStore {
 public:
  struct Options {
    int replicas = 3;
    // Nodes whose facts may wait for the writer at once: every node of a
    // large cluster reconnecting to one collector whose bucket is away.
    size_t queue_limit = 65536;
    std::string bucket = kNodeFactsBucket;
  };

  // Binds the bucket, creating it when missing, and waits until the watcher
  // replayed it (so that the first Puts compare against what the cluster
  // holds and write nothing that is there). `nats` must outlive the result.
  // Unavailable when the cluster does not answer by the connection's
  // startup deadline.
  static absl::StatusOr<std::unique_ptr<JetStreamNodeFacts>> Open(
      NatsConnection* nats, const Options& options);

  JetStreamNodeFacts(const JetStreamNodeFacts&) = delete;
  JetStreamNodeFacts& operator=(const JetStreamNodeFacts&) = delete;
  // Stop().
  ~JetStreamNodeFacts() override;

  // InvalidArgument for a bad node name (counted in writes_failed);
  // otherwise OK, queued or not (it never waits for NATS).
  absl::Status Put(const v1::NodeFacts& facts) override;
  // InvalidArgument for a bad node name (counted in writes_failed);
  // otherwise OK, queued or not.
  absl::Status Delete(absl::string_view node) override;
  std::shared_ptr<const collector::NodeFactsMap> Snapshot() const override {
    return cache_.Snapshot();
  }
  uint64_t Generation() const override { return cache_.Generation(); }

  // Stops the writer and the watcher; what is still queued is not written.
  // Idempotent. Call it before the connection closes.
  void Stop();

  // The fabricdiag_node_facts_* families, as for the embedded store.
  collector::NodeFactsStats stats() const;
  // The cluster's own families (docs/metrics.md).
  void AppendMetrics(std::string* out) const;

  // Values written to the bucket since Open.
  uint64_t writes() const { return writes_.load(); }
  // Values of the bucket that were not a node's facts, skipped.
  uint64_t skipped() const { return skipped_.load(); }
  uint64_t watcher_restarts() const { return watcher_restarts_.load(); }
  std::string Describe() const;

 private:
  JetStreamNodeFacts(NatsConnection* nats, Options options, kvStore* kv);

  // A write waiting for the writer: the delete of the node's key (remove),
  // then its facts (put). A Put after a queued delete keeps the delete
  // first, so that every watcher drops what it held before it applies the
  // new facts, which then merge with nothing.
  struct Pending {
    v1::NodeFacts facts;  // facts.node() is always set
    bool remove = false;
    bool put = true;
  };

  void WriteLoop();
  // The delete marker, then the value, as `pending` says.
  absl::Status Write(const Pending& pending);
  // One value (null: a delete marker) to the node's key, waiting at most
  // the request timeout.
  absl::Status Publish(const std::string& node, const std::string* value);
  // Queues `pending` again after a failed write, unless a newer write of
  // the node is queued or the queue is full.
  void Requeue(const Pending& pending);
  // Queues `pending` behind the others, unless the queue is full (then
  // dropped and counted).
  void Enqueue(Pending pending) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WatchLoop();
  // Applies one entry of the watcher to the cache (or skips it).
  void ApplyEntry(kvEntry* entry);
  bool WorkOrStop() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !order_.empty();
  }
  // Sleeps `d` unless Stop() is called meanwhile; false when stopping.
  bool Pause(absl::Duration d);

  NatsConnection* const nats_;
  const Options options_;
  kvStore* const kv_;
  collector::NodeFactsCache cache_;

  mutable absl::Mutex mu_;
  // Queued writes: node -> merged facts (or its delete), and the order they
  // came in.
  absl::flat_hash_map<std::string, Pending> queued_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);
  // What the writer is writing now (taken off the queue).
  std::optional<Pending> in_flight_ ABSL_GUARDED_BY(mu_);
  // Nodes deleted here whose delete the watcher has not brought back yet:
  // a value of theirs it brings meanwhile was written before the delete
  // (the bucket keeps the order), so it must not fill the cache again.
  absl::flat_hash_set<std::string> awaiting_delete_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // Set once the first watcher replayed the bucket.
  absl::Notification replayed_;
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> write_errors_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> skipped_{0};
  std::atomic<uint64_t> watcher_restarts_{0};
  std::thread writer_;
  std::thread watcher_;
};

}  // namespace fabricdiag::cluster
