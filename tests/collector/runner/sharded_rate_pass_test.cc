// Three collectors, each running its share of the sharded rate analysis
// (its own nodes' port part, the job and switch shards it owns, the others'
// news one pass late) into one findings store, find what one collector
// running every analyzer over the whole fabric finds, pass after pass; and
// when one of them dies and its shards and nodes move to the others, every
// finding that stays true keeps its id, and every one that clears
// resolves.
#include "collector/runner/sharded_rate_pass.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/analysis_config.h"
#include "analysis/finding.h"
#include "analysis/hysteresis.h"
#include "analysis/layout_model.h"
#include "analysis/pfc_storm.h"
#include "analysis/shard_map.h"
#include "analysis/straggler_baselines.h"
#include "analysis/topology_index.h"
#include "analysis/tp_cross_node.h"
#include "collector/findings/findings_replication.h"
#include "collector/findings/findings_store.h"
#include "collector/runner/rate_pass.h"
#include "collector/state/state_store.h"
#include "common/clock.h"
#include "tests/analysis/shard_findings.h"
#include "tests/testing/scenario_builder.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using analysis::FabricView;
using analysis::scenario::Cluster;

// The ports of `view` whose node `keep` keeps, as a view of their own.
template <typename Keep>
FabricView NodesOf(const FabricView& view, Keep keep) {
  FabricView out;
  out.window_seconds = view.window_seconds;
  for (const analysis::PortView& p : view.ports()) {
    if (keep(p.node)) out.AddPort(p.node, p.device) = p;
  }
  out.Finish();
  return out;
}

// "kind job node device group" of every active finding, with its id.
std::map<std::string, std::string> IdsByKey(const FindingsStore& store) {
  std::map<std::string, std::string> out;
  for (const v1::Finding& f : store.Active()) {
    out.emplace(absl::StrJoin(
                    {f.kind(), f.job(), f.node(), f.device(), f.group()}, " "),
                f.id());
  }
  return out;
}

std::set<std::string> Keys(const std::map<std::string, std::string>& ids) {
  std::set<std::string> out;
  for (const auto& [key, id] : ids) out.insert(key);
  return out;
}

// "node device" of every active straggler_nic finding.
std::vector<std::string> Stragglers(const FindingsStore& store) {
  std::vector<std::string> out;
  for (const v1::Finding& f : store.Active()) {
    if (f.kind() == "straggler_nic") {
      out.push_back(absl::StrCat(f.node(), " ", f.device()));
    }
  }
  return out;
}

uint64_t Sum(const std::map<std::string, uint64_t>& by_kind) {
  uint64_t n = 0;
  for (const auto& [kind, count] : by_kind) n += count;
  return n;
}

class ShardedRatePassTest : public ::testing::Test {
 protected:
  static constexpr int kCollectors = 3;

  void SetUp() override {
    absl::StatusOr<Cluster> built =
        Cluster::Build(analysis::scenario::TwoJobCluster(64));
    ASSERT_TRUE(built.ok()) << built.status();
    cluster_.emplace(*std::move(built));
    // Baselines learned in a few healthy passes, the same on both sides.
    config_.straggler_nic.min_history_passes = 4;
    topology_.emplace(&cluster_->topology());
    for (const analysis::LayoutModel& m : cluster_->jobs()) {
      layouts_.push_back(&m);
    }
    for (const char* side : {"single", "sharded", "whole"}) {
      absl::StatusOr<std::unique_ptr<StateStore>> opened =
          StateStore::Open(absl::StrCat(dir_.path(), "/", side), &clock_);
      ASSERT_TRUE(opened.ok()) << opened.status();
      states_.push_back(*std::move(opened));
      stores_.push_back(std::make_unique<FindingsStore>(
          states_.back().get(), FindingsStoreOptions{}));
      ASSERT_TRUE(stores_.back()->Load().ok());
    }
    single_hysteresis_.emplace(config_.hysteresis);
    for (int c = 0; c < kCollectors; ++c) {
      const std::string id = absl::StrCat("col-", c);
      passes_.push_back(std::make_unique<ShardedRatePass>(
          ShardedRatePass::Options{id, config_, counts_}));
      live_.push_back(c);
    }
    Assign();
  }

