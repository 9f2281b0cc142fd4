#include "collector/runner/analysis_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "analysis/agent_down.h"
#include "analysis/agent_missing.h"
#include "analysis/analyzer.h"
#include "analysis/fabric_view.h"
#include "analysis/finding.h"
#include "analysis/nic_ports.h"
#include "analysis/pfc_storm.h"
#include "analysis/tp_cross_node.h"
#include "collector/runner/job_labels.h"
#include "collector/runner/rate_pass.h"
#include "common/clock.h"
#include "common/log.h"

namespace fabricdiag::collector {
namespace {

// This pass's news of every collector: the others' latest, then this
// collector's own (`news` may still hold an older copy of it: skipped).
std::vector<const analysis::PartNews*> TpNewsOf(
    const std::vector<analysis::PartNews>& news,
    const analysis::PartNews& own) {
  std::vector<const analysis::PartNews*> out;
  out.reserve(news.size() + 1);
  for (const analysis::PartNews& n : news) {
    if (n.collector_id != own.collector_id) out.push_back(&n);
  }
  out.push_back(&own);
  return out;
}

// The priorities of the open pfc_storm sources on `quiet` nodes (source-less
// warnings name their fault instead: not sources).
std::set<int> HeldStormPriorities(
    absl::Span<const v1::Finding> open,
    const absl::flat_hash_set<std::string>& quiet) {
  std::set<int> held;
  if (quiet.empty()) return held;
  for (const v1::Finding& f : open) {
    if (f.kind() != analysis::kPfcStormKind || !quiet.contains(f.node()) ||
        f.evidence_text().contains(analysis::kFaultEvidence)) {
      continue;
    }
    const std::map<std::string, double> evidence(f.evidence().begin(),
                                                 f.evidence().end());
    if (std::optional<int> p = analysis::StormPriority(evidence)) {
      held.insert(*p);
    }
  }
  return held;
}

constexpr char kLayoutSource[] = "layout_analyzers";
// The view of a shard none of whose ports is seen anywhere.
const analysis::FabricView& NoPorts() {
  static const auto* const none = new analysis::FabricView();
  return *none;
}
constexpr const char* kRateSource = kUnshardedRateSource;
// How long after the agents' grid point a pass runs, as a fraction of the
// interval: 100 ms at 1 s. An agent's read (a few milliseconds), its
// report's way into the series store and NTP's disagreement between
// clocks (milliseconds) fit well within it. A report that comes later
// counts in the next pass, as every report did at an arbitrary phase.
constexpr double kPassSettleFraction = 0.1;
// How long after the grid point a pass waits at most for the reports of
// that read, as a fraction of the interval: on a loaded machine a report
// that misses the settling time would otherwise count an interval later,
// and every finding it carries would open an interval late.
constexpr double kPassWaitFraction = 0.5;

}  // namespace

AnalysisRunner::AnalysisRunner(const SeriesStore* series,
                               const LayoutSnapshots* layouts,
                               FindingsStore* findings, AnalysisStats* stats,
                               const Clock& clock, Seams seams, Options options)
    : series_(series),
      layouts_(layouts),
      findings_(findings),
      stats_(stats),
      clock_(clock),
      options_(options),
      features_(seams.features),
      role_(seams.role),
      baselines_(seams.baselines),
      topology_(seams.topology),
      shards_(seams.shards),
      view_builder_(series),
      hysteresis_(std::in_place, options.analysis.hysteresis),
      baselines_writer_(&seams.baselines) {
  if (shards_ != nullptr) {
    sharded_.emplace(ShardedRatePass::Options{shards_->Id(), options_.analysis,
                                              shards_->Counts()});
    shard_baselines_.emplace(
        &baselines_, &baselines_writer_,
        ShardBaselines::Options{options_.baselines_every,
                                options_.baselines_max_age, shards_->Counts()});
  }
}

// A read of the stored baselines retried off the analysis thread.
struct AnalysisRunner::BaselinesRead {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;  // guarded by mu; the fields below are set before
  absl::StatusOr<LoadedBaselines> loaded = absl::UnknownError("not read");
  analysis::StragglerBaselines stored;
};

AnalysisRunner::~AnalysisRunner() {
  Stop();
  JoinBaselinesReader();
}

void AnalysisRunner::JoinBaselinesReader() {
  if (baselines_reader_.joinable()) baselines_reader_.join();
}

void AnalysisRunner::Start() {
  thread_ = std::thread([this] {
    // The analysis thread runs at the process's priority. At nice +10
    // (ingest first), one core saturated by 8,500 agents connecting at once
    // starved passes to 5-10 s, and a pass must end within its interval;
    // at equal priority they took 0.8 s at most, for a send->ack p99 of
    // 51-83 ms instead of 12-24 ms (bench/connect_storm.py).
    //
    // Passes on the wall clock's grid, where the agents read
    // (NextGridTick), a settling time after it: a pass sees the samples
    // the agents just took instead of up to an interval after. Not an
    // interval after the last pass ended: that period drifts against the
    // agents' reads, and every few passes one pass would see two new
    // samples and the newest-samples view would skip one. A pass that
    // overruns starts the next at the following slot.
    // Past the settling time, a pass waits for the reports of the read
    // still awaited (SeriesStore::ArrivalsFor), up to kPassWaitFraction of
    // the interval after the grid point, checking every fiftieth of one.
    const absl::Duration settle = kPassSettleFraction * options_.interval;
    const auto poll = std::chrono::nanoseconds(
        absl::ToInt64Nanoseconds(options_.interval / 50));
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      lock.unlock();
      RunOnce();
      lock.lock();
      const auto now = std::chrono::steady_clock::now();
      const absl::Time wall = absl::Now();
      const int64_t mono = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               now.time_since_epoch())
                               .count();
      const int64_t to_next =
          NextGridTick(mono, wall, options_.interval, settle) - mono;
      const absl::Time grid = wall + absl::Nanoseconds(to_next) - settle;
      const auto next = now + std::chrono::nanoseconds(to_next);
      cv_.wait_until(lock, next, [this] { return stopping_; });
      const auto wait_until =
          next +
          std::chrono::nanoseconds(absl::ToInt64Nanoseconds(
              (kPassWaitFraction - kPassSettleFraction) * options_.interval));
      while (!stopping_ && std::chrono::steady_clock::now() < wait_until &&
             series_->ArrivalsFor(grid, options_.interval).awaited > 0) {
        cv_.wait_for(lock, poll, [this] { return stopping_; });
      }
    }
  });
}

void AnalysisRunner::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable()) return;
  thread_.join();
  // What was learned since the last write, for the next process; in a
  // cluster only while this collector still analyses (a former leader's
  // baselines would replace the current one's).
  std::lock_guard<std::timed_mutex> lock(pass_mu_);
  // Sharded, each job shard's owner writes the shard's (those it owned at
  // its last pass), and the leader none of the unsharded analysis's.
  const bool analysing = term_ != 0 && role_.Leading() && shards_ == nullptr;
  if (hysteresis_seeded_ && analysing) SaveBaselines(clock_.Now());
  if (hysteresis_seeded_ && shards_ != nullptr) {
    SaveShardBaselines(clock_.Now(), /*all=*/true);
  }
  // The writes only: a read retried is not waited for (the destructor
  // joins it, within its deadline).
  baselines_writer_.Flush();
}

