#include "sim/virtual_node.h"

#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/counter_desc.h"
#include "agent/rate.h"
#include "agent/report_encoder.h"
#include "agent/sample.h"
#include "counters/counter_table.h"
#include "sim/lldp.h"

namespace fabricdiag::sim {
namespace {

using counters::CounterSpec;
using counters::Family;
using counters::Meaning;

// A healthy RoCE NIC: 30% of a 400 Gb/s link each way in 4 KB packets.
constexpr double kLinkBytesPerSecond = 5e10;
constexpr double kBytes = 0.3 * kLinkBytesPerSecond;
constexpr double kPackets = kBytes / 4096;
// The priority RoCE runs on, the only one with PFC.
constexpr int kRocePriority = 3;
// A switch port's MTU: room for a 9000-byte host MTU plus headers.
constexpr uint64_t kSwitchMtu = 9216;

// Per second, in base units: traffic, a little PFC pause on the RoCE
// priority, a few CNPs; 0 for errors, drops and idle priorities.
double HealthyRate(const agent::SeriesDesc& d) {
  const bool roce_or_total = d.priority < 0 || d.priority == kRocePriority;
  switch (d.meaning) {
    case Meaning::kRdmaBytes:
    case Meaning::kPhyBytes:
      return kBytes;
    case Meaning::kRdmaPackets:
    case Meaning::kPhyPackets:
      return kPackets;
    case Meaning::kPriorityBytes:
      return d.priority == kRocePriority ? kBytes : 0;
    case Meaning::kNetdevBytes:  // the host's own IP traffic; RoCE bypasses
      return 2e5;
    case Meaning::kNetdevPackets:
      return 200;
    case Meaning::kReceivedBits:  // every bit time of the link
      return 8 * kLinkBytesPerSecond;
    case Meaning::kCorrectedBits:  // pre-FEC BER 2.5e-11: healthy
      return 10;
    case Meaning::kCnpSent:
    case Meaning::kCnpHandled:
      return 50;
    case Meaning::kEcnMarked:
      return d.priority < 0 ? 50 : 0;
    case Meaning::kPfcPauseFrames:
      return roce_or_total ? 20 : 0;
    case Meaning::kPfcPauseDuration:  // paused 0.1% of the time
      return roce_or_total ? 1e-3 : 0;
    case Meaning::kPfcPauseTransitions:
      return roce_or_total ? 5 : 0;
    default:
      return 0;
  }
}

class NodeBuilder {
 public:
  explicit NodeBuilder(agent::Snapshot* snapshot) : snapshot_(snapshot) {}

  // The NIC the series added next belong to.
  void SetNic(size_t nic) { nic_ = nic; }

  void Gauge(agent::SeriesDesc d, uint64_t value, VirtualSeries::Gauge shows) {
    VirtualSeries role;
    role.gauge = shows;
    Add(std::move(d), value, role);
  }

  // Every row of `family` the table lists for mlx5: its per-priority PFC
  // counters for the RoCE priority only (mlx5 prints them for priorities
  // with PFC on), other per-priority counters for all 8, no 802.3x global
  // pause (off while PFC runs). A switch port's (`switch_port`) netdev
  // counts the wire, a host's only the kernel stack's traffic.
  void Counters(Family family, agent::Subsystem subsystem,
                const std::string& device, uint32_t port,
                bool switch_port = false) {
    // As the tree writer prints them (sysfs_files.cc): the first spelling
    // of a meaning and direction carries the simulated counter.
    std::set<std::pair<Meaning, counters::Direction>> carried;
    for (const CounterSpec* row :
         counters::RowsFor(family, counters::Driver::kMlx5)) {
      if (absl::StrContains(row->name, "global_pause")) continue;
      std::optional<sim::Counter> counter;
      if (row->meaning != Meaning::kNone &&
          carried.emplace(row->meaning, row->direction).second) {
        counter = CounterOf(family, row->meaning, row->direction, switch_port);
      }
      if (row->meaning == Meaning::kGlobalPauseFrames ||
          row->meaning == Meaning::kGlobalPauseDuration) {
        continue;
      }
      const bool pfc = row->meaning == Meaning::kPfcPauseFrames ||
                       row->meaning == Meaning::kPfcPauseDuration ||
                       row->meaning == Meaning::kPfcPauseTransitions;
      VirtualSeries role;
      role.scale = row->scale;
      role.saturates = family == Family::kIbPma;
      if (!counters::IsPerPriority(*row)) {
        role.counter = counter;
        Counter(subsystem, device, port, counters::ExpandName(*row, -1), role);
        continue;
      }
      for (int p = 0; p < 8; ++p) {
        if (pfc && p != kRocePriority) continue;
        role.counter.reset();
        if (counter.has_value()) {
          role.counter = static_cast<sim::Counter>(*counter + p);
        }
        Counter(subsystem, device, port, counters::ExpandName(*row, p), role);
      }
    }
  }