  FindingsStore& single() { return *stores_[0]; }
  FindingsStore& sharded() { return *stores_[1]; }
  // Written by whole_pass_, when a test starts it.
  FindingsStore& whole() { return *stores_[2]; }

  // Every source the sharded analysis writes: each shard's, and the port
  // part's of each collector and of the embedded one.
  std::vector<std::string> Sources() const {
    std::vector<std::string> out;
    out.reserve(counts_.jobs + counts_.switches + 1 + kCollectors);
    for (int k = 0; k < counts_.jobs; ++k) {
      out.push_back(ShardSource(absl::StrCat("jobs.", k)));
    }
    for (int k = 0; k < counts_.switches; ++k) {
      out.push_back(ShardSource(absl::StrCat("switches.", k)));
    }
    out.push_back(PortsSource(""));
    for (int c = 0; c < kCollectors; ++c) {
      out.push_back(PortsSource(absl::StrCat("col-", c)));
    }
    return out;
  }
  // Each active finding's key (IdsByKey) with the source that wrote it,
  // every collector's port part's as "ports".
  std::map<std::string, std::string> SourcesByKey(
      const FindingsStore& store) const {
    std::map<std::string, std::string> out;
    for (const std::string& source : Sources()) {
      const bool ports = absl::StartsWith(source, ShardSource("ports"));
      for (const v1::Finding& f : store.ActiveOf(source)) {
        out.emplace(
            absl::StrJoin({f.kind(), f.job(), f.node(), f.device(), f.group()},
                          " "),
            ports ? "ports" : source);
      }
    }
    return out;
  }

  analysis::AnalysisInput Input(const FabricView* view) const {
    analysis::AnalysisInput in = cluster_->Input(view, &config_);
    in.topology_index = &*topology_;
    return in;
  }

  // Every shard to one of the live collectors (by its position), a new
  // term for each that changes hands; every node to one of them too.
  void Assign() {
    for (int k = 0; k < counts_.jobs + counts_.switches; ++k) {
      const std::string shard =
          k < counts_.jobs ? absl::StrCat("jobs.", k)
                           : absl::StrCat("switches.", k - counts_.jobs);
      const int owner = live_[k % live_.size()];
      auto [it, added] = owners_.try_emplace(shard, owner, 0);
      if (added || it->second.first != owner) {
        it->second = {owner, next_term_++};
      }
    }
  }
  int CollectorOfNode(absl::string_view node) const {
    const int n = std::stoi(std::string(node.substr(node.rfind('-') + 1)));
    return live_[n % live_.size()];
  }

  // One pass over `view`: the single collector, then each live collector's
  // share into the shared store.
  void Pass(const FabricView& view) {
    clock_.Advance(absl::Seconds(1));
    const absl::Time now = clock_.Now();
    analysis::AnalysisInput in = Input(&view);
    RateFindings found = RunRatePass(in, nullptr, &single_baselines_, 1);
    ASSERT_TRUE((unsharded_ ? sharded() : single())
                    .Update(single_hysteresis_->Step(std::move(found.window)),
                            now, kUnshardedRateSource)
                    .ok());
    if (unsharded_) return;

    // What the shards' owners see: the ports of `shard_lag_` passes ago.
    past_views_.push_back(view);
    const FabricView& seen = past_views_.front();
    const std::vector<analysis::ShardPorts> shards =
        analysis::AssignShards(seen, layouts_, *topology_, counts_);
    std::vector<analysis::PartNews> news;
    for (int c : live_) {
      const FabricView local = NodesOf(view, [&](absl::string_view node) {
        return CollectorOfNode(node) == c;
      });
      std::vector<FabricView> views;
      views.reserve(shards.size());
      ShardedRatePass::Input input;
      input.now = now;
      input.window = &local;
      // Every shard it owns, as the analysis runner gives them: one that
      // holds no port with an empty view.
      for (const auto& [name, owner_term] : owners_) {
        const auto& [owner, term] = owner_term;
        if (owner != c) continue;
        // (A structured binding is not captured before C++20.)
        const std::string& shard = name;
        auto s = std::find_if(
            shards.begin(), shards.end(),
            [&](const analysis::ShardPorts& p) { return p.shard == shard; });
        if (s == shards.end()) {
          static const FabricView kNoPorts;
          input.shards.push_back({shard, term, &kNoPorts, nullptr});
          continue;
        }
        views.push_back(analysis::testing::ShardView(seen, s->ports, s->kind));
        input.shards.push_back({shard, term, &views.back(), nullptr});
      }
      input.news = news_;
      input.base = Input(nullptr);
      input.held_storm_priorities = &held_storms_;
      ShardedRatePass::Output out = passes_[c]->Run(input, sharded());
      for (const ShardedRatePass::SourceReport& r : out.reports) {
        const absl::Status written =
            r.within_held
                ? sharded().UpdateWithin(r.open, now, r.source, out.held)
                : sharded().Update(r.open, now, r.source);
        ASSERT_TRUE(written.ok()) << written;
      }
      EXPECT_EQ(out.news.collector_id, absl::StrCat("col-", c));
      news.push_back(std::move(out.news));
    }
    // Heard by the others at their next pass.
    news_ = std::move(news);
    if (past_views_.size() > static_cast<size_t>(shard_lag_)) {
      past_views_.pop_front();
    }
    if (whole_pass_ != nullptr) PassWhole(view, now);
  }