void AnalysisRunner::Persisted(const absl::Status& status) {
  if (status.ok()) return;
  if (stats_->persist_errors.fetch_add(1) == 0) {
    LogError(absl::StrCat("cannot persist findings: ", status.ToString()));
  }
}

FeatureSlice AnalysisRunner::ExchangeFeatures(absl::Time now, MergeScope scope,
                                              const TopologyViews& topology,
                                              FeatureSlice* keep_local) {
  FeatureSlice local;
  // The window, and the same over the newest samples alone: a strong fault
  // opens without waiting for the window mean
  // (HysteresisConfig::recent_seconds).
  std::vector<double> windows = {options_.analysis.window_seconds};
  const double recent_seconds = options_.analysis.hysteresis.recent_seconds;
  if (recent_seconds > 0 && recent_seconds < options_.analysis.window_seconds) {
    windows.push_back(recent_seconds);
  }
  // Every node that ever reported here, for agent_down, by name (what
  // LivenessOf() takes of a node's Info(), without copying the rest), as
  // the views' walk reads it.
  std::vector<analysis::FabricView> views = view_builder_.Build(
      topology.effective.get(), windows, now,
      [&local](const NodeSeries& node, const NodeSeries::ViewState& state) {
        NodeFacts& facts = local.nodes.emplace_back();
        facts.liveness =
            LivenessOf(node.name(), state.last_report, state.interval_ms);
        facts.handed_off = state.handed_off;
      });
  local.window = std::move(views[0]);
  if (views.size() > 1) local.recent = std::move(views[1]);
  // Sharded, each shard's ports travel to its owner: the others need this
  // collector's liveness alone.
  const absl::Status published = shards_ != nullptr
                                     ? features_.PublishLiveness(local, now)
                                     : features_.Publish(local, now);
  if (published.ok() == publish_failing_) {
    publish_failing_ = !published.ok();
    if (publish_failing_) {
      LogWarning(
          absl::StrCat("analysis: cannot publish this collector's "
                       "features (",
                       features_.Describe(), "): ", published.message()));
    } else {
      LogInfo("analysis: publishing this collector's features again");
    }
  }
  if (keep_local != nullptr) {
    if (scope == MergeScope::kFabric) {
      *keep_local = local;
    } else {
      // A merge of nodes only reads no port: the views are kept, not copied.
      keep_local->window = std::move(local.window);
      keep_local->recent = std::move(local.recent);
      local.window = analysis::FabricView();
      local.recent.reset();
      keep_local->nodes = local.nodes;
    }
  }
  return features_.Merged(std::move(local), now, scope);
}

bool AnalysisRunner::ViewWanted() const {
  const int64_t at = view_wanted_at_.load(std::memory_order_relaxed);
  return at != 0 && clock_.MonotonicNanos() - at <=
                        absl::ToInt64Nanoseconds(kViewWantedFor);
}

void AnalysisRunner::RunLiveness(absl::Time now,
                                 const std::vector<NodeFacts>& facts,
                                 bool whole_fabric,
                                 const TopologyViews& topology) {
  // What the fabric knows about every node that ever reported; who counts
  // as down is the analyzer's (analysis/agent_down.h).
  std::vector<analysis::NodeLiveness> nodes;
  nodes.reserve(facts.size());
  for (const NodeFacts& n : facts) nodes.push_back(n.liveness);
  // After a restart the collector knows only the nodes that reported since;
  // a node it had found down keeps its finding until it reports again,
  // with the last report and interval the finding recorded.
  // (A set of the findings' nodes, not of every node: 125,000 at 1M GPUs.)
  const std::vector<v1::Finding> active = findings_->Active();
  absl::flat_hash_map<absl::string_view, const v1::Finding*> down_unlisted;
  for (const v1::Finding& f : active) {
    if (f.kind() == analysis::kAgentDownKind) {
      down_unlisted.emplace(f.node(), &f);
    }
  }
  if (!down_unlisted.empty()) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      auto it = down_unlisted.find(nodes[i].node);
      if (it == down_unlisted.end()) continue;
      down_unlisted.erase(it);
      // A node found down whose collector's features stopped arriving is
      // judged as of now, not as of its last report: what it does there is
      // unknown, and the finding holds as the others of unobserved nodes
      // do (QuietNodes). Judged as of its last report it would resolve
      // when that report came after the stalled collector's last news (a
      // new leader taking over a finding whose resolve never landed), and
      // open again under a new id once that collector is gone.
      if (facts[i].unobserved) nodes[i].observed_until = absl::InfiniteFuture();
    }
    for (const v1::Finding& f : active) {
      auto it = down_unlisted.find(f.node());
      if (it == down_unlisted.end() || it->second != &f) continue;
      std::optional<analysis::NodeLiveness> l = LivenessFromFinding(f);
      if (l.has_value()) nodes.push_back(*std::move(l));
    }
  }
  if (options_.forgotten_at) {
    nodes.erase(std::remove_if(nodes.begin(), nodes.end(),
                               [this](const analysis::NodeLiveness& n) {
                                 const std::optional<absl::Time> at =
                                     options_.forgotten_at(n.node);
                                 return at.has_value() && n.last_report <= *at;
                               }),
                nodes.end());
  }
  std::vector<analysis::Finding> found =
      analysis::AgentDownFindings(nodes, now, options_.analysis.agent_down);
  const std::vector<analysis::ExpectedHost> unheard =
      UnheardHosts(now, nodes, whole_fabric, topology);
  if (!unheard.empty()) {
    // Nodes that report under a name the topology does not have: one may
    // be a missing host's agent under another spelling.
    std::vector<std::string> unlisted;
    for (const analysis::NodeLiveness& n : nodes) {
      if (!topology.effective_index->IsHost(n.node) &&
          !topology.effective_index->IsSwitch(n.node)) {
        unlisted.push_back(n.node);
      }
    }
    for (analysis::Finding& f : analysis::AgentMissingFindings(
             unheard, unlisted, now, options_.analysis.agent_missing)) {
      found.push_back(std::move(f));
    }
  }
  Report(std::move(found), *layouts_->Snapshot(), now, kAgentLivenessSource);
}

