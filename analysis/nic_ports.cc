#include "analysis/nic_ports.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "analysis/analyzer.h"

namespace fabricdiag::analysis {

namespace {

// The ports of host `host`'s NICs in `table`, from the view's `node`.
void Resolve(const FabricView& view, const LayoutModel& model, uint32_t host,
             FabricView::NodePorts node, NicPortTable* table) {
  if (node.begin == node.end) return;
  const uint32_t end = model.HostNicsBegin(host + 1);
  for (uint32_t i = model.HostNicsBegin(host); i < end; ++i) {
    table->ports[i] = view.FindIn(node, model.Nics()[model.HostNicAt(i)]);
  }
}

}  // namespace

const PortView* LayoutPorts::At(uint32_t host, uint32_t nic) const {
  if (host >= model_->Hosts().size() || nic >= model_->Nics().size()) {
    return nullptr;
  }
  if (table_ == nullptr) {
    return view_->Find(model_->Hosts()[host], model_->Nics()[nic]);
  }
  const uint32_t end = model_->HostNicsBegin(host + 1);
  for (uint32_t i = model_->HostNicsBegin(host); i < end; ++i) {
    if (model_->HostNicAt(i) == nic) return table_->ports[i];
  }
  return nullptr;
}

NicPorts::NicPorts(const FabricView& view,
                   absl::Span<const LayoutModel* const> layouts,
                   const LayoutsByHost* by_host)
    : view_(&view) {
  size_t hosts = 0;
  for (const LayoutModel* model : layouts) {
    if (model == nullptr) continue;
    auto [it, fresh] = tables_.try_emplace(model);
    if (!fresh) continue;
    it->second.ports.assign(model->HostNicCount(), nullptr);
    hosts += model->Hosts().size();
  }
  // The layouts resolved from the view's nodes; the others host by host.
  absl::flat_hash_set<const LayoutModel*> from_nodes;
  if (by_host != nullptr && hosts > view.node_count()) {
    const absl::Span<const LayoutModel* const> indexed = by_host->layouts();
    std::vector<NicPortTable*> table_of(indexed.size(), nullptr);
    for (size_t k = 0; k < indexed.size(); ++k) {
      auto it = tables_.find(indexed[k]);
      if (it == tables_.end()) continue;
      table_of[k] = &it->second;
      from_nodes.insert(indexed[k]);
    }
    view.ForEachNode([&](absl::string_view node, FabricView::NodePorts ports) {
      for (const LayoutsByHost::HostIn& in : by_host->LayoutsOf(node)) {
        if (table_of[in.layout] == nullptr) continue;
        Resolve(view, *indexed[in.layout], in.host, ports, table_of[in.layout]);
      }
    });
  }
  for (auto& [model, table] : tables_) {
    if (from_nodes.contains(model)) continue;
    const absl::Span<const std::string> names = model->Hosts();
    for (uint32_t h = 0; h < names.size(); ++h) {
      // A host none of whose ranks names a NIC is not looked up.
      if (model->HostNicsBegin(h) == model->HostNicsBegin(h + 1)) continue;
      Resolve(view, *model, h, view.PortsOfNode(names[h]), &table);
    }
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
  view.ForEachNode([&](absl::string_view node, FabricView::NodePorts) {
    auto it = by_host_.find(node);
    if (it == by_host_.end()) return;
    for (const HostIn& in : it->second) {
      if (!reporting[in.layout]) {
        reporting[in.layout] = true;
        ++count;
      }
    }
  });
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
