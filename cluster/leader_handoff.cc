#include "cluster/leader_handoff.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/fnv1a.h"

namespace fabricdiag::cluster {

LeaderHandoff::LeaderHandoff(std::function<uint64_t()> term,
                             std::function<size_t()> live_members,
                             const Clock& clock)
    : term_(std::move(term)),
      live_members_(std::move(live_members)),
      clock_(clock) {}

bool LeaderHandoff::InShare(absl::string_view node) {
  return Fmix64(Fnv1a64(absl::StrCat("handoff:", node))) % kShare == 0;
}

uint64_t LeaderHandoff::Epoch() {
  const int64_t now = clock_.MonotonicNanos();
  int64_t due = refresh_at_nanos_.load(std::memory_order_acquire);
  // One caller refreshes; the others use the value it replaces.
  if (now >= due && refresh_at_nanos_.compare_exchange_strong(
                        due, now + absl::ToInt64Nanoseconds(kRefreshEvery))) {
    const uint64_t term = term_();
    epoch_.store(term != 0 && live_members_() > 1 ? term : 0,
                 std::memory_order_release);
  }
  return epoch_.load(std::memory_order_acquire);
}

std::optional<std::string> LeaderHandoff::HandOff(absl::string_view node) {
  if (Epoch() == 0 || !InShare(node)) return std::nullopt;
  const int64_t now = clock_.MonotonicNanos();
  const int64_t window = absl::ToInt64Nanoseconds(kTakeBackWithin);
  absl::MutexLock lock(&mu_);
  auto it = handed_off_.find(node);
  if (it != handed_off_.end()) {
    // Back within the window: no other collector took it.
    if (now - it->second < window) return std::nullopt;
    it->second = now;
  } else {
    // Pruning walks every entry: when the memory is full of young ones,
    // not again for a while (a flood must not cost a walk per Hello).
    const bool full = handed_off_.size() >= kMaxRemembered;
    if ((!full && handed_off_.size() >= prune_at_) ||
        (full && now >= next_full_prune_nanos_)) {
      absl::erase_if(handed_off_, [&](const auto& entry) {
        return now - entry.second >= window;
      });
      prune_at_ = std::max<size_t>(1024, 2 * handed_off_.size());
      next_full_prune_nanos_ = now + absl::ToInt64Nanoseconds(kRefullPrune);
    }
    if (handed_off_.size() >= kMaxRemembered) return std::nullopt;
    handed_off_.emplace(node, now);
  }
  return absl::StrCat(
      "this collector leads the cluster's analysis and hands one agent in ",
      kShare, " to the other collectors");
}

size_t LeaderHandoff::remembered() {
  absl::MutexLock lock(&mu_);
  return handed_off_.size();
}

}  // namespace fabricdiag::cluster