  // The embedded collector's pass: a cluster of one that owns every shard
  // and runs each kind of part once over its whole view.
  void PassWhole(const FabricView& view, absl::Time now) {
    ShardedRatePass::Input input;
    input.now = now;
    input.window = &view;
    input.whole = true;
    for (const std::string& source : Sources()) {
      const std::string shard(ShardOfSource(source));
      if (!absl::StartsWith(shard, "ports")) input.shards.push_back({shard, 1});
    }
    input.base = Input(nullptr);
    input.held_storm_priorities = &held_storms_;
    ShardedRatePass::Output out = whole_pass_->Run(input, whole());
    ASSERT_EQ(out.reports.size(), input.shards.size() + 1);
    for (const ShardedRatePass::SourceReport& r : out.reports) {
      const absl::Status written =
          r.within_held ? whole().UpdateWithin(r.open, now, r.source, out.held)
                        : whole().Update(r.open, now, r.source);
      ASSERT_TRUE(written.ok()) << written;
    }
  }

  // `healthy` passes of healthy traffic, then `faulty` with every rate
  // fault (tests/analysis/shard_findings.h).
  void Run(int healthy, int faulty) {
    for (int p = 0; p < healthy; ++p) {
      Pass(cluster_->View({}, {}, seed_++));
    }
    for (int p = 0; p < faulty; ++p) {
      Pass(cluster_->View(analysis::testing::EveryRateFault(), {}, seed_++));
    }
  }

  analysis::AnalysisConfig config_;
  const analysis::ShardCounts counts_{8, 8};
  fabricdiag::testing::TempDir dir_;
  FakeClock clock_;
  std::optional<Cluster> cluster_;
  std::optional<analysis::TopologyIndex> topology_;
  std::vector<const analysis::LayoutModel*> layouts_;
  std::vector<std::unique_ptr<StateStore>> states_;
  std::vector<std::unique_ptr<FindingsStore>> stores_;
  std::optional<analysis::Hysteresis> single_hysteresis_;
  analysis::StragglerBaselines single_baselines_;
  std::vector<std::unique_ptr<ShardedRatePass>> passes_;
  // The embedded collector's (Input::whole), run beside when set.
  std::unique_ptr<ShardedRatePass> whole_pass_;
  std::vector<int> live_;
  std::map<std::string, std::pair<int, uint64_t>> owners_;
  uint64_t next_term_ = 1;
  std::vector<analysis::PartNews> news_;
  // Passes the shards' owners see the collectors' ports late: 0 here, 1 or
  // more in a live cluster (each collector's chunks reach the owners after
  // its pass); the views of the passes between.
  int shard_lag_ = 0;
  std::deque<FabricView> past_views_;
  // The priorities of held storm sources the runner gives each pass.
  std::set<int> held_storms_;
  uint32_t seed_ = 1;
  // The shared store is written by one collector running every analyzer
  // (no sharding yet).
  bool unsharded_ = false;
};

