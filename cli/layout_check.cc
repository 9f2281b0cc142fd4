#include "cli/layout_check.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "common/similar_names.h"

namespace fabricdiag::cli {

std::vector<ReportedNode> ReportedNodes(const v1::ListNodesResponse& nodes) {
  std::vector<ReportedNode> out;
  for (const v1::NodeStatus& n : nodes.nodes()) {
    ReportedNode r;
    r.name = n.node();
    r.nics.assign(n.rdma_devices().begin(), n.rdma_devices().end());
    r.nics_known = !n.remote();
    out.push_back(std::move(r));
  }
  return out;
}

LayoutCheck CheckLayoutNames(const v1::Layout& layout,
                             const std::vector<ReportedNode>& reported) {
  absl::flat_hash_map<std::string, const ReportedNode*> by_name;
  std::vector<std::string> host_names;
  for (const ReportedNode& n : reported) {
    by_name[n.name] = &n;
    host_names.push_back(n.name);
  }
  // Every (host, NIC) the layout places a rank on, NIC "" when it names
  // none, in the layout's order, with its rank count.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, size_t> ranks;
  auto place = [&](const std::string& host, const std::string& nic) {
    if (ranks[{host, nic}]++ == 0) order.emplace_back(host, nic);
  };
  if (layout.ranks_size() > 0) {
    for (const v1::RankPlacement& r : layout.ranks()) {
      std::string nic = r.nic();
      if (nic.empty() && static_cast<int>(r.gpu()) < layout.rails_size()) {
        nic = layout.rails(static_cast<int>(r.gpu()));
      }
      place(r.host(), nic);
    }
  } else {
    for (const std::string& host : layout.hosts()) {
      for (uint32_t gpu = 0; gpu < layout.gpus_per_node(); ++gpu) {
        place(host, static_cast<int>(gpu) < layout.rails_size()
                        ? layout.rails(static_cast<int>(gpu))
                        : "");
      }
    }
  }

  LayoutCheck check;
  std::map<std::string, size_t> host_ranks;
  std::vector<std::string> hosts;
  for (const auto& [host, nic] : order) {
    if (host_ranks[host] == 0) hosts.push_back(host);
    host_ranks[host] += ranks[{host, nic}];
  }
  check.hosts = hosts.size();
  for (const std::string& host : hosts) {
    if (by_name.count(host) == 0) {
      check.unmatched.push_back({"host", host, "", host_ranks[host],
                                 LookAlikeNames(host, host_names)});
    }
  }
  for (const auto& [host, nic] : order) {
    if (nic.empty()) continue;
    ++check.nics;
    auto it = by_name.find(host);
    if (it == by_name.end()) continue;  // the host is reported unmatched
    const ReportedNode& node = *it->second;
    if (!node.nics_known) {
      ++check.nics_unchecked;
      continue;
    }
    if (std::find(node.nics.begin(), node.nics.end(), nic) != node.nics.end()) {
      continue;
    }
    check.unmatched.push_back(
        {"nic", host, nic, ranks[{host, nic}], LookAlikeNames(nic, node.nics)});
  }
  return check;
}

NicSources CountNicSources(const v1::Layout& resolved) {
  NicSources out;
  std::vector<const v1::RankPlacement*> unknown;
  for (const v1::RankPlacement& r : resolved.ranks()) {
    const std::string& source = r.nic_source();
    if (source.empty()) continue;  // an older collector
    out.known = true;
    if (source == "rank") {
      ++out.rank;
    } else if (source == "rails") {
      ++out.rails;
    } else if (source == "agent") {
      ++out.agent;
    } else {
      ++out.unknown;
      unknown.push_back(&r);
    }
  }
  const size_t named = std::min(unknown.size(), kNamedUnknownRanks);
  std::partial_sort(unknown.begin(), unknown.begin() + named, unknown.end(),
                    [](const v1::RankPlacement* a, const v1::RankPlacement* b) {
                      return a->rank() < b->rank();
                    });
  for (size_t i = 0; i < named; ++i) out.unknown_ranks.push_back(*unknown[i]);
  return out;
}

}  // namespace fabricdiag::cli
