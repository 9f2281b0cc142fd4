// The cluster backend of the declared state
// (collector/declared/declared_state.h): layouts and the topology in one
// replicated JetStream key-value bucket that every collector of the cluster
// reads, writes and watches.
//
// Bucket "fabricdiag_declared" (created by the first collector, with
// --nats_replicas replicas, file storage, 8 versions of history per key):
//   layout.<job>   a job's layout; "." in a job name is written "=2E" (a key
//                  is a NATS subject, where "." separates tokens)
//   topology       the fabric topology
// Each value is the checksummed envelope of the state files
// (collector/state/object_store.h) around the binary protobuf, so `nats kv get`
// plus `tail -c +21 | protoc --decode` reads it, and damage is caught.
//
// Writes are compare-and-set on the key's revision (kvStore_Create for a job
// the writer has not seen, kvStore_Update against the revision it serves):
// a concurrent write through another collector makes the later one fail with
// Aborted, never a silent merge. A write is retried while the cluster cannot
// answer (right after a server dies, the bucket's stream elects a new leader
// and the first request times out) until the earlier of Options::deadline
// and its caller's deadline (collector/declared/write_deadline.h); no request
// waits past it. A retried write whose first attempt landed after all is
// recognized by its bytes (the envelope holds the write's own timestamp), so
// it is not reported as a conflict. A write that gives up says whether one
// of its requests went unanswered (it may still land: the servers may have
// received it) or none was received (nothing was written).
//
// Watch() runs one thread over a kvStore watcher of the whole bucket. The
// watcher first replays every key's latest value, which the registry skips
// by revision, then delivers each change. When the watcher fails (the
// connection is lost for good, the consumer is gone), it is recreated: the
// replay then carries whatever changed meanwhile, deletes included.
//
//   ASSIGN_OR_RETURN(auto declared,
//                    JetStreamDeclaredState::Open(nats.get(), {.replicas=3}));
//   LayoutRegistry registry(declared.get(), &clock);
//
// Thread-safe.
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "cluster/nats_connection.h"
#include "collector/declared/declared_state.h"
#include "collector/declared/write_deadline.h"

namespace fabricdiag::cluster {

inline constexpr char kDeclaredBucket[] = "fabricdiag_declared";

// "layout.<job>" with "." written "=2E", and back; nullopt for a key that is
// not a layout's.
std::string LayoutKey(absl::string_view job);
std::optional<std::string> JobOfKey(absl::string_view key);

class JetStreamDeclaredState final : public collector::DeclaredState {
 public:
  struct Options {
    int replicas = 3;
    // How long a write or a read keeps retrying while the JetStream cluster
    // does not answer (opening the bucket, and reading it before the
    // connection's startup deadline, retry until that deadline).
    absl::Duration deadline = absl::Seconds(15);
    std::string bucket = kDeclaredBucket;
  };

  // Binds the bucket, creating it when missing, and waits until it can be
  // read. `nats` must outlive the result. Unavailable when the cluster does
  // not answer by the connection's startup deadline.
  static absl::StatusOr<std::unique_ptr<JetStreamDeclaredState>> Open(
      NatsConnection* nats, const Options& options);

  JetStreamDeclaredState(const JetStreamDeclaredState&) = delete;
  JetStreamDeclaredState& operator=(const JetStreamDeclaredState&) = delete;
  ~JetStreamDeclaredState() override;

  std::string Describe() const override;
  absl::StatusOr<uint64_t> WriteLayout(const v1::Layout& layout,
                                       absl::Time applied,
                                       uint64_t expected_revision,
                                       absl::Time deadline) override;
  absl::Status RemoveLayout(absl::string_view job, uint64_t expected_revision,
                            absl::Time deadline) override;
  absl::StatusOr<std::vector<collector::DeclaredLayout>> ReadLayouts() override;
  absl::StatusOr<uint64_t> WriteTopology(const v1::Topology& topology,
                                         absl::Time applied,
                                         uint64_t expected_revision,
                                         absl::Time deadline) override;
  absl::StatusOr<std::optional<collector::DeclaredTopology>> ReadTopology()
      override;
  void Reject(absl::string_view where, absl::string_view why) override;
  void Watch(
      std::function<void(const collector::DeclaredChange&)> on_change) override;
  void StopWatching() override;
  std::vector<std::string> problems() const override;

  // The outcome of the latest write (OK until one fails, then its error
  // until a later write succeeds): /healthz reports it.
  absl::Status last_write_status() const;
  uint64_t write_conflicts() const { return conflicts_.load(); }
  // The bucket's newest revision: 0 when nothing was ever written to it
  // (not even a deletion).
  absl::StatusOr<uint64_t> LastRevision() const;
  uint64_t watcher_restarts() const { return watcher_restarts_.load(); }

 private:
  JetStreamDeclaredState(NatsConnection* nats, Options options, kvStore* kv);

  // One write's requests so far, and when it must end.
  struct Attempts {
    collector::WriteDeadline deadline;
    absl::Time start;
    int sent = 0;
    // A request was sent and not answered: the servers may have received
    // it, so the write may still land.
    bool maybe_written = false;
  };
  Attempts StartAttempts(absl::Time caller_deadline) const;
  // How long the next request may wait: the request timeout, cut to what
  // is left before the deadline (zero or less: none may be sent).
  absl::Duration TimeLeft(const Attempts& attempts) const;
  // The error of a write that stopped retrying (`last`: its last error):
  // DeadlineExceeded when the caller's deadline ended it, else
  // Unavailable; both start with "cluster unavailable: " and say whether
  // anything may have been written.
  absl::Status GaveUp(const Attempts& attempts, const absl::Status& last) const;

  // Compare-and-set of `value` at `key` against `expected_revision`, with
  // retries until `deadline` (the caller's) or the store's own; `what`
  // names the object in errors ("the layout of job train-7").
  absl::StatusOr<uint64_t> Write(const std::string& key,
                                 const std::string& value,
                                 uint64_t expected_revision,
                                 absl::string_view what, absl::Time deadline);
  absl::StatusOr<uint64_t> WriteOnce(const std::string& key,
                                     const std::string& value,
                                     uint64_t expected_revision,
                                     absl::string_view what,
                                     Attempts* attempts);
  absl::Status RemoveOnce(const std::string& key, absl::string_view job,
                          uint64_t expected_revision, Attempts* attempts);
  // Every key's latest entry (deletes included when `with_deletes`), as
  // changes.
  absl::StatusOr<std::vector<collector::DeclaredChange>> ReadAll(
      bool with_deletes);
  absl::Status Record(absl::Status status);
  void AddProblem(std::string problem);
  void WatchLoop(
      const std::function<void(const collector::DeclaredChange&)>& cb);
  // Hands every revision after *delivered up to `last` to `on_change`,
  // fetched by sequence from the bucket's stream; advances *delivered.
  absl::Status CatchUp(
      uint64_t last, uint64_t* delivered,
      const std::function<void(const collector::DeclaredChange&)>& on_change);

  NatsConnection* const nats_;
  const Options options_;
  kvStore* const kv_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> conflicts_{0};
  std::atomic<uint64_t> watcher_restarts_{0};
  std::thread watcher_;
  mutable absl::Mutex mu_;
  std::vector<std::string> problems_ ABSL_GUARDED_BY(mu_);
  absl::Status last_write_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fabricdiag::cluster
