#include "bench/web_fabric.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/analysis_config.h"
#include "analysis/analyzer.h"
#include "analysis/topology_index.h"
#include "common/status_macros.h"

namespace fabricdiag::bench {

using analysis::scenario::Cluster;
using analysis::scenario::ClusterSpec;
using analysis::scenario::FaultKind;

absl::StatusOr<std::unique_ptr<WebFabric>> WebFabric::Build(
    const WebFabricSpec& spec, const std::string& state_dir) {
  std::unique_ptr<WebFabric> f(new WebFabric);
  ClusterSpec cs = analysis::scenario::ManyJobCluster(spec.nodes, spec.jobs);
  cs.nodes_per_leaf = spec.nodes_per_leaf;
  ASSIGN_OR_RETURN(Cluster built, Cluster::Build(cs));
  f->cluster_ = std::make_unique<Cluster>(std::move(built));
  const Cluster& c = *f->cluster_;
  const int n = spec.nodes;
  f->hot_node_ = c.HostName(1);
  f->hot_device_ = "mlx5_0";
  f->faults_ = {
      {FaultKind::kHotExpert, f->hot_node_, f->hot_device_},
      {FaultKind::kCongestion, c.HostName(n - 1), "mlx5_3"},
      {FaultKind::kLinkErrors, c.HostName(n / 2), "mlx5_5"},
      {FaultKind::kPfcStorm, c.HostName(n / 4), "mlx5_2"},
      {FaultKind::kEcmpImbalance, c.LeafName(c.num_leaves() - 1), ""},
  };
  for (int i = 0; i < spec.extra_faults; ++i) {
    f->faults_.push_back(
        {FaultKind::kCongestion,
         c.HostName((i + 1) * (n / (spec.extra_faults + 1))),
         absl::StrCat("mlx5_", i % analysis::scenario::kNicsPerNode)});
  }
  f->NextView(1);

  ASSIGN_OR_RETURN(f->state_,
                   collector::StateStore::Open(state_dir, &f->clock_));
  f->findings_ = std::make_unique<collector::FindingsStore>(
      f->state_.get(), collector::FindingsStoreOptions{});
  RETURN_IF_ERROR(f->findings_->Load());
  f->declared_ =
      std::make_unique<collector::FileDeclaredState>(f->state_.get());
  f->registry_ = std::make_unique<collector::LayoutRegistry>(f->declared_.get(),
                                                             &f->clock_);
  RETURN_IF_ERROR(f->registry_->Load());
  RETURN_IF_ERROR(f->registry_->ApplyTopology(c.topology()));
  f->topology_ = std::make_unique<testing::FixedTopology>(c.topology());
  for (const analysis::LayoutModel& job : c.jobs()) {
    RETURN_IF_ERROR(f->registry_->Apply(job.layout()).status());
  }

  // What the analyzers raise on this window (the store opens a report at
  // once; the collector's hysteresis is left out).
  const analysis::AnalysisConfig config;
  const std::shared_ptr<const analysis::FabricView> view = f->view();
  analysis::AnalysisInput in = c.Input(view.get(), &config);
  const analysis::TopologyIndex topology(in.topology);
  in.topology_index = &topology;
  RETURN_IF_ERROR(f->findings_->Update(analysis::RunRateAnalyzers(in),
                                       f->clock_.Now(), "rate"));
  return f;
}

void WebFabric::NextView(uint32_t seed) {
  auto next = std::make_shared<const analysis::FabricView>(
      cluster_->View(faults_, analysis::scenario::TrafficOptions{}, seed));
  std::lock_guard<std::mutex> lock(mu_);
  view_ = std::move(next);
}

std::shared_ptr<const analysis::FabricView> WebFabric::view() const {
  std::lock_guard<std::mutex> lock(mu_);
  return view_;
}

collector::WebSources WebFabric::Sources() const {
  return {findings_.get(),
          registry_.get(),
          [this] { return view(); },
          collector::FabricScope::kFabric,
          &clock_,
          topology_.get()};
}

}  // namespace fabricdiag::bench
