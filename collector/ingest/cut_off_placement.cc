#include "collector/ingest/cut_off_placement.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace fabricdiag::collector {

absl::Duration CutOffFromCluster(absl::Duration link_down_for,
                                 absl::Duration publishes_failing_for) {
  if (publishes_failing_for < kPublishFailureGrace) {
    publishes_failing_for = absl::ZeroDuration();
  }
  return std::max(link_down_for, publishes_failing_for);
}

HandOffWhileCutOff::HandOffWhileCutOff(
    IngestPlacement& inner, std::function<absl::Duration()> cut_off_for,
    absl::Duration limit)
    : inner_(inner), cut_off_for_(std::move(cut_off_for)), limit_(limit) {}

bool HandOffWhileCutOff::CutOff(absl::Duration* for_how_long) {
  const absl::Duration cut = cut_off_for_();
  if (for_how_long != nullptr) *for_how_long = cut;
  if (cut > limit_) return true;
  if (handing_over_.load(std::memory_order_acquire)) {
    absl::MutexLock lock(&mu_);
    handing_over_.store(false, std::memory_order_release);
    most_streams_ = 0;
    round_ = -1;
    handed_this_round_ = 0;
    sent_away_.clear();
  }
  return false;
}

int64_t HandOffWhileCutOff::Round(absl::Duration cut) const {
  return absl::ToInt64Seconds(cut - limit_);
}

uint64_t HandOffWhileCutOff::Epoch() {
  absl::Duration cut;
  // The inner epoch with the cut-off state in its low bit.
  if (!CutOff(&cut)) return inner_.Epoch() << 1;
  // Odd while cut off (never 0: 0 means "takes every agent", which a stream
  // does not ask about), and moving every second, so that the open streams
  // the last second's budget left ask again.
  return (static_cast<uint64_t>(Round(cut)) << 1) | 1;
}

HandoffOrder HandOffWhileCutOff::RefusalOrder(absl::Duration cut) const {
  HandoffOrder order;
  order.reason =
      absl::StrCat("this collector has been cut off from NATS for ",
                   absl::FormatDuration(absl::Trunc(cut, absl::Seconds(1))),
                   ": its agents' data does not reach the analysis");
  order.refusal = Refusal::kNatsDisconnected;
  return order;
}

std::optional<HandoffOrder> HandOffWhileCutOff::HandOff(
    absl::string_view node, const std::vector<std::string>& collectors,
    uint64_t streams) {
  absl::Duration cut;
  if (!CutOff(&cut)) return inner_.HandOff(node, collectors, streams);
  const int64_t round = Round(cut);
  {
    absl::MutexLock lock(&mu_);
    handing_over_.store(true, std::memory_order_release);
    auto it = sent_away_.find(node);
    if (it != sent_away_.end() && it->second) return std::nullopt;  // back
    most_streams_ = std::max(most_streams_, streams);
    if (round != round_) {
      round_ = round;
      handed_this_round_ = 0;
    }
    const uint64_t budget = std::max<uint64_t>(
        1, static_cast<uint64_t>(std::ceil(static_cast<double>(most_streams_) *
                                           kCutOffHandOffRate)));
    if (handed_this_round_ >= budget) return std::nullopt;  // next second
    // Full: the agent is kept rather than sent away unremembered.
    if (it == sent_away_.end() && sent_away_.size() >= kMaxRemembered) {
      return std::nullopt;
    }
    ++handed_this_round_;
    sent_away_.try_emplace(node, false);
  }
  return RefusalOrder(cut);
}

std::optional<HandoffOrder> HandOffWhileCutOff::HandOffNew(
    absl::string_view node, const std::vector<std::string>& collectors,
    uint64_t streams) {
  absl::Duration cut;
  if (!CutOff(&cut)) return inner_.HandOffNew(node, collectors, streams);
  {
    absl::MutexLock lock(&mu_);
    handing_over_.store(true, std::memory_order_release);
    auto it = sent_away_.find(node);
    if (it != sent_away_.end()) {
      // Sent away this outage and back: no other collector took it.
      it->second = true;
      return std::nullopt;
    }
    if (sent_away_.size() >= kMaxRemembered) return std::nullopt;
    sent_away_.emplace(node, false);
  }
  return RefusalOrder(cut);
}

CollectorWeights HandOffWhileCutOff::Weights(
    const std::vector<std::string>& collectors) {
  return inner_.Weights(collectors);
}

void HandOffWhileCutOff::Advertise(const std::string& address) {
  inner_.Advertise(address);
}

}  // namespace fabricdiag::collector
