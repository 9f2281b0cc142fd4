// Runs the analyzers continuously and feeds their findings to the
// FindingsStore.
//
// Every pass (default every second) takes a snapshot of the layouts and the
// nodes and runs each analyzer family as its own "source": the store opens,
// updates and resolves findings per source. What the liveness and rate
// analyzers read is the fabric as the FeatureExchange merges it
// (collector/runner/feature_exchange.h): this collector's nodes alone when
// embedded, every collector's in a cluster; the runner publishes its own
// slice each pass and does not know which backend runs.
// - agent liveness: the agent_down analyzer (analysis/agent_down.h) over
//   what the series store knows about each node;
// - the layout analyzers (tp_cross_node), also run at once after a layout
//   is applied;
// In a cluster only the collector that holds the analysis lease (the
// AnalysisRole) runs the analyzers; the others publish their features and
// mirror its findings. A collector that takes the lease over seeds its
// hysteresis from the findings it mirrored, as after a restart, so a
// failover neither resolves nor reopens a finding that is still true.
// - the rate analyzers (analysis/analyzer.h) over a FabricView of the last
//   `analysis.window_seconds`, gated by a Hysteresis so a finding opens only
//   after its condition held for several passes and resolves after it was
//   clear for several. After a restart the hysteresis is seeded with the
//   findings still active in the store, so a condition that persists across
//   the restart keeps its finding (and its id).
//
//   AnalysisRunner runner(&series, &registry, &findings, &stats, clock,
//                         {features, role, baselines, topology}, {});
//   runner.Start();          // background thread
//   runner.RunLayoutPass(job, answer_by);  // at once, after ApplyLayout
//   runner.Stop();
//
// Thread-safe: passes are serialized by a mutex.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/agent_missing.h"
#include "analysis/analysis_config.h"
#include "analysis/fabric_view.h"
#include "analysis/hysteresis.h"
#include "analysis/nic_ports.h"
#include "analysis/shard_map.h"
#include "analysis/straggler_nic.h"
#include "analysis/tp_cross_node.h"
#include "collector/declared/layout_name_check.h"
#include "collector/declared/layout_registry.h"
#include "collector/findings/findings_store.h"
#include "collector/runner/agent_liveness.h"
#include "collector/runner/analysis_role.h"
#include "collector/runner/analysis_shards.h"
#include "collector/runner/collector_metrics.h"
#include "collector/runner/fabric_view_builder.h"
#include "collector/runner/feature_exchange.h"
#include "collector/runner/rate_pass.h"
#include "collector/runner/shard_baselines.h"
#include "collector/runner/sharded_rate_pass.h"
#include "collector/state/baselines_store.h"
#include "collector/state/state_store.h"
#include "collector/store/series_store.h"
#include "collector/topology/topology_views.h"
#include "common/clock.h"

namespace fabricdiag::collector {

class AnalysisRunner {
 public:
  struct Options {
    absl::Duration interval = absl::Seconds(1);
    // Every analyzer's thresholds (agent_down's too) and the hysteresis.
    analysis::AnalysisConfig analysis;
    absl::Duration baselines_every = kStragglerBaselinesEvery;
    absl::Duration baselines_max_age = kStragglerBaselinesMaxAge;
    // When an operator last forgot a node (`fabricdiag nodes forget`;
    // nullopt: never). Its liveness from before then is dropped, so its
    // agent_down resolves, and it comes back when it reports again. Null:
    // no node is ever forgotten.
    std::function<std::optional<absl::Time>(absl::string_view node)>
        forgotten_at;
  };

  // What an embedded collector and one of a cluster do differently (the
  // process picks one set, server/backends.h); each must outlive the
  // runner.
  struct Seams {
    // Where the rest of the fabric comes from (EmbeddedFeatureExchange:
    // this collector's nodes are the fabric).
    FeatureExchange& features;
    // Whether this collector analyses (AlwaysLeading: always). While it
    // does not, passes only publish features and the findings come from
    // the collector that does (collector/findings/findings_replication.h).
    const AnalysisRole& role;
    // Where every NIC's straggler_nic baseline is kept for the next process
    // to analyse (collector/state/baselines_store.h): loaded before the
    // first rate pass (of each term this collector leads), written every
    // Options::baselines_every and at Stop() while this collector analyses.
    BaselinesStore& baselines;
    // The topologies each pass reads: the effective one (declared, and
    // discovered over LLDP where nothing is declared) and its index for
    // every analyzer, the declared and discovered ones for those that
    // compare them (collector/topology/topology_keeper.h).
    const TopologySource& topology;
    // Null: the rate analyzers run over the whole fabric, on the collector
    // that leads the analysis. Otherwise every collector runs its share of
    // them (collector/runner/sharded_rate_pass.h): the port analyzers over
    // its own nodes and the job and switch analyzers of the shards it owns
    // (OneCollectorShards: every shard); the analysis lease still runs
    // agent_down, agent_missing and the layout analyzers.
    AnalysisShards* shards = nullptr;
  };

