// Which agents a collector of a cluster keeps and which it hands to another
// collector: rendezvous placement over the live members.
//
// Each agent ranks the collectors of its list by rendezvous hashing
// (client/collector_list.h) and streams to the first of its ranking that
// works; its Hello carries the list. Each collector announces the address
// agents reach it at (cluster/cluster_members.h), so a collector can rank
// an agent's list as the agent does, over the members that are live and
// serving, and find the collector the agent prefers. When that is another
// one (the agent failed over here, and its first choice is back), the agent
// is handed back there with a Handoff naming that entry. Hand-backs are
// paced: at most 1% of this collector's streams per second, rounded up (so
// at least one), so a collector that returns is refilled over tens of
// seconds, never by a reconnect storm.
//
// The analysis leader's lighter share is a weight in the same ranking: it
// scores -kLeaderWeight / ln(u) where the others score -1 / ln(u), so it is
// the first choice of kLeaderWeight / (kLeaderWeight + n - 1) of the agents
// (with 3 collectors, 29%: less than an even third by about what merging
// every collector's features and running the analyzers costs it,
// docs/cluster.md; not lighter, so that a dead non-leader's agents, which
// split over the leader and the other survivor as 0.8 : 1, put no more than
// 60% of them on one collector). Every collector applies the weight to the
// leader it sees, so they agree on each agent's preferred collector, and
// sends it to its agents (Weights, Ack.weights): they rank with it too, so
// when a collector dies each of its agents fails over to its weighted
// second choice, where the collectors would place it, and a dead
// collector's agents split over the survivors in proportion to their
// weights.
//
// Agents whose Hello carries no list (older agents, or a list of one) are
// placed as before: while this collector leads and another is live, it
// hands one node in four (`InShare`) away without a target.
//
// An agent handed off that comes back soon (kTakeBackWithin without a
// list, the hand-back pause with one) found no other collector that would
// take it: it is taken and not handed off again within that time, so no
// agent is ever left without a collector and none bounces. The hand-back
// pause starts at kHandBackPauseFirst and doubles each time the agent came
// back before it was over, up to kHandBackPauseMax: a bounce while the
// cluster's views disagree for a few seconds (a NATS server's JetStream
// elections) costs seconds, an agent that cannot reach its first choice
// reconnects every 30 s at most.
//
//   LeaderHandoff handoff([&] { return ViewOfTheCluster(); },
//                         [&](const std::string& a) { members.Advertise(a); },
//                         clock);
//   IngestService ingest(&store, &counters, auth, &handoff);
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  // What the placement needs to know of the cluster, looked at once per
  // kRound.
  struct View {
    std::string self;    // this collector's --collector_id
    std::string leader;  // the analysis leader's id ("" when unknown)
    uint64_t term = 0;   // the lease's term while this one leads, else 0
    struct Member {
      std::string id;
      std::string address;      // announced; "" = not serving agents yet
      absl::Duration live_for;  // live without a break for this long
      // Since its last announcement (every 2 s while it runs).
      absl::Duration silent_for;
    };
    std::vector<Member> live;  // live members, this one included
  };

  // Agents without a list: one node in kShare is handed off by the leader.
  static constexpr uint64_t kShare = 4;
  // The leader's weight in the ranking (see the overview).
  static constexpr double kLeaderWeight = 0.8;
  // Hand-backs per kRound: this fraction of the streams held, rounded up.
  static constexpr double kHandBackRate = 0.01;
  static constexpr absl::Duration kRound = absl::Seconds(1);
  // A member is a target once it announced its address and has been live
  // this long (a restarted collector serves before it is sent agents).
  static constexpr absl::Duration kTargetAfter = absl::Seconds(2);
  // ... and is no target once silent this long: a member counts as live for
  // 3 announcement periods (6 s), but one that missed an announcement and a
  // half has most likely died, and agents sent there would fail over again.
  static constexpr absl::Duration kTargetSilentAtMost = absl::Seconds(3);
  static constexpr absl::Duration kTakeBackWithin = absl::Minutes(10);
  static constexpr absl::Duration kHandBackPauseFirst = absl::Seconds(5);
  static constexpr absl::Duration kHandBackPauseMax = absl::Seconds(30);
  // Nodes remembered at most. A 200k-GPU cluster hands off a few thousand
  // in 10 minutes; a flood of Hellos under made-up names (ingest without a
  // token or mutual TLS) must not grow memory without bound: when full,
  // the collector takes every agent rather than forget one it sent away.
  static constexpr size_t kMaxRemembered = 65536;
  // While full, forgotten nodes are looked for at most this often.
  static constexpr absl::Duration kRefullPrune = absl::Minutes(1);

  // `view` is called at most once per kRound; `advertise` announces this
  // collector's address to the others. `clock` must outlive the object.
  LeaderHandoff(std::function<View()> view,
                std::function<void(const std::string&)> advertise,
                const Clock& clock);

  // Whether the leader hands `node` off when its agent sends no list
  // (pure; the same on every collector).
  static bool InShare(absl::string_view node);

  // The live collector `node` prefers among `collectors` (its list), as
  // the entry of the list: each entry that is this collector (`view.self`)
  // or a live member announcing it as its address (live for kTargetAfter),
  // scored with the leader's weight; nullopt when this collector is not in
  // the list. Pure.
  static std::optional<std::string> Preferred(
      absl::string_view node, const std::vector<std::string>& collectors,
      const View& view);

  // A round number that moves every kRound while another collector is
  // live, else 0.
  uint64_t Epoch() override;
  std::optional<collector::HandoffOrder> HandOff(
      absl::string_view node, const std::vector<std::string>& collectors,
      uint64_t streams) override;
  // The leader's entry in `collectors` at kLeaderWeight when the leader is
  // known and announces an entry of the list; nothing else (all weigh 1).
  collector::CollectorWeights Weights(
      const std::vector<std::string>& collectors) override;
  // The same over `view` (pure).
  static collector::CollectorWeights WeightsIn(
      const std::vector<std::string>& collectors, const View& view);
  void Advertise(const std::string& address) override;

  // Nodes remembered as handed off (older ones are forgotten as new ones
  // come: memory stays bounded by what kTakeBackWithin can hold).
  size_t remembered();

 private:
  // A node handed off: until when (MonotonicNanos) a return is taken, and
  // how many times running it came back before then.
  struct HandedOff {
    int64_t until = 0;
    int bounces = 0;
    bool returned = false;  // came back since it was last handed off
  };

  // Remembers `node` for `pause` (doubled per bounce, up to `max_pause`)
  // unless remembered already; false when it is (it came back soon: a
  // bounce) or the memory is full.
  bool RememberLocked(absl::string_view node, int64_t now, absl::Duration pause,
                      absl::Duration max_pause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::function<View()> view_;
  const std::function<void(const std::string&)> advertise_;
  const Clock& clock_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<int64_t> refresh_at_nanos_{0};  // MonotonicNanos
  absl::Mutex mu_;
  std::shared_ptr<const View> current_ ABSL_GUARDED_BY(mu_);
  uint64_t round_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t handed_this_round_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, HandedOff> handed_off_ ABSL_GUARDED_BY(mu_);
  size_t prune_at_ ABSL_GUARDED_BY(mu_) = 1024;
  int64_t next_full_prune_nanos_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fabricdiag::cluster