  std::shared_ptr<const void> owner() const { return descs_; }
  // What each series added shows, in the order added.
  std::vector<VirtualSeries> TakeRoles() { return std::move(roles_); }

 private:
  void Counter(agent::Subsystem subsystem, const std::string& device,
               uint32_t port, std::string name, VirtualSeries role) {
    bool pma_width = false;
    agent::SeriesDesc d =
        agent::DescribeCounter(subsystem, counters::Driver::kMlx5, device, port,
                               std::move(name), &pma_width);
    // ConnectX PMAs have extended width: 64-bit data counters.
    if (pma_width) d.width_bits = 64;
    role.width_bits = d.width_bits;
    Add(std::move(d), 0, role);
  }

  void Add(agent::SeriesDesc d, uint64_t raw, VirtualSeries role) {
    if (d.kind == agent::Kind::kGauge &&
        role.gauge == VirtualSeries::Gauge::kNone) {
      role.gauge = VirtualSeries::Gauge::kOther;
      role.counter.reset();
    }
    descs_->push_back(std::move(d));
    snapshot_->samples.emplace_back(&descs_->back(), raw);
    role.nic = nic_;
    roles_.push_back(role);
  }

  agent::Snapshot* snapshot_;
  size_t nic_ = 0;
  std::vector<VirtualSeries> roles_;  // one per sample
  // A deque: the samples point into it.
  std::shared_ptr<std::deque<agent::SeriesDesc>> descs_ =
      std::make_shared<std::deque<agent::SeriesDesc>>();
};

// The messages the agent's own encoder makes of `snapshot`, the healthy
// rates in its report, and what each series shows (`b`'s roles).
absl::StatusOr<VirtualNode> Encode(agent::Snapshot snapshot, NodeBuilder* b) {
  snapshot.series_owners.push_back(b->owner());
  std::vector<agent::SampleRate> rates(snapshot.samples.size());
  for (size_t i = 0; i < snapshot.samples.size(); ++i) {
    const agent::SeriesDesc& d = *snapshot.samples[i].desc;
    if (d.kind == agent::Kind::kCounter) rates[i].per_second = HealthyRate(d);
  }
  agent::ReportEncoder encoder;
  absl::StatusOr<agent::EncodedReport> encoded =
      encoder.Encode(snapshot, rates);
  if (!encoded.ok()) return encoded.status();
  if (!encoded->new_schema.has_value() || !encoded->new_inventory.has_value()) {
    return absl::InternalError("the encoder emitted no schema or inventory");
  }
  VirtualNode node;
  *node.schema.mutable_schema() = *std::move(encoded->new_schema);
  *node.inventory.mutable_inventory() = *std::move(encoded->new_inventory);
  *node.report.mutable_report() = std::move(encoded->report);
  node.series = static_cast<size_t>(node.schema.schema().series_size());
  const auto& rate = node.report.report().rate();
  for (int i = 0; i < rate.size(); ++i) {
    if (rate[i] > 0) node.moving.push_back(static_cast<uint32_t>(i));
  }
  node.roles = b->TakeRoles();
  const auto& no_rate = node.report.report().no_rate();
  if (node.roles.size() != node.series) {
    return absl::InternalError("the schema's series are not the snapshot's");
  }
  int next_rate = 0;
  auto gauge = no_rate.begin();
  for (size_t i = 0; i < node.roles.size(); ++i) {
    const bool has_rate = gauge == no_rate.end() || *gauge != i;
    if (!has_rate) ++gauge;
    if ((node.roles[i].gauge == VirtualSeries::Gauge::kNone) != has_rate) {
      return absl::InternalError("the encoder's rates are not its counters'");
    }
    node.roles[i].rate_index = has_rate ? next_rate++ : -1;
  }
  return node;
}

}  // namespace

absl::StatusOr<VirtualNode> BuildVirtualNode(int nics) {
  if (nics < 1 || nics > 64) {
    return absl::InvalidArgumentError("nics must be between 1 and 64");
  }
  std::vector<VirtualNic> named;
  named.reserve(static_cast<size_t>(nics));
  for (int nic = 0; nic < nics; ++nic) {
    named.push_back({absl::StrCat("mlx5_", nic), absl::StrCat("eth", nic)});
  }
  return BuildVirtualNode(named);
}

absl::StatusOr<VirtualNode> BuildVirtualNode(
    const std::vector<VirtualNic>& nics) {
  if (nics.empty() || nics.size() > 64) {
    return absl::InvalidArgumentError("nics must be between 1 and 64");
  }
  std::set<std::string> names;
  for (const VirtualNic& n : nics) {
    if (n.rdma_device.empty() || n.netdev.empty() ||
        !names.insert(n.rdma_device).second || !names.insert(n.netdev).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("NIC names must be distinct and not empty: \"",
                       n.rdma_device, "\" on \"", n.netdev, "\""));
    }
  }
  using Shows = VirtualSeries::Gauge;
  agent::Snapshot snapshot;
  NodeBuilder b(&snapshot);
  for (size_t nic = 0; nic < nics.size(); ++nic) {
    b.SetNic(nic);
    const std::string& dev = nics[nic].rdma_device;
    const std::string& eth = nics[nic].netdev;
    std::vector<agent::SeriesDesc> port = agent::RdmaPortAttributeDescs(dev, 1);
    b.Gauge(std::move(port[0]), 4, Shows::kPortState);      // ACTIVE
    b.Gauge(std::move(port[1]), 5, Shows::kPortPhysState);  // LinkUp
    b.Gauge(std::move(port[2]), static_cast<uint64_t>(kLinkBytesPerSecond),
            Shows::kPortRate);
    b.Counters(Family::kIbPma, agent::Subsystem::kRdmaPortCounters, dev, 1);
    b.Counters(Family::kRdmaHw, agent::Subsystem::kRdmaPortHwCounters, dev, 1);
    b.Counters(Family::kNetdevStatistics, agent::Subsystem::kNetdevStatistics,
               eth, 0);
    b.Counters(Family::kNetdevAttribute, agent::Subsystem::kNetdevAttribute,
               eth, 0);
    std::vector<agent::SeriesDesc> net = agent::NetdevAttributeDescs(eth);
    b.Gauge(std::move(net[0]), static_cast<uint64_t>(kLinkBytesPerSecond),
            Shows::kNetdevSpeed);
    b.Gauge(std::move(net[1]), 9000, Shows::kMtu);
    b.Gauge(std::move(net[2]), 1, Shows::kCarrier);
    b.Counters(Family::kEthtool, agent::Subsystem::kEthtool, eth, 0);

    agent::RdmaDeviceInfo device;
    device.name = dev;
    device.fw_ver = "28.39.1002";
    device.board_id = "MT_0000000838";
    device.hca_type = "MT4129";
    device.node_guid = absl::StrFormat("b83f:d203:0000:%04x", nic);
    device.netdevs = {eth};
    snapshot.rdma_devices.push_back(std::move(device));
    agent::RdmaPortInfo rdma_port;
    rdma_port.device = dev;
    rdma_port.port = 1;
    rdma_port.state_id = 4;
    rdma_port.state = "ACTIVE";
    rdma_port.phys_state_id = 5;
    rdma_port.phys_state = "LinkUp";
    rdma_port.rate_bytes_per_second = kLinkBytesPerSecond;
    rdma_port.rate_text = "400 Gb/sec (4X NDR)";
    rdma_port.link_layer = "Ethernet";
    rdma_port.netdevs = {eth};
    snapshot.rdma_ports.push_back(std::move(rdma_port));
    agent::NetdevInfo netdev;
    netdev.name = eth;
    netdev.operstate = "up";
    netdev.rdma_device = dev;
    netdev.rdma_port = 1;
    netdev.speed_bytes_per_second = kLinkBytesPerSecond;
    snapshot.netdevs.push_back(std::move(netdev));
  }
  return Encode(std::move(snapshot), &b);
}

