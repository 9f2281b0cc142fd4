// Listing findings the way `findings` and `report` both need: the flags
// checked into a ListFindingsRequest, then every page the collector has.
//
//   absl::StatusOr<v1::ListFindingsRequest> request =
//       FindingsRequestOf(options, clock.Now());
//   absl::StatusOr<FindingsList> list = ListAllFindings(client, *request);
//
// Thread-compatible.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/commands.h"
#include "proto/collector.pb.h"

namespace fabricdiag::cli {

// The request the flags --job, --kind, --all, --node, --device, --severity,
// --since and --until ask for, checked here so that a typo is
// InvalidArgument naming the flag before anything is asked (the collector
// checks the job, which only it knows). --since and --until are relative
// to `now`.
absl::StatusOr<v1::ListFindingsRequest> FindingsRequestOf(
    const CommandOptions& options, absl::Time now);

struct FindingsList {
  std::vector<v1::Finding> findings;  // in the collector's order
  v1::FindingsStaleness staleness;    // of the last page
};

// Every page of `request` (the collector answers 1,000 at a time); the
// collector's error as it came, or Internal when it answers the same page
// token twice (following it would never end).
absl::StatusOr<FindingsList> ListAllFindings(CollectorClient& client,
                                             v1::ListFindingsRequest request);

}  // namespace fabricdiag::cli
