// The shards of a fabric hold what their analyzers need: each kind's
// analyzers, run shard by shard over the shard's ports alone, find what
// they find over the whole fabric.
#include "analysis/shard_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/analysis_config.h"
#include "analysis/ecmp_imbalance.h"
#include "analysis/hot_expert_incast.h"
#include "analysis/pfc_storm.h"
#include "analysis/straggler_nic.h"
#include "tests/analysis/shard_findings.h"
#include "tests/testing/scenario_builder.h"

namespace fabricdiag::analysis::scenario {
namespace {

using ::testing::Each;
using ::testing::IsEmpty;
using ::testing::Not;

using testing::FindingKeys;
using testing::PortsOf;
using testing::StormVictims;
using testing::StormVictimsBySource;

TEST(ShardMapTest, ShardNamesAreFixedByTheName) {
  const ShardCounts counts;
  // Pinned: a change moves every job and switch to another shard, and
  // collectors of two builds would then disagree.
  EXPECT_EQ(JobShardOf("moe-train", counts), "jobs.18");
  EXPECT_EQ(SwitchShardOf("leaf-1", counts), "switches.58");
  EXPECT_EQ(JobShardOf("moe-train", {1, 1}), "jobs.0");
  EXPECT_EQ(JobShardOf("moe-train", {0, 0}), "jobs.0");  // at least one
  std::set<std::string> names;
  for (int j = 0; j < 1000; ++j) {
    names.insert(JobShardOf(absl::StrCat("job-", j), counts));
  }
  EXPECT_EQ(names.size(), 64u);  // 1,000 jobs reach every shard
}

TEST(ShardMapTest, JobsNicsGoToTheirJobsShardAndEveryPortToItsSwitchs) {
  absl::StatusOr<Cluster> c = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(c.ok()) << c.status();
  const FabricView view = c->View({}, {}, 1);
  const TopologyIndex topology(&c->topology());
  std::vector<const LayoutModel*> layouts;
  for (const LayoutModel& m : c->jobs()) layouts.push_back(&m);
  const ShardCounts counts;
  const std::vector<ShardPorts> shards =
      AssignShards(view, layouts, topology, counts);
  std::vector<int> job_shards_of(view.ports().size(), 0);
  std::vector<int> switch_shards_of(view.ports().size(), 0);
  for (const ShardPorts& s : shards) {
    ASSERT_THAT(s.ports, Not(IsEmpty())) << s.shard;
    EXPECT_TRUE(std::is_sorted(s.ports.begin(), s.ports.end()));
    for (uint32_t i : s.ports) {
      const PortView& p = view.ports()[i];
      if (s.kind == ShardKind::kJobs) {
        ++job_shards_of[i];
        EXPECT_FALSE(p.is_switch_port);
        std::string job;
        for (const LayoutModel& m : c->jobs()) {
          if (!m.RanksOnNic(p.node, p.device).empty()) job = m.job();
        }
        ASSERT_FALSE(job.empty()) << p.node << " " << p.device;
        EXPECT_EQ(s.shard, JobShardOf(job, counts)) << p.node;
      } else {
        ++switch_shards_of[i];
        const std::string sw =
            p.is_switch_port ? p.node
                             : topology.SwitchPortOf(p.node, p.device)->node;
        EXPECT_EQ(s.shard, SwitchShardOf(sw, counts)) << p.node;
      }
    }
  }
  // Every host NIC runs a job here, and every port is cabled to a leaf.
  for (size_t i = 0; i < view.ports().size(); ++i) {
    EXPECT_EQ(job_shards_of[i], view.ports()[i].is_switch_port ? 0 : 1) << i;
    EXPECT_EQ(switch_shards_of[i], 1) << i;
  }
}

TEST(ShardMapTest, AHostNicNoTopologyCablesGoesToItsNodesSwitchShard) {
  absl::StatusOr<Cluster> c = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(c.ok()) << c.status();
  const FabricView view = c->View({}, {}, 1);
  const v1::Topology none;
  const TopologyIndex topology(&none);
  const ShardCounts counts;
  std::vector<int> shards_of(view.ports().size(), 0);
  for (const ShardPorts& s : AssignShards(view, {}, topology, counts)) {
    ASSERT_EQ(s.kind, ShardKind::kSwitches);
    for (uint32_t i : s.ports) {
      ++shards_of[i];
      EXPECT_EQ(s.shard, SwitchShardOf(view.ports()[i].node, counts));
    }
  }
  EXPECT_THAT(shards_of, Each(1));
}

// The shards as comparable values: (shard, kind, ports).
std::vector<std::tuple<std::string, ShardKind, std::vector<uint32_t>>> Values(
    const std::vector<ShardPorts>& shards) {
  std::vector<std::tuple<std::string, ShardKind, std::vector<uint32_t>>> out;
  out.reserve(shards.size());
  for (const ShardPorts& s : shards) out.emplace_back(s.shard, s.kind, s.ports);
  return out;
}

// `view`'s ports in a new view, each first passed to `edit`.
FabricView Edited(const FabricView& view,
                  const std::function<void(PortView&)>& edit) {
  FabricView out;
  for (const PortView& p : view.ports()) {
    PortView& copy = out.AddPort(p.node, p.device);
    copy = p;
    edit(copy);
  }
  out.Finish();
  return out;
}

// The cache answers as AssignShards does, and works the shards out again
// exactly when the ports, the layouts, the topology or the counts change.
TEST(ShardMapTest, TheCacheWorksTheShardsOutAgainOnlyOnAChange) {
  absl::StatusOr<Cluster> c = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(c.ok()) << c.status();
  const FabricView view = c->View({}, {}, 1);
  auto topology = std::make_shared<const TopologyIndex>(&c->topology());
  std::vector<const LayoutModel*> models;
  for (const LayoutModel& m : c->jobs()) models.push_back(&m);
  const LayoutsByHost layouts(models);
  auto layouts_of = std::make_shared<int>(1);
  const ShardCounts counts;
  const auto expected = [&](const FabricView& v, const ShardCounts& n,
                            const TopologyIndex* index = nullptr) {
    const TopologyIndex none(nullptr);
    return Values(
        AssignShards(v, layouts, index != nullptr ? *index : none, n));
  };

  ShardAssignmentCache cache;
  EXPECT_EQ(Values(cache.Assign(view, layouts_of, layouts, topology, counts)),
            expected(view, counts, topology.get()));
  EXPECT_EQ(cache.assigned(), 1u);
  // The same ports in another view of the next pass: kept.
  const FabricView again = Edited(view, [](PortView&) {});
  EXPECT_EQ(Values(cache.Assign(again, layouts_of, layouts, topology, counts)),
            expected(view, counts, topology.get()));
  EXPECT_EQ(cache.assigned(), 1u);

  // Each change of what the shards depend on is seen.
  uint64_t assigned = cache.assigned();
  const auto changed = [&](const FabricView& v, const ShardCounts& n,
                           const std::shared_ptr<const void>& key,
                           const std::shared_ptr<const TopologyIndex>& index,
                           const std::string& what) {
    EXPECT_EQ(Values(cache.Assign(v, key, layouts, index, n)),
              expected(v, n, index.get()))
        << what;
    EXPECT_EQ(cache.assigned(), ++assigned) << what;
  };
  const std::string node = view.ports().front().node;
  const std::string device = view.ports().front().device;
  const auto first = [&](const PortView& p) {
    return p.node == node && p.device == device;
  };
  const FabricView renamed = Edited(view, [&](PortView& p) {
    if (first(p)) p.device = "mlx5_9";
  });
  changed(renamed, counts, layouts_of, topology, "a device renamed");
  changed(view, counts, layouts_of, topology, "and back");
  changed(Edited(view,
                 [&](PortView& p) {
                   if (first(p)) p.netdev = "eth9";
                 }),
          counts, layouts_of, topology, "a netdev renamed");
  changed(Edited(view,
                 [&](PortView& p) {
                   if (first(p)) p.is_switch_port = !p.is_switch_port;
                 }),
          counts, layouts_of, topology, "a port's side");
  changed(Edited(view,
                 [&](PortView& p) {
                   if (p.node == node) p.node = "gpu-new";
                 }),
          counts, layouts_of, topology, "a node renamed");
  FabricView fewer;
  for (const PortView& p : view.ports()) {
    if (!first(p)) fewer.AddPort(p.node, p.device) = p;
  }
  fewer.Finish();
  changed(fewer, counts, layouts_of, topology, "a port gone");
  changed(view, counts, layouts_of, topology, "and back");
  changed(view, counts, std::make_shared<int>(2), topology, "new layouts");
  const auto new_layouts = std::make_shared<int>(3);
  changed(view, counts, new_layouts,
          std::make_shared<const TopologyIndex>(&c->topology()),
          "a new topology");
  changed(view, {counts.jobs, 7}, new_layouts, topology, "switch shards");
  changed(view, {5, 7}, new_layouts, topology, "job shards");
  EXPECT_EQ(Values(cache.Assign(view, new_layouts, layouts, topology, {5, 7})),
            expected(view, {5, 7}, topology.get()));
  EXPECT_EQ(cache.assigned(), assigned) << "nothing changed";
  // No topology: every host NIC goes to its node's shard.
  changed(view, {5, 7}, new_layouts, nullptr, "no topology");
  for (const ShardPorts& s :
       cache.Assign(view, new_layouts, layouts, nullptr, {5, 7})) {
    if (s.kind != ShardKind::kSwitches) continue;
    for (uint32_t i : s.ports) {
      EXPECT_EQ(s.shard, SwitchShardOf(view.ports()[i].node, {5, 7}));
    }
  }
}

TEST(ShardMapTest, ShardByShardTheAnalyzersFindWhatTheyFindOnTheFabric) {
  // Small shard counts put several jobs and leaves in one shard, large
  // ones give each its own.
  for (const ShardCounts counts :
       {ShardCounts{1, 1}, ShardCounts{2, 3}, ShardCounts{}}) {
    SCOPED_TRACE(absl::StrCat(counts.jobs, " job shards, ", counts.switches,
                              " switch shards"));
    absl::StatusOr<Cluster> c = Cluster::Build(TwoJobCluster(64));
    ASSERT_TRUE(c.ok()) << c.status();
    const AnalysisConfig config;
    const StragglerBaselines baselines = c->Watched({}, 7, config);
    const TopologyIndex topology(&c->topology());
    std::vector<const LayoutModel*> layouts;
    for (const LayoutModel& m : c->jobs()) layouts.push_back(&m);
    const FabricView view =
        c->View({{FaultKind::kHotExpert, "gpu-001", "mlx5_2"},
                 {FaultKind::kPfcStorm, "gpu-041", "mlx5_5"},
                 {FaultKind::kEcmpImbalance, "leaf-1", ""},
                 {FaultKind::kStragglerNic, "gpu-050", "mlx5_0"},
                 {FaultKind::kStragglerNic, "gpu-006", "mlx5_3"}},
                {}, 4);
    auto jobs = [&](const FabricView& v) {
      AnalysisInput in = c->Input(&v, &config, &baselines);
      in.topology_index = &topology;
      std::vector<Finding> out = HotExpertIncastFindings(in);
      for (Finding& f : StragglerNicFindings(in)) out.push_back(std::move(f));
      return out;
    };
    auto switches = [&](const FabricView& v) {
      AnalysisInput in = c->Input(&v, &config, &baselines);
      in.topology_index = &topology;
      std::vector<Finding> out = EcmpImbalanceFindings(in);
      for (Finding& f : PfcStormFindings(in)) out.push_back(std::move(f));
      return out;
    };
    std::set<std::string> by_job;
    std::set<std::string> by_switch;
    StormVictimsBySource victims;
    for (const ShardPorts& s : AssignShards(view, layouts, topology, counts)) {
      const FabricView part = PortsOf(view, s.ports);
      const std::vector<Finding> found =
          s.kind == ShardKind::kJobs ? jobs(part) : switches(part);
      victims.merge(StormVictims(found));
      for (const std::string& k : FindingKeys(found)) {
        EXPECT_TRUE(
            (s.kind == ShardKind::kJobs ? by_job : by_switch).insert(k).second)
            << "found by two shards: " << k;
      }
    }
    const std::set<std::string> want_jobs = FindingKeys(jobs(view));
    const std::set<std::string> want_switches = FindingKeys(switches(view));
    EXPECT_EQ(want_jobs.size(), 3u) << absl::StrJoin(want_jobs, "\n");
    EXPECT_GE(want_switches.size(), 2u);
    EXPECT_EQ(by_job, want_jobs);
    EXPECT_EQ(by_switch, want_switches);
    // A storm's victims are those its shard holds: the source's leaf. On
    // the whole fabric a paused port that no source's pause reaches through
    // the topology is every source's victim too (it may sit behind spines
    // the topology does not describe): here one on leaf-0, which the shard
    // of leaf-10 does not hold.
    const StormVictimsBySource want_victims = StormVictims(switches(view));
    ASSERT_EQ(victims.size(), want_victims.size());
    for (const auto& [source, want] : want_victims) {
      SCOPED_TRACE(source);
      ASSERT_EQ(victims.count(source), 1u);
      const auto& [count, nodes] = victims.at(source);
      const bool together =
          SwitchShardOf("leaf-0", counts) == SwitchShardOf("leaf-10", counts);
      // leaf-10's paused ports but the source's own, and leaf-0's port
      // when one shard holds both leaves.
      EXPECT_EQ(count, together ? 33 : 32);
      EXPECT_EQ(want.first, 33);
      std::set<std::string> missing;
      std::set_difference(want.second.begin(), want.second.end(), nodes.begin(),
                          nodes.end(), std::inserter(missing, missing.end()));
      EXPECT_EQ(missing, together ? std::set<std::string>{}
                                  : std::set<std::string>{"leaf-0"});
      EXPECT_TRUE(std::includes(want.second.begin(), want.second.end(),
                                nodes.begin(), nodes.end()));
    }
  }
}

}  // namespace
}  // namespace fabricdiag::analysis::scenario
