#include "collector/findings/mark_state.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace fabricdiag::collector {

std::string MarkKey(const v1::OperatorMark& mark) {
  switch (mark.mark_case()) {
    case v1::OperatorMark::kSilence:
      return absl::StrCat("silence.", mark.silence().id());
    case v1::OperatorMark::kAck:
      return absl::StrCat("ack.", mark.ack().finding_id());
    case v1::OperatorMark::kForget:
      return absl::StrCat(
          "forget.", absl::StrReplaceAll(mark.forget().node(), {{".", "=2E"}}));
    default:
      return "";
  }
}

absl::Time MarkTime(const v1::OperatorMark& mark) {
  switch (mark.mark_case()) {
    case v1::OperatorMark::kSilence:
      return absl::FromUnixNanos(mark.silence().expired_by().empty()
                                     ? mark.silence().created_unix_nanos()
                                     : mark.silence().ends_unix_nanos());
    case v1::OperatorMark::kAck:
      return absl::FromUnixNanos(mark.ack().at_unix_nanos());
    case v1::OperatorMark::kForget:
      return absl::FromUnixNanos(mark.forget().at_unix_nanos());
    default:
      return absl::UnixEpoch();
  }
}

}  // namespace fabricdiag::collector
