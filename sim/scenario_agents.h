// The nodes of a simulated fabric as the virtual agents send them
// (`fabricdiag-sim --virtual_agents` with --layout/--topology/--scenario):
// each node's agent messages with the counters of the counter model
// (counter_model.h) instead of the virtual node's healthy template, so a
// collector cluster can be driven by scenario traffic, faults included, at
// a scale no set of real agents on one machine reaches.
//
// The nodes with agents are the fabric's first `ScenarioAgents::hosts`
// hosts and, with `ScenarioAgents::switches`, then every switch of its
// topology, as an agent on a Linux switch sends it. Each node's Inventory
// and Schema are a virtual node's (virtual_node.h) for the host's NICs or
// the switch's ports as the fabric names them, the Inventory with the LLDP
// neighbors the node hears over the cabling at time 0 (lldp.h). Each
// Advance() moves simulated time on by one interval: every NIC's and
// port's counters accumulate the model's rates, link transitions included,
// and each node's next Report carries the raw values the tree writer would
// print for them and the per-second rates an agent would compute between
// two reads. Gauges follow the link: port state and phys state, rate,
// netdev speed and carrier; so does the Inventory, whose version moves when
// one of the node's links changes state or speed (an agent sends its
// Inventory again then). What the files would show but the virtual agents
// do not:
//   - a cable moved by a miscabling fault after time 0 (the LLDP is that
//     of time 0);
//   - a NIC that goes (nic_gone): its series stay, read 0 and link down.
//
//   ASSIGN_OR_RETURN(auto traffic, ScenarioTraffic::Create(
//                                      std::move(fabric), scenario, seed));
//   traffic->Advance(1.0);                 // simulated [0 s, 1 s)
//   v1::Report r;
//   traffic->FillReport(/*node=*/3, &r);   // then set seq and times
//
// Advance() must not run concurrently with itself; everything else is
// thread-safe, FillReport() also during an Advance().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "proto/ingest.pb.h"
#include "sim/counter_model.h"
#include "sim/fabric.h"
#include "sim/port_counters.h"
#include "sim/scenario.h"
#include "sim/virtual_node.h"

namespace fabricdiag::sim {

// Which nodes of the fabric have agents.
struct ScenarioAgents {
  static constexpr size_t kAllHosts = ~size_t{0};
  size_t hosts = kAllHosts;  // the first this many, in Fabric::hosts() order
  bool switches = false;     // every switch of the topology, after the hosts
};

class ScenarioTraffic {
 public:
  // InvalidArgument when the fabric has no host, fewer hosts than
  // `agents.hosts`, a host with more than 64 NICs or a switch with more
  // than kMaxVirtualSwitchPorts ports, or when the scenario names what the
  // fabric does not have.
  static absl::StatusOr<std::unique_ptr<ScenarioTraffic>> Create(
      std::unique_ptr<const Fabric> fabric, Scenario scenario, uint64_t seed,
      ScenarioAgents agents = {});

  // The nodes with agents: hosts first (num_hosts() of them), then the
  // switches.
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_hosts() const { return num_hosts_; }
  const std::string& NodeName(size_t node) const;
  // The node's Inventory (with its LLDP) as of the last Advance(), and its
  // version (from 1); thread-safe.
  std::shared_ptr<const v1::AgentMessage> Inventory(size_t node,
                                                    uint64_t* version) const;
  const v1::AgentMessage& Schema(size_t node) const;
  size_t SeriesOf(size_t node) const;

  // Simulated time moves on by `dt` (> 0) seconds.
  void Advance(double dt);
  // Seconds of simulated time passed.
  double now() const;

  // The node's report for the last Advance(): schema_id, raw values and
  // rates; seq and times 0. Before the first Advance(): every counter and
  // every rate 0.
  void FillReport(size_t node, v1::Report* report) const;

  const Fabric& fabric() const { return *fabric_; }

 private:
  struct Node {
    std::string name;
    bool is_switch = false;
    // Into Fabric::nics() (a host's, in its NIC order) or Fabric::ports()
    // (a switch's): the links of the node, in the order of its VirtualNode.
    std::vector<size_t> links;
    std::shared_ptr<const VirtualNode> node;
    v1::AgentMessage inventory;  // at time 0, every link up at full speed
  };
  // What an Inventory says of a NIC's or a switch port's link.
  struct LinkState {
    bool up = true;
    int speed_gbps = 400;
    bool operator==(const LinkState& o) const {
      return up == o.up && speed_gbps == o.speed_gbps;
    }
  };
  struct PublishedInventory {
    uint64_t version = 1;
    std::shared_ptr<const v1::AgentMessage> message;
  };
  using Reports = std::vector<v1::Report>;

  // The counters, rates and link states of a node's links: host NICs' and
  // switch ports' apart, each indexed as the fabric indexes them.
  template <typename T>
  struct PerLink {
    std::vector<T> nics;
    std::vector<T> ports;
    const std::vector<T>& Of(const Node& n) const {
      return n.is_switch ? ports : nics;
    }
  };

  ScenarioTraffic(std::unique_ptr<const Fabric> fabric, CounterModel model);
  // Adds the fabric's first `hosts` hosts, then (with `switches`) its
  // switches.
  absl::Status AddNodes(size_t hosts, bool switches);
  // Node `n`'s Inventory with its links in the states `links` gives.
  std::shared_ptr<const v1::AgentMessage> BuildInventory(
      size_t n, const PerLink<LinkState>& links) const;
  // Every node's report from the counters before and after `dt` seconds.
  std::shared_ptr<const Reports> BuildReports(
      const FabricRates& rates, const PerLink<PortCounters>& before,
      double dt) const;

  std::unique_ptr<const Fabric> fabric_;
  CounterModel model_;
  std::vector<Node> nodes_;
  size_t num_hosts_ = 0;
  // Advance()'s own: every NIC's and port's accumulated counters (the
  // ports' only when switches have agents), and the time.
  PerLink<PortCounters> counters_;
  PerLink<LinkState> links_;  // as the Inventories say
  double now_ = 0;

  mutable std::mutex mu_;
  std::shared_ptr<const Reports> reports_ ABSL_GUARDED_BY(mu_);
  std::vector<PublishedInventory> inventories_ ABSL_GUARDED_BY(mu_);
  double published_now_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fabricdiag::sim
