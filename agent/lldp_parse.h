// Pure parsing of `lldpcli -f json show neighbors` output into
// LldpNeighbor records, and the checks every reader applies to a neighbor.
//
//   absl::StatusOr<LldpParsed> parsed = ParseLldpcliJson(text);
//   if (!parsed.ok()) ...  // invalid JSON, no "lldp" object
//   for (const LldpNeighbor& n : parsed->neighbors) ...
//
// lldpcli prints one interface as an object and several as a list
// ({"lldp": {"interface": {"eth0": {...}}}} or
// {"lldp": {"interface": [{"eth0": {...}}, {"eth1": {...}}]}}); both are
// read, and so are a chassis without a system name and several management
// addresses. A bad entry (no chassis id, no port id, a huge name) is
// dropped or cut and counted in LldpParsed::issues; it never fails the
// whole text.
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/lldp_neighbor.h"

namespace fabricdiag::agent {

struct LldpParsed {
  std::vector<LldpNeighbor> neighbors;  // sorted, no duplicates
  LldpIssues issues;
};

// Larger texts are refused: lldpcli prints ~1.5 KB per neighbor.
inline constexpr size_t kLldpMaxTextBytes = size_t{16} << 20;

// InvalidArgument for text that is not JSON or has no "lldp" member.
absl::StatusOr<LldpParsed> ParseLldpcliJson(absl::string_view text);

// Cuts over-long fields (counted in issues->truncated) and returns false,
// with the reason counted, for a neighbor that cannot be used: no local
// interface, chassis id or port id, or a local interface name that no
// netdev can have.
bool SanitizeLldpNeighbor(LldpNeighbor* neighbor, LldpIssues* issues);

// Sorts, removes duplicates and drops what is beyond kLldpMaxNeighbors.
void NormalizeLldpNeighbors(std::vector<LldpNeighbor>* neighbors,
                            LldpIssues* issues);

}  // namespace fabricdiag::agent
