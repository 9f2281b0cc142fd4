// "Did you mean": the names among those reported that look like a name no
// one reports, for `fabricdiag layout check` (docs/cli.md). A layout that
// says `gpu-009.example.com` where agents report `gpu-009`, or `mlx5_0` on
// a host whose NICs are `mlx5_2`..`mlx5_9`, gets no analysis; the user
// needs to see the name they meant next to the one they wrote.
//
//   std::vector<std::string> alike =
//       LookAlikeNames("gpu-009.example.com", reported_hosts);  // {"gpu-009"}
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace fabricdiag {

// The Levenshtein distance between `a` and `b`, ignoring ASCII case.
size_t NameEditDistance(absl::string_view a, absl::string_view b);

// The names of `candidates` that look like `name`, most alike first (then
// shorter first and alphabetical: "gpu-2" before "gpu-10"), at most `max`. A
// candidate looks alike when, ignoring ASCII case, it
//   1. equals `name`;
//   2. is its short name or its FQDN (the first dot-separated labels are
//      equal: "gpu-009" and "gpu-009.example.com");
//   3. is within a small edit distance (at most max(2, length / 4) of the
//      shorter name: "gpu-09" and "gpu-009", "mlx5_0" and "mlx5_1");
//   4. has the same stem, the name without its trailing digits, of at
//      least two characters ("mlx5_" for "mlx5_0" and "mlx5_10").
// Rules 3 and 4 compare first labels: "gpu-000.example.com" looks like
// "gpu-001" as "gpu-000" does.
// `name` itself among the candidates counts as rule 1.
std::vector<std::string> LookAlikeNames(
    absl::string_view name, const std::vector<std::string>& candidates,
    size_t max = 3);

}  // namespace fabricdiag
