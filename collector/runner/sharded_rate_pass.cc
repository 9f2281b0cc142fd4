#include "collector/runner/sharded_rate_pass.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "analysis/congestion.h"
#include "analysis/finding_wire.h"
#include "analysis/nic_ports.h"
#include "analysis/pfc_storm.h"
#include "analysis/topology_index.h"
#include "analysis/tp_cross_node.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {
namespace {

// The parts of one view of the pass (0: the window, 1: the newest
// samples): one per owned shard, in order, then the port part.
using ViewParts = std::vector<analysis::RatePart>;

void Merge(const analysis::ViewNews& from, analysis::ViewNews* into) {
  into->excuses.Merge(from.excuses);
  into->congestion.Merge(from.congestion);
}

std::vector<analysis::Finding> FromWire(const std::vector<v1::Finding>& wire) {
  std::vector<analysis::Finding> out;
  out.reserve(wire.size());
  for (const v1::Finding& f : wire) out.push_back(analysis::FindingFromWire(f));
  return out;
}

}  // namespace

ShardedRatePass::ShardedRatePass(Options options)
    : options_(std::move(options)), ports_(options_.analysis.hysteresis) {}

ShardedRatePass::Shard& ShardedRatePass::Take(
    const OwnedShard& owned, const FindingsStore& findings,
    const std::vector<analysis::Finding>& unsharded) {
  auto it = shards_.find(owned.name);
  if (it != shards_.end() && it->second.term == owned.term) return it->second;
  // New here, or owned again under a newer term: another collector may
  // have written the shard's findings meanwhile.
  if (it != shards_.end()) shards_.erase(it);
  Shard& shard =
      shards_
          .emplace(owned.name,
                   Shard{owned.term,
                         analysis::Hysteresis(options_.analysis.hysteresis)})
          .first->second;
  std::vector<analysis::Finding> open =
      FromWire(findings.ActiveOf(ShardSource(owned.name)));
  open.insert(open.end(), unsharded.begin(), unsharded.end());
  shard.hysteresis.Seed(open);
  // The baselines its stragglers were judged against.
  baselines_.Seed(open);
  return shard;
}

void ShardedRatePass::Hold(const absl::flat_hash_set<std::string>& held,
                           const FindingsStore& findings) {
  ports_.KeepNodes(
      [&held](absl::string_view node) { return held.contains(node); });
  absl::flat_hash_set<absl::string_view> arrived;
  for (const std::string& node : held) {
    if (!held_.contains(node)) arrived.insert(node);
  }
  if (!arrived.empty()) {
    std::vector<analysis::Finding> open;
    for (const v1::Finding& f : findings.Active()) {
      if (analysis::IsPortPartKind(f.kind()) && arrived.contains(f.node())) {
        open.push_back(analysis::FindingFromWire(f));
      }
    }
    ports_.Seed(open);
  }
  held_ = held;
}

