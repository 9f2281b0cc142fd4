#include "analysis/nic_ports.h"

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/analyzer.h"

namespace fabricdiag::analysis {

const PortView* LayoutPorts::At(uint32_t host, uint32_t nic) const {
  if (host >= model_->Hosts().size() || nic >= model_->Nics().size()) {
    return nullptr;
  }
  if (table_ == nullptr) {
    return view_->Find(model_->Hosts()[host], model_->Nics()[nic]);
  }
  for (uint32_t i = table_->host_begin[host]; i < table_->host_begin[host + 1];
       ++i) {
    if (table_->entries[i].nic == nic) return table_->entries[i].port;
  }
  return nullptr;
}

NicPorts::NicPorts(const FabricView& view,
                   absl::Span<const LayoutModel* const> layouts)
    : view_(&view) {
  std::vector<uint32_t> nics;  // of one host
  for (const LayoutModel* model : layouts) {
    if (model == nullptr) continue;
    auto [it, fresh] = tables_.try_emplace(model);
    if (!fresh) continue;
    NicPortTable& table = it->second;
    const absl::Span<const std::string> hosts = model->Hosts();
    table.host_begin.reserve(hosts.size() + 1);
    for (uint32_t h = 0; h < hosts.size(); ++h) {
      table.host_begin.push_back(static_cast<uint32_t>(table.entries.size()));
      nics.clear();
      for (uint32_t rank : model->RanksOnHost(h)) {
        if (model->Rank(rank).nic != kNoNic) {
          nics.push_back(model->Rank(rank).nic);
        }
      }
      std::sort(nics.begin(), nics.end());
      nics.erase(std::unique(nics.begin(), nics.end()), nics.end());
      if (nics.empty()) continue;
      const FabricView::NodePorts node = view.PortsOfNode(hosts[h]);
      for (uint32_t n : nics) {
        table.entries.push_back({n, view.FindIn(node, model->Nics()[n])});
      }
    }
    table.host_begin.push_back(static_cast<uint32_t>(table.entries.size()));
  }
}

LayoutPorts NicPorts::Of(const LayoutModel& model) const {
  auto it = tables_.find(&model);
  return LayoutPorts(view_, &model,
                     it == tables_.end() ? nullptr : &it->second);
}

std::vector<const LayoutModel*> LayoutsReportingIn(
    const FabricView& view, absl::Span<const LayoutModel* const> layouts) {
  std::vector<const LayoutModel*> out;
  for (const LayoutModel* model : layouts) {
    if (model == nullptr) continue;
    const absl::Span<const std::string> hosts = model->Hosts();
    if (std::any_of(hosts.begin(), hosts.end(), [&](const std::string& host) {
          const FabricView::NodePorts ports = view.PortsOfNode(host);
          return ports.begin != ports.end;
        })) {
      out.push_back(model);
    }
  }
  return out;
}

LayoutsByHost::LayoutsByHost(absl::Span<const LayoutModel* const> layouts) {
  for (const LayoutModel* model : layouts) {
    if (model == nullptr) continue;
    const uint32_t index = static_cast<uint32_t>(layouts_.size());
    layouts_.push_back(model);
    const absl::Span<const std::string> hosts = model->Hosts();
    for (uint32_t host = 0; host < hosts.size(); ++host) {
      std::vector<HostIn>& of = by_host_[hosts[host]];
      // A host listed twice in one layout counts once.
      if (of.empty() || of.back().layout != index) of.push_back({index, host});
    }
  }
}

absl::Span<const LayoutsByHost::HostIn> LayoutsByHost::LayoutsOf(
    absl::string_view host) const {
  auto it = by_host_.find(host);
  if (it == by_host_.end()) return {};
  return it->second;
}

std::vector<const LayoutModel*> LayoutsByHost::ReportingIn(
    const FabricView& view) const {
  std::vector<bool> reporting(layouts_.size(), false);
  size_t count = 0;
  const absl::Span<const PortView> ports = view.ports();
  for (size_t i = 0; i < ports.size(); ++i) {
    // A node's ports are together: each node is asked about once.
    if (i > 0 && ports[i].node == ports[i - 1].node) continue;
    auto it = by_host_.find(ports[i].node);
    if (it == by_host_.end()) continue;
    for (const HostIn& in : it->second) {
      if (!reporting[in.layout]) {
        reporting[in.layout] = true;
        ++count;
      }
    }
  }
  std::vector<const LayoutModel*> out;
  out.reserve(count);
  for (size_t k = 0; k < layouts_.size(); ++k) {
    if (reporting[k]) out.push_back(layouts_[k]);
  }
  return out;
}

const NicPorts& NicPortsOf(const AnalysisInput& in,
                           std::optional<NicPorts>* local) {
  if (in.nic_ports != nullptr && &in.nic_ports->view() == in.view) {
    return *in.nic_ports;
  }
  return local->emplace(*in.view, in.layouts);
}

}  // namespace fabricdiag::analysis