// The owner of a job shard tells what the job's TP groups that leave their
// NVLink domain send, measured over the shard's window (the lease holder,
// which raises tp_cross_node, holds none of those NICs); a job without
// such a group, or a shard it does not own, tells nothing.
TEST(ShardedRatePassNewsTest, AJobShardsOwnerTellsItsTpCrossings) {
  const auto model_of = [](const std::string& job, int tp,
                           std::vector<std::string> hosts) {
    v1::Layout l;
    l.set_job(job);
    l.set_gpus_per_node(1);
    l.mutable_parallelism()->set_tp(tp);
    l.mutable_parallelism()->set_pp(1);
    l.mutable_parallelism()->set_dp(static_cast<int>(hosts.size()) / tp);
    for (const std::string& h : hosts) l.add_hosts(h);
    l.add_rails("mlx5_0");
    absl::StatusOr<analysis::LayoutModel> m = analysis::LayoutModel::Build(l);
    EXPECT_TRUE(m.ok()) << m.status();
    return *std::move(m);
  };
  // tp2: two TP groups of 2 over 4 nodes, each crossing; dp4: no TP.
  const analysis::LayoutModel tp2 =
      model_of("tp2", 2, {"gpu-0", "gpu-1", "gpu-2", "gpu-3"});
  const analysis::LayoutModel dp4 =
      model_of("dp4", 1, {"gpu-4", "gpu-5", "gpu-6", "gpu-7"});
  ASSERT_THAT(tp2.TpGroupsCrossingNvlink(), ::testing::SizeIs(2));
  ASSERT_THAT(dp4.TpGroupsCrossingNvlink(), ::testing::IsEmpty());
  const analysis::ShardCounts counts{64, 64};
  // Every NIC sends 1, 2, ... GB/s of a 50 GB/s link; gpu-3 reports no
  // transmit rate.
  FabricView view;
  for (int n = 0; n < 8; ++n) {
    analysis::PortView& p = view.AddPort(absl::StrCat("gpu-", n), "mlx5_0");
    p.s.tx_bytes = n == 3 ? analysis::kAbsent : (n + 1) * 1e9;
    p.s.link_rate = 50e9;
  }
  view.Finish();
  const auto news_of = [&](std::vector<std::string> owned) {
    ShardedRatePass pass({"col-a", analysis::AnalysisConfig{}, counts});
    ShardedRatePass::Input in;
    in.now = absl::FromUnixSeconds(1764547200);
    for (const std::string& shard : owned) {
      in.shards.push_back({shard, 1, &view, nullptr});
    }
    in.base.layouts = {&tp2, &dp4};
    fabricdiag::testing::TempDir dir;
    FakeClock clock;
    absl::StatusOr<std::unique_ptr<StateStore>> state =
        StateStore::Open(dir.path(), &clock);
    EXPECT_TRUE(state.ok()) << state.status();
    FindingsStore findings(state->get(), FindingsStoreOptions{});
    EXPECT_TRUE(findings.Load().ok());
    return pass.Run(in, findings).news;
  };
  const std::string tp2_shard = analysis::JobShardOf("tp2", counts);
  const std::string dp4_shard = analysis::JobShardOf("dp4", counts);
  ASSERT_NE(tp2_shard, dp4_shard) << "pick other names";

  const analysis::PartNews told = news_of({tp2_shard, dp4_shard});
  ASSERT_THAT(told.tp_loads, ::testing::SizeIs(1));
  EXPECT_EQ(told.tp_loads[0].job, "tp2");
  const std::vector<analysis::TpGroupLoad>& g = told.tp_loads[0].groups;
  ASSERT_THAT(g, ::testing::SizeIs(2));
  EXPECT_EQ(g[0].group, 0u);
  EXPECT_EQ(g[0].nics, 2);
  EXPECT_EQ(g[0].tx, 1.5e9);  // gpu-0 and gpu-1
  EXPECT_EQ(g[0].link_rate, 50e9);
  EXPECT_EQ(g[1].group, 1u);
  EXPECT_EQ(g[1].nics, 1) << "gpu-3 reports no transmit rate";
  EXPECT_EQ(g[1].tx, 3e9);
  // Each with its members, which the lease holder matches to its version
  // of the layout.
  EXPECT_EQ(g[0].members, analysis::TpGroupMembers(tp2, 0));
  EXPECT_EQ(g[1].members, analysis::TpGroupMembers(tp2, 1));
  EXPECT_NE(g[0].members, g[1].members);

  EXPECT_THAT(news_of({dp4_shard}).tp_loads, ::testing::IsEmpty());
}

