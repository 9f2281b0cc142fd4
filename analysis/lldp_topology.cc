#include "analysis/lldp_topology.h"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/names.h"

namespace fabricdiag::analysis {
namespace {

using NameSet = absl::flat_hash_set<std::string>;
using PortKey = std::pair<std::string, std::string>;  // (node, port or NIC)

absl::string_view ShortName(absl::string_view name) {
  return name.substr(0, name.find('.'));
}

// "aa:bb:cc:dd:ee:ff" (or with dashes): a MAC address, never an interface
// name even where the alphabet would allow it.
bool LooksLikeMac(absl::string_view s) {
  if (s.size() != 17) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i % 3 == 2) {
      if (s[i] != ':' && s[i] != '-') return false;
    } else if (!absl::ascii_isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

bool LooksLikeInterface(absl::string_view s) {
  return IsValidDeviceName(s) && !LooksLikeMac(s) &&
         absl::ascii_isalpha(static_cast<unsigned char>(s[0]));
}

// The neighbor's port as an interface name. lldpd sends a port id of type
// "mac" with the interface name in the description unless configured
// otherwise (lldpcli `configure lldp portidsubtype`); some switch operating
// systems send type "local" with an SNMP index. Either way the description
// names the port when it looks like an interface.
std::optional<std::string> NeighborPort(const v1::LldpNeighbor& n) {
  const bool id_is_opaque =
      n.port_id_type() == "mac" || n.port_id_type() == "local";
  const std::string* candidates[2] = {&n.port_id(), &n.port_description()};
  if (id_is_opaque) std::swap(candidates[0], candidates[1]);
  for (const std::string* c : candidates) {
    if (c == &n.port_id() && n.port_id_type() == "mac") continue;
    if (LooksLikeInterface(*c)) return *c;
  }
  return std::nullopt;
}

std::string Shown(absl::string_view s) {
  return IsValidDeviceName(s) || IsValidNodeName(s) ? std::string(s)
                                                    : QuoteForMessage(s);
}

// Resolves LLDP system names and chassis ids to node names.
class Names {
 public:
  Names(const std::map<std::string, const v1::NodeFacts*>& facts,
        const v1::Topology* declared) {
    for (const auto& [node, f] : facts) {
      (f->is_switch() ? switches_ : hosts_).insert(node);
    }
    if (declared != nullptr) {
      for (const v1::Switch& sw : declared->switches()) {
        switches_.insert(sw.name());
        if (!sw.chassis_id().empty()) {
          chassis_.emplace(absl::AsciiStrToLower(sw.chassis_id()), sw.name());
        }
      }
      for (const v1::Link& link : declared->links()) {
        if (!switches_.contains(link.host())) hosts_.insert(link.host());
        declared_nics_.emplace(link.host(), link.nic());
      }
    }
    for (const NameSet* set : {&hosts_, &switches_}) {
      for (const std::string& name : *set) {
        by_short_[std::string(ShortName(name))].insert(name);
      }
    }
  }

  bool IsHost(const std::string& name) const { return hosts_.contains(name); }

  // The node `n` names, or nullopt with the reason in *why.
  std::optional<std::string> Resolve(const v1::LldpNeighbor& n,
                                     std::string* why) const {
    const std::string& name = n.system_name();
    if (hosts_.contains(name) || switches_.contains(name)) return name;
    if (!n.chassis_id().empty()) {
      auto it = chassis_.find(absl::AsciiStrToLower(n.chassis_id()));
      if (it != chassis_.end()) return it->second;
    }
    if (name.empty()) {
      *why = absl::StrCat("no system name and chassis id ",
                          Shown(n.chassis_id()), " is no switch's chassis_id");
      return std::nullopt;
    }
    if (!IsValidNodeName(name)) {
      *why = absl::StrCat("system name ", QuoteForMessage(name),
                          " is not a node name");
      return std::nullopt;
    }
    // An FQDN where the node is known by its short name, or the other way
    // round: the first label decides when one known node has it.
    auto it = by_short_.find(ShortName(name));
    if (it != by_short_.end()) {
      if (it->second.size() == 1) return *it->second.begin();
      *why = absl::StrCat("system name ", name, " could be any of ",
                          absl::StrJoin(it->second, ", "));
      return std::nullopt;
    }
    return name;  // a node that neither reports nor is declared
  }

  // How `host` names the NIC whose netdev is `netdev`: as the declared links
  // do, else by its RDMA device, else by the netdev.
  std::string NicName(const std::string& host, const std::string& netdev,
                      const v1::NodeFacts* host_facts) const {
    if (declared_nics_.contains(PortKey(host, netdev))) return netdev;
    if (host_facts != nullptr) {
      auto it = host_facts->rdma_device_of_netdev().find(netdev);
      if (it != host_facts->rdma_device_of_netdev().end() &&
          IsValidDeviceName(it->second)) {
        return it->second;
      }
    }
    return netdev;
  }

 private:
  NameSet hosts_;
  NameSet switches_;
  absl::flat_hash_map<std::string, std::string> chassis_;  // lower-case id
  std::map<std::string, std::set<std::string>, std::less<>> by_short_;
  absl::flat_hash_set<PortKey> declared_nics_;
};

// One cable as someone reported it. For a host link `a` is the host NIC and
// `b` the switch port; for a switch link `a` < `b`.
struct Cable {
  PortKey a;
  PortKey b;
  // Who reported it: the node at end a, at end b.
  bool by_a = false;
  bool by_b = false;

  int Reports() const { return (by_a ? 1 : 0) + (by_b ? 1 : 0); }
};

std::string Reporters(const Cable& c) {
  if (c.by_a && c.by_b) return absl::StrCat(c.a.first, " and ", c.b.first);
  return c.by_a ? c.a.first : c.b.first;
}

std::string CableText(const Cable& c) {
  return absl::StrCat(c.a.first, " ", c.a.second, " - ", c.b.first, " ",
                      c.b.second, " (reported by ", Reporters(c), ")");
}

// The cables reported, merged where both ends report the same one.
class CableReports {
 public:
  void Add(PortKey a, PortKey b, bool by_a, bool canonical_order) {
    if (canonical_order && b < a) {
      std::swap(a, b);
      by_a = !by_a;
    }
    Cable& c = cables_[std::make_pair(a, b)];
    c.a = std::move(a);
    c.b = std::move(b);
    (by_a ? c.by_a : c.by_b) = true;
  }

  // Keeps the cables no better-supported cable contradicts (a cable both
  // ends report beats one only `a` reports, which beats one only `b`
  // reports; then name order), none using a port of `*used`; adds the ports
  // kept to `*used` and a problem per cable dropped.
  std::vector<Cable> Settle(std::set<PortKey>* used,
                            std::vector<std::string>* problems) const {
    std::vector<const Cable*> order;
    order.reserve(cables_.size());
    for (const auto& [key, c] : cables_) order.push_back(&c);
    std::stable_sort(order.begin(), order.end(),
                     [](const Cable* x, const Cable* y) {
                       return std::make_tuple(-x->Reports(), !x->by_a) <
                              std::make_tuple(-y->Reports(), !y->by_a);
                     });
    std::map<PortKey, const Cable*> kept_at;
    std::vector<Cable> kept;
    for (const Cable* c : order) {
      const PortKey* taken = used->count(c->a) > 0   ? &c->a
                             : used->count(c->b) > 0 ? &c->b
                                                     : nullptr;
      if (taken != nullptr) {
        auto other = kept_at.find(*taken);
        problems->push_back(
            absl::StrCat(CableText(*c), " contradicts ",
                         other != kept_at.end()
                             ? absl::StrCat(CableText(*other->second), ", kept")
                             : absl::StrCat("a host link of ", taken->first,
                                            " ", taken->second)));
        continue;
      }
      used->insert(c->a);
      used->insert(c->b);
      kept_at.emplace(c->a, c);
      kept_at.emplace(c->b, c);
      kept.push_back(*c);
    }
    std::sort(kept.begin(), kept.end(), [](const Cable& x, const Cable& y) {
      return std::tie(x.a, x.b) < std::tie(y.a, y.b);
    });
    return kept;
  }

 private:
  std::map<std::pair<PortKey, PortKey>, Cable> cables_;
};

// The one far end a port hears, or nullopt with a problem when it hears
// several or none that resolves.
std::optional<std::pair<std::string, std::string>> OnlyNeighbor(
    const Names& names, const std::string& node, const std::string& port,
    const std::vector<const v1::LldpNeighbor*>& heard,
    std::vector<std::string>* problems) {
  std::set<std::pair<std::string, std::string>> ends;
  for (const v1::LldpNeighbor* n : heard) {
    std::string why;
    std::optional<std::string> far = names.Resolve(*n, &why);
    std::optional<std::string> far_port = NeighborPort(*n);
    if (!far.has_value()) {
      problems->push_back(absl::StrCat(node, " ", port, ": ", why));
      continue;
    }
    if (!far_port.has_value()) {
      problems->push_back(absl::StrCat(
          node, " ", port, ": the port of ", *far, " (id ",
          QuoteForMessage(n->port_id()), ", description ",
          QuoteForMessage(n->port_description()), ") names no interface"));
      continue;
    }
    ends.emplace(*std::move(far), *std::move(far_port));
  }
  if (ends.size() > 1) {
    problems->push_back(absl::StrCat(
        node, " ", port, " hears ", ends.size(), " neighbors (",
        ends.begin()->first, " ", ends.begin()->second, ", ",
        std::next(ends.begin())->first, " ", std::next(ends.begin())->second,
        ends.size() > 2 ? ", ..." : "", "): none is taken"));
    return std::nullopt;
  }
  if (ends.empty()) return std::nullopt;
  return *ends.begin();
}

// Tier 1 for the leaves, then one more per hop over the switch links; each
// switch's uplinks are its ports towards the next tier.
void InferTiers(const std::vector<Cable>& host_links,
                const std::vector<Cable>& switch_links,
                std::map<std::string, v1::Switch>* switches) {
  std::map<std::string, std::vector<std::pair<std::string, std::string>>>
      ports_to;  // switch -> (its port, far switch)
  for (const Cable& c : switch_links) {
    ports_to[c.a.first].emplace_back(c.a.second, c.b.first);
    ports_to[c.b.first].emplace_back(c.b.second, c.a.first);
  }
  std::deque<std::string> next;
  for (const Cable& c : host_links) {
    v1::Switch& sw = (*switches)[c.b.first];
    if (sw.tier() == 0) {
      sw.set_tier(1);
      next.push_back(c.b.first);
    }
  }
  while (!next.empty()) {
    const std::string name = std::move(next.front());
    next.pop_front();
    const uint32_t tier = (*switches)[name].tier();
    for (const auto& [port, far] : ports_to[name]) {
      v1::Switch& other = (*switches)[far];
      if (other.tier() == 0) {
        other.set_tier(tier + 1);
        next.push_back(far);
      }
    }
  }
  for (auto& [name, sw] : *switches) {
    if (sw.tier() == 0) continue;
    std::vector<std::string> uplinks;
    for (const auto& [port, far] : ports_to[name]) {
      if ((*switches)[far].tier() == sw.tier() + 1) uplinks.push_back(port);
    }
    std::sort(uplinks.begin(), uplinks.end());
    for (std::string& u : uplinks) sw.add_uplinks(std::move(u));
  }
}

}  // namespace

DiscoveredTopology DiscoverTopology(
    const std::vector<const v1::NodeFacts*>& facts,
    const v1::Topology* declared) {
  DiscoveredTopology out;
  std::vector<std::string>& problems = out.problems;

  // One report per node, the latest; a node name no agent could report as
  // is dropped.
  std::map<std::string, const v1::NodeFacts*> by_node;
  for (const v1::NodeFacts* f : facts) {
    if (f == nullptr) continue;
    if (!IsValidNodeName(f->node())) {
      problems.push_back(absl::StrCat("facts of node ",
                                      QuoteForMessage(f->node()),
                                      ": not a node name, ignored"));
      continue;
    }
    auto [it, fresh] = by_node.emplace(f->node(), f);
    if (!fresh && f->reported_unix_nanos() > it->second->reported_unix_nanos())
      it->second = f;
  }
  const Names names(by_node, declared);

  CableReports host_links;
  CableReports switch_links;
  std::map<std::string, std::set<std::string>> chassis_of;
  for (const auto& [node, f] : by_node) {
    std::map<std::string, std::vector<const v1::LldpNeighbor*>> by_port;
    for (const v1::LldpNeighbor& n : f->lldp_neighbors()) {
      by_port[n.local_port()].push_back(&n);
    }
    for (const auto& [port, heard] : by_port) {
      if (!IsValidDeviceName(port)) {
        problems.push_back(absl::StrCat(node, ": local port ",
                                        QuoteForMessage(port),
                                        " is not an interface name"));
        continue;
      }
      auto far = OnlyNeighbor(names, node, port, heard, &problems);
      if (!far.has_value() || far->first == node) continue;
      for (const v1::LldpNeighbor* n : heard) {
        if (!n->chassis_id().empty() && n->chassis_id().size() <= 255) {
          chassis_of[far->first].insert(n->chassis_id());
        }
      }
      if (!f->is_switch()) {
        if (names.IsHost(far->first)) {
          problems.push_back(absl::StrCat(node, " ", port, " hears host ",
                                          far->first, ", not a switch"));
          continue;
        }
        host_links.Add({node, names.NicName(node, port, f)},
                       {far->first, far->second}, /*by_a=*/true,
                       /*canonical_order=*/false);
      } else if (names.IsHost(far->first)) {
        auto host = by_node.find(far->first);
        const v1::NodeFacts* host_facts =
            host == by_node.end() ? nullptr : host->second;
        host_links.Add(
            {far->first, names.NicName(far->first, far->second, host_facts)},
            {node, port}, /*by_a=*/false, /*canonical_order=*/false);
      } else {
        switch_links.Add({node, port}, {far->first, far->second},
                         /*by_a=*/true, /*canonical_order=*/true);
      }
    }
  }

  std::set<PortKey> used;
  const std::vector<Cable> hosts = host_links.Settle(&used, &problems);
  const std::vector<Cable> inter = switch_links.Settle(&used, &problems);

  std::map<std::string, v1::Switch> switches;
  for (const auto& [node, f] : by_node) {
    if (f->is_switch()) switches[node];
  }
  for (const Cable& c : hosts) switches[c.b.first];
  for (const Cable& c : inter) {
    switches[c.a.first];
    switches[c.b.first];
  }
  InferTiers(hosts, inter, &switches);
  for (auto& [name, sw] : switches) {
    sw.set_name(name);
    auto it = chassis_of.find(name);
    if (it != chassis_of.end()) {
      sw.set_chassis_id(*it->second.begin());
      if (it->second.size() > 1) {
        problems.push_back(absl::StrCat(name, " announces ", it->second.size(),
                                        " chassis ids; took ",
                                        Shown(*it->second.begin())));
      }
    }
    *out.topology.add_switches() = std::move(sw);
  }

  for (const Cable& c : hosts) {
    v1::Link* link = out.topology.add_links();
    link->set_host(c.a.first);
    link->set_nic(c.a.second);
    link->set_switch_(c.b.first);
    link->set_port(c.b.second);
  }
  for (const Cable& c : inter) {
    v1::SwitchLink* link = out.topology.add_switch_links();
    link->set_switch_a(c.a.first);
    link->set_port_a(c.a.second);
    link->set_switch_b(c.b.first);
    link->set_port_b(c.b.second);
  }
  std::sort(problems.begin(), problems.end());
  problems.erase(std::unique(problems.begin(), problems.end()), problems.end());
  return out;
}

v1::Topology EffectiveTopology(const v1::Topology* declared,
                               const v1::Topology& discovered) {
  v1::Topology out;
  if (declared != nullptr) out = *declared;
  for (v1::Link& link : *out.mutable_links()) {
    link.set_source(v1::LINK_SOURCE_DECLARED);
  }
  for (v1::SwitchLink& link : *out.mutable_switch_links()) {
    link.set_source(v1::LINK_SOURCE_DECLARED);
  }

  // What the declaration uses: a discovered link may use none of it.
  absl::flat_hash_set<PortKey> nics;          // (host, nic)
  absl::flat_hash_set<PortKey> host_ports;    // (switch, port) to a host
  absl::flat_hash_set<PortKey> switch_ports;  // (switch, port) to a switch
  for (const v1::Link& link : out.links()) {
    nics.emplace(link.host(), link.nic());
    host_ports.emplace(link.switch_(), link.port());
  }
  for (const v1::SwitchLink& link : out.switch_links()) {
    switch_ports.emplace(link.switch_a(), link.port_a());
    switch_ports.emplace(link.switch_b(), link.port_b());
  }

  absl::flat_hash_map<std::string, int> declared_switches;  // name -> index
  for (int i = 0; i < out.switches_size(); ++i) {
    const v1::Switch& sw = out.switches(i);
    declared_switches.emplace(sw.name(), i);
    for (const std::string& u : sw.uplinks()) {
      switch_ports.emplace(sw.name(), u);
    }
  }
  for (const v1::Switch& found : discovered.switches()) {
    auto it = declared_switches.find(found.name());
    if (it == declared_switches.end()) {
      *out.add_switches() = found;
      continue;
    }
    v1::Switch* sw = out.mutable_switches(it->second);
    sw->set_tier(found.tier());
    if (sw->chassis_id().empty()) sw->set_chassis_id(found.chassis_id());
    if (sw->uplinks_size() > 0) continue;
    for (const std::string& u : found.uplinks()) {
      if (host_ports.contains(PortKey(sw->name(), u))) continue;
      sw->add_uplinks(u);
      switch_ports.emplace(sw->name(), u);
    }
  }

  for (const v1::Link& found : discovered.links()) {
    PortKey nic(found.host(), found.nic());
    PortKey port(found.switch_(), found.port());
    if (nics.contains(nic) || host_ports.contains(port) ||
        switch_ports.contains(port)) {
      continue;
    }
    nics.insert(std::move(nic));
    host_ports.insert(std::move(port));
    v1::Link* link = out.add_links();
    *link = found;
    link->set_source(v1::LINK_SOURCE_DISCOVERED);
  }
  absl::flat_hash_set<PortKey> declared_switch_link_ports;
  for (const v1::SwitchLink& link : out.switch_links()) {
    declared_switch_link_ports.emplace(link.switch_a(), link.port_a());
    declared_switch_link_ports.emplace(link.switch_b(), link.port_b());
  }
  for (const v1::SwitchLink& found : discovered.switch_links()) {
    bool free = true;
    for (const PortKey& end : {PortKey(found.switch_a(), found.port_a()),
                               PortKey(found.switch_b(), found.port_b())}) {
      if (host_ports.contains(end) || declared_switch_link_ports.contains(end))
        free = false;
    }
    if (!free) continue;
    v1::SwitchLink* link = out.add_switch_links();
    *link = found;
    link->set_source(v1::LINK_SOURCE_DISCOVERED);
  }
  return out;
}

const char* KindName(TopologyDifference::Kind kind) {
  switch (kind) {
    case TopologyDifference::Kind::kMissing:
      return "missing";
    case TopologyDifference::Kind::kExtra:
      return "extra";
    case TopologyDifference::Kind::kMoved:
      return "moved";
  }
  return "?";
}

std::string TopologyDifference::Describe() const {
  const auto end = [](const LinkEnd& e) {
    return absl::StrCat(e.node, " ", e.device);
  };
  switch (kind) {
    case Kind::kMissing:
      return absl::StrCat("missing: ", end(near), " - ", end(declared),
                          " is declared; LLDP reports no neighbor on ",
                          end(near), " (not reported, not wrong)");
    case Kind::kExtra:
      return absl::StrCat("extra: ", end(near), " - ", end(observed),
                          " is cabled, not declared");
    case Kind::kMoved:
      return absl::StrCat("moved: ", end(near), " is cabled to ", end(observed),
                          ", declared ", end(declared));
  }
  return "";
}

namespace {

using FarEnds = absl::flat_hash_map<PortKey, LinkEnd>;

LinkEnd SwitchEnd(const std::string& sw, const std::string& port) {
  return LinkEnd{sw, port, /*is_switch=*/true};
}

void AddSwitchLinks(const v1::Topology& t, FarEnds* far) {
  for (const v1::SwitchLink& l : t.switch_links()) {
    far->try_emplace(PortKey(l.switch_a(), l.port_a()),
                     SwitchEnd(l.switch_b(), l.port_b()));
    far->try_emplace(PortKey(l.switch_b(), l.port_b()),
                     SwitchEnd(l.switch_a(), l.port_a()));
  }
}

bool NearLess(const TopologyDifference& x, const TopologyDifference& y) {
  return std::tie(x.near.node, x.near.device, x.kind) <
         std::tie(y.near.node, y.near.device, y.kind);
}

}  // namespace

std::vector<TopologyDifference> DiffTopology(const v1::Topology& declared,
                                             const v1::Topology& discovered) {
  using Kind = TopologyDifference::Kind;
  std::vector<TopologyDifference> hosts;
  FarEnds seen;
  for (const v1::Link& l : discovered.links()) {
    seen.try_emplace(PortKey(l.host(), l.nic()),
                     SwitchEnd(l.switch_(), l.port()));
  }
  absl::flat_hash_set<PortKey> declared_nics;
  for (const v1::Link& l : declared.links()) {
    PortKey key(l.host(), l.nic());
    const LinkEnd near{l.host(), l.nic(), /*is_switch=*/false};
    const LinkEnd want = SwitchEnd(l.switch_(), l.port());
    auto it = seen.find(key);
    if (it == seen.end()) {
      hosts.push_back({Kind::kMissing, near, want, LinkEnd{}});
    } else if (!(it->second == want)) {
      hosts.push_back({Kind::kMoved, near, want, it->second});
    }
    declared_nics.insert(std::move(key));
  }
  for (const v1::Link& l : discovered.links()) {
    if (declared_nics.contains(PortKey(l.host(), l.nic()))) continue;
    hosts.push_back({Kind::kExtra, LinkEnd{l.host(), l.nic(), false}, LinkEnd{},
                     SwitchEnd(l.switch_(), l.port())});
  }
  std::sort(hosts.begin(), hosts.end(), NearLess);

  std::vector<TopologyDifference> inter;
  FarEnds seen_far;
  AddSwitchLinks(discovered, &seen_far);
  FarEnds declared_far;
  AddSwitchLinks(declared, &declared_far);
  for (const v1::SwitchLink& l : declared.switch_links()) {
    const LinkEnd a = SwitchEnd(l.switch_a(), l.port_a());
    const LinkEnd b = SwitchEnd(l.switch_b(), l.port_b());
    auto at_a = seen_far.find(PortKey(a.node, a.device));
    auto at_b = seen_far.find(PortKey(b.node, b.device));
    if (at_a != seen_far.end()) {
      if (!(at_a->second == b))
        inter.push_back({Kind::kMoved, a, b, at_a->second});
    } else if (at_b != seen_far.end()) {
      inter.push_back({Kind::kMoved, b, a, at_b->second});
    } else {
      inter.push_back({Kind::kMissing, a, b, LinkEnd{}});
    }
  }
  for (const v1::SwitchLink& l : discovered.switch_links()) {
    if (declared_far.contains(PortKey(l.switch_a(), l.port_a())) ||
        declared_far.contains(PortKey(l.switch_b(), l.port_b()))) {
      continue;
    }
    inter.push_back({Kind::kExtra, SwitchEnd(l.switch_a(), l.port_a()),
                     LinkEnd{}, SwitchEnd(l.switch_b(), l.port_b())});
  }
  std::sort(inter.begin(), inter.end(), NearLess);
  for (TopologyDifference& d : inter) hosts.push_back(std::move(d));
  return hosts;
}

}  // namespace fabricdiag::analysis
