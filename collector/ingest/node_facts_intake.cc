#include "collector/ingest/node_facts_intake.h"

#include <string>

namespace fabricdiag::collector {

v1::NodeFacts FactsOfInventory(absl::string_view node, bool is_switch,
                               const v1::Inventory& inventory, absl::Time now) {
  v1::NodeFacts facts;
  facts.set_node(std::string(node));
  facts.set_reported_unix_nanos(absl::ToUnixNanos(now));
  facts.set_is_switch(is_switch);
  facts.set_lldp_source(inventory.lldp_source());
  // Neighbors only with a source: without one the sender says it did not
  // read LLDP, and whatever it lists is not its neighbor set.
  if (!inventory.lldp_source().empty()) {
    *facts.mutable_lldp_neighbors() = inventory.lldp_neighbors();
  }
  facts.set_gpus_read(inventory.gpus_read());
  if (inventory.gpus_read()) *facts.mutable_gpu_nics() = inventory.gpu_nics();
  auto& of_netdev = *facts.mutable_rdma_device_of_netdev();
  for (const v1::RdmaPort& p : inventory.rdma_ports()) {
    for (const std::string& n : p.netdevs()) {
      if (!n.empty() && !p.device().empty()) of_netdev[n] = p.device();
    }
  }
  // A netdev's own word wins over the port lists: it is the kernel's link.
  for (const v1::Netdev& n : inventory.netdevs()) {
    if (!n.name().empty() && !n.rdma_device().empty()) {
      of_netdev[n.name()] = n.rdma_device();
    }
  }
  // A Linux switch running the agent: its ports are netdevs (swp1...) and
  // it has no RDMA device, where a GPU host's fabric NICs are RDMA devices.
  if (inventory.netdevs_size() > 0 && inventory.rdma_devices_size() == 0 &&
      of_netdev.empty()) {
    facts.set_is_switch(true);
  }
  return facts;
}

bool TopologySwitches::IsSwitch(absl::string_view node) const {
  std::shared_ptr<const RegistrySnapshot> snap = registry_.Snapshot();
  absl::MutexLock lock(&mu_);
  if (snap->topology != seen_) {
    seen_ = snap->topology;
    names_.clear();
    if (seen_ != nullptr) {
      for (const v1::Switch& s : seen_->switches()) names_.insert(s.name());
    }
  }
  return names_.contains(node);
}

}  // namespace fabricdiag::collector
