// What the ingest learns of a node from its Inventory that outlives the
// stream: the node's NodeFacts (its LLDP neighbors, GPU-NIC pairs and which
// RDMA device each netdev belongs to), recorded in the NodeFactsStore
// (collector/declared/node_facts.h) that the discovered topology and the
// layouts' NIC filling read.
//
//   MemoryNodeFacts facts;
//   NoDeclaredSwitches none;
//   NodeFactsIntake intake{facts, none};
//   IngestSession session(&series, &counters, placement, intake);
//
// Thread-safe where its parts are (both are).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/declared/layout_registry.h"
#include "collector/declared/node_facts.h"
#include "proto/ingest.pb.h"

namespace fabricdiag::collector {

// Whether the declared topology lists a node as a switch (a Linux switch
// running the agent reports like a host otherwise).
class DeclaredSwitches {
 public:
  virtual ~DeclaredSwitches() = default;
  virtual bool IsSwitch(absl::string_view node) const = 0;
};

// No topology: no node is declared a switch.
class NoDeclaredSwitches final : public DeclaredSwitches {
 public:
  bool IsSwitch(absl::string_view /*node*/) const override { return false; }
};

// The switches of the topology the registry serves, re-read when another
// topology is applied (a set lookup otherwise).
class TopologySwitches final : public DeclaredSwitches {
 public:
  // `registry` must outlive this object.
  explicit TopologySwitches(const LayoutRegistry& registry)
      : registry_(registry) {}
  bool IsSwitch(absl::string_view node) const override;

 private:
  const LayoutRegistry& registry_;
  mutable absl::Mutex mu_;
  mutable std::shared_ptr<const v1::Topology> seen_ ABSL_GUARDED_BY(mu_);
  mutable absl::flat_hash_set<std::string> names_ ABSL_GUARDED_BY(mu_);
};

// Where an ingest session records its node's facts. Both must outlive the
// sessions.
struct NodeFactsIntake {
  NodeFactsStore& store;
  const DeclaredSwitches& switches;
};

// The Hello.agent_version prefix of the gNMI bridge, which streams one
// switch per stream.
inline constexpr char kBridgeAgentVersionPrefix[] = "gnmi-bridge";

// The facts `inventory` states about `node`, as reported at `now`.
// `is_switch`: the sender is the gNMI bridge or the topology lists the node
// as a switch; an agent whose inventory has netdevs and no RDMA device (a
// Linux switch) is one too. rdma_device_of_netdev comes from the inventory's
// netdevs and RDMA ports (a netdev that names its RDMA device, or an RDMA port
// that names its netdevs). The store sanitizes and merges (node_facts_cache.h).
v1::NodeFacts FactsOfInventory(absl::string_view node, bool is_switch,
                               const v1::Inventory& inventory, absl::Time now);

}  // namespace fabricdiag::collector