  // Pointers must outlive the runner. `layouts` is what the passes analyse:
  // the registry, or in the collector FilledLayouts
  // (collector/declared/filled_layouts.h), whose ranks without a declared
  // NIC have the one their agent pairs with their GPU.
  AnalysisRunner(const SeriesStore* series, const LayoutSnapshots* layouts,
                 FindingsStore* findings, AnalysisStats* stats,
                 const Clock& clock, Seams seams, Options options);
  ~AnalysisRunner();

  void Start();
  void Stop();

  // One full pass (all analyzers).
  void RunOnce();
  // Waits until the straggler baselines a pass handed over are written,
  // and a read of them a pass started again is done (passes write and
  // retry reading them off the analysis thread; Stop() waits for the
  // writes).
  void FlushBaselines();
  // The layout analyzers only; returns the active findings of `job` after
  // the pass (what ApplyLayout answers with). A pass in progress is waited
  // for only until `deadline` (the caller's); past it the layout analyzers
  // are left to the next pass and the findings are those of now.
  std::vector<v1::Finding> RunLayoutPass(
      const std::string& job, absl::Time deadline = absl::InfiniteFuture());

  // The FabricView of the latest rate pass (what the analyzers saw), null
  // before the first; for the HTTP API. Any thread.
  //
  // In a cluster a collector that does not analyse merges the other
  // collectors' ports only while its view is wanted: for
  // kViewWantedFor after the latest call. The first call after that
  // returns null or the view of the pass it triggered, the next pass the
  // whole fabric. With the analysis sharded (Seams::shards) no collector
  // of a cluster holds the fabric's ports: while wanted, the view is its own
  // agents' ports (ViewIsWholeFabric() false); a lone collector's, every
  // pass, are its fabric.
  std::shared_ptr<const analysis::FabricView> LatestView() const;
  // Whether LatestView() is the whole fabric's, rather than this
  // collector's agents' alone (a cluster that shards its analysis). The
  // same for the runner's life. Any thread.
  bool ViewIsWholeFabric() const;
  static constexpr absl::Duration kViewWantedFor = absl::Minutes(1);

  // With the analysis sharded in a cluster (ViewIsWholeFabric() false): a
  // view of every port of `job`'s hosts, its own agents' and the others',
  // from the job's shard, on the collector that owns the shard; null on the
  // others, and before a pass built it. Built only while wanted: the first
  // call for a job returns null, the passes within kViewWantedFor after the
  // latest call build it. `job` must be a declared job's name (each one
  // asked for is remembered until it is no longer wanted). Any thread.
  std::shared_ptr<const analysis::FabricView> LatestJobView(
      absl::string_view job) const;
  // With the analysis sharded in a cluster: the collector that owns (or is
  // about to own) `job`'s shard (AnalysisShards::OwnerOf); "" otherwise.
  // Any thread.
  std::string JobShardOwner(absl::string_view job) const;

  // After a restart, or in a new term, how long the findings taken over
  // hold for nodes that no collector has heard from since, or that are down
  // again after a first report: their agents are still reconnecting
  // (collector/runner/feature_exchange.h).
  static constexpr absl::Duration kUnheardNodesGrace = kAgentReconnectGrace;
  // How long the findings of a node heard from but without a rate yet hold
  // (HoldRatelessNodes): its second report comes an interval after the
  // first; a node that stays without rates longer (its counters never
  // read) is judged on what is seen.
  static constexpr absl::Duration kRatelessHold = absl::Seconds(30);
  // How often a failed first read of the stored straggler baselines is
  // tried again (LoadBaselines).
  static constexpr absl::Duration kBaselinesRetryEvery = absl::Seconds(5);

  // Every node of the fabric the latest pass merged, with the collector it
  // came from: in a cluster, the other collectors' nodes too (their
  // liveness; `fabricdiag nodes`). Null before the first pass; with one
  // collector, its own nodes (none names a collector). Any thread.
  std::shared_ptr<const std::vector<NodeFacts>> LatestNodes() const;

