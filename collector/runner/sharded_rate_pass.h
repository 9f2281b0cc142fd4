// One collector's share of the rate analysis cut into shards: the parts it
// runs each pass, what it tells the other collectors, and the hysteresis
// of each findings source it writes.
//
// The rate analyzers run as parts (analysis/rate_parts.h): a port part
// over the nodes whose agents stream to this collector, and a job or a
// switch part per analysis shard (analysis/shard_map.h) this collector
// owns (cluster/shard_leases.h), over every collector's ports of it
// (cluster/shard_exchange.h). Each pass:
//   1. the parts of each owned shard, over its window and newest samples
//      (a job shard's straggler_nic judged against the baselines before
//      this pass, then the baselines updated with the window);
//   2. the port part over this collector's own ports, comparing congestion
//      with the fabric's medians: its own ports' histograms merged with
//      those of the other collectors' news;
//   3. its news (analysis::PartNews): what its parts' findings excuse, its
//      ports' histograms, and what its job shards' TP groups that leave
//      their NVLink domain send (the lease holder confirms tp_cross_node
//      with it), for the others (cluster/part_news_exchange.h);
//   4. every part's findings excused by all parts' excuses: its own of this
//      pass, the others' of their last (one pass late). An excuse of
//      another collector's part comes two passes after the first sample
//      that shows its cause (its shard's ports reach its owner a pass
//      late, its news another pass later), where one collector has both
//      in the same pass: so an excusable finding (congestion,
//      ecmp_imbalance, straggler_nic) counts only once it was found
//      kExcuseLagPasses passes before (WaitForOtherCollectors), or a hot
//      expert's congestion would open here that one collector never opens. A
//      PFC storm's victims without a visible source wait kSourcelessLagPasses:
//      a source whose agent moves to another collector is out of its
//      switch shard's view for a few passes, where one collector sees it
//      throughout;
//   5. each findings source through a hysteresis of its own:
//      "rate@<shard>" for each owned shard (its owner writes it, fenced by
//      the shard's term) and "rate@ports.<collector id>" for the port
//      part, which reports the nodes this collector holds and resolves
//      within them only (FindingsStore::UpdateWithin): a collector's own
//      nodes are a shard only it owns (PortsShard), fenced like the
//      others.
// A finding that stays true keeps its id when its shard or its node
// changes hands: a shard taken (owned anew, or under a new term) starts its
// hysteresis from the active findings of its source, whoever wrote them
// (and from those of the unsharded analysis that belong to it, when a
// cluster turns sharding on);
// a node newly held starts from its active port findings, whichever
// collector held it before. A shard or node no longer held is forgotten
// here, not resolved: its new holder reports it.
//
//   ShardedRatePass pass({"col-a", config});
//   pass.LoadBaselines(stored);  // before the first pass
//   ShardedRatePass::Output out = pass.Run(input, findings);
//   for (const auto& r : out.reports) ...Update / UpdateWithin...
//   news_exchange.Publish(out.news);
//
// Thread-compatible: one caller at a time (the analysis runner's pass).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/analysis_config.h"
#include "analysis/analyzer.h"
#include "analysis/fabric_view.h"
#include "analysis/finding.h"
#include "analysis/hysteresis.h"
#include "analysis/nic_ports.h"
#include "analysis/rate_parts.h"
#include "analysis/shard_map.h"
#include "analysis/straggler_baselines.h"
#include "collector/findings/findings_store.h"
#include "collector/runner/analysis_shards.h"

namespace fabricdiag::collector {

// Passes an excusable finding waits, in a cluster of more than one, for
// another collector's excuse (step 4 below).
inline constexpr int kExcuseLagPasses = 2;
// Passes a PFC storm's source-less victims wait, in a cluster of more than
// one, for a source that moved between collectors to come back into view:
// its hand-off, its first report (no rates yet), its second, and the chunk
// to the switch shard's owner.
inline constexpr int kSourcelessLagPasses = 4;

class ShardedRatePass {
 public:
  struct Options {
    std::string collector_id;
    // The analyzers' thresholds and the hysteresis.
    analysis::AnalysisConfig analysis;
    analysis::ShardCounts counts;
  };

  // A shard this collector owns, as this pass sees it.
  struct OwnedShard {
    std::string name;  // "jobs.3", "switches.12"
    uint64_t term = 0;
    // Every collector's ports of the shard, this one's included,
    // Finish()ed; `recent` null when the pass has no newest-samples view.
    const analysis::FabricView* window = nullptr;
    const analysis::FabricView* recent = nullptr;
  };

