// What the shard tests compare: findings as a collector stores them, and a
// view cut down to some of its ports.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/fabric_view.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis::testing {

// A finding's identity and evidence, one line each; of a PFC storm all but
// how far its pause spread (StormVictims()), which a switch shard sees
// only within its switches.
std::set<std::string> FindingKeys(const std::vector<Finding>& found);

// Each PFC storm's victims ("<node> <device>" of the source): how many, and
// the nodes they are on.
using StormVictimsBySource =
    std::map<std::string, std::pair<double, std::set<std::string>>>;
StormVictimsBySource StormVictims(const std::vector<Finding>& found);

// The ports of `view` at `ports` (indexes into view.ports()), as a view of
// its own (Finish()ed).
FabricView PortsOf(const FabricView& view, const std::vector<uint32_t>& ports);

}  // namespace fabricdiag::analysis::testing
