#include "cluster/leader_handoff.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/collector_list.h"
#include "common/fnv1a.h"

namespace fabricdiag::cluster {
namespace {

// The member `id` of `view`, or null.
const LeaderHandoff::View::Member* FindMember(const LeaderHandoff::View& view,
                                              absl::string_view id) {
  for (const LeaderHandoff::View::Member& m : view.live) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

}  // namespace

LeaderHandoff::LeaderHandoff(std::function<View()> view,
                             std::function<void(const std::string&)> advertise,
                             const Clock& clock)
    : view_(std::move(view)), advertise_(std::move(advertise)), clock_(clock) {}

bool LeaderHandoff::InShare(absl::string_view node) {
  return Fmix64(Fnv1a64(absl::StrCat("handoff:", node))) % kShare == 0;
}

std::optional<std::string> LeaderHandoff::Preferred(
    absl::string_view node, const std::vector<std::string>& collectors,
    const View& view) {
  const View::Member* self = FindMember(view, view.self);
  if (self == nullptr || self->address.empty() ||
      std::find(collectors.begin(), collectors.end(), self->address) ==
          collectors.end()) {
    return std::nullopt;
  }
  std::optional<std::string> best;
  double best_score = 0;
  for (const std::string& entry : collectors) {
    const View::Member* member = nullptr;
    for (const View::Member& m : view.live) {
      if (m.address == entry && !entry.empty()) member = &m;
    }
    if (member == nullptr) continue;  // down, or not this cluster's
    if (member != self && (member->live_for < kTargetAfter ||
                           member->silent_for > kTargetSilentAtMost)) {
      continue;
    }
    const double weight = member->id == view.leader ? kLeaderWeight : 1.0;
    const double score = client::RendezvousScore(node, entry, weight);
    if (!best.has_value() || score > best_score) {
      best = entry;
      best_score = score;
    }
  }
  return best;
}

uint64_t LeaderHandoff::Epoch() {
  const int64_t now = clock_.MonotonicNanos();
  int64_t due = refresh_at_nanos_.load(std::memory_order_acquire);
  // One caller refreshes; the others use the value it replaces.
  if (now >= due && refresh_at_nanos_.compare_exchange_strong(
                        due, now + absl::ToInt64Nanoseconds(kRound))) {
    auto view = std::make_shared<const View>(view_());
    absl::MutexLock lock(&mu_);
    current_ = view;
    handed_this_round_ = 0;
    epoch_.store(view->live.size() > 1 ? ++round_ : 0,
                 std::memory_order_release);
  }
  return epoch_.load(std::memory_order_acquire);
}

std::optional<collector::HandoffOrder> LeaderHandoff::HandOff(
    absl::string_view node, const std::vector<std::string>& collectors,
    uint64_t streams) {
  if (Epoch() == 0) return std::nullopt;
  std::shared_ptr<const View> view;
  {
    absl::MutexLock lock(&mu_);
    view = current_;
  }
  const int64_t now = clock_.MonotonicNanos();
  if (collectors.empty()) {
    if (view->term == 0 || !InShare(node)) return std::nullopt;
    absl::MutexLock lock(&mu_);
    if (!RememberLocked(node, now, kTakeBackWithin, kTakeBackWithin)) {
      return std::nullopt;
    }
    return collector::HandoffOrder{
        absl::StrCat("this collector leads the cluster's analysis and hands "
                     "one agent in ",
                     kShare, " without a collector list to the others"),
        ""};
  }
  std::optional<std::string> preferred = Preferred(node, collectors, *view);
  const View::Member* self = FindMember(*view, view->self);
  if (!preferred.has_value() || self == nullptr ||
      *preferred == self->address) {
    return std::nullopt;
  }
  absl::MutexLock lock(&mu_);
  // Rounded up: 150 streams hand back 2 per round, 1 stream 1.
  const uint64_t budget = std::max<uint64_t>(
      1, static_cast<uint64_t>(
             std::ceil(static_cast<double>(streams) * kHandBackRate)));
  if (handed_this_round_ >= budget) return std::nullopt;  // next round
  if (!RememberLocked(node, now, kHandBackPauseFirst, kHandBackPauseMax)) {
    return std::nullopt;
  }
  ++handed_this_round_;
  return collector::HandoffOrder{
      absl::StrCat("collector ", *preferred,
                   " is live and first in this node's ranking"),
      *preferred};
}

bool LeaderHandoff::RememberLocked(absl::string_view node, int64_t now,
                                   absl::Duration pause,
                                   absl::Duration max_pause) {
  auto it = handed_off_.find(node);
  if (it != handed_off_.end()) {
    HandedOff& h = it->second;
    if (now < h.until) {
      // Back before its time: no other collector took it. Counted once
      // per return (the return's first look), not per look while here.
      if (!h.returned) {
        h.returned = true;
        ++h.bounces;
      }
      return false;
    }
    // Handed off again: the longer pause if it came back last time, the
    // first one if it had stayed away.
    if (!h.returned) h.bounces = 0;
    h.returned = false;
    h.until =
        now + absl::ToInt64Nanoseconds(std::min(
                  pause * (int64_t{1} << std::min(h.bounces, 16)), max_pause));
    return true;
  }
  // Pruning walks every entry: when the memory is full of young ones, not
  // again for a while (a flood must not cost a walk per Hello).
  const bool full = handed_off_.size() >= kMaxRemembered;
  if ((!full && handed_off_.size() >= prune_at_) ||
      (full && now >= next_full_prune_nanos_)) {
    absl::erase_if(handed_off_, [&](const auto& entry) {
      return now >= entry.second.until;
    });
    prune_at_ = std::max<size_t>(1024, 2 * handed_off_.size());
    next_full_prune_nanos_ = now + absl::ToInt64Nanoseconds(kRefullPrune);
  }
  if (handed_off_.size() >= kMaxRemembered) return false;
  handed_off_.emplace(
      node, HandedOff{now + absl::ToInt64Nanoseconds(pause), 0, false});
  return true;
}

collector::CollectorWeights LeaderHandoff::WeightsIn(
    const std::vector<std::string>& collectors, const View& view) {
  const View::Member* leader = FindMember(view, view.leader);
  if (leader == nullptr || leader->address.empty() ||
      std::find(collectors.begin(), collectors.end(), leader->address) ==
          collectors.end()) {
    return {};
  }
  return {{leader->address, kLeaderWeight}};
}

collector::CollectorWeights LeaderHandoff::Weights(
    const std::vector<std::string>& collectors) {
  std::shared_ptr<const View> view;
  {
    absl::MutexLock lock(&mu_);
    view = current_;
  }
  if (view == nullptr) return {};
  return WeightsIn(collectors, *view);
}

void LeaderHandoff::Advertise(const std::string& address) {
  advertise_(address);
}

size_t LeaderHandoff::remembered() {
  absl::MutexLock lock(&mu_);
  return handed_off_.size();
}

}  // namespace fabricdiag::cluster
