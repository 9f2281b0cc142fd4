// Where the analysis keeps every NIC's straggler_nic baseline between
// processes (StragglerBaselines::Serialize, written every
// kStragglerBaselinesEvery by collector/runner/rate_pass.h), so that the next
// process to analyse judges a NIC against the history learned before: the
// seam between the analysis runner and its two backends.
//
//   - Embedded: straggler_baselines.pb in --state_dir, read back by the
//     same collector after a restart (FileBaselinesStore below).
//   - Cluster (--nats): a replicated JetStream key-value bucket, read by the
//     collector that takes the analysis over after a failover
//     (cluster/jetstream_baselines.h).
//
// Only the collector that analyses writes; a new writer reads first.
//
//   FileBaselinesStore store(state_store);
//   RETURN_IF_ERROR(store.Write(baselines.Serialize(), now));
//   ASSIGN_OR_RETURN(std::optional<ObjectFile> saved, store.Read());
//
// Implementations are thread-safe.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collector/state/object_store.h"
#include "collector/state/state_store.h"

namespace fabricdiag::collector {

class BaselinesStore {
 public:
  virtual ~BaselinesStore() = default;

  // Durably replaces the stored baselines with `payload`, written at
  // `written` (the writer's clock).
  virtual absl::Status Write(absl::string_view payload, absl::Time written) = 0;

  // What was last written; nullopt when nothing was. DataLoss naming the
  // damage when what is stored is damaged (set aside where the backend can:
  // the next Write replaces it either way); other errors when it cannot be
  // read now (a disk error, NATS unreachable).
  virtual absl::StatusOr<std::optional<ObjectFile>> Read() = 0;

  // The payload Read() returned was rejected by the caller (it does not
  // parse as baselines) for `why`: set it aside where the backend can.
  virtual void Reject(absl::string_view why) = 0;

  // Where the baselines live, for messages: a file path, a bucket.
  virtual std::string Describe() const = 0;

  // The store of one analysis shard's baselines ("jobs.17": those of the
  // jobs that hash to it, analysis/shard_map.h), beside this one and apart
  // from every other shard's: written by the shard's owner, read by its
  // next owner. `shard` must be a valid job name (common/names.h); the
  // result must not outlive this.
  virtual std::unique_ptr<BaselinesStore> ForShard(absl::string_view shard) = 0;
};

// The embedded backend: StateStore's straggler_baselines.pb. A damaged file
// is moved aside and reported in StateStore::problems().
class FileBaselinesStore final : public BaselinesStore {
 public:
  // `state` must outlive this. `shard` names the shard whose baselines
  // these are (straggler_baselines.<shard>.pb); empty: the unsharded
  // analysis's (straggler_baselines.pb).
  explicit FileBaselinesStore(StateStore* state, std::string shard = {})
      : state_(state), shard_(std::move(shard)) {}

  absl::Status Write(absl::string_view payload, absl::Time written) override;
  absl::StatusOr<std::optional<ObjectFile>> Read() override;
  void Reject(absl::string_view why) override;
  std::string Describe() const override;
  std::unique_ptr<BaselinesStore> ForShard(absl::string_view shard) override;

 private:
  StateStore* const state_;
  const std::string shard_;
};

// Keeps nothing: every restart learns the baselines afresh from the open
// findings. For analyses that have nowhere to keep them (tests, benchmarks).
class NoBaselinesStore final : public BaselinesStore {
 public:
  absl::Status Write(absl::string_view /*payload*/,
                     absl::Time /*written*/) override {
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<ObjectFile>> Read() override {
    return std::nullopt;
  }
  void Reject(absl::string_view /*why*/) override {}
  std::string Describe() const override { return "nowhere (memory only)"; }
  std::unique_ptr<BaselinesStore> ForShard(
      absl::string_view /*shard*/) override {
    return std::make_unique<NoBaselinesStore>();
  }
};

// Writes to a BaselinesStore on a thread of its own, so that the analysis
// pass does not wait for it: a write of 200k GPUs' baselines (9 MB) to a
// cluster's bucket took 0.19 s, a fifth of such a pass. Each write is the
// whole set of its store, so one handed over while another of the same
// store waits replaces it; writes of different stores (the shards' of
// BaselinesStore::ForShard) wait in turn. A failed write is logged; the
// next one is the retry. A write that fails Unavailable (the store does
// not answer) drops the writes waiting behind it, so that a stop does not
// wait out each one's deadline. A write may say what to do once it is
// done (written, failed, or dropped), on the writer's thread.
//
//   BaselinesWriter writer(store);
//   writer.Write(baselines.Serialize(), now);  // returns at once
//   writer.Write(shard_store, shard_bytes, now);
//   writer.Write(shard_store, shard_bytes, now, [] { ...let the shard go... });
//   writer.Flush();  // before the process stops (the destructor does too)
//
// Thread-safe.
class BaselinesWriter {
 public:
  // `store` (the one Write(payload, written) writes to) must outlive this.
  explicit BaselinesWriter(BaselinesStore* store) : store_(store) {}
  // Writes what is pending, then stops.
  ~BaselinesWriter();
  BaselinesWriter(const BaselinesWriter&) = delete;
  BaselinesWriter& operator=(const BaselinesWriter&) = delete;

  void Write(std::string payload, absl::Time written) {
    Write(store_, std::move(payload), written);
  }
  // The same to `store`, which must outlive this writer's Flush(); `done`
  // (may be empty) runs on the writer's thread once the write is done,
  // failed or dropped (or once the write that replaced it is).
  void Write(BaselinesStore* store, std::string payload, absl::Time written,
             std::function<void()> done = nullptr);
  // Waits until every write handed over has finished (or failed).
  void Flush();

 private:
  struct Pending {
    BaselinesStore* store = nullptr;
    std::string payload;
    absl::Time written;
    std::vector<std::function<void()>> done;
  };
  void Run();

  BaselinesStore* const store_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Pending> pending_;  // guarded by mu_; one per store, in order
  bool writing_ = false;          // guarded by mu_
  bool stopping_ = false;         // guarded by mu_
  std::thread thread_;            // started by the first Write
};

}  // namespace fabricdiag::collector