std::vector<analysis::ExpectedHost> AnalysisRunner::UnheardHosts(
    absl::Time now, const std::vector<analysis::NodeLiveness>& heard,
    bool whole_fabric, const TopologyViews& topology) {
  std::vector<analysis::ExpectedHost> out;
  if (topology.declared == nullptr ||
      options_.analysis.agent_missing.after_seconds <= 0) {
    unheard_since_.clear();
    return out;
  }
  if (topology.declared != inventory_of_) {
    // Per host of the declared links: how many, to which switches.
    std::map<std::string, analysis::ExpectedHost> hosts;
    for (const v1::Link& link : topology.declared->links()) {
      analysis::ExpectedHost& h = hosts[link.host()];
      h.node = link.host();
      ++h.links;
      h.switches.push_back(link.switch_());
    }
    inventory_.clear();
    for (auto& [name, h] : hosts) {
      std::sort(h.switches.begin(), h.switches.end());
      h.switches.erase(std::unique(h.switches.begin(), h.switches.end()),
                       h.switches.end());
      inventory_.push_back(std::move(h));
    }
    inventory_of_ = topology.declared;
  }
  // The names heard, sorted (as the merge leaves them, as a rule), walked
  // with the hosts (sorted too): no set of every node's name each pass.
  std::vector<absl::string_view> reported;
  reported.reserve(heard.size());
  for (const analysis::NodeLiveness& n : heard) reported.push_back(n.node);
  if (!std::is_sorted(reported.begin(), reported.end())) {
    std::sort(reported.begin(), reported.end());
  }
  auto next_reported = reported.begin();
  // Held while `open` views its nodes' names.
  const std::vector<v1::Finding> active = findings_->Active();
  absl::flat_hash_set<absl::string_view> open;
  for (const v1::Finding& f : active) {
    if (f.kind() == analysis::kAgentMissingKind) open.insert(f.node());
  }
  absl::flat_hash_map<std::string, absl::Time> since;
  for (const analysis::ExpectedHost& host : inventory_) {
    // A forgotten host is decommissioned: expected again once it reports.
    // (Stepped, not searched: both lists hold most of the same names, and a
    // binary search per host cost 17 comparisons of them at 1M GPUs.)
    while (next_reported != reported.end() &&
           *next_reported < absl::string_view(host.node)) {
      ++next_reported;
    }
    const bool heard_of = next_reported != reported.end() &&
                          *next_reported == absl::string_view(host.node);
    if (heard_of ||
        (options_.forgotten_at && options_.forgotten_at(host.node))) {
      continue;
    }
    // Without the whole fabric in view (a collector's features missing) a
    // host's agent may be streaming there: the wait starts again.
    auto it = unheard_since_.find(host.node);
    const absl::Time from =
        whole_fabric && it != unheard_since_.end() ? it->second : now;
    if (whole_fabric) since.emplace(host.node, from);
    analysis::ExpectedHost h = host;
    h.unheard_since = from;
    h.open = open.contains(host.node);
    out.push_back(std::move(h));
  }
  unheard_since_ = std::move(since);
  return out;
}

void AnalysisRunner::RunLayoutAnalyzers(absl::Time now) {
  std::vector<analysis::Finding> reports;
  std::shared_ptr<const RegistrySnapshot> snapshot = layouts_->Snapshot();
  for (const auto& [job, entry] : snapshot->layouts) {
    // With the last rate pass's view, TP crossings are confirmed (or not)
    // by what the group's NICs carry; sharded in a cluster, by what the
    // job shard's owner measured of them.
    std::vector<analysis::Finding> found;
    if (last_view_ != nullptr || shards_ == nullptr) {
      found = analysis::TpCrossNodeFindings(entry->model, last_view_.get());
    } else {
      auto loads = tp_loads_.find(job);
      found = analysis::TpCrossNodeFindings(
          entry->model, [&](uint32_t g) -> const analysis::TpGroupLoad* {
            if (loads == tp_loads_.end()) return nullptr;
            auto it = std::lower_bound(
                loads->second.begin(), loads->second.end(), g,
                [](const analysis::TpGroupLoad& l, uint32_t group) {
                  return l.group < group;
                });
            return it != loads->second.end() && it->group == g ? &*it : nullptr;
          });
    }
    for (analysis::Finding& f : found) reports.push_back(std::move(f));
  }
  Report(std::move(reports), *snapshot, now, kLayoutSource);
}

void AnalysisRunner::RunRateAnalyzers(absl::Time now, FeatureSlice fabric,
                                      const std::vector<NodeFacts>& facts,
                                      const TopologyViews& topology) {
  std::shared_ptr<const RegistrySnapshot> snapshot = layouts_->Snapshot();
  if (!hysteresis_seeded_) {
    // Every NIC's baseline as last written before a restart; then the
    // findings the rate analyzers opened before it, and the baselines
    // their stragglers were judged against.
    LoadBaselines(now, *snapshot);
    SeedRateState(findings_->Active(), &*hysteresis_, &straggler_baselines_);
    hysteresis_seeded_ = true;
    seeded_at_ = now;
    holding_unheard_ = false;
  } else if (now < baselines_retry_until_ || baselines_reader_.joinable()) {
    RetryBaselines(now, snapshot);
  }
  auto view = std::make_shared<analysis::FabricView>(std::move(fabric.window));
  Publish(view);
  analysis::AnalysisInput in;
  in.view = view.get();
  // Declared where declared, discovered over LLDP elsewhere: with no
  // topology file at all, ECMP, PFC victims and far ends work from LLDP.
  in.topology = topology.effective.get();
  in.topology_index = topology.effective_index.get();
  // cabling_mismatch holds what is declared against what LLDP reports.
  in.declared_topology = topology.declared.get();
  in.cabling_mismatches = topology.cabling.get();
  in.discovered_topology = topology.discovered.get();
  in.config = &options_.analysis;
  // A job none of whose hosts report has nothing for the rate analyzers:
  // declared layouts cost nothing until their agents speak.
  std::vector<const analysis::LayoutModel*> declared;
  declared.reserve(snapshot->layouts.size());
  for (const auto& [job, entry] : snapshot->layouts) {
    declared.push_back(&entry->model);
  }
  in.layouts = analysis::LayoutsReportingIn(*view, declared);
  // The window's findings, the baselines updated after this pass's
  // judgement (a NIC is measured against its past, not against a baseline
  // that already holds the window it is judged on), and the same analyzers
  // over the newest samples alone (a strong fault opens without waiting for
  // the window mean, HysteresisConfig::recent_seconds): the two runs on two
  // threads (collector/runner/rate_pass.h).
  RateFindings found =
      RunRatePass(in, fabric.recent.has_value() ? &*fabric.recent : nullptr,
                  &straggler_baselines_);
  // The findings open before this pass, copied once (the holds below read
  // them).
  const std::vector<v1::Finding> active = findings_->Active();
  const absl::flat_hash_set<std::string> quiet =
      QuietNodes(now, facts, *view, active);
  const absl::flat_hash_set<std::pair<std::string, std::string>> quiet_groups =
      QuietGroups(now, *snapshot, facts, active, quiet);
  // A held storm source's victims are still seen: not a second storm.
  const std::set<int> held = HeldStormPriorities(active, quiet);
  analysis::DropSourcelessOnPriorities(held, &found.window);
  analysis::DropSourcelessOnPriorities(held, &found.recent);
  Report(hysteresis_->Step(std::move(found.window), std::move(found.recent),
                           quiet, quiet_groups),
         *snapshot, now, kRateSource);
  // Every baselines_every; and at once when the last write held none (a
  // leader's first pass, before its NICs had traffic), so that a failover
  // in the first period does not lose what was learned since.
  if (now - baselines_written_ >= options_.baselines_every ||
      (wrote_no_baselines_ && straggler_baselines_.size() > 0)) {
    SaveBaselines(now);
  }
  // The recent view is read by this pass alone: the next one writes over
  // it.
  if (fabric.recent.has_value()) {
    view_builder_.Recycle(1, std::move(*fabric.recent));
  }
}

void AnalysisRunner::Report(std::vector<analysis::Finding> reports,
                            const RegistrySnapshot& layouts, absl::Time now,
                            absl::string_view source,
                            const absl::flat_hash_set<std::string>* within) {
  AddJobLabels(layouts, &reports);
  Persisted(within == nullptr
                ? findings_->Update(reports, now, source)
                : findings_->UpdateWithin(reports, now, source, *within));
}