TEST_F(ShardedRatePassTest, ThreeCollectorsFindWhatOneFinds) {
  Run(6, 6);
  const std::map<std::string, std::string> want = IdsByKey(single());
  std::set<std::string> kinds;
  for (const v1::Finding& f : single().Active()) kinds.insert(f.kind());
  ASSERT_THAT(kinds, ::testing::IsSupersetOf(
                         {"hot_expert_incast", "pfc_storm", "ecmp_imbalance",
                          "straggler_nic", "link_flap", "link_degraded",
                          "link_errors", "retransmissions", "congestion"}))
      << absl::StrJoin(Keys(want), "\n");
  EXPECT_EQ(Keys(IdsByKey(sharded())), Keys(want));
  // Each finding under the source of the part that found it: a port's
  // under its node's collector, a job's or a switch's under its shard.
  for (const v1::Finding& f : sharded().Active()) {
    std::string source;
    if (analysis::IsPortPartKind(f.kind())) {
      source = PortsSource(absl::StrCat("col-", CollectorOfNode(f.node())));
    } else if (f.kind() == "hot_expert_incast" || f.kind() == "straggler_nic") {
      source = ShardSource(analysis::JobShardOf(f.job(), counts_));
    } else {
      continue;  // a switch shard's (which one: the shard map's business)
    }
    EXPECT_THAT(
        sharded().ActiveOf(source),
        ::testing::Contains(::testing::Property(&v1::Finding::id, f.id())))
        << f.kind() << " " << f.node() << " " << source;
  }
  // A steady fabric: nothing opens, resolves or flickers pass after pass.
  const FindingsCounters before = sharded().Counters();
  Run(0, 4);
  EXPECT_EQ(Sum(sharded().Counters().opened_by_kind),
            Sum(before.opened_by_kind));
  EXPECT_EQ(Sum(sharded().Counters().resolved_by_kind), 0u);
}

TEST_F(ShardedRatePassTest, ACollectorAloneFindsWhatOneFinds) {
  // A cluster of one: every part on one collector, whose own parts excuse
  // each other within the pass.
  live_ = {0};
  Assign();
  Run(6, 6);
  const std::set<std::string> want = Keys(IdsByKey(single()));
  ASSERT_GE(want.size(), 9u);
  EXPECT_EQ(Keys(IdsByKey(sharded())), want);
}

TEST_F(ShardedRatePassTest,
       ACollectorAloneOverItsWholeViewFindsWhatItsShardsFind) {
  // The embedded collector runs one job part and one switch part over its
  // whole view instead of one per shard over copies of the shard's ports:
  // the same findings, each under the source of the shard it belongs to,
  // and the same as every analyzer over the whole fabric.
  live_ = {0};
  Assign();
  whole_pass_ = std::make_unique<ShardedRatePass>(
      ShardedRatePass::Options{"", config_, counts_});
  Run(6, 6);
  const std::map<std::string, std::string> by_shards = SourcesByKey(sharded());
  ASSERT_GE(by_shards.size(), 9u);
  EXPECT_EQ(Keys(IdsByKey(whole())), Keys(IdsByKey(single())));
  EXPECT_EQ(SourcesByKey(whole()), by_shards);
  std::set<std::string> sources;
  for (const auto& [key, source] : by_shards) sources.insert(source);
  EXPECT_THAT(sources,
              ::testing::Contains(::testing::StartsWith("rate@jobs.")));
  EXPECT_THAT(sources,
              ::testing::Contains(::testing::StartsWith("rate@switches.")));
  EXPECT_THAT(sources, ::testing::Contains("ports"));
  // Steady, then cleared: nothing flickers, and every finding resolves.
  const FindingsCounters before = whole().Counters();
  Run(0, 4);
  EXPECT_EQ(Sum(whole().Counters().opened_by_kind), Sum(before.opened_by_kind));
  EXPECT_EQ(Sum(whole().Counters().resolved_by_kind), 0u);
  Run(config_.hysteresis.clear_after + 1, 0);
  EXPECT_THAT(whole().Active(), ::testing::IsEmpty());
}

