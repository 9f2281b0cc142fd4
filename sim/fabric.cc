#include "sim/fabric.h"

#include <algorithm>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/names.h"

namespace fabricdiag::sim {
namespace {

// Names become directory names under --out: refuse the two that would walk
// the tree (the layout/topology parsers already restrict the alphabet).
absl::Status CheckPathName(absl::string_view what, absl::string_view name) {
  if (name.empty() || name == "." || name == ".." ||
      name.find('/') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", QuoteForMessage(name),
                     " cannot be used as a directory name"));
  }
  return absl::OkStatus();
}

// Every host in first-seen order (layouts, then links) with the NICs its
// ranks and its links name.
struct HostNics {
  std::vector<std::string> order;
  std::map<std::string, std::set<std::string, NaturalCompare>> nics;
};

HostNics CollectHostNics(const std::vector<analysis::LayoutModel>& layouts,
                         const v1::Topology& topology) {
  HostNics out;
  auto add_host = [&out](const std::string& host) {
    if (out.nics.count(host) == 0) {
      out.order.push_back(host);
      out.nics.emplace(host, std::set<std::string, NaturalCompare>());
    }
    return &out.nics.at(host);
  };
  for (const analysis::LayoutModel& layout : layouts) {
    for (uint32_t r = 0; r < layout.WorldSize(); ++r) {
      auto* nics = add_host(layout.HostName(r));
      absl::string_view nic = layout.NicName(r);
      if (!nic.empty()) nics->insert(std::string(nic));
    }
  }
  for (const v1::Link& link : topology.links()) {
    add_host(link.host())->insert(link.nic());
  }
  return out;
}

}  // namespace

bool NaturalLess(absl::string_view a, absl::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = absl::ascii_isdigit(static_cast<unsigned char>(a[i]));
    const bool db = absl::ascii_isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      size_t ei = i, ej = j;
      while (ei < a.size() &&
             absl::ascii_isdigit(static_cast<unsigned char>(a[ei]))) {
        ++ei;
      }
      while (ej < b.size() &&
             absl::ascii_isdigit(static_cast<unsigned char>(b[ej]))) {
        ++ej;
      }
      absl::string_view na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;  // equal under natural order ("a01" vs "a1"): bytewise
}

absl::Status Fabric::AddHost(const std::string& host,
                             std::set<std::string, NaturalCompare> nics) {
  absl::Status st = CheckPathName("host", host);
  if (!st.ok()) return st;
  if (nics.empty()) {
    for (int i = 0; i < kDefaultNicsPerHost; ++i) {
      nics.insert(absl::StrCat("mlx5_", i));
    }
  }
  SimNode node;
  node.name = host;
  const size_t host_index = hosts_.size();
  int position = 0;
  for (const std::string& nic : nics) {
    st = CheckPathName(absl::StrCat("nic of ", host), nic);
    if (!st.ok()) return st;
    SimNic n;
    n.host = host;
    n.rdma_device = nic;
    n.netdev = absl::StrCat("eth", position++);
    n.host_index = host_index;
    nic_index_[{host, nic}] = nics_.size();
    node.members.push_back(nics_.size());
    nics_.push_back(std::move(n));
  }
  host_index_[host] = host_index;
  hosts_.push_back(std::move(node));
  return absl::OkStatus();
}

absl::Status Fabric::AddSwitch(const v1::Switch& sw) {
  absl::Status st = CheckPathName("switch", sw.name());
  if (!st.ok()) return st;
  std::set<std::string, NaturalCompare> ports;
  std::set<std::string> uplinks(sw.uplinks().begin(), sw.uplinks().end());
  ports.insert(uplinks.begin(), uplinks.end());
  for (const v1::Link& link : topology_.links()) {
    if (link.switch_() == sw.name()) ports.insert(link.port());
  }
  const size_t switch_index = switches_.size();
  SimNode node;
  node.name = sw.name();
  for (const std::string& port : ports) {
    st = CheckPathName(absl::StrCat("port of ", sw.name()), port);
    if (!st.ok()) return st;
    SimPort p;
    p.switch_name = sw.name();
    p.port = port;
    p.switch_index = switch_index;
    p.uplink = uplinks.count(port) > 0;
    port_index_[{sw.name(), port}] = ports_.size();
    node.members.push_back(ports_.size());
    ports_.push_back(std::move(p));
  }
  switch_index_[sw.name()] = switch_index;
  switches_.push_back(std::move(node));
  return absl::OkStatus();
}

void Fabric::Connect() {
  for (const v1::Link& link : topology_.links()) {
    auto nic = nic_index_.find({link.host(), link.nic()});
    auto port = port_index_.find({link.switch_(), link.port()});
    if (nic == nic_index_.end() || port == port_index_.end()) continue;
    nics_[nic->second].switch_port = port->second;
    ports_[port->second].nic = nic->second;
  }
}

absl::StatusOr<Fabric> Fabric::Build(std::vector<analysis::LayoutModel> layouts,
                                     const v1::Topology& topology) {
  Fabric f;
  f.layouts_ = std::move(layouts);
  f.topology_ = topology;
  HostNics hosts = CollectHostNics(f.layouts_, topology);
  for (const std::string& host : hosts.order) {
    absl::Status st = f.AddHost(host, std::move(hosts.nics.at(host)));
    if (!st.ok()) return st;
  }
  for (const v1::Switch& sw : topology.switches()) {
    absl::Status st = f.AddSwitch(sw);
    if (!st.ok()) return st;
  }
  f.Connect();
  return f;
}

std::optional<size_t> Fabric::FindHost(absl::string_view host) const {
  auto it = host_index_.find(host);
  if (it == host_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> Fabric::FindNic(absl::string_view host,
                                      absl::string_view nic) const {
  auto it = nic_index_.find({std::string(host), std::string(nic)});
  if (it == nic_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> Fabric::FindSwitch(absl::string_view name) const {
  auto it = switch_index_.find(name);
  if (it == switch_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> Fabric::FindPort(absl::string_view switch_name,
                                       absl::string_view port) const {
  auto it = port_index_.find({std::string(switch_name), std::string(port)});
  if (it == port_index_.end()) return std::nullopt;
  return it->second;
}

}  // namespace fabricdiag::sim