absl::flat_hash_set<std::string> AnalysisRunner::QuietNodes(
    absl::Time now, const std::vector<NodeFacts>& facts,
    const analysis::FabricView& view, absl::Span<const v1::Finding> active) {
  // What is not seen of a node whose agent is restarting is unknown, not
  // healthy: its findings hold until it reports again. So is a node whose
  // collector's features stopped arriving (unobserved).
  absl::flat_hash_set<std::string> quiet;
  for (const NodeFacts& n : facts) {
    if (n.unobserved ||
        analysis::IsAgentQuiet(n.liveness, now, options_.analysis.agent_down)) {
      quiet.insert(n.liveness.node);
    }
  }
  // So is a node of a finding taken over at a restart or a new term that no
  // collector has heard from since: its agent is still reconnecting.
  HoldUnheardNodes(now, facts, active, &quiet);
  // And one whose agent connected a moment ago: its rates are not there
  // yet.
  HoldRatelessNodes(now, facts, view, &quiet);
  return quiet;
}

void AnalysisRunner::HoldUnheardNodes(absl::Time now,
                                      const std::vector<NodeFacts>& facts,
                                      absl::Span<const v1::Finding> active,
                                      absl::flat_hash_set<std::string>* quiet) {
  const bool in_grace = now - seeded_at_ < kUnheardNodesGrace;
  if (!in_grace && !holding_unheard_) return;
  // The findings' nodes (a host whose agent never reported has no other
  // finding to hold), then those heard from and up: a node heard once
  // since and silent again is still reconnecting (its agent handed to its
  // preferred collector, or in a backoff that grows to 30 s). Sets of the
  // findings' nodes, not of every node (125,000 at 1M GPUs).
  absl::flat_hash_set<absl::string_view> of_findings;
  for (const v1::Finding& f : active) {
    if (!f.node().empty() && f.kind() != analysis::kAgentMissingKind) {
      of_findings.insert(f.node());
    }
  }
  absl::flat_hash_set<absl::string_view> heard;
  if (!of_findings.empty()) {
    for (const NodeFacts& n : facts) {
      if (of_findings.contains(n.liveness.node) &&
          analysis::IsAgentUp(n.liveness, now, options_.analysis.agent_down)) {
        heard.insert(n.liveness.node);
      }
    }
  }
  std::set<std::string> unheard;
  for (absl::string_view node : of_findings) {
    if (!heard.contains(node)) unheard.emplace(node);
  }
  // Named in the log, so that an operator knows why those findings resolve
  // only later (or stay open while their agents come back).
  auto named = [&unheard] {
    std::vector<absl::string_view> first;
    for (const std::string& node : unheard) {
      if (first.size() == 5) break;
      first.push_back(node);
    }
    return absl::StrCat(unheard.size(),
                        unheard.size() == 1 ? " node (" : " nodes (",
                        absl::StrJoin(first, ", "),
                        unheard.size() > first.size() ? ", ...)" : ")");
  };
  if (!in_grace) {
    if (!unheard.empty()) {
      LogInfo(absl::StrCat(
          "analysis: the open findings of ", named(), " not heard from within ",
          absl::FormatDuration(kUnheardNodesGrace), " count down from now on"));
    }
    holding_unheard_ = false;
    return;
  }
  if (!holding_unheard_ && !unheard.empty()) {
    LogInfo(absl::StrCat("analysis: holding the open findings of ", named(),
                         " not heard from yet, for up to ",
                         absl::FormatDuration(kUnheardNodesGrace),
                         " while agents reconnect"));
  }
  holding_unheard_ = !unheard.empty();
  for (const std::string& node : unheard) quiet->insert(node);
}

void AnalysisRunner::HoldRatelessNodes(
    absl::Time now, const std::vector<NodeFacts>& facts,
    const analysis::FabricView& view, absl::flat_hash_set<std::string>* quiet) {
  // The view's nodes with traffic ports (those whose samples the view
  // counts), none with a report in the window: one sweep of its ports (a
  // node's are together), so that only those few are looked for among the
  // facts (every node of the fabric, 125,000 at 1M GPUs) rather than every
  // fact in the view.
  absl::flat_hash_set<absl::string_view> rateless_here;
  const absl::Span<const analysis::PortView> ports = view.ports();
  for (size_t i = 0; i < ports.size();) {
    bool counted = false;
    bool rated = false;
    size_t end = i;
    for (; end < ports.size() && ports[end].node == ports[i].node; ++end) {
      const analysis::SampleEvidence& e = ports[end].samples;
      counted = counted || e.expected_reports > 0;
      rated = rated || e.reports > 0;
    }
    if (counted && !rated) rateless_here.insert(ports[i].node);
    i = end;
  }
  absl::flat_hash_map<std::string, absl::Time> rateless;
  if (!rateless_here.empty()) {
    for (const NodeFacts& n : facts) {
      const std::string& node = n.liveness.node;
      if (!rateless_here.contains(node) || quiet->contains(node) ||
          !analysis::IsAgentUp(n.liveness, now, options_.analysis.agent_down)) {
        continue;
      }
      auto before = rateless_since_.find(node);
      const absl::Time since =
          before == rateless_since_.end() ? now : before->second;
      rateless.emplace(node, since);
      if (now - since < kRatelessHold) quiet->insert(node);
    }
  }
  rateless_since_ = std::move(rateless);
}

absl::flat_hash_set<std::pair<std::string, std::string>>
AnalysisRunner::QuietGroups(absl::Time now, const RegistrySnapshot& layouts,
                            const std::vector<NodeFacts>& facts,
                            absl::Span<const v1::Finding> active,
                            const absl::flat_hash_set<std::string>& quiet) {
  absl::flat_hash_set<std::pair<std::string, std::string>> held;
  absl::flat_hash_set<std::pair<std::string, std::string>> judged;
  const bool in_grace = now - seeded_at_ < kUnheardNodesGrace;
  // In the grace a group is held too while a host of it is not up: the
  // groups without a quiet host wait, with their hosts, for one walk over
  // the facts that asks about those hosts alone.
  std::vector<std::pair<std::pair<std::string, std::string>,
                        std::vector<absl::string_view>>>
      waiting;
  absl::flat_hash_set<absl::string_view> asked;
  for (const v1::Finding& f : active) {
    if (f.job().empty() || f.group().empty()) continue;
    std::pair<std::string, std::string> key(f.job(), f.group());
    if (!judged.insert(key).second) continue;
    auto layout = layouts.layouts.find(f.job());
    if (layout == layouts.layouts.end()) continue;
    const analysis::LayoutModel& model = layout->second->model;
    absl::StatusOr<analysis::GroupId> group =
        analysis::ParseGroupName(f.group());
    if (!group.ok() || group->index >= model.NumGroups(group->dim)) continue;
    std::vector<absl::string_view> hosts;
    bool quiet_host = false;
    for (uint32_t rank : model.Group(group->dim, group->index)) {
      const std::string& host = model.Hosts()[model.Rank(rank).host];
      if (quiet.contains(host)) {
        quiet_host = true;
        break;
      }
      if (in_grace) hosts.push_back(host);
    }
    if (quiet_host) {
      held.insert(std::move(key));
    } else if (in_grace) {
      asked.insert(hosts.begin(), hosts.end());
      waiting.emplace_back(std::move(key), std::move(hosts));
    }
  }
  if (waiting.empty()) return held;
  absl::flat_hash_set<absl::string_view> up;
  for (const NodeFacts& n : facts) {
    if (asked.contains(n.liveness.node) &&
        analysis::IsAgentUp(n.liveness, now, options_.analysis.agent_down)) {
      up.insert(n.liveness.node);
    }
  }
  for (auto& [key, hosts] : waiting) {
    if (std::any_of(hosts.begin(), hosts.end(),
                    [&up](absl::string_view h) { return !up.contains(h); })) {
      held.insert(std::move(key));
    }
  }
  return held;
}