  struct Input {
    absl::Time now;
    // This collector's own ports (its agents' nodes), Finish()ed; `recent`
    // may be null.
    const analysis::FabricView* window = nullptr;
    const analysis::FabricView* recent = nullptr;
    // The nodes this collector holds: their port findings are its to report
    // and resolve. Null: every node of `window`.
    const absl::flat_hash_set<std::string>* held = nullptr;
    std::vector<OwnedShard> shards;
    // A cluster of one (the embedded collector): every shard is owned here
    // and `window` holds every port of each, so each kind of part runs
    // once over `window` (and `recent`), as the unsharded analysis runs
    // it, and each finding is reported under the shard it belongs to
    // (analysis::ShardOfFinding); the shards' own views are not read.
    // Their findings are those of the shards run one by one over copies of
    // their ports, but for pfc_storm over the whole fabric: a paused port
    // no source's pause reaches through the topology is every source's
    // victim (analysis/rate_parts.h).
    bool whole = false;
    // The other collectors' latest news (this collector's own is ignored).
    absl::Span<const analysis::PartNews> news;
    // What every part reads besides its view: the topologies and the
    // layouts (every declared one; each part keeps those it analyses).
    // `view`, `straggler_baselines` and `congestion_baselines` are set
    // here; `config` is Options::analysis.
    analysis::AnalysisInput base;
    // Nodes and (job, group) pairs whose conditions neither count down nor
    // up this pass (Hysteresis::Step); null: none.
    const absl::flat_hash_set<std::string>* quiet = nullptr;
    const absl::flat_hash_set<std::pair<std::string, std::string>>*
        quiet_groups = nullptr;
    // The PFC priorities of open storms whose source's node is quiet: its
    // victims, still in view, make no source-less second storm on them
    // (analysis::DropSourcelessOnPriorities); null: none.
    const std::set<int>* held_storm_priorities = nullptr;
    // base.layouts by host, when the caller keeps it from pass to pass
    // while the layouts do not change (at 1M GPUs, 125,000 hosts to index);
    // null: built for the pass.
    const analysis::LayoutsByHost* layouts_by_host = nullptr;
  };

  // What one source has open after the pass: to write with
  // FindingsStore::Update, or UpdateWithin(`held`) when `within_held`.
  struct SourceReport {
    std::string source;
    std::vector<analysis::Finding> open;
    bool within_held = false;
  };

  struct Output {
    // One per owned shard (in the order given), then the port part's.
    std::vector<SourceReport> reports;
    // The nodes the port source is written for (UpdateWithin).
    absl::flat_hash_set<std::string> held;
    analysis::PartNews news;
  };

  explicit ShardedRatePass(Options options);

  // One pass. `findings` is read to pick a shard or a node up.
  Output Run(const Input& in, const FindingsStore& findings);

  // Starts the straggler judgement of the job shards from `loaded`: the
  // baselines stored before this collector started
  // (collector::LoadStragglerBaselines), so that a NIC of an
  // expert-parallel job that was already slow then is judged against its
  // history, not learned as normal. Call before the first Run(): each shard
  // taken there seeds the baselines its open stragglers were judged against
  // over these (StragglerBaselines::Seed), as SeedRateState does after the
  // load in the unsharded analysis, and a load after it would replace them.
  void LoadBaselines(analysis::StragglerBaselines loaded) {
    baselines_ = std::move(loaded);
  }

  // Every NIC's own usual throughput of the job shards owned here (and of
  // those owned before, until forgotten), for each job shard's baselines
  // to be stored with it and taken in when it is taken
  // (collector/runner/shard_baselines.h).
  analysis::StragglerBaselines& baselines() { return baselines_; }

  // Shards whose hysteresis this collector keeps (owned at the last pass).
  size_t shards() const { return shards_.size(); }

 private:
  struct Shard {
    uint64_t term = 0;
    analysis::Hysteresis hysteresis;
  };

  // The shard's hysteresis, started from its source's active findings (and
  // `unsharded`: those of kUnshardedRateSource that belong to it) when it is
  // new here or `term` is newer than the one it was taken under.
  Shard& Take(const OwnedShard& owned, const FindingsStore& findings,
              const std::vector<analysis::Finding>& unsharded);
  // The port hysteresis forgets the nodes no longer held, and starts the
  // nodes newly held from their active port findings.
  void Hold(const absl::flat_hash_set<std::string>& held,
            const FindingsStore& findings);
  // Drops, from every part of both views, the findings that wait (step 4
  // above) and were first found fewer passes ago than their wait, unless
  // `findings` has them open.
  void WaitForOtherCollectors(const FindingsStore& findings,
                              std::vector<analysis::RatePart> (&parts)[2]);

  const Options options_;
  // Passes run, and for each finding that waits ("kind node device") found
  // lately, the pass it was first found in and the last.
  int64_t passes_ = 0;
  struct Waiting {
    int64_t first = 0;
    int64_t last = 0;
  };
  absl::flat_hash_map<std::string, Waiting> waiting_;
  std::map<std::string, Shard, std::less<>> shards_;
  analysis::Hysteresis ports_;
  absl::flat_hash_set<std::string> held_;  // at the last pass
  // Every NIC's own usual throughput, of the job shards owned here.
  analysis::StragglerBaselines baselines_;
};

}  // namespace fabricdiag::collector