TEST_F(ShardedRatePassTest, ACollectorsDeathMovesNoFindingThatStaysTrue) {
  Run(6, 6);
  const std::map<std::string, std::string> before = IdsByKey(sharded());
  ASSERT_EQ(Keys(before), Keys(IdsByKey(single())));
  const FindingsCounters counted = sharded().Counters();

  // col-2 dies: its shards go to col-0 and col-1 under new terms, and its
  // agents reconnect to them; nodes move between those two as well.
  live_ = {0, 1};
  Assign();
  Run(0, 6);
  EXPECT_EQ(IdsByKey(sharded()), before);
  EXPECT_EQ(Keys(IdsByKey(sharded())), Keys(IdsByKey(single())));
  EXPECT_EQ(Sum(sharded().Counters().opened_by_kind),
            Sum(counted.opened_by_kind));
  EXPECT_EQ(Sum(sharded().Counters().resolved_by_kind), 0u);
  // Nothing is left under the dead collector's sources.
  EXPECT_THAT(sharded().ActiveOf(PortsSource("col-2")), ::testing::IsEmpty());
}

TEST_F(ShardedRatePassTest, TurningShardingOnKeepsEveryFindingAndItsId) {
  // The cluster ran without shards: its leader wrote every finding.
  unsharded_ = true;
  Run(6, 6);
  const std::map<std::string, std::string> before = IdsByKey(sharded());
  ASSERT_GE(before.size(), 9u);
  // Restarted with --analysis_shards: the shards' owners and the nodes'
  // collectors take the findings over, under the same ids.
  unsharded_ = false;
  Run(0, 6);
  EXPECT_EQ(IdsByKey(sharded()), before);
  EXPECT_EQ(Sum(sharded().Counters().resolved_by_kind), 0u);
  std::vector<std::string> left;
  for (const v1::Finding& f : sharded().ActiveOf(kUnshardedRateSource)) {
    left.push_back(absl::StrCat(f.kind(), " ", f.node()));
  }
  EXPECT_THAT(left, ::testing::IsEmpty());
}

TEST_F(ShardedRatePassTest, TurningShardingOnAsTheFaultsClearResolvesThem) {
  unsharded_ = true;
  Run(6, 6);
  ASSERT_GE(sharded().Active().size(), 9u);
  unsharded_ = false;
  Run(config_.hysteresis.clear_after + 2, 0);
  std::vector<std::string> left;
  for (const v1::Finding& f : sharded().Active()) {
    left.push_back(absl::StrCat(f.id(), " ", f.kind(), " ", f.node()));
  }
  EXPECT_THAT(left, ::testing::IsEmpty());
}

TEST_F(ShardedRatePassTest, FindingsHandedOverAsTheyClearResolve) {
  Run(6, 6);
  ASSERT_FALSE(sharded().Active().empty());
  // col-2 dies just as every fault clears: its successors take its shards
  // and nodes over with their findings, and resolve them.
  live_ = {0, 1};
  Assign();
  Run(config_.hysteresis.clear_after + 2, 0);
  EXPECT_THAT(single().Active(), ::testing::IsEmpty());
  std::vector<std::string> left;
  for (const v1::Finding& f : sharded().Active()) {
    left.push_back(absl::StrCat(f.id(), " ", f.kind(), " ", f.node()));
  }
  EXPECT_THAT(left, ::testing::IsEmpty());
}

