#include "collector/ingest/cut_off_placement.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace fabricdiag::collector {

HandOffWhileCutOff::HandOffWhileCutOff(
    IngestPlacement& inner, std::function<absl::Duration()> cut_off_for,
    absl::Duration limit)
    : inner_(inner), cut_off_for_(std::move(cut_off_for)), limit_(limit) {}

bool HandOffWhileCutOff::CutOff(absl::Duration* for_how_long) const {
  const absl::Duration cut = cut_off_for_();
  if (for_how_long != nullptr) *for_how_long = cut;
  return cut > limit_;
}

uint64_t HandOffWhileCutOff::Epoch() {
  // The inner epoch with the cut-off state in its low bit: a stream asks
  // again when either moves, and never 0 while cut off (0 means "takes
  // every agent", which a stream does not ask about).
  return (inner_.Epoch() << 1) | (CutOff() ? 1 : 0);
}

std::optional<HandoffOrder> HandOffWhileCutOff::HandOff(
    absl::string_view node, const std::vector<std::string>& collectors,
    uint64_t streams) {
  absl::Duration cut;
  if (!CutOff(&cut)) return inner_.HandOff(node, collectors, streams);
  HandoffOrder order;
  order.reason =
      absl::StrCat("this collector has been cut off from NATS for ",
                   absl::FormatDuration(absl::Trunc(cut, absl::Seconds(1))),
                   ": its agents' data does not reach the analysis");
  order.refusal = Refusal::kNatsDisconnected;
  return order;
}

CollectorWeights HandOffWhileCutOff::Weights(
    const std::vector<std::string>& collectors) {
  return inner_.Weights(collectors);
}

void HandOffWhileCutOff::Advertise(const std::string& address) {
  inner_.Advertise(address);
}

}  // namespace fabricdiag::collector
