#include "cli/findings_list.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collector/findings/finding_json.h"
#include "collector/findings/findings_query.h"

namespace fabricdiag::cli {
namespace {

// --since or --until on the wire: unix nanos, 0 when not given (0 means
// "unbounded" there, so the epoch itself is one nanosecond on).
absl::StatusOr<int64_t> WireTime(absl::string_view flag,
                                 const std::string& text, absl::Time now) {
  if (text.empty()) return 0;
  absl::StatusOr<absl::Time> t = collector::ParseQueryTime(flag, text, now);
  if (!t.ok()) return t.status();
  return std::max<int64_t>(1, absl::ToUnixNanos(*t));
}

}  // namespace

absl::StatusOr<v1::ListFindingsRequest> FindingsRequestOf(
    const CommandOptions& options, absl::Time now) {
  v1::ListFindingsRequest request;
  request.set_job(options.job);
  request.set_kind(options.kind);
  request.set_all(options.all);
  request.set_state(v1::FINDING_STATE_ACTIVE);
  request.set_node(options.node);
  request.set_device(options.device);
  if (absl::Status s = collector::CheckFindingKind("--kind", options.kind);
      !s.ok()) {
    return s;
  }
  if (!options.severity.empty()) {
    absl::StatusOr<v1::Severity> severity =
        collector::ParseSeverity("--severity", options.severity);
    if (!severity.ok()) return severity.status();
    request.set_min_severity(*severity);
  }
  absl::StatusOr<int64_t> since = WireTime("--since", options.since, now);
  if (!since.ok()) return since.status();
  request.set_since_unix_nanos(*since);
  absl::StatusOr<int64_t> until = WireTime("--until", options.until, now);
  if (!until.ok()) return until.status();
  request.set_until_unix_nanos(*until);
  if (request.since_unix_nanos() != 0 && request.until_unix_nanos() != 0 &&
      request.until_unix_nanos() < request.since_unix_nanos()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--until: ", options.until, " (",
        collector::FormatRfc3339(request.until_unix_nanos()),
        ") is before --since ", options.since, " (",
        collector::FormatRfc3339(request.since_unix_nanos()), ")"));
  }
  return request;
}

absl::StatusOr<FindingsList> ListAllFindings(CollectorClient& client,
                                             v1::ListFindingsRequest request) {
  FindingsList list;
  for (;;) {
    absl::StatusOr<v1::ListFindingsResponse> response =
        client.ListFindings(request);
    if (!response.ok()) return response.status();
    list.findings.insert(list.findings.end(), response->findings().begin(),
                         response->findings().end());
    list.staleness = response->staleness();
    // An older collector sends no token: its one page is all there is.
    if (response->next_page_token().empty()) break;
    if (response->next_page_token() == request.page_token()) {
      return absl::InternalError(absl::StrCat("collector ", client.address(),
                                              " answered the same page again"));
    }
    request.set_page_token(response->next_page_token());
  }
  return list;
}

}  // namespace fabricdiag::cli