// A collector that starts from the stored baselines judges a NIC of the
// expert-parallel job that was slow since before it started against its
// history, as one collector running every analyzer does; without them it
// would learn the slow throughput as the NIC's usual and never report it.
TEST_F(ShardedRatePassTest, LoadedBaselinesFindANicSlowSinceBeforeTheStart) {
  const std::vector<analysis::scenario::Fault> slow = {
      {analysis::scenario::FaultKind::kStragglerNic, "gpu-013", "mlx5_2"}};
  const analysis::StragglerBaselines stored = cluster_->Watched({}, 7, config_);
  ASSERT_GT(stored.size(), 0u);
  single_baselines_ = stored;
  for (auto& pass : passes_) pass->LoadBaselines(stored);
  for (int p = 0; p < 6; ++p) Pass(cluster_->View(slow, {}, seed_++));
  ASSERT_THAT(Stragglers(single()), ::testing::Contains("gpu-013 mlx5_2"));
  EXPECT_EQ(Keys(IdsByKey(sharded())), Keys(IdsByKey(single())));
}

// A collector that owns many job shards counts each pass once in its
// straggler baselines: the NICs of a job that pauses for a checkpoint keep
// theirs for straggler_nic.history_passes passes, as they do with one
// collector running every analyzer, and a NIC that is slow after the pause
// is judged against them.
TEST_F(ShardedRatePassTest, APausedJobKeepsItsBaselinesOnEveryJobShardsOwner) {
  live_ = {0};
  Assign();
  config_.straggler_nic.history_passes = 10;
  passes_[0] = std::make_unique<ShardedRatePass>(
      ShardedRatePass::Options{"col-0", config_, counts_});
  const analysis::StragglerBaselines stored = cluster_->Watched({}, 7, config_);
  single_baselines_ = stored;
  passes_[0]->LoadBaselines(stored);
  // Fewer passes than history_passes, more than history_passes / the job
  // shards col-0 owns.
  analysis::scenario::TrafficOptions checkpoint;
  checkpoint.checkpointing_job = "moe-train";
  for (int p = 0; p < 6; ++p) Pass(cluster_->View({}, checkpoint, seed_++));
  const std::vector<analysis::scenario::Fault> slow = {
      {analysis::scenario::FaultKind::kStragglerNic, "gpu-013", "mlx5_2"}};
  for (int p = 0; p < 6; ++p) Pass(cluster_->View(slow, {}, seed_++));
  ASSERT_THAT(Stragglers(single()), ::testing::Contains("gpu-013 mlx5_2"));
  EXPECT_EQ(Keys(IdsByKey(sharded())), Keys(IdsByKey(single())));
}

TEST_F(ShardedRatePassTest, AShardTakenBackUnderANewTermStartsFromItsFindings) {
  Run(6, 6);
  const std::map<std::string, std::string> before = IdsByKey(sharded());
  // Every shard changes hands twice (to the next collector, and back), the
  // way a member that restarts takes its shards back: each time its owner
  // starts from the findings the other wrote.
  std::map<std::string, std::pair<int, uint64_t>> first = owners_;
  for (auto& [shard, owner] : owners_) {
    owner = {(owner.first + 1) % kCollectors, next_term_++};
  }
  Run(0, 2);
  for (auto& [shard, owner] : owners_) {
    owner = {first.at(shard).first, next_term_++};
  }
  Run(0, 2);
  EXPECT_EQ(IdsByKey(sharded()), before);
  EXPECT_EQ(Sum(sharded().Counters().resolved_by_kind), 0u);
}

// The PFC priorities of the open pfc_storm findings of `store`.
std::set<int> StormPriorities(const FindingsStore& store) {
  std::set<int> out;
  for (const v1::Finding& f : store.Active()) {
    if (f.kind() != "pfc_storm") continue;
    const std::map<std::string, double> evidence(f.evidence().begin(),
                                                 f.evidence().end());
    if (std::optional<int> p = analysis::StormPriority(evidence)) {
      out.insert(*p);
    }
  }
  return out;
}

