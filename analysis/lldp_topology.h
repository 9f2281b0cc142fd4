// The fabric topology drawn from what the nodes hear over LLDP, the
// effective topology the analyzers use (declared where declared, discovered
// elsewhere), and the differences between the declared and the discovered
// cabling.
//
//   std::vector<const v1::NodeFacts*> facts = ...;  // one per node
//   DiscoveredTopology found = DiscoverTopology(facts, declared);
//   v1::Topology effective = EffectiveTopology(declared, found.topology);
//   for (const TopologyDifference& d : DiffTopology(*declared, found.topology))
//     std::cout << d.Describe() << "\n";
//
// The rules are those of docs/topology-format.md ("Discovered topology"):
//   - Host links come from the hosts' neighbors (host, NIC -> switch, port),
//     the NIC named by its RDMA device when the host maps the netdev to one;
//     the switches' neighbors confirm them or add those the host missed.
//   - Switch links come from the switches' neighbors.
//   - Whatever a host NIC hears is a switch; a neighbor a switch hears is a
//     host when it reports as one or a declared link names it, else a switch.
//   - A leaf (tier 1) is a switch with host links; its ports towards the
//     switches of the next tier are its ECMP uplinks; the same one tier up.
//   - An LLDP system name is a node's name, or a declared switch's
//     chassis_id, or an FQDN whose short name is unambiguous.
//
// Every collector of a cluster holds the same facts and must draw the same
// topology: the output depends on the set of facts, not their order, and
// every list in it is sorted. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "analysis/topology_index.h"
#include "proto/ingest.pb.h"
#include "proto/layout.pb.h"

namespace fabricdiag::analysis {

struct DiscoveredTopology {
  // Valid per ValidateTopology: switches with their tier, chassis id and
  // uplinks, host links and switch links, each sorted; `source` unset.
  v1::Topology topology;
  // What could not be drawn, one sentence each, sorted: two ends reporting
  // different cables, a port hearing several neighbors, a name that is not
  // one (a hostile or broken LLDP speaker). Empty on a clean fabric.
  std::vector<std::string> problems;
};

// Draws the topology the nodes' LLDP neighbors describe. `declared` (may be
// null) resolves names only: a system name that is a declared switch's
// chassis_id, a NIC the declared links name by its netdev rather than its
// RDMA device. Null entries of `facts` are skipped.
DiscoveredTopology DiscoverTopology(
    const std::vector<const v1::NodeFacts*>& facts,
    const v1::Topology* declared);

// What the analyzers use: the declared switches, links and switch links
// (source DECLARED), plus what is discovered and not declared (source
// DISCOVERED): a link of a host NIC and a switch port no declared link or
// uplink uses, a switch not declared, the uplinks of a declared switch that
// declares none, the tier of every switch. `declared` may be null (no
// topology file): the discovered topology, every link's source set.
v1::Topology EffectiveTopology(const v1::Topology* declared,
                               const v1::Topology& discovered);

// One way the cabling differs from its declaration. `near` is the end the
// difference is about (a host NIC, or the first switch port of a switch
// link); `declared` and `observed` are the far ends, the one a kind does not
// have left empty.
struct TopologyDifference {
  enum class Kind {
    kMissing,  // declared; LLDP reports nothing on `near` (not wrong)
    kExtra,    // discovered; not declared
    kMoved,    // declared; LLDP hears another far end on `near`
  };
  Kind kind = Kind::kMissing;
  LinkEnd near;
  LinkEnd declared;
  LinkEnd observed;

  // One line naming both ends, e.g. "moved: gpu-001 mlx5_0 is cabled to
  // leaf-2 swp7, declared leaf-1 swp3".
  std::string Describe() const;

  friend bool operator==(const TopologyDifference& a,
                         const TopologyDifference& b) {
    return a.kind == b.kind && a.near == b.near && a.declared == b.declared &&
           a.observed == b.observed;
  }
};

// "missing", "extra" or "moved".
const char* KindName(TopologyDifference::Kind kind);

// Declared against discovered, host links then switch links, each sorted by
// its near end. A host link is keyed by (host, NIC), a switch link by
// either of its ports; build `discovered` with `declared` so that both name
// NICs alike.
std::vector<TopologyDifference> DiffTopology(const v1::Topology& declared,
                                             const v1::Topology& discovered);

}  // namespace fabricdiag::analysis
