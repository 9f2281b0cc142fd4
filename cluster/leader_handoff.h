// The analysis leader hands a share of its agents to the other collectors.
//
// Ingest is spread evenly (each agent starts at the collector its node name
// hashes to), but the leader also analyses the whole fabric: merging every
// collector's features and running the analyzers over every port costs it
// about what ingest of a quarter of its agents costs (docs/cluster.md, "The
// leader hands off a share of its agents"). So while it leads and another
// collector is live, it asks the agents of one node in four (`InShare`:
// Fmix64 of FNV-1a of "handoff:" + the node name, modulo 4; independent of
// the hash that placed them, and of the one that picks where they go,
// common/fnv1a.h) to stream to another collector. Agents do so at once and
// replay their unacknowledged reports there (agent/stream_client.h),
// picking among the others by their node name, so the share spreads
// evenly; with every collector at about the same CPU, none is the first to
// run out.
//
// An agent sent away that comes back within kTakeBackWithin found no other
// collector that would take it (its list names only this one, or the
// others are down for it): it is taken, so no agent is ever left without a
// collector. A collector that stops leading takes every agent again; the
// agents it handed off stay where they went (moving them back would cost a
// reconnect for nothing).
//
//   LeaderHandoff handoff([&] { return lease.Term(); },
//                         [&] { return members.Live().size(); }, clock);
//   IngestService ingest(&store, &counters, auth, &handoff);
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/ingest/ingest_placement.h"
#include "common/clock.h"

namespace fabricdiag::cluster {

class LeaderHandoff final : public collector::IngestPlacement {
 public:
  // One node in kShare is handed off.
  static constexpr uint64_t kShare = 4;
  static constexpr absl::Duration kTakeBackWithin = absl::Minutes(10);
  // Nodes remembered at most. A 200k-GPU cluster hands off a few thousand
  // in 10 minutes; a flood of Hellos under made-up names (ingest without a
  // token or mutual TLS) must not grow memory without bound: when full,
  // the leader takes every agent rather than forget one it sent away.
  static constexpr size_t kMaxRemembered = 65536;
  // While full, forgotten nodes are looked for at most this often.
  static constexpr absl::Duration kRefullPrune = absl::Minutes(1);
  // How long Epoch() reuses its look at the lease and the members.
  static constexpr absl::Duration kRefreshEvery = absl::Milliseconds(250);

  // `term`: the lease's term while this collector leads, 0 otherwise.
  // `live_members`: how many collectors (this one included) are live.
  // Both are called at most once per kRefreshEvery; `clock` must outlive
  // the object.
  LeaderHandoff(std::function<uint64_t()> term,
                std::function<size_t()> live_members, const Clock& clock);

  // Whether the leader hands `node` off (pure; the same on every
  // collector).
  static bool InShare(absl::string_view node);

  // The lease's term while this collector leads and another is live, else
  // 0.
  uint64_t Epoch() override;
  std::optional<std::string> HandOff(absl::string_view node) override;

  // Nodes remembered as handed off (older ones are forgotten as new ones
  // come: memory stays bounded by what kTakeBackWithin can hold).
  size_t remembered();

 private:
  const std::function<uint64_t()> term_;
  const std::function<size_t()> live_members_;
  const Clock& clock_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<int64_t> refresh_at_nanos_{0};  // MonotonicNanos
  absl::Mutex mu_;
  // Nodes handed off, and when (MonotonicNanos).
  absl::flat_hash_map<std::string, int64_t> handed_off_ ABSL_GUARDED_BY(mu_);
  size_t prune_at_ ABSL_GUARDED_BY(mu_) = 1024;
  int64_t next_full_prune_nanos_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fabricdiag::cluster