// A storm whose source's node is held (its agent away, its finding kept by
// the runner): its victims, still in view, make no source-less second
// storm on that priority in the switch shard that sees them, as the
// unsharded runner drops it (the unsharded side here is given no holds).
// As in a live cluster under load, the shards' owners see the other
// collectors' ports two passes after those read them, and those hear the
// owners' excuses a pass later: a hot expert's congestion, which one
// collector excuses in the pass it sees both, waits for its excuse
// (kExcuseLagPasses) and never opens. (Without the newest-samples view
// here, a finding opens after 3 passes: a lag of 2 is the one that opens
// it without the wait.)
TEST_F(ShardedRatePassTest, ExcusesFromShardsSeenPassesLateStillComeInTime) {
  shard_lag_ = 2;
  Run(/*healthy=*/6, /*faulty=*/0);
  const std::vector<analysis::scenario::Fault> hot = {
      {analysis::scenario::FaultKind::kHotExpert, "gpu-004", "mlx5_2"}};
  // Every finding the three ever had open (the hot expert opens 2 passes
  // later than on one collector, its ports 2 passes late).
  std::set<std::string> ever;
  for (int p = 0; p < 10; ++p) {
    Pass(cluster_->View(hot, {}, seed_++));
    const std::set<std::string> now = Keys(IdsByKey(sharded()));
    ever.insert(now.begin(), now.end());
  }
  const std::set<std::string> found = Keys(IdsByKey(single()));
  ASSERT_EQ(found.size(), 1u) << absl::StrJoin(found, "; ");
  EXPECT_EQ(ever, found);
}

// A storm whose source is out of view for a few passes (its agent moving
// to another collector), then back: its victims warn of a source outside
// telemetry on one collector, which sees the same, but not in a cluster,
// where the warning waits kSourcelessLagPasses for the source to come back.
TEST_F(ShardedRatePassTest, AStormSourceOutOfViewForAFewPassesRaisesNoWarning) {
  Run(/*healthy=*/6, /*faulty=*/0);
  const std::vector<analysis::scenario::Fault> storm = {
      {analysis::scenario::FaultKind::kPfcStorm, "gpu-009", "mlx5_5"}};
  // The nodes of the active source-less warnings.
  const auto warnings = [](const FindingsStore& store) {
    std::set<std::string> out;
    for (const v1::Finding& f : store.Active()) {
      if (f.kind() == "pfc_storm" &&
          f.evidence_text().contains(analysis::kFaultEvidence)) {
        out.insert(f.node());
      }
    }
    return out;
  };
  std::set<std::string> ever;
  for (int p = 0; p < 8; ++p) {
    const FabricView view = cluster_->View(storm, {}, seed_++);
    Pass(p < 4
             ? NodesOf(view,
                       [](absl::string_view node) { return node != "gpu-009"; })
             : view);
    const std::set<std::string> warned = warnings(sharded());
    ever.insert(warned.begin(), warned.end());
    if (p == 3) {
      ASSERT_FALSE(warnings(single()).empty())
          << "one collector warns once the victims paused 3 passes";
    }
  }
  EXPECT_THAT(ever, ::testing::IsEmpty());
  EXPECT_THAT(StormPriorities(sharded()), ::testing::ElementsAre(3))
      << "the storm itself, once its source is back";
}

TEST_F(ShardedRatePassTest, AHeldStormSourcesVictimsOpenNoSecondStorm) {
  const auto source_away = [&] {
    return NodesOf(cluster_->View({{analysis::scenario::FaultKind::kPfcStorm,
                                    "gpu-009", "mlx5_5"}},
                                  {}, seed_++),
                   [](absl::string_view node) { return node != "gpu-009"; });
  };
  // The victims wait for their source to come back into view first.
  for (int p = 0; p < 6 + kSourcelessLagPasses; ++p) Pass(source_away());
  const std::set<int> warned = StormPriorities(sharded());
  ASSERT_FALSE(warned.empty()) << "the victims warn of a source out of view";
  ASSERT_EQ(StormPriorities(single()), warned);

  held_storms_ = warned;
  for (int p = 0; p < config_.hysteresis.clear_after + 1; ++p) {
    Pass(source_away());
  }
  EXPECT_THAT(StormPriorities(sharded()), ::testing::IsEmpty());
  EXPECT_EQ(StormPriorities(single()), warned);
}

}  // namespace
}  // namespace fabricdiag::collector