void AnalysisRunner::LoadBaselines(absl::Time now,
                                   const RegistrySnapshot& snapshot) {
  std::vector<const analysis::LayoutModel*> layouts;
  for (const auto& [job, entry] : snapshot.layouts) {
    layouts.push_back(&entry->model);
  }
  baselines_tried_ = now;
  baselines_retry_until_ = absl::InfinitePast();
  // A read retried in an earlier term is of no use now (rare: the lease
  // lost and won back within a minute).
  JoinBaselinesReader();
  {
    std::lock_guard<std::mutex> lock(baselines_read_mu_);
    baselines_read_.reset();
  }
  absl::StatusOr<LoadedBaselines> loaded =
      LoadStragglerBaselines(&baselines_, now, options_.baselines_max_age,
                             layouts, &straggler_baselines_);
  if (!loaded.ok()) {
    LogWarning(absl::StrCat(
        "analysis: straggler baselines not loaded, learning afresh and "
        "reading them again every ",
        absl::FormatDuration(kBaselinesRetryEvery), " for ",
        absl::FormatDuration(options_.baselines_every), ": ",
        loaded.status().message()));
    // What is stored may still be good (NATS did not answer for a moment):
    // replaced only once this collector learned for a whole period, and
    // read again until then.
    baselines_written_ = now;
    baselines_retry_until_ = now + options_.baselines_every;
    return;
  }
  if (!loaded->problem.empty()) {
    LogWarning(absl::StrCat("analysis: ", loaded->problem,
                            loaded->damaged ? "; learning afresh" : ""));
    return;
  }
  if (loaded->restored + loaded->dropped > 0) {
    LogInfo(absl::StrCat("analysis: ", loaded->restored,
                         " straggler baselines restored, ", loaded->dropped,
                         " of NICs no longer in a layout dropped"));
  }
}

void AnalysisRunner::RetryBaselines(
    absl::Time now, std::shared_ptr<const RegistrySnapshot> snapshot) {
  std::shared_ptr<BaselinesRead> read;
  {
    std::lock_guard<std::mutex> lock(baselines_read_mu_);
    read = baselines_read_;
  }
  if (read != nullptr) {
    {
      std::lock_guard<std::mutex> lock(read->mu);
      if (!read->done) return;
    }
    JoinBaselinesReader();
    {
      std::lock_guard<std::mutex> lock(baselines_read_mu_);
      baselines_read_.reset();
    }
    const bool taken = TakeBaselinesRead(read.get());
    // Read again at the next try, unless that is past the first write.
    if (!taken && std::max(now, baselines_tried_ + kBaselinesRetryEvery) >=
                      baselines_retry_until_) {
      LogWarning(
          absl::StrCat("analysis: straggler baselines still not loaded after ",
                       absl::FormatDuration(options_.baselines_every),
                       "; going on with what was learned since: ",
                       read->loaded.status().message()));
    }
  }
  if (now >= baselines_retry_until_ ||
      now - baselines_tried_ < kBaselinesRetryEvery) {
    return;
  }
  baselines_tried_ = now;
  read = std::make_shared<BaselinesRead>();
  {
    std::lock_guard<std::mutex> lock(baselines_read_mu_);
    baselines_read_ = read;
  }
  BaselinesStore* store = &baselines_;
  const absl::Duration max_age = options_.baselines_max_age;
  baselines_reader_ =
      std::thread([read, store, now, max_age, snapshot = std::move(snapshot)] {
        std::vector<const analysis::LayoutModel*> layouts;
        for (const auto& [job, entry] : snapshot->layouts) {
          layouts.push_back(&entry->model);
        }
        absl::StatusOr<LoadedBaselines> loaded =
            LoadStragglerBaselines(store, now, max_age, layouts, &read->stored);
        std::lock_guard<std::mutex> lock(read->mu);
        read->loaded = std::move(loaded);
        read->done = true;
        read->cv.notify_all();
      });
}

bool AnalysisRunner::TakeBaselinesRead(BaselinesRead* read) {
  if (!read->loaded.ok()) return false;
  baselines_retry_until_ = absl::InfinitePast();
  const LoadedBaselines& loaded = *read->loaded;
  if (!loaded.problem.empty()) {
    LogWarning(absl::StrCat("analysis: ", loaded.problem));
    return true;
  }
  // The stored history replaces the seconds learned since, job by job;
  // the baselines the open stragglers were judged against stay theirs.
  analysis::StragglerBaselines& stored = read->stored;
  const size_t adopted = straggler_baselines_.Adopt(
      [&stored](absl::string_view job) { return stored.HasJob(job); },
      std::move(stored));
  SeedStragglerBaselines(findings_->Active(), &straggler_baselines_);
  if (adopted + loaded.dropped > 0) {
    LogInfo(absl::StrCat("analysis: ", adopted,
                         " straggler baselines restored on a later read, ",
                         loaded.dropped,
                         " of NICs no longer in a layout dropped"));
  }
  return true;
}

void AnalysisRunner::SaveBaselines(absl::Time now) {
  // Not retried before baselines_every either way: a failing disk is
  // counted by the store (/healthz), a failing write logged by the writer.
  baselines_written_ = now;
  wrote_no_baselines_ = straggler_baselines_.size() == 0;
  baselines_writer_.Write(straggler_baselines_.Serialize(), now);
}

void AnalysisRunner::SaveShardBaselines(absl::Time now, bool all) {
  std::vector<std::string> owned;
  owned.reserve(shard_terms_.size());
  for (const auto& [shard, term] : shard_terms_) owned.push_back(shard);
  shard_baselines_->Save(now, owned, sharded_->baselines(), all);
}

void AnalysisRunner::FlushBaselines() {
  baselines_writer_.Flush();
  std::shared_ptr<BaselinesRead> read;
  {
    std::lock_guard<std::mutex> lock(baselines_read_mu_);
    read = baselines_read_;
  }
  if (read == nullptr) return;
  std::unique_lock<std::mutex> lock(read->mu);
  read->cv.wait(lock, [&read] { return read->done; });
}

void AnalysisRunner::Publish(std::shared_ptr<analysis::FabricView> view) {
  last_view_ = view;
  std::shared_ptr<analysis::FabricView> previous;
  {
    std::lock_guard<std::mutex> lock(view_mu_);
    previous = std::exchange(published_view_, std::move(view));
  }
  // The view replaced is recycled or freed here, outside the lock
  // LatestView() takes: at 200k GPUs its ports take some 45 ms to free,
  // which the page's readers would otherwise wait out. Nobody can take it
  // any more (it is published nowhere now): held here alone, it is no
  // one's. use_count() reads the count relaxed: ordered after the last
  // reader's release of its copy (and so after its reads of the view) only
  // by the fence.
  if (previous != nullptr && previous.use_count() == 1) {
    std::atomic_thread_fence(std::memory_order_acquire);
    view_builder_.Recycle(0, std::move(*previous));
  }
}

