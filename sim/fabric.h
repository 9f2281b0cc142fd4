// The simulated fabric: every host NIC and every switch port that
// fabricdiag-sim keeps a sysfs tree for, and how they are cabled.
//
// Hosts are the hosts of every layout plus every host a topology link names.
// A host's NICs are the NICs its ranks use (the layout's rails or explicit
// placements) plus the NICs its topology links name; a host with none gets
// mlx5_0..mlx5_7. NICs are sorted in natural order (mlx5_2 < mlx5_10) and
// NIC i of a host is netdev eth<i>. Switches are the topology's switches;
// their ports are the ports of their links plus their uplinks, sorted.
//
//   ASSIGN_OR_RETURN(Fabric fabric, Fabric::Build(std::move(layouts),
//                                                 topology));
//   std::optional<size_t> nic = fabric.FindNic("gpu-003", "mlx5_2");
//   const SimNic& n = fabric.nics()[*nic];   // n.netdev == "eth2"
//
// Immutable once built; thread-safe for readers.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/layout_model.h"
#include "proto/layout.pb.h"

namespace fabricdiag::sim {

// NICs given to a host that no layout or link names one for.
inline constexpr int kDefaultNicsPerHost = 8;

struct SimNic {
  std::string host;
  std::string rdma_device;            // "mlx5_2"
  std::string netdev;                 // "eth2"
  size_t host_index = 0;              // into Fabric::hosts()
  std::optional<size_t> switch_port;  // into Fabric::ports(), when cabled
};

struct SimPort {
  std::string switch_name;
  std::string port;  // "swp1"
  size_t switch_index = 0;
  bool uplink = false;
  std::optional<size_t> nic;  // into Fabric::nics(), for host-facing ports
};

struct SimNode {
  std::string name;
  std::vector<size_t> members;  // NIC indices (hosts) or port indices
};

// Natural order: "mlx5_2" < "mlx5_10", "swp9" < "swp49".
bool NaturalLess(absl::string_view a, absl::string_view b);
struct NaturalCompare {
  bool operator()(const std::string& a, const std::string& b) const {
    return NaturalLess(a, b);
  }
};

class Fabric {
 public:
  // InvalidArgument when a name cannot be a directory name ("." or ".."),
  // or when a host has more NICs than it can have netdevs for.
  static absl::StatusOr<Fabric> Build(
      std::vector<analysis::LayoutModel> layouts, const v1::Topology& topology);

  const std::vector<analysis::LayoutModel>& layouts() const { return layouts_; }
  const v1::Topology& topology() const { return topology_; }
  const std::vector<SimNode>& hosts() const { return hosts_; }
  const std::vector<SimNode>& switches() const { return switches_; }
  const std::vector<SimNic>& nics() const { return nics_; }
  const std::vector<SimPort>& ports() const { return ports_; }

  std::optional<size_t> FindHost(absl::string_view host) const;
  std::optional<size_t> FindNic(absl::string_view host,
                                absl::string_view nic) const;
  std::optional<size_t> FindSwitch(absl::string_view name) const;
  std::optional<size_t> FindPort(absl::string_view switch_name,
                                 absl::string_view port) const;

 private:
  Fabric() = default;

  // Adds a host and its NICs (mlx5_0..mlx5_7 when it has none).
  absl::Status AddHost(const std::string& host,
                       std::set<std::string, NaturalCompare> nics);
  // Adds a switch with the ports of its links and its uplinks.
  absl::Status AddSwitch(const v1::Switch& sw);
  // Records which port each NIC is cabled to, for links whose both ends exist.
  void Connect();

  std::vector<analysis::LayoutModel> layouts_;
  v1::Topology topology_;
  std::vector<SimNode> hosts_;
  std::vector<SimNode> switches_;
  std::vector<SimNic> nics_;
  std::vector<SimPort> ports_;
  std::map<std::string, size_t, std::less<>> host_index_;
  std::map<std::string, size_t, std::less<>> switch_index_;
  std::map<std::pair<std::string, std::string>, size_t> nic_index_;
  std::map<std::pair<std::string, std::string>, size_t> port_index_;
};

}  // namespace fabricdiag::sim