absl::StatusOr<VirtualNode> BuildVirtualSwitch(
    const std::vector<std::string>& ports) {
  if (ports.empty() || ports.size() > kMaxVirtualSwitchPorts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a switch has between 1 and ", kMaxVirtualSwitchPorts, " ports"));
  }
  std::set<std::string> names;
  for (const std::string& port : ports) {
    if (port.empty() || !names.insert(port).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "port names must be distinct and not empty: \"", port, "\""));
    }
  }
  using Shows = VirtualSeries::Gauge;
  agent::Snapshot snapshot;
  NodeBuilder b(&snapshot);
  for (size_t p = 0; p < ports.size(); ++p) {
    b.SetNic(p);
    const std::string& port = ports[p];
    b.Counters(Family::kNetdevStatistics, agent::Subsystem::kNetdevStatistics,
               port, 0, /*switch_port=*/true);
    b.Counters(Family::kNetdevAttribute, agent::Subsystem::kNetdevAttribute,
               port, 0, /*switch_port=*/true);
    std::vector<agent::SeriesDesc> net = agent::NetdevAttributeDescs(port);
    b.Gauge(std::move(net[0]), static_cast<uint64_t>(kLinkBytesPerSecond),
            Shows::kNetdevSpeed);
    b.Gauge(std::move(net[1]), kSwitchMtu, Shows::kMtu);
    b.Gauge(std::move(net[2]), 1, Shows::kCarrier);
    // The tree writer prints a switch port's `ethtool -S` with the NIC's
    // names and meanings.
    b.Counters(Family::kEthtool, agent::Subsystem::kEthtool, port, 0);
    agent::NetdevInfo netdev;
    netdev.name = port;
    netdev.operstate = "up";
    netdev.speed_bytes_per_second = kLinkBytesPerSecond;
    snapshot.netdevs.push_back(std::move(netdev));
  }
  absl::StatusOr<VirtualNode> node = Encode(std::move(snapshot), &b);
  if (node.ok()) node->mtu = kSwitchMtu;
  return node;
}

void AddVirtualLldp(int index, int nics, int hosts_per_leaf,
                    absl::string_view leaf_prefix, v1::Inventory* inventory) {
  const int leaf = index / hosts_per_leaf;
  const int slot = index % hosts_per_leaf;
  const std::string leaf_name = absl::StrFormat("%s%05d", leaf_prefix, leaf);
  inventory->set_lldp_source("file");
  inventory->clear_lldp_neighbors();
  for (int n = 0; n < nics; ++n) {
    *inventory->add_lldp_neighbors() =
        LeafPortNeighbor(absl::StrCat("eth", n), leaf_name,
                         absl::StrCat("swp", slot * nics + n + 1));
  }
}

}  // namespace fabricdiag::sim
