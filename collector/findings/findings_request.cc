#include "collector/findings/findings_request.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "collector/findings/findings_query.h"

namespace fabricdiag::collector {

absl::StatusOr<FindingsFilter> FindingsFilterOf(
    const v1::ListFindingsRequest& request, const FindingsStore& findings,
    const RegistrySnapshot& layouts) {
  if (absl::Status s = CheckListFindingsRequest(request); !s.ok()) return s;
  if (!request.job().empty() && layouts.layouts.count(request.job()) == 0) {
    std::vector<std::string> known = findings.Jobs();
    if (std::find(known.begin(), known.end(), request.job()) == known.end()) {
      for (const auto& [job, entry] : layouts.layouts) known.push_back(job);
      return UnknownJobError("job", request.job(), std::move(known));
    }
  }
  FindingsFilter filter;
  filter.job = request.job();
  filter.kind = request.kind();
  filter.state = request.state();
  filter.all = request.all() || request.since_unix_nanos() != 0 ||
               request.until_unix_nanos() != 0;
  filter.limit = request.limit();
  filter.since_unix_nanos = request.since_unix_nanos();
  filter.until_unix_nanos = request.until_unix_nanos();
  filter.node = request.node();
  filter.device = request.device();
  filter.min_severity = request.min_severity();
  absl::StatusOr<uint64_t> below =
      ParseFindingsPageToken("page_token", request.page_token());
  if (!below.ok()) return below.status();
  filter.below_id = *below;
  return filter;
}

absl::StatusOr<v1::ListFindingsResponse> AnswerListFindings(
    const v1::ListFindingsRequest& request, const FindingsStore& findings,
    const RegistrySnapshot& layouts) {
  absl::StatusOr<FindingsFilter> filter =
      FindingsFilterOf(request, findings, layouts);
  if (!filter.ok()) return filter.status();
  FindingsPage page = findings.ListPage(*filter);
  v1::ListFindingsResponse response;
  if (page.more && !page.findings.empty()) {
    response.set_next_page_token(
        FindingsPageToken(FindingIdNumber(page.findings.back())));
  }
  for (v1::Finding& f : page.findings) {
    *response.add_findings() = std::move(f);
  }
  return response;
}

}  // namespace fabricdiag::collector