  // What the layout name check compares a layout's names with: the
  // LatestView() (hence wanted); with the analysis sharded, this
  // collector's own agents' ports at the latest pass and, in a cluster,
  // the names of the nodes the latest pass merged from the other
  // collectors. Any thread.
  ReportedNames LatestNames() const;

 private:
  // This collector's slice (series store) published, and the fabric's
  // (its nodes only with MergeScope::kNodes).
  // `topology` marks the switch nodes.
  // With `keep_local`, this collector's own slice is kept there too.
  FeatureSlice ExchangeFeatures(absl::Time now, MergeScope scope,
                                const TopologyViews& topology,
                                FeatureSlice* keep_local = nullptr);
  // A pass with the rate analysis sharded (Seams::shards).
  void RunSharded(absl::Time now, bool leading, const TopologyViews& topology);
  // This collector's share of the rate analysis over its own slice `local`
  // and the shards it owns; `facts` are the fabric's nodes.
  void RunShardedRate(absl::Time now, const FeatureSlice& local,
                      const std::vector<NodeFacts>& facts,
                      const TopologyViews& topology);
  // In a cluster: sends `local`'s ports of the shards it does not own to
  // their owners, and puts the views of each shard `owned` (every
  // collector's ports of it) in `in`.
  void ReceiveShards(absl::Time now, const FeatureSlice& local,
                     const TopologyViews& topology,
                     const std::vector<AnalysisShards::Owned>& owned,
                     ShardedRatePass::Input* in);
  // Rewrites the active findings of each shard `owned` (and of this
  // collector's own nodes' shard) that is new here, or owned under a new
  // term, under that term (FindingsStore::ShareActiveOf), and takes each
  // such job shard's stored straggler baselines in (ShardBaselines::Take;
  // `layouts`: every declared one).
  void TakeShards(absl::Time now,
                  const std::vector<AnalysisShards::Owned>& owned,
                  absl::Span<const analysis::LayoutModel* const> layouts);
  // Whether LatestView() was called within kViewWantedFor.
  bool ViewWanted() const;
  // The LatestJobView()s of the jobs still wanted whose shards are owned
  // here (shard_views_), from the `declared` layouts; the others dropped.
  void PublishJobViews(absl::Span<const analysis::LayoutModel* const> declared);
  // agent_down of every node of the fabric (`facts`), and agent_missing of
  // the declared topology's hosts none of them is. `whole_fabric`: every
  // collector's nodes are in `facts` (FeatureSlice::complete).
  void RunLiveness(absl::Time now, const std::vector<NodeFacts>& facts,
                   bool whole_fabric, const TopologyViews& topology);
  // The declared topology's hosts that `heard` (sorted by name) does not
  // list, for agent_missing: each with since when this collector has
  // watched the whole fabric without hearing from it (unheard_since_).
  std::vector<analysis::ExpectedHost> UnheardHosts(
      absl::Time now, const std::vector<analysis::NodeLiveness>& heard,
      bool whole_fabric, const TopologyViews& topology);
  void RunLayoutAnalyzers(absl::Time now);
  // Seams::baselines: the stored baselines into straggler_baselines_
  // (before the first pass), and their writing. A read that failed (the
  // store did not answer: NATS restarting) is tried again by
  // RetryBaselines() every kBaselinesRetryEvery until the first write is
  // due: what the passes learned meanwhile is seconds of history, the
  // stored baselines up to kStragglerBaselinesMaxAge of it, without which a
  // NIC already slow would be learned as normal. The retried reads run off
  // the analysis thread (one that does not answer waits out its deadline,
  // seconds a pass must not wait), and a later pass takes what one read.
  void LoadBaselines(absl::Time now, const RegistrySnapshot& snapshot);
  void RetryBaselines(absl::Time now,
                      std::shared_ptr<const RegistrySnapshot> snapshot);
  // The retried read's thread, joined (after it finished).
  void JoinBaselinesReader();
  struct BaselinesRead;
  // What a retried read that finished read, taken in; false when it could
  // not read.
  bool TakeBaselinesRead(BaselinesRead* read);
  void SaveBaselines(absl::Time now);
  // Sharded, the job shards owned at the last pass: their baselines handed
  // to the writer, those due (ShardBaselines::Save), every one when `all`.
  void SaveShardBaselines(absl::Time now, bool all);
  // Sharded, the owned shards handing over (AnalysisShards::Owned::
  // handing_over): each one's baselines written once, then LetGo().
  void HandOverShards(absl::Time now,
                      const std::vector<AnalysisShards::Owned>& owned);
  // Over `fabric`'s views; `facts` are its nodes (moved out of it).
  void RunRateAnalyzers(absl::Time now, FeatureSlice fabric,
                        const std::vector<NodeFacts>& facts,
                        const TopologyViews& topology);
  // The nodes whose conditions neither count down nor up this pass
  // (Hysteresis::Step): agents quiet or unobserved, and the holds below;
  // `view` holds this pass's ports of `facts`' nodes, `active` the findings
  // open before it.
  absl::flat_hash_set<std::string> QuietNodes(
      absl::Time now, const std::vector<NodeFacts>& facts,
      const analysis::FabricView& view, absl::Span<const v1::Finding> active);
  // Within kUnheardNodesGrace of the seeding, adds to `quiet` the nodes of
  // the `active` findings that `facts` do not list as up (never heard from
  // since, or heard and silent again: still reconnecting), and logs when it
  // starts and stops holding them.
  void HoldUnheardNodes(absl::Time now, const std::vector<NodeFacts>& facts,
                        absl::Span<const v1::Finding> active,
                        absl::flat_hash_set<std::string>* quiet);
  // Adds to `quiet` the nodes up in `facts` that `view` holds traffic
  // ports of but no rate yet (no report in the window moved past the first:
  // a rate takes two reports): their agents just connected, here or, in a
  // cluster, to another collector after a failover or a hand-back. Each
  // node for at most kRatelessHold; the rest are forgotten.
  void HoldRatelessNodes(absl::Time now, const std::vector<NodeFacts>& facts,
                         const analysis::FabricView& view,
                         absl::flat_hash_set<std::string>* quiet);
  // The (job, group) of each `active` finding that names a group of a
  // declared layout with a member host in `quiet` or, within
  // kUnheardNodesGrace of the seeding, not up in `facts`: such a finding
  // compares a NIC with its group (a hot expert with the group's median),
  // which cannot be judged while a member is not seen.
  absl::flat_hash_set<std::pair<std::string, std::string>> QuietGroups(
      absl::Time now, const RegistrySnapshot& layouts,
      const std::vector<NodeFacts>& facts, absl::Span<const v1::Finding> active,
      const absl::flat_hash_set<std::string>& quiet);
  // One pass of `source` into the store, each finding with its job's
  // labels (collector/runner/job_labels.h).
  // `within`: the nodes the source resolves in (FindingsStore::
  // UpdateWithin); null: all.
  void Report(std::vector<analysis::Finding> reports,
              const RegistrySnapshot& layouts, absl::Time now,
              absl::string_view source,
              const absl::flat_hash_set<std::string>* within = nullptr);
  void Persisted(const absl::Status& status);
  // True when this pass analyses; a new term starts from the findings the
  // previous leader left (the hysteresis is seeded again, as after a
  // restart).
  bool Leading();
  // Makes `view` (null: none) the one LatestView() returns and the layout
  // analyzers' last_view_. The view it replaces goes back to the view
  // builder, which writes the next pass's ports over it, when no one holds
  // it any more (no reader, and not the sharded pass's own ports, which it
  // recycles itself); else it is freed here, outside the readers' lock.
  void Publish(std::shared_ptr<analysis::FabricView> view);