ShardedRatePass::Output ShardedRatePass::Run(const Input& in,
                                             const FindingsStore& findings) {
  Output out;
  // Shards handed over since the last pass are forgotten; their new owners
  // pick their findings up.
  absl::flat_hash_set<absl::string_view> owned;
  for (const OwnedShard& s : in.shards) owned.insert(s.name);
  for (auto it = shards_.begin(); it != shards_.end();) {
    it = owned.contains(it->first) ? std::next(it) : shards_.erase(it);
  }
  static const v1::Topology kNoTopology;
  const analysis::TopologyIndex none(&kNoTopology);
  const analysis::TopologyIndex& topology =
      in.base.topology_index != nullptr ? *in.base.topology_index : none;
  // The findings of the unsharded analysis (a cluster that just turned
  // sharding on), by the shard each belongs to: read only when a shard is
  // taken.
  std::map<std::string, std::vector<analysis::Finding>, std::less<>> unsharded;
  for (const OwnedShard& s : in.shards) {
    auto it = shards_.find(s.name);
    if (it != shards_.end() && it->second.term == s.term) continue;
    for (const v1::Finding& f : findings.ActiveOf(kUnshardedRateSource)) {
      analysis::Finding found = analysis::FindingFromWire(f);
      std::string shard =
          analysis::ShardOfFinding(found, topology, options_.counts);
      if (!shard.empty()) unsharded[shard].push_back(std::move(found));
    }
    break;
  }
  static const std::vector<analysis::Finding> kNoFindings;
  std::vector<Shard*> taken;
  taken.reserve(in.shards.size());
  for (const OwnedShard& s : in.shards) {
    auto theirs = unsharded.find(s.name);
    taken.push_back(&Take(
        s, findings, theirs != unsharded.end() ? theirs->second : kNoFindings));
  }

  analysis::AnalysisInput base = in.base;
  base.config = &options_.analysis;
  base.straggler_baselines = &baselines_;
  base.congestion_baselines = nullptr;
  const std::vector<const analysis::LayoutModel*> layouts = base.layouts;
  const bool with_recent = in.recent != nullptr;
  ViewParts parts[2];

  // Each job shard's layouts; a switch shard's are every one reporting in
  // its view, as this collector's ports' (asked of each view's nodes).
  std::optional<analysis::LayoutsByHost> built;
  const analysis::LayoutsByHost& by_host = in.layouts_by_host != nullptr
                                               ? *in.layouts_by_host
                                               : built.emplace(layouts);
  std::vector<std::vector<const analysis::LayoutModel*>> shard_layouts(
      in.shards.size());
  {
    absl::flat_hash_map<absl::string_view, size_t> job_shards;
    for (size_t i = 0; i < in.shards.size(); ++i) {
      if (absl::StartsWith(in.shards[i].name, "jobs.")) {
        job_shards.emplace(in.shards[i].name, i);
      }
    }
    for (const analysis::LayoutModel* m : layouts) {
      auto it =
          job_shards.find(analysis::JobShardOf(m->job(), options_.counts));
      if (it != job_shards.end()) shard_layouts[it->second].push_back(m);
    }
  }
  // A NIC is judged against its past, then its past takes the window
  // (collector/runner/rate_pass.h): every shard's window, then the
  // baselines updated with the job shards' windows as one pass (a job is in
  // one shard only), then every shard's newest samples.
  std::vector<analysis::AnalysisInput> judged;
  // Each view's NICs, resolved once for its part (each analyzer would
  // resolve them again) and, for the job shards' windows, the baselines'
  // update; a switch shard's from its nodes, few of its jobs' hosts.
  std::deque<analysis::NicPorts> nics;
  // One part of view `k` over `view`: a job part (`jobs`) or a switch
  // part, reading `part.layouts` and `part.nic_ports`.
  const auto run_part = [&](int k, bool jobs, analysis::AnalysisInput part) {
    if (jobs && k == 0) {
      // Its jobs' TP groups that cross nodes, measured for whoever raises
      // tp_cross_node (the lease holder, without these NICs).
      for (const analysis::LayoutModel* m : part.layouts) {
        std::vector<analysis::TpGroupLoad> loads =
            analysis::MeasureTpCrossings(*m, *part.view);
        if (!loads.empty()) {
          out.news.tp_loads.push_back({m->job(), std::move(loads)});
        }
      }
    }
    parts[k].push_back(jobs ? analysis::RunJobPart(part)
                            : analysis::RunSwitchPart(part));
    if (jobs && k == 0) judged.push_back(std::move(part));
  };
  for (int k = 0; k < 2; ++k) {
    if (in.whole) {
      // One job part and one switch part over every port.
      const analysis::FabricView* view =
          k == 0 ? in.window : (with_recent ? in.recent : nullptr);
      if (view == nullptr) {
        parts[k].resize(2);
      } else {
        analysis::AnalysisInput part = base;
        part.view = view;
        part.layouts = by_host.ReportingIn(*view);
        part.nic_ports = &nics.emplace_back(*view, part.layouts, &by_host);
        run_part(k, /*jobs=*/true, part);
        run_part(k, /*jobs=*/false, std::move(part));
      }
    } else {
      for (size_t i = 0; i < in.shards.size(); ++i) {
        const OwnedShard& s = in.shards[i];
        const bool jobs = absl::StartsWith(s.name, "jobs.");
        const analysis::FabricView* view =
            k == 0 ? s.window : (with_recent ? s.recent : nullptr);
        if (view == nullptr) {
          parts[k].emplace_back();
          continue;
        }
        analysis::AnalysisInput part = base;
        part.view = view;
        part.layouts =
            jobs ? analysis::LayoutsReportingIn(*view, shard_layouts[i])
                 : by_host.ReportingIn(*view);
        part.nic_ports = &nics.emplace_back(*view, part.layouts, &by_host);
        run_part(k, jobs, std::move(part));
      }
    }
    if (k == 0) baselines_.Update(judged);
  }
  // The port part follows the shards' parts in each view's.
  const size_t port = parts[0].size();

  // This collector's news: its ports' congestion histograms (the window's,
  // and the newest samples'), then its parts' excuses.
  analysis::PartNews& news = out.news;
  news.collector_id = options_.collector_id;
  news.published = in.now;
  if (with_recent) news.recent.emplace();
  analysis::ViewNews* mine[2] = {&news.window,
                                 with_recent ? &*news.recent : nullptr};
  const analysis::FabricView* local[2] = {in.window, in.recent};
  // Everything the fabric knows this pass: this collector's news merged
  // with the others' latest.
  analysis::ViewNews fabric[2];
  for (int k = 0; k < 2; ++k) {
    if (mine[k] == nullptr || local[k] == nullptr) continue;
    mine[k]->congestion = analysis::CongestionHistogramsOf(*local[k]);
    fabric[k].congestion = mine[k]->congestion;
    for (const analysis::PartNews& other : in.news) {
      if (other.collector_id == options_.collector_id) continue;
      const analysis::ViewNews* theirs =
          k == 0 ? &other.window
                 : (other.recent.has_value() ? &*other.recent : nullptr);
      if (theirs != nullptr) Merge(*theirs, &fabric[k]);
    }
    const analysis::CongestionBaselines medians =
        fabric[k].congestion.Baselines();
    analysis::AnalysisInput part = base;
    part.view = local[k];
    part.layouts = by_host.ReportingIn(*local[k]);
    part.congestion_baselines = &medians;
    parts[k].push_back(analysis::RunPortPart(part));
    for (const analysis::RatePart& p : parts[k]) {
      mine[k]->excuses.Merge(p.excuses);
    }
    fabric[k].excuses.Merge(mine[k]->excuses);
  }
  if (in.window == nullptr) parts[0].emplace_back();
  if (parts[1].size() < parts[0].size()) parts[1].resize(parts[0].size());
  for (int k = 0; k < 2; ++k) {
    for (analysis::RatePart& p : parts[k]) {
      analysis::Excuse(fabric[k].excuses, &p.findings);
      // A held storm source's victims are still seen: not a second storm.
      if (in.held_storm_priorities != nullptr) {
        analysis::DropSourcelessOnPriorities(*in.held_storm_priorities,
                                             &p.findings);
      }
    }
  }
  // A cluster of one has every part's excuses, and every port, in the same
  // pass.
  if (!in.whole) WaitForOtherCollectors(findings, parts);

  static const absl::flat_hash_set<std::string> kNone;
  static const absl::flat_hash_set<std::pair<std::string, std::string>>
      kNoGroups;
  const absl::flat_hash_set<std::string>& quiet =
      in.quiet != nullptr ? *in.quiet : kNone;
  const auto& quiet_groups =
      in.quiet_groups != nullptr ? *in.quiet_groups : kNoGroups;
  // Each owned shard's findings of each view.
  absl::flat_hash_map<std::string, size_t> shard_index;
  size_t first_of[2] = {in.shards.size(), in.shards.size()};  // jobs, switches
  if (in.whole) {
    for (size_t i = 0; i < in.shards.size(); ++i) {
      shard_index.emplace(in.shards[i].name, i);
      size_t& first =
          first_of[absl::StartsWith(in.shards[i].name, "jobs.") ? 0 : 1];
      first = std::min(first, i);
    }
  }
  std::vector<std::vector<analysis::Finding>> found[2];
  for (int k = 0; k < 2; ++k) {
    found[k].resize(in.shards.size());
    if (!in.whole) {
      for (size_t i = 0; i < in.shards.size(); ++i) {
        found[k][i] = std::move(parts[k][i].findings);
      }
      continue;
    }
    // The whole fabric's parts (jobs, then switches): each finding to the
    // shard it belongs to; one that names none (a job finding without a
    // job, which the analyzers do not make) to its part's first shard.
    for (size_t j = 0; j < 2; ++j) {
      for (analysis::Finding& f : parts[k][j].findings) {
        auto it = shard_index.find(
            analysis::ShardOfFinding(f, topology, options_.counts));
        const size_t i = it != shard_index.end() ? it->second : first_of[j];
        if (i < in.shards.size()) found[k][i].push_back(std::move(f));
      }
    }
  }
  for (size_t i = 0; i < in.shards.size(); ++i) {
    out.reports.push_back(SourceReport{
        ShardSource(in.shards[i].name),
        taken[i]->hysteresis.Step(std::move(found[0][i]),
                                  std::move(found[1][i]), quiet, quiet_groups),
        false});
  }

  // The port part: the nodes held, picked up where another collector left
  // them; conditions of nodes not held are not this collector's.
  if (in.held != nullptr) {
    out.held = *in.held;
  } else if (in.window != nullptr) {
    for (const analysis::PortView& p : in.window->ports())
      out.held.insert(p.node);
  }
  Hold(out.held, findings);
  for (int k = 0; k < 2; ++k) {
    std::vector<analysis::Finding>& port_found = parts[k][port].findings;
    port_found.erase(std::remove_if(port_found.begin(), port_found.end(),
                                    [&out](const analysis::Finding& f) {
                                      return !out.held.contains(f.node);
                                    }),
                     port_found.end());
  }
  out.reports.push_back(SourceReport{
      PortsSource(options_.collector_id),
      ports_.Step(std::move(parts[0][port].findings),
                  std::move(parts[1][port].findings), quiet, quiet_groups),
      true});
  return out;
}

