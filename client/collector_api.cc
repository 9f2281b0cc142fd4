#include "client/collector_api.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::client {
namespace {

absl::Status NotImplemented(absl::string_view rpc) {
  return absl::UnimplementedError(
      absl::StrCat(rpc, " is not implemented by this client"));
}

}  // namespace

absl::StatusOr<v1::AckFindingResponse> CollectorClient::AckFinding(
    const v1::AckFindingRequest&) {
  return NotImplemented("AckFinding");
}

absl::StatusOr<v1::Silence> CollectorClient::CreateSilence(
    const v1::CreateSilenceRequest&) {
  return NotImplemented("CreateSilence");
}

absl::StatusOr<v1::ListSilencesResponse> CollectorClient::ListSilences() {
  return NotImplemented("ListSilences");
}

absl::StatusOr<v1::Silence> CollectorClient::ExpireSilence(
    const v1::ExpireSilenceRequest&) {
  return NotImplemented("ExpireSilence");
}

absl::StatusOr<v1::ForgetNodeResponse> CollectorClient::ForgetNode(
    const v1::ForgetNodeRequest&) {
  return NotImplemented("ForgetNode");
}

absl::StatusOr<v1::GetSeriesResponse> CollectorClient::GetSeries(
    const v1::GetSeriesRequest&) {
  return NotImplemented("GetSeries");
}

}  // namespace fabricdiag::client
