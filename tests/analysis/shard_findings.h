// What the shard tests share: findings as a collector stores them, a view
// cut down to some of its ports, and a fabric with every kind of rate fault.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/fabric_view.h"
#include "analysis/finding.h"
#include "analysis/shard_signals.h"
#include "tests/testing/scenario_builder.h"

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

// The same, each port cut down to what a shard of `kind` is sent
// (analysis/shard_signals.h).
FabricView ShardView(const FabricView& view, const std::vector<uint32_t>& ports,
                     ShardKind kind);

// A fault of every rate kind on a TwoJobCluster(64), some explaining
// others: the hot expert's CNPs (congestion) and its leaf's uplinks, the
// storm's victims, and the stragglers of a flapping and a slow link (one a
// straggler whose link trained slow: the link is the cause, found on
// another part than the straggler).
const std::vector<scenario::Fault>& EveryRateFault();

}  // namespace fabricdiag::analysis::testing
