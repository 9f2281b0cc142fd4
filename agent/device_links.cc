#include "agent/device_links.h"

namespace fabricdiag::agent {

std::map<std::string, std::pair<std::string, uint32_t>> MapNetdevsToRdma(
    const std::vector<RdmaPortInfo>& ports,
    const std::vector<RdmaDeviceInfo>& devices) {
  std::map<std::string, std::pair<std::string, uint32_t>> map;
  std::map<std::string, int> port_count;
  std::map<std::string, uint32_t> last_port;
  for (const RdmaPortInfo& port : ports) {
    ++port_count[port.device];
    last_port[port.device] = port.port;
    for (const std::string& netdev : port.netdevs) {
      map.emplace(netdev, std::make_pair(port.device, port.port));
    }
  }
  for (const RdmaDeviceInfo& device : devices) {
    uint32_t port = port_count[device.name] == 1 ? last_port[device.name] : 0;
    for (const std::string& netdev : device.netdevs) {
      map.emplace(netdev, std::make_pair(device.name, port));
    }
  }
  return map;
}

void LinkNetdevsToRdma(Snapshot* snapshot) {
  const std::map<std::string, std::pair<std::string, uint32_t>> links =
      MapNetdevsToRdma(snapshot->rdma_ports, snapshot->rdma_devices);
  for (NetdevInfo& netdev : snapshot->netdevs) {
    auto it = links.find(netdev.name);
    netdev.rdma_device = it == links.end() ? "" : it->second.first;
    netdev.rdma_port = it == links.end() ? 0 : it->second.second;
  }
}

}  // namespace fabricdiag::agent