bool AnalysisRunner::Leading() {
  const uint64_t term = role_.Term();
  if (term == 0 || !role_.Leading()) {
    term_ = 0;
    return false;
  }
  if (term != term_) {
    // Someone else analysed since this collector last did: start over from
    // the findings it left, as after a restart.
    term_ = term;
    hysteresis_.emplace(options_.analysis.hysteresis);
    straggler_baselines_ = analysis::StragglerBaselines();
    hysteresis_seeded_ = false;
    // Who was unheard before is not known to have been unheard since.
    unheard_since_.clear();
    // The findings taken over now carry this term: a deposed leader's
    // write still in flight for any of them is refused or dropped.
    absl::StatusOr<size_t> rewritten = findings_->ShareActive();
    if (!rewritten.ok()) {
      LogWarning(absl::StrCat("analysis term ", term,
                              ": active findings not rewritten under it: ",
                              rewritten.status().message()));
    } else if (*rewritten > 0) {
      LogInfo(absl::StrCat("analysis term ", term, ": rewrote ", *rewritten,
                           " active findings under it"));
    }
  }
  return true;
}

bool AnalysisRunner::ViewIsWholeFabric() const {
  return shards_ == nullptr || shards_->Id().empty();
}

std::shared_ptr<const analysis::FabricView> AnalysisRunner::LatestView() const {
  view_wanted_at_.store(clock_.MonotonicNanos(), std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(view_mu_);
  return published_view_;
}

std::shared_ptr<const analysis::FabricView> AnalysisRunner::LatestJobView(
    absl::string_view job) const {
  if (ViewIsWholeFabric()) return nullptr;
  std::lock_guard<std::mutex> lock(view_mu_);
  job_views_wanted_[job] = clock_.MonotonicNanos();
  auto it = published_job_views_.find(job);
  return it != published_job_views_.end() ? it->second : nullptr;
}

std::string AnalysisRunner::JobShardOwner(absl::string_view job) const {
  if (ViewIsWholeFabric()) return "";
  return shards_->OwnerOf(analysis::JobShardOf(job, shards_->Counts()));
}

void AnalysisRunner::PublishJobViews(
    absl::Span<const analysis::LayoutModel* const> declared) {
  absl::flat_hash_set<std::string> wanted;
  {
    std::lock_guard<std::mutex> lock(view_mu_);
    const int64_t now = clock_.MonotonicNanos();
    for (auto it = job_views_wanted_.begin(); it != job_views_wanted_.end();) {
      if (now - it->second <= absl::ToInt64Nanoseconds(kViewWantedFor)) {
        wanted.insert(it->first);
        ++it;
      } else {
        job_views_wanted_.erase(it++);
      }
    }
  }
  absl::flat_hash_map<std::string, std::shared_ptr<const analysis::FabricView>>
      views;
  for (const analysis::LayoutModel* m : declared) {
    if (!wanted.contains(m->job())) continue;
    auto shard =
        shard_views_.find(analysis::JobShardOf(m->job(), shards_->Counts()));
    if (shard == shard_views_.end()) continue;
    const analysis::FabricView& from = shard->second.window;
    auto view = std::make_shared<analysis::FabricView>();
    view->window_seconds = from.window_seconds;
    for (const std::string& host : m->Hosts()) {
      for (const analysis::PortView& p : from.PortsOf(host)) {
        view->AddPort(p.node, p.device) = p;
      }
    }
    view->Finish();
    views.emplace(m->job(), std::move(view));
  }
  std::lock_guard<std::mutex> lock(view_mu_);
  // The views replaced are freed with `views`, outside the lock.
  std::swap(published_job_views_, views);
}

void AnalysisRunner::RunOnce() {
  std::lock_guard<std::timed_mutex> lock(pass_mu_);
  const int64_t start = clock_.MonotonicNanos();
  const absl::Time now = clock_.Now();
  const bool leading = Leading();
  if (shards_ != nullptr) {
    RunSharded(now, leading, *topology_.Current());
    stats_->RecordPass(clock_.MonotonicNanos() - start);
    return;
  }
  // A collector that does not analyse merges the others' ports only for
  // its page, while someone looks at it.
  const bool whole_fabric = leading || ViewWanted();
  // One set of topologies for the whole pass; the keeper swaps in new ones
  // meanwhile without waiting for it.
  std::shared_ptr<const TopologyViews> topology = topology_.Current();
  FeatureSlice fabric = ExchangeFeatures(
      now, whole_fabric ? MergeScope::kFabric : MergeScope::kNodes, *topology);
  // The fabric's nodes, shared with the readers of LatestNodes() rather
  // than copied (125,000 facts at 1M GPUs).
  auto nodes =
      std::make_shared<const std::vector<NodeFacts>>(std::move(fabric.nodes));
  fabric.nodes.clear();
  {
    std::lock_guard<std::mutex> view_lock(view_mu_);
    published_nodes_ = nodes;
  }
  if (leading) {
    RunLiveness(now, *nodes, fabric.complete, *topology);
    RunLayoutAnalyzers(now);
    RunRateAnalyzers(now, std::move(fabric), *nodes, *topology);
  } else if (whole_fabric) {
    // The page still shows the whole fabric.
    Publish(std::make_shared<analysis::FabricView>(std::move(fabric.window)));
  } else {
    // Nobody looks: no view of this collector's part alone, which the page
    // would show as the fabric.
    Publish(nullptr);
  }
  stats_->RecordPass(clock_.MonotonicNanos() - start);
}

void AnalysisRunner::RunSharded(absl::Time now, bool leading,
                                const TopologyViews& topology) {
  // Every collector analyses its own ports and its shards, and merges the
  // others' nodes alone (their ports are not published: each shard's go to
  // its owner). Alone (embedded) its ports are the fabric; in a cluster
  // only its agents' part of it, which its page shows as such
  // (ViewIsWholeFabric()).
  FeatureSlice local;
  FeatureSlice fabric =
      ExchangeFeatures(now, MergeScope::kNodes, topology, &local);
  auto nodes =
      std::make_shared<const std::vector<NodeFacts>>(std::move(fabric.nodes));
  fabric.nodes.clear();
  {
    std::lock_guard<std::mutex> view_lock(view_mu_);
    published_nodes_ = nodes;
  }
  if (leading) {
    RunLiveness(now, *nodes, fabric.complete, topology);
    RunLayoutAnalyzers(now);
  }
  RunShardedRate(now, local, *nodes, topology);
  // Findings the unsharded analysis left (a cluster that turned sharding
  // on) are taken over by the shards and the nodes' collectors they belong
  // to; what no one took once agents had time to reconnect is resolved.
  if (leading && now - seeded_at_ >= kUnheardNodesGrace &&
      !findings_->ActiveOf(kRateSource).empty()) {
    Report({}, *layouts_->Snapshot(), now, kRateSource);
  }
  // Kept for the layout name check, and for the page while someone looks
  // at it: moved, not copied, once the pass is done with it.
  auto own = std::make_shared<analysis::FabricView>(std::move(local.window));
  std::shared_ptr<analysis::FabricView> previous;
  {
    std::lock_guard<std::mutex> view_lock(view_mu_);
    previous = std::exchange(published_own_ports_, own);
  }
  // Alone, its view is the fabric's, ready for the page's first request as
  // the unsharded analysis's is; in a cluster, only while someone looks.
  Publish(ViewIsWholeFabric() || ViewWanted() ? own : nullptr);
  // The next pass's tp_cross_node confirms crossings by the group's NICs'
  // rates, over the whole fabric, which only a lone collector holds.
  last_view_ = ViewIsWholeFabric() ? std::move(own) : nullptr;
  // The last pass's views go back to the builder, which writes the next
  // pass's ports over them: the window's once no reader holds it (no
  // one can take it any more: it is published nowhere now), else it is
  // freed here, outside the lock the readers take.
  if (previous != nullptr && previous.use_count() == 1) {
    // use_count() reads the count relaxed: ordered after the last reader's
    // release of its copy (and so after its reads of the view) only by
    // this fence.
    std::atomic_thread_fence(std::memory_order_acquire);
    view_builder_.Recycle(0, std::move(*previous));
  }
  previous.reset();
  if (local.recent.has_value()) {
    view_builder_.Recycle(1, std::move(*local.recent));
  }
}

void AnalysisRunner::RunShardedRate(absl::Time now, const FeatureSlice& local,
                                    const std::vector<NodeFacts>& facts,
                                    const TopologyViews& topology) {
  std::shared_ptr<const RegistrySnapshot> snapshot = layouts_->Snapshot();
  std::vector<const analysis::LayoutModel*> declared;
  declared.reserve(snapshot->layouts.size());
  for (const auto& [job, entry] : snapshot->layouts) {
    declared.push_back(&entry->model);
  }
  if (!sharded_baselines_loaded_) {
    // Once per process: every NIC's baseline as the unsharded analysis
    // last stored it (a cluster that just turned sharding on), within
    // kStragglerBaselinesMaxAge. Each job shard taken below replaces its
    // jobs' with what the shard's last owner stored, where it did.
    sharded_baselines_loaded_ = true;
    analysis::StragglerBaselines unsharded;
    absl::StatusOr<LoadedBaselines> loaded = LoadStragglerBaselines(
        &baselines_, now, options_.baselines_max_age, declared, &unsharded);
    if (!loaded.ok() || loaded->damaged) {
      LogWarning(absl::StrCat(
          "analysis: the unsharded analysis's straggler baselines not "
          "loaded: ",
          loaded.ok() ? loaded->problem : loaded.status().message()));
    } else if (loaded->restored > 0) {
      LogInfo(absl::StrCat("analysis: ", loaded->restored,
                           " straggler baselines of the unsharded analysis "
                           "restored, for the shards to start from"));
    }
    // Too old is usual once sharded for an hour: not worth a warning.
    sharded_->LoadBaselines(std::move(unsharded));
  }
  if (!hysteresis_seeded_) {
    // The shards' and the nodes' findings are picked up by the share
    // itself as it takes them; what is seeded here is the grace of the
    // holds below.
    hysteresis_seeded_ = true;
    seeded_at_ = now;
    holding_unheard_ = false;
  }
  if (snapshot != by_host_of_) {
    by_host_.emplace(declared);
    by_host_of_ = snapshot;
  }
  const std::vector<AnalysisShards::Owned> owned = shards_->OwnedShards();
  TakeShards(now, owned, declared);
  ShardedRatePass::Input in;
  in.layouts_by_host = &*by_host_;
  in.shards.reserve(owned.size());
  if (ViewIsWholeFabric()) {
    // A cluster of one owns every shard and holds every port of each: its
    // parts run over its own view, as the unsharded analysis's do, with no
    // shard's ports copied (ShardedRatePass::Input::whole).
    in.whole = true;
    for (const AnalysisShards::Owned& o : owned) {
      in.shards.push_back({o.shard, o.term, nullptr, nullptr});
    }
  } else {
    ReceiveShards(now, local, topology, owned, &in);
    PublishJobViews(declared);
  }
  // The nodes this collector holds: those whose freshest facts came from it.
  const std::string id = shards_->Id();
  absl::flat_hash_set<std::string> held;
  for (const NodeFacts& n : facts) {
    if (n.collector.empty() || n.collector == id) held.insert(n.liveness.node);
  }
  const std::vector<analysis::PartNews> news = shards_->News(now);
  in.now = now;
  in.window = &local.window;
  in.recent = local.recent.has_value() ? &*local.recent : nullptr;
  in.held = &held;
  in.news = news;
  in.base.topology = topology.effective.get();
  in.base.topology_index = topology.effective_index.get();
  in.base.declared_topology = topology.declared.get();
  in.base.cabling_mismatches = topology.cabling.get();
  in.base.discovered_topology = topology.discovered.get();
  in.base.layouts = declared;
  const std::vector<v1::Finding> active = findings_->Active();
  const absl::flat_hash_set<std::string> quiet =
      QuietNodes(now, facts, local.window, active);
  const absl::flat_hash_set<std::pair<std::string, std::string>> quiet_groups =
      QuietGroups(now, *snapshot, facts, active, quiet);
  in.quiet = &quiet;
  in.quiet_groups = &quiet_groups;
  const std::set<int> held_storms = HeldStormPriorities(active, quiet);
  in.held_storm_priorities = &held_storms;
  ShardedRatePass::Output out = sharded_->Run(in, *findings_);
  const absl::Status told = shards_->PublishNews(out.news);
  if (told.ok() == news_failing_) {
    news_failing_ = !told.ok();
    if (news_failing_) {
      LogWarning(
          absl::StrCat("analysis: cannot tell the other collectors "
                       "what this collector's analysis found: ",
                       told.message()));
    } else {
      LogInfo("analysis: telling the other collectors the analysis news again");
    }
  }
  for (ShardedRatePass::SourceReport& r : out.reports) {
    Report(std::move(r.open), *snapshot, now, r.source,
           r.within_held ? &out.held : nullptr);
  }
  // What the job shards' owners (this collector among them) measured of
  // the TP groups that cross nodes, for the next layout pass.
  tp_loads_.clear();
  for (const analysis::PartNews* n : TpNewsOf(news, out.news)) {
    for (const analysis::JobTpLoads& job : n->tp_loads) {
      std::vector<analysis::TpGroupLoad>& groups = tp_loads_[job.job];
      groups = job.groups;
      const auto by_group = [](const analysis::TpGroupLoad& a,
                               const analysis::TpGroupLoad& b) {
        return a.group < b.group;
      };
      if (!std::is_sorted(groups.begin(), groups.end(), by_group)) {
        std::sort(groups.begin(), groups.end(), by_group);
      }
    }
  }
  SaveShardBaselines(now, /*all=*/false);
  HandOverShards(now, owned);
}

void AnalysisRunner::ReceiveShards(
    absl::Time now, const FeatureSlice& local, const TopologyViews& topology,
    const std::vector<AnalysisShards::Owned>& owned,
    ShardedRatePass::Input* in) {
  const std::vector<analysis::ShardPorts>& assigned =
      assignment_.Assign(local.window, by_host_of_, *by_host_,
                         topology.effective_index, shards_->Counts());
  const absl::Status sent = shards_->Exchange(local, assigned, owned, now);
  if (sent.ok() == exchange_failing_) {
    exchange_failing_ = !sent.ok();
    if (exchange_failing_) {
      LogWarning(absl::StrCat(
          "analysis: cannot send this collector's ports of the analysis "
          "shards to their owners: ",
          sent.message()));
    } else {
      LogInfo("analysis: sending the analysis shards' ports again");
    }
  }
  // Each owned shard: the ports the others sent, and this collector's own,
  // in the views kept from the last pass (those of shards no longer owned
  // go).
  for (auto it = shard_views_.begin(); it != shard_views_.end();) {
    const bool still = std::any_of(
        owned.begin(), owned.end(),
        [&](const AnalysisShards::Owned& o) { return o.shard == it->first; });
    it = still ? std::next(it) : shard_views_.erase(it);
  }
  for (const AnalysisShards::Owned& o : owned) {
    auto mine = std::lower_bound(
        assigned.begin(), assigned.end(), o.shard,
        [](const analysis::ShardPorts& s, const std::string& name) {
          return s.shard < name;
        });
    const absl::Span<const uint32_t> ports =
        mine != assigned.end() && mine->shard == o.shard
            ? absl::MakeConstSpan(mine->ports)
            : absl::Span<const uint32_t>();
    AnalysisShards::Received& views = shard_views_[o.shard];
    shards_->Receive(o.shard, now, local, ports, &views);
    if (views.window.ports().empty()) {
      // No port of the shard anywhere: its findings count down all the
      // same (an empty view finds nothing).
      in->shards.push_back({o.shard, o.term, &NoPorts(), nullptr});
      continue;
    }
    in->shards.push_back({o.shard, o.term, &views.window,
                          local.recent.has_value() ? &views.recent : nullptr});
  }
}

void AnalysisRunner::HandOverShards(
    absl::Time now, const std::vector<AnalysisShards::Owned>& owned) {
  absl::flat_hash_set<std::string> handing;
  size_t written = 0;
  for (const AnalysisShards::Owned& o : owned) {
    if (!o.handing_over) continue;
    handing.insert(o.shard);
    // Once per hand-over: after this pass, which learned from the shard's
    // window, what the shard keeps is written for its next owner, which
    // reads it as it takes the shard; then it may go.
    if (handing_over_.contains(o.shard)) continue;
    AnalysisShards* const shards = shards_;
    if (shard_baselines_->HandOver(
            o.shard, now, sharded_->baselines(),
            [shards, shard = o.shard] { shards->LetGo(shard); })) {
      ++written;
    } else {
      shards_->LetGo(o.shard);
    }
  }
  if (written > 0) {
    LogInfo(absl::StrCat("analysis shards: writing the straggler baselines of ",
                         written, " job shard", written == 1 ? "" : "s",
                         " handed over, for their next owner"));
  }
  handing_over_ = std::move(handing);
}

void AnalysisRunner::TakeShards(
    absl::Time now, const std::vector<AnalysisShards::Owned>& owned,
    absl::Span<const analysis::LayoutModel* const> layouts) {
  // This collector's own nodes' shard, and the job and switch shards.
  std::vector<AnalysisShards::Owned> all = owned;
  const std::string own = PortsShard(shards_->Id());
  all.push_back({own, role_.ShardTerm(own)});
  absl::flat_hash_map<std::string, uint64_t> taken;
  size_t rewritten = 0;
  ShardBaselines::Taken baselines;
  size_t baselines_of = 0;
  size_t baselines_unread = 0;  // after the store did not answer
  for (const AnalysisShards::Owned& s : all) {
    if (s.term == 0) continue;
    taken.emplace(s.shard, s.term);
    auto before = shard_terms_.find(s.shard);
    if (before != shard_terms_.end() && before->second == s.term) continue;
    if (ShardBaselines::Keeps(s.shard)) {
      // Before the pass seeds the open stragglers' own baselines over them.
      const bool read = !baselines.unanswered;
      ShardBaselines::Taken t = shard_baselines_->Take(
          s.shard, now, layouts, &sharded_->baselines(), read);
      if (!read) ++baselines_unread;
      baselines.unanswered |= t.unanswered;
      if (!t.problem.empty()) {
        LogWarning(absl::StrCat("analysis shard ", s.shard,
                                ": straggler baselines not taken in, keeping "
                                "what this collector has: ",
                                t.problem));
      }
      baselines.restored += t.restored;
      baselines.dropped += t.dropped;
      if (t.restored > 0) ++baselines_of;
    }
    // A shard taken, or taken back: its findings now carry this term, so
    // that a previous owner's write still in flight is refused or dropped.
    absl::StatusOr<size_t> shared = findings_->ShareActiveOf(s.shard);
    if (!shared.ok()) {
      LogWarning(absl::StrCat("analysis shard ", s.shard, " term ", s.term,
                              ": active findings not rewritten under it: ",
                              shared.status().message()));
    } else {
      rewritten += *shared;
    }
  }
  if (rewritten > 0) {
    LogInfo(absl::StrCat("analysis shards: rewrote ", rewritten,
                         " active findings under the terms of the shards "
                         "taken"));
  }
  if (baselines_unread > 0) {
    LogWarning(absl::StrCat("analysis shards: the straggler baselines of ",
                            baselines_unread,
                            " more job shards taken not read (the store did "
                            "not answer), keeping what this collector has"));
  }
  if (baselines.restored + baselines.dropped > 0) {
    LogInfo(absl::StrCat("analysis shards: ", baselines.restored,
                         " straggler baselines taken in from the stores of ",
                         baselines_of, " job shards taken, ", baselines.dropped,
                         " of NICs no longer in a layout dropped"));
  }
  shard_terms_ = std::move(taken);
}

std::shared_ptr<const std::vector<NodeFacts>> AnalysisRunner::LatestNodes()
    const {
  std::lock_guard<std::mutex> lock(view_mu_);
  return published_nodes_;
}

ReportedNames AnalysisRunner::LatestNames() const {
  if (shards_ == nullptr) return {LatestView(), {}};
  ReportedNames names;
  std::shared_ptr<const std::vector<NodeFacts>> nodes;
  {
    std::lock_guard<std::mutex> lock(view_mu_);
    names.ports = published_own_ports_;
    nodes = published_nodes_;
  }
  if (nodes == nullptr) return names;
  const std::string id = shards_->Id();
  for (const NodeFacts& n : *nodes) {
    // Alone (no id) every node is this collector's: none is elsewhere.
    if (n.collector != id) names.hosts_elsewhere.insert(n.liveness.node);
  }
  return names;
}

std::vector<v1::Finding> AnalysisRunner::RunLayoutPass(const std::string& job,
                                                       absl::Time deadline) {
  {
    std::unique_lock<std::timed_mutex> lock(pass_mu_, std::defer_lock);
    // Behind a rate pass (a second or more on a large fabric) the answer
    // would arrive after its caller gave up: waited for until its deadline.
    if (deadline == absl::InfiniteFuture()) {
      lock.lock();
    } else if (!lock.try_lock_until(absl::ToChronoTime(deadline))) {
      LogInfo(absl::StrCat("analysis: the layout pass for job ", job,
                           " is left to the next pass (a pass in progress "
                           "outlasted the request's deadline)"));
    }
    // A follower's findings come from the leader's own pass over the
    // layout it receives.
    if (lock.owns_lock() && Leading()) RunLayoutAnalyzers(clock_.Now());
  }
  FindingsFilter filter;
  filter.job = job;
  return findings_->List(filter);
}

}  // namespace fabricdiag::collector
