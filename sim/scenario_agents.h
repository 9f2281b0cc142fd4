// The hosts of a simulated fabric as the virtual agents send them
// (`fabricdiag-sim --virtual_agents` with --layout/--topology/--scenario):
// each host's agent messages with the counters of the counter model
// (counter_model.h) instead of the virtual node's healthy template, so a
// collector cluster can be driven by scenario traffic, faults included, at
// a scale no set of real agents on one machine reaches.
//
// Each host's Inventory and Schema are a virtual node's (virtual_node.h)
// for the host's NICs as the fabric names them, the Inventory with the LLDP
// neighbors the host hears over the cabling at time 0 (lldp.h). Each
// Advance() moves simulated time on by one interval: every NIC's counters
// accumulate the model's rates, link transitions included, and each host's
// next Report carries the raw values the tree writer would print for them
// and the per-second rates an agent would compute between two reads.
// Gauges follow the link: port state and phys state, rate, netdev speed and
// carrier; so does the Inventory, whose version moves when one of the
// host's links changes state or speed (an agent sends its Inventory again
// then). What the files would show but the virtual agents do not:
//   - a cable moved by a miscabling fault after time 0 (the LLDP is that
//     of time 0);
//   - a NIC that goes (nic_gone): its series stay, read 0 and link down;
//   - the switches: only hosts have agents here.
//
//   ASSIGN_OR_RETURN(auto traffic, ScenarioTraffic::Create(
//                                      std::move(fabric), scenario, seed));
//   traffic->Advance(1.0);                 // simulated [0 s, 1 s)
//   v1::Report r;
//   traffic->FillReport(/*host=*/3, &r);   // then set seq and times
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

class ScenarioTraffic {
 public:
  // InvalidArgument when the fabric has no host, a host has more than 64
  // NICs, or the scenario names what the fabric does not have.
  static absl::StatusOr<std::unique_ptr<ScenarioTraffic>> Create(
      std::unique_ptr<const Fabric> fabric, Scenario scenario, uint64_t seed);

  size_t num_hosts() const { return hosts_.size(); }
  const std::string& HostName(size_t host) const;
  // The host's Inventory (with its LLDP) as of the last Advance(), and its
  // version (from 1); thread-safe.
  std::shared_ptr<const v1::AgentMessage> Inventory(size_t host,
                                                    uint64_t* version) const;
  const v1::AgentMessage& Schema(size_t host) const;
  size_t SeriesOf(size_t host) const;

  // Simulated time moves on by `dt` (> 0) seconds.
  void Advance(double dt);
  // Seconds of simulated time passed.
  double now() const;

  // The host's report for the last Advance(): schema_id, raw values and
  // rates; seq and times 0. Before the first Advance(): every counter and
  // every rate 0.
  void FillReport(size_t host, v1::Report* report) const;

  const Fabric& fabric() const { return *fabric_; }

 private:
  struct Host {
    std::string name;
    std::vector<size_t> nics;  // into Fabric::nics(), the node's NIC order
    std::shared_ptr<const VirtualNode> node;
    v1::AgentMessage inventory;  // at time 0, every link up at full speed
  };
  // What an Inventory says of a NIC's link.
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

  ScenarioTraffic(std::unique_ptr<const Fabric> fabric, CounterModel model);
  // Host `h`'s Inventory with its NICs' links in `links` (by Fabric::nics()).
  std::shared_ptr<const v1::AgentMessage> BuildInventory(
      size_t h, const std::vector<LinkState>& links) const;
  // Every host's report from the counters before and after `dt` seconds.
  std::shared_ptr<const Reports> BuildReports(
      const FabricRates& rates, const std::vector<PortCounters>& before,
      double dt) const;

  std::unique_ptr<const Fabric> fabric_;
  CounterModel model_;
  std::vector<Host> hosts_;
  // Advance()'s own: every NIC's accumulated counters, and the time.
  std::vector<PortCounters> counters_;
  std::vector<LinkState> links_;  // per NIC, as the Inventories say
  double now_ = 0;

  mutable std::mutex mu_;
  std::shared_ptr<const Reports> reports_ ABSL_GUARDED_BY(mu_);
  std::vector<PublishedInventory> inventories_ ABSL_GUARDED_BY(mu_);
  double published_now_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fabricdiag::sim