  const SeriesStore* const series_;
  const LayoutSnapshots* const layouts_;
  FindingsStore* const findings_;
  AnalysisStats* const stats_;
  const Clock& clock_;
  const Options options_;
  FeatureExchange& features_;
  const AnalysisRole& role_;
  BaselinesStore& baselines_;
  const TopologySource& topology_;
  AnalysisShards* const shards_;

  std::timed_mutex pass_mu_;  // one pass at a time
  // Rate analysis state, used under pass_mu_.
  FabricViewBuilder view_builder_;
  // Re-created when a new term starts (Leading()).
  std::optional<analysis::Hysteresis> hysteresis_;
  // With Seams::shards: this collector's share of the rate analysis, and
  // whether it was given the stored straggler baselines (its first pass).
  std::optional<ShardedRatePass> sharded_;
  bool sharded_baselines_loaded_ = false;
  // With Seams::shards: each job shard's straggler baselines, stored with
  // the shard while this collector owns it and taken in when it takes it.
  // Before baselines_writer_: outlives the writes handed to it.
  std::optional<ShardBaselines> shard_baselines_;
  // The views of the shards owned at the last pass, rebuilt over their
  // storage each pass (AnalysisShards::Receive).
  std::map<std::string, AnalysisShards::Received, std::less<>> shard_views_;
  // The declared layouts by host, and the snapshot they index (kept: its
  // models are what by_host_ points into); built again when the layouts
  // change.
  std::shared_ptr<const RegistrySnapshot> by_host_of_;
  std::optional<analysis::LayoutsByHost> by_host_;
  // Which shards this collector's ports go to, worked out again only when
  // its ports, the layouts or the topology change.
  analysis::ShardAssignmentCache assignment_;
  // The last shard exchange, and the last news, failed (logged once per
  // outage).
  bool exchange_failing_ = false;
  // The shards owned at the last pass, with their terms (TakeShards).
  absl::flat_hash_map<std::string, uint64_t> shard_terms_;
  // The owned shards handing over to another collector, whose baselines
  // were handed to the writer (HandOverShards).
  absl::flat_hash_set<std::string> handing_over_;
  bool news_failing_ = false;
  // Every NIC's own usual throughput, for straggler_nic; updated once per
  // pass from the window view. Lost on restart but for the NICs of open
  // straggler_nic findings (seeded with the hysteresis): until the others
  // are rebuilt (straggler_nic.min_history_passes), NICs of expert-parallel
  // jobs are not judged (docs/findings.md#straggler_nic).
  analysis::StragglerBaselines straggler_baselines_;
  // The last rate pass's view, for the layout analyzers' runtime evidence.
  std::shared_ptr<const analysis::FabricView> last_view_;
  // Sharded in a cluster, instead: per job, its TP groups that cross nodes
  // as the job shard's owner measured them (the last pass's news), by
  // group.
  absl::flat_hash_map<std::string, std::vector<analysis::TpGroupLoad>>
      tp_loads_;
  bool hysteresis_seeded_ = false;
  // When the hysteresis was seeded (the first pass of a process or a term).
  absl::Time seeded_at_ = absl::InfinitePast();
  // The last pass held findings of nodes not heard from (HoldUnheardNodes).
  bool holding_unheard_ = false;
  // Nodes up without a rate at the last pass, since when (HoldRatelessNodes).
  absl::flat_hash_map<std::string, absl::Time> rateless_since_;
  // agent_missing: the declared topology's hosts (links and switches per
  // host, by name), built again when the declared topology changes.
  std::shared_ptr<const v1::Topology> inventory_of_;
  std::vector<analysis::ExpectedHost> inventory_;
  // Since when each host of inventory_ no node reported from has been
  // watched for in this term, with the whole fabric in view.
  absl::flat_hash_map<std::string, absl::Time> unheard_since_;
  // When the baselines were last written (Seams::baselines).
  absl::Time baselines_written_ = absl::InfinitePast();
  // A failed first read of them is tried again until then
  // (RetryBaselines), the last try at baselines_tried_.
  absl::Time baselines_retry_until_ = absl::InfinitePast();
  absl::Time baselines_tried_ = absl::InfinitePast();
  // The read being retried: its thread and what it read (null while none
  // runs). Only the analysis pass starts and takes one; FlushBaselines()
  // waits for it from any thread (baselines_read_mu_).
  std::mutex baselines_read_mu_;
  std::shared_ptr<BaselinesRead> baselines_read_;  // baselines_read_mu_
  std::thread baselines_reader_;
  // The last write held no baseline.
  bool wrote_no_baselines_ = false;
  uint64_t term_ = 0;  // the role's term of the last pass that analysed
  // The last Publish failed (logged once per outage).
  bool publish_failing_ = false;
  // last_view_ for other threads (readers must not wait for a pass).
  mutable std::mutex view_mu_;
  // Not const: once no reader holds it, the pass that replaces it gives it
  // back to the view builder (Publish()).
  std::shared_ptr<analysis::FabricView> published_view_;
  std::shared_ptr<const std::vector<NodeFacts>> published_nodes_;
  // With the analysis sharded: this collector's own ports at the latest
  // pass (LatestNames()). Not const: once no reader holds it, the next
  // pass writes its ports over it (FabricViewBuilder::Recycle()).
  std::shared_ptr<analysis::FabricView> published_own_ports_;
  // clock_.MonotonicNanos() of the latest LatestView(); 0: never.
  mutable std::atomic<int64_t> view_wanted_at_{0};
  // LatestJobView(): per job asked for, clock_.MonotonicNanos() of the
  // latest call, and the views of the latest pass (under view_mu_).
  mutable absl::flat_hash_map<std::string, int64_t> job_views_wanted_;
  absl::flat_hash_map<std::string, std::shared_ptr<const analysis::FabricView>>
      published_job_views_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
  // Writes to Seams::baselines. Declared last: destroyed first, once its
  // last write finished.
  BaselinesWriter baselines_writer_;
};

}  // namespace fabricdiag::collector