namespace {

// Passes a finding found in a cluster of more than one waits before it
// counts: 0 for most.
int WaitPasses(const analysis::Finding& f) {
  if (f.kind == "congestion" || f.kind == "ecmp_imbalance" ||
      f.kind == "straggler_nic") {
    return kExcuseLagPasses;
  }
  return analysis::IsSourceless(f) ? kSourcelessLagPasses : 0;
}

std::string WaitKey(absl::string_view kind, absl::string_view node,
                    absl::string_view device) {
  return absl::StrCat(kind, " ", node, " ", device);
}

}  // namespace

void ShardedRatePass::WaitForOtherCollectors(const FindingsStore& findings,
                                             ViewParts (&parts)[2]) {
  ++passes_;
  const auto key = [](const analysis::Finding& f) {
    return WaitKey(f.kind, f.node, f.device);
  };
  for (int k = 0; k < 2; ++k) {
    for (const analysis::RatePart& p : parts[k]) {
      for (const analysis::Finding& f : p.findings) {
        if (WaitPasses(f) == 0) continue;
        auto [it, fresh] = waiting_.try_emplace(key(f));
        // Found again after one pass without it, the wait goes on (a weak
        // finding counts k of n passes); after two or more, it starts over.
        if (fresh || it->second.last < passes_ - 2) it->second.first = passes_;
        it->second.last = passes_;
      }
    }
  }
  absl::erase_if(waiting_, [this](const auto& entry) {
    return entry.second.last < passes_ - 2;
  });
  // An open finding does not wait: it was found before (a restart, a shard
  // or node taken over), and holding it back would count it clear.
  std::optional<absl::flat_hash_set<std::string>> open;
  const auto waits = [&](const analysis::Finding& f) {
    const int wait = WaitPasses(f);
    if (wait == 0 || passes_ - waiting_.at(key(f)).first >= wait) {
      return false;
    }
    if (!open.has_value()) {
      open.emplace();
      for (const v1::Finding& active : findings.Active()) {
        open->insert(WaitKey(active.kind(), active.node(), active.device()));
      }
    }
    return !open->contains(key(f));
  };
  for (int k = 0; k < 2; ++k) {
    for (analysis::RatePart& p : parts[k]) {
      p.findings.erase(
          std::remove_if(p.findings.begin(), p.findings.end(), waits),
          p.findings.end());
    }
  }
}

}  // namespace fabricdiag::collector
