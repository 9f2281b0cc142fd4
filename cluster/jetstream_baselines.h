// The cluster backend of the straggler baselines (collector/
// baselines_store.h): what the analysis leader learned of every NIC's
// throughput, read by the collector that takes the analysis over after a
// failover, so that a NIC of an expert-parallel job that was already slow
// is still judged against its healthy past.
//
// The baselines are too large for one NATS message at scale (about 43
// bytes per NIC: 8.6 MB at 200k GPUs, against the servers' default 1 MB
// payload limit), so bucket "fabricdiag_baselines" (file storage,
// --nats_replicas replicas, one version per key) holds them in chunks:
//   a.0 .. a.<n-1>   slot a: the object file envelope (collector/
//   b.0 .. b.<n-1>   object_store.h: length, CRC32C, written time) around
//                    StragglerBaselines::Serialize(), cut into chunks of
//                    at most Options::chunk_bytes
//   manifest         "fabricdiag-baselines 1 <slot> <chunks> <bytes>": the
//                    slot that holds the last complete write
// When the analysis is sharded (--analysis_shards), each job shard's owner
// writes its shard's baselines under keys of their own, the same three
// kinds prefixed with the shard's name ("jobs.17.manifest", "jobs.17.a.0",
// ...: ForShard), and whoever takes the shard next reads them there.
// A write fills the slot the manifest does not name, then points the
// manifest at it, so a reader never sees a half-written set. Two writers at
// once (a leader about to learn it lost the lease) can mix their chunks in
// one slot: the reader then finds the checksum wrong, reports DataLoss and
// the new leader learns afresh, as it would without this bucket. Once the
// manifest moved, the chunks a larger, earlier write left in the slot past
// the new count are purged (a leader that dies first leaves them, unread,
// until the slot's next write).
//
//   ASSIGN_OR_RETURN(auto store, JetStreamBaselines::Open(nats, {}));
//   runner_options.baselines = store.get();
//
// Thread-safe. The collector writes from one thread (the analysis runner's
// BaselinesWriter) and reads on its analysis thread.
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cluster/nats_connection.h"
#include "collector/state/baselines_store.h"

namespace fabricdiag::cluster {

inline constexpr char kBaselinesBucket[] = "fabricdiag_baselines";

class JetStreamBaselines final : public collector::BaselinesStore {
 public:
  struct Options {
    int replicas = 3;
    // Below the servers' max_payload (1 MB by default) with room to spare.
    size_t chunk_bytes = size_t{512} * 1024;
    // How long a whole write, or a read, retries while the cluster does not
    // answer (a server just died and the stream elects a leader). Writes
    // run on a thread of their own; a read is part of a new leader's first
    // analysis pass, which waits for it.
    absl::Duration write_deadline = absl::Seconds(10);
    absl::Duration read_deadline = absl::Seconds(5);
    std::string bucket = kBaselinesBucket;
  };

  // Binds (or creates) the bucket. `nats` must outlive the result.
  static absl::StatusOr<std::unique_ptr<JetStreamBaselines>> Open(
      NatsConnection* nats, const Options& options);
  ~JetStreamBaselines() override;
  JetStreamBaselines(const JetStreamBaselines&) = delete;
  JetStreamBaselines& operator=(const JetStreamBaselines&) = delete;

  absl::Status Write(absl::string_view payload, absl::Time written) override;
  // DataLoss when the manifest does not parse, a chunk it names is missing,
  // or the chunks do not make the envelope it says (sizes, checksum).
  absl::StatusOr<std::optional<collector::ObjectFile>> Read() override;
  // Nothing to move aside: the next write replaces it.
  void Reject(absl::string_view why) override;
  std::string Describe() const override;
  // The keys of `shard` in the same bucket; must not outlive this.
  std::unique_ptr<collector::BaselinesStore> ForShard(
      absl::string_view shard) override;

  // Chunks written, leftover chunks purged, and writes that failed, since
  // Open.
  uint64_t chunks_written() const { return chunks_written_.load(); }
  uint64_t chunks_removed() const { return chunks_removed_.load(); }
  uint64_t write_errors() const { return write_errors_.load(); }

 private:
  // `prefix` goes before every key ("jobs.17." or empty); the bucket is
  // destroyed with this only when `owns_kv`.
  JetStreamBaselines(NatsConnection* nats, Options options, kvStore* kv,
                     std::string prefix, bool owns_kv);

  std::string ManifestKey() const;
  std::string ChunkKey(absl::string_view slot, uint64_t i) const;

  // kvStore_Put / kvStore_Get retried while they fail for want of an
  // answer and `deadline` allows.
  absl::Status Put(const std::string& key, absl::string_view value,
                   absl::Time deadline);
  // NotFound when the key is absent or deleted.
  absl::StatusOr<std::string> Get(const std::string& key, absl::Time deadline);
  // Whether to try again the call that failed with `error`: it failed for
  // want of an answer and `deadline` leaves time after a pause (taken here).
  bool PauseToRetry(const absl::Status& error, absl::Time deadline) const;
  // Purges `slot`'s chunks from index `chunks` on, up to the first absent
  // one; stops at the first error.
  void RemoveLeftovers(absl::string_view slot, uint64_t chunks);

  NatsConnection* const nats_;
  const Options options_;
  kvStore* const kv_;
  const std::string prefix_;
  const bool owns_kv_;
  std::atomic<uint64_t> chunks_written_{0};
  std::atomic<uint64_t> chunks_removed_{0};
  std::atomic<uint64_t> write_errors_{0};
};

}  // namespace fabricdiag::cluster
