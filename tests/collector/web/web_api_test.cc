#include "collector/web/web_api.h"

#include <limits>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "analysis/layout_parse.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::collector {
namespace {

using Json = nlohmann::ordered_json;
using ::testing::ElementsAre;

const absl::Time kNow = absl::FromUnixSeconds(1'790'000'000);

v1::Finding MakeFinding(const std::string& id, v1::Severity severity,
                        const std::string& node, const std::string& device,
                        absl::Duration age) {
  v1::Finding f;
  f.set_id(id);
  f.set_kind("hot_expert_incast");
  f.set_severity(severity);
  f.set_state(v1::FINDING_STATE_ACTIVE);
  f.set_job("moe");
  f.set_node(node);
  f.set_device(device);
  f.set_first_seen_unix_nanos(absl::ToUnixNanos(kNow - age));
  f.set_last_seen_unix_nanos(absl::ToUnixNanos(kNow));
  return f;
}

TEST(FindingsJsonTest, OpenMostSevereFirstThenResolvedWithDurations) {
  std::vector<v1::Finding> active = {
      MakeFinding("f-000003", v1::SEVERITY_WARNING, "gpu-1", "mlx5_0",
                  absl::Seconds(30)),
      MakeFinding("f-000002", v1::SEVERITY_CRITICAL, "gpu-2", "mlx5_1",
                  absl::Seconds(10)),
      MakeFinding("f-000001", v1::SEVERITY_WARNING, "gpu-3", "mlx5_2",
                  absl::Seconds(60))};
  v1::Finding done = MakeFinding("f-000000", v1::SEVERITY_INFO, "gpu-4",
                                 "mlx5_3", absl::Seconds(100));
  done.set_state(v1::FINDING_STATE_RESOLVED);
  done.set_resolved_unix_nanos(absl::ToUnixNanos(kNow - absl::Seconds(58)));

  const Json j = FindingsJson(active, {done}, {}, kNow);
  EXPECT_EQ(j["api_version"], 1);
  EXPECT_EQ(j["generated"], "2026-09-21T14:13:20Z");
  ASSERT_EQ(j["active"].size(), 3u);
  // Critical first; among warnings the oldest first.
  EXPECT_EQ(j["active"][0]["id"], "f-000002");
  EXPECT_EQ(j["active"][1]["id"], "f-000001");
  EXPECT_EQ(j["active"][2]["id"], "f-000003");
  EXPECT_EQ(j["active"][1]["duration_seconds"], 60);
  EXPECT_EQ(j["active"][0]["severity"], "critical");
  ASSERT_EQ(j["resolved"].size(), 1u);
  EXPECT_EQ(j["resolved"][0]["state"], "resolved");
  EXPECT_EQ(j["resolved"][0]["duration_seconds"], 42);
}

// Two nodes x rails mlx5_2 and mlx5_10 (natural order), one switch with two
// uplinks.
analysis::FabricView TwoNodes() {
  analysis::FabricView view;
  view.window_seconds = 5;
  for (const char* node : {"gpu-b", "gpu-a"}) {
    for (const char* dev : {"mlx5_10", "mlx5_2"}) {
      analysis::PortView& p = view.AddPort(node, dev);
      p.netdev = std::string("eth") + (dev[5] == '1' ? "10" : "2");
      p.s.rx_bytes = 1e9;
      p.s.tx_bytes = 2e9;
    }
  }
  analysis::PortView& third = view.AddPort("gpu-c", "mlx5_2");
  third.netdev = "eth2";
  third.s.rx_bytes = 4e9;  // a third on mlx5_2
  analysis::PortView& down = view.AddPort("gpu-c", "mlx5_10");
  down.s.link_up = false;
  down.s.rx_bytes = -5;  // a reset, not a rate: shown as null
  analysis::PortView& up1 = view.AddPort("leaf-0", "swp1");
  up1.is_switch_port = true;
  up1.s.tx_bytes = 3e9;
  analysis::PortView& up2 = view.AddPort("leaf-0", "swp2");
  up2.is_switch_port = true;
  up2.s.tx_bytes = 1e9;
  view.Finish();
  return view;
}

v1::Topology OneLeaf() {
  v1::Topology t;
  v1::Switch* sw = t.add_switches();
  sw->set_name("leaf-0");
  sw->add_uplinks("swp1");
  sw->add_uplinks("swp2");
  sw->add_uplinks("swp9");                // listed, never reported
  t.add_switches()->set_name("spine-0");  // no uplinks: not shown
  return t;
}

TEST(FabricJsonTest, NodesByRailWithRailMediansOutlinesAndUplinks) {
  const analysis::FabricView view = TwoNodes();
  const v1::Topology topology = OneLeaf();
  // Named by its netdev: still outlines the RDMA device's cell.
  std::vector<v1::Finding> active = {MakeFinding(
      "f-000007", v1::SEVERITY_CRITICAL, "gpu-c", "eth2", absl::Seconds(5))};
  active.push_back(MakeFinding("f-000008", v1::SEVERITY_WARNING, "leaf-0",
                               "swp1", absl::Seconds(5)));

  const Json j =
      FabricJson(&view, FabricScope::kFabric, &topology, active, kNow);
  EXPECT_EQ(j["window_seconds"], 5);
  EXPECT_EQ(j["scope"], "fabric");
  EXPECT_THAT(j["rails"].get<std::vector<std::string>>(),
              ElementsAre("mlx5_2", "mlx5_10"));
  EXPECT_THAT(j["nodes"].get<std::vector<std::string>>(),
              ElementsAre("gpu-a", "gpu-b", "gpu-c"));
  const Json& rx = j["values"]["rx_bytes"];
  EXPECT_EQ(rx[2][0], 4e9);
  EXPECT_TRUE(rx[2][1].is_null());  // negative mean: absent, not a rate
  EXPECT_EQ(j["rail_medians"]["rx_bytes"][0], 1e9);  // median of 1, 1, 4
  EXPECT_EQ(j["rail_medians"]["rx_bytes"][1], 1e9);
  EXPECT_TRUE(j["values"]["pause_fraction"][0][0].is_null());
  ASSERT_EQ(j["outlined"].size(), 1u);
  EXPECT_EQ(j["outlined"][0]["node"], "gpu-c");
  EXPECT_EQ(j["outlined"][0]["rail"], "mlx5_2");
  EXPECT_EQ(j["outlined"][0]["findings"][0]["id"], "f-000007");
  ASSERT_EQ(j["links_down"].size(), 1u);
  EXPECT_EQ(j["links_down"][0]["rail"], "mlx5_10");

  ASSERT_EQ(j["switches"].size(), 1u);
  const Json& leaf = j["switches"][0];
  EXPECT_EQ(leaf["switch"], "leaf-0");
  ASSERT_EQ(leaf["uplinks"].size(), 3u);
  EXPECT_EQ(leaf["uplinks"][0]["findings"][0]["id"], "f-000008");
  EXPECT_EQ(leaf["uplinks"][2]["reported"], false);
  EXPECT_TRUE(leaf["uplinks"][2]["tx_bytes"].is_null());
  EXPECT_EQ(leaf["tx_mean"], 2e9);
  EXPECT_EQ(leaf["tx_max_over_mean"], 1.5);
}

TEST(FabricJsonTest, BeforeTheFirstPassAndWithoutTopology) {
  const Json j = FabricJson(nullptr, FabricScope::kFabric, nullptr, {}, kNow);
  EXPECT_TRUE(j["window_seconds"].is_null());
  EXPECT_TRUE(j["nodes"].empty());
  EXPECT_TRUE(j["switches"].empty());
  EXPECT_EQ(j["metrics"].size(), 4u);
  const analysis::FabricView view = TwoNodes();
  EXPECT_TRUE(
      FabricJson(&view, FabricScope::kFabric, nullptr, {}, kNow)["switches"]
          .empty());
}

// A collector of a cluster that shards its analysis holds its own agents'
// ports alone, and says so; the grid is built the same.
TEST(FabricJsonTest, ACollectorsOwnAgentsSaySo) {
  const analysis::FabricView view = TwoNodes();
  const Json mine =
      FabricJson(&view, FabricScope::kCollector, nullptr, {}, kNow);
  EXPECT_EQ(mine["scope"], "collector");
  Json whole = FabricJson(&view, FabricScope::kFabric, nullptr, {}, kNow);
  EXPECT_EQ(whole["scope"], "fabric");
  whole["scope"] = "collector";
  EXPECT_EQ(mine, whole);
  EXPECT_EQ(Json::parse(FabricJsonText(&view, FabricScope::kCollector, nullptr,
                                       {}, kNow)),
            mine);
}

// A leaf whose agent streams to another collector of a sharded cluster is
// on that collector's page: not listed here as unreported. The whole
// fabric's view lists it so.
TEST(FabricJsonTest, ACollectorListsTheSwitchesOfItsOwnAgents) {
  const analysis::FabricView view = TwoNodes();
  v1::Topology topology = OneLeaf();
  v1::Switch* elsewhere = topology.add_switches();
  elsewhere->set_name("leaf-1");
  elsewhere->add_uplinks("swp1");
  const Json mine =
      FabricJson(&view, FabricScope::kCollector, &topology, {}, kNow);
  ASSERT_EQ(mine["switches"].size(), 1u);
  EXPECT_EQ(mine["switches"][0]["switch"], "leaf-0");
  EXPECT_EQ(mine["switches"][0]["uplinks"].size(), 3u);
  const Json whole =
      FabricJson(&view, FabricScope::kFabric, &topology, {}, kNow);
  ASSERT_EQ(whole["switches"].size(), 2u);
  EXPECT_EQ(whole["switches"][1]["switch"], "leaf-1");
  EXPECT_EQ(whole["switches"][1]["uplinks"][0]["reported"], false);
  EXPECT_EQ(Json::parse(FabricJsonText(&view, FabricScope::kCollector,
                                       &topology, {}, kNow)),
            mine);
}

TEST(FabricJsonTextTest, TheSameJsonAsFabricJson) {
  analysis::FabricView view;
  view.window_seconds = 5;
  // Numbers that round at the 4th digit, tiny and huge ones, absent and
  // broken ones.
  const double rx[] = {12345.678, 0.00012345,
                       1e-9,      5e10,
                       0,         99995,
                       9.9996e13, analysis::kAbsent,
                       -1,        std::numeric_limits<double>::infinity()};
  int i = 0;
  for (const char* node : {"gpu-a", "gpu-b", "gpu-c", "gpu-d", "gpu-e"}) {
    for (const char* nic : {"mlx5_0", "mlx5_1"}) {
      analysis::PortView& p = view.AddPort(node, nic);
      p.s.rx_bytes = rx[i++];
      p.s.tx_bytes = 1e9 / i;
    }
  }
  view.Finish();
  const v1::Topology topology = OneLeaf();
  const std::vector<v1::Finding> active = {MakeFinding(
      "f-000007", v1::SEVERITY_CRITICAL, "gpu-c", "mlx5_1", absl::Seconds(5))};

  const Json j =
      FabricJson(&view, FabricScope::kFabric, &topology, active, kNow);
  const std::string text =
      FabricJsonText(&view, FabricScope::kFabric, &topology, active, kNow);
  EXPECT_EQ(Json::parse(text), j);
  EXPECT_EQ(text.find("\\u0001"), std::string::npos) << text;
  EXPECT_EQ(j["values"]["rx_bytes"][0][0], 12350);
  EXPECT_EQ(j["values"]["rx_bytes"][1][0], 1e-9);
  EXPECT_EQ(j["values"]["rx_bytes"][2][1], 1e5);
  EXPECT_EQ(j["values"]["rx_bytes"][3][0], 1e14);
  EXPECT_TRUE(j["values"]["rx_bytes"][4][0].is_null());
  EXPECT_TRUE(j["values"]["rx_bytes"][4][1].is_null());

  EXPECT_EQ(Json::parse(FabricJsonText(nullptr, FabricScope::kFabric, nullptr,
                                       {}, kNow)),
            FabricJson(nullptr, FabricScope::kFabric, nullptr, {}, kNow));
}

LayoutEntry MoeEntry() {
  absl::StatusOr<v1::Layout> layout = analysis::ParseLayout(
      "job: moe\ngpus_per_node: 2\n"
      "parallelism: {tp: 2, pp: 1, dp: 2, ep: 2}\n"
      "hosts: [h0, h1]\nrails: [mlx5_0, mlx5_1]\n"
      "labels: {team: ml-infra, project: moe}\n"
      "model: {params: 1.6e10, hidden: 4096, layers: 32, seq_len: 4096, "
      "micro_batch: 1, micro_batches: 4, dtype_bytes: 2, experts: 8, "
      "top_k: 2}\n");
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<analysis::LayoutModel> model =
      analysis::LayoutModel::Build(*layout);
  EXPECT_TRUE(model.ok()) << model.status();
  return LayoutEntry{*layout, *std::move(model), kNow - absl::Minutes(1), {}};
}

TEST(JobJsonTest, GroupsWithRatesRatiosPredictionsAndFindings) {
  const LayoutEntry entry = MoeEntry();
  absl::StatusOr<analysis::TrafficModel> traffic =
      analysis::TrafficModel::Predict(entry.model, analysis::LinkParams{});
  ASSERT_TRUE(traffic.ok()) << traffic.status();
  analysis::FabricView view;
  view.AddPort("h0", "mlx5_0").s.rx_bytes = 1e9;
  view.AddPort("h1", "mlx5_0").s.rx_bytes = 3e9;
  view.Finish();
  std::vector<v1::Finding> active = {MakeFinding(
      "f-000009", v1::SEVERITY_CRITICAL, "h1", "mlx5_0", absl::Seconds(3))};
  active[0].set_group("ep:0");

  JobQuery query;
  query.dim = analysis::Dim::kEp;
  absl::StatusOr<Json> j = JobJson(entry, &*traffic, query, &view,
                                   FabricScope::kFabric, active, kNow);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ((*j)["job"], "moe");
  EXPECT_EQ((*j)["scope"], "fabric");
  EXPECT_EQ((*j)["dim"], "ep");
  EXPECT_EQ((*j)["groups_total"], 2);
  EXPECT_EQ((*j)["prediction"]["collective"], "all-to-all");
  EXPECT_EQ((*j)["prediction"]["available"], true);
  const Json& g0 = (*j)["groups"][0];
  EXPECT_EQ(g0["name"], "ep:0");
  EXPECT_EQ(g0["hosts_spanned"], 2);
  EXPECT_EQ(g0["findings"][0]["id"], "f-000009");
  ASSERT_EQ(g0["members"].size(), 2u);
  EXPECT_EQ(g0["median_rx_bytes"], 2e9);
  EXPECT_EQ(g0["members"][0]["host"], "h0");
  EXPECT_EQ(g0["members"][0]["nic"], "mlx5_0");
  EXPECT_EQ(g0["members"][0]["rx_ratio"], 0.5);
  EXPECT_EQ(g0["members"][1]["rx_ratio"], 1.5);
  EXPECT_TRUE(g0["members"][1]["tx_bytes"].is_null());
  EXPECT_GT(g0["members"][0]["predicted_rx_bytes_per_step"].get<double>(), 0);
  EXPECT_EQ(g0["members"][1]["findings"][0]["id"], "f-000009");
  // The second group's NICs report nothing: no rates, no ratios.
  EXPECT_TRUE((*j)["groups"][1]["members"][0]["rx_ratio"].is_null());
  EXPECT_TRUE((*j)["groups"][1]["median_rx_bytes"].is_null());

  // tp groups stay inside a host: no NVLink crossing.
  query.dim = analysis::Dim::kTp;
  j = JobJson(entry, &*traffic, query, &view, FabricScope::kFabric, active,
              kNow);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["groups"][0]["crosses_nvlink"], false);
  EXPECT_EQ((*j)["groups"][0]["members"].size(), 2u);
}

// On a collector of a cluster that shards its analysis the view holds its
// own agents' ports alone: the members elsewhere have no rates, and the
// answer says whose ports it read.
TEST(JobJsonTest, ACollectorsOwnAgentsSaySo) {
  const LayoutEntry entry = MoeEntry();
  analysis::FabricView view;
  view.AddPort("h0", "mlx5_0").s.rx_bytes = 1e9;
  view.Finish();
  JobQuery query;
  query.dim = analysis::Dim::kEp;
  absl::StatusOr<Json> mine =
      JobJson(entry, nullptr, query, &view, FabricScope::kCollector, {}, kNow);
  ASSERT_TRUE(mine.ok()) << mine.status();
  EXPECT_EQ((*mine)["scope"], "collector");
  absl::StatusOr<Json> whole =
      JobJson(entry, nullptr, query, &view, FabricScope::kFabric, {}, kNow);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ((*whole)["scope"], "fabric");
  (*whole)["scope"] = "collector";
  EXPECT_EQ(*mine, *whole);
  // h1's NIC is another collector's: no rate here.
  EXPECT_TRUE((*mine)["groups"][0]["members"][1]["rx_bytes"].is_null());
}

TEST(JobJsonTest, OneGroupByNameAndPages) {
  const LayoutEntry entry = MoeEntry();
  JobQuery query;
  query.dim = analysis::Dim::kDp;
  query.group = "dp:1";
  absl::StatusOr<Json> j =
      JobJson(entry, nullptr, query, nullptr, FabricScope::kFabric, {}, kNow);
  ASSERT_TRUE(j.ok()) << j.status();
  // The owners travel with the job's view, keys sorted.
  EXPECT_EQ((*j)["labels"].dump(), R"({"project":"moe","team":"ml-infra"})");
  ASSERT_EQ((*j)["groups"].size(), 1u);
  EXPECT_EQ((*j)["groups"][0]["name"], "dp:1");
  EXPECT_TRUE((*j)["prediction"].is_null());

  for (const char* bad : {"dp:2", "tp:0", "dp", "nonsense"}) {
    query.group = bad;
    EXPECT_EQ(
        JobJson(entry, nullptr, query, nullptr, FabricScope::kFabric, {}, kNow)
            .status()
            .code(),
        absl::StatusCode::kNotFound)
        << bad;
  }
  query.group.clear();
  query.offset = 1;
  query.limit = 5;
  j = JobJson(entry, nullptr, query, nullptr, FabricScope::kFabric, {}, kNow);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["offset"], 1);
  ASSERT_EQ((*j)["groups"].size(), 1u);
  query.offset = 100;
  j = JobJson(entry, nullptr, query, nullptr, FabricScope::kFabric, {}, kNow);
  ASSERT_TRUE(j.ok());
  EXPECT_TRUE((*j)["groups"].empty());
}

TEST(ParseJobQueryTest, NamesTheParameterAtFault) {
  absl::StatusOr<JobQuery> q = ParseJobQuery("dim=ep&group=ep%3A3&limit=10");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->dim, analysis::Dim::kEp);
  EXPECT_EQ(q->group, "ep:3");
  EXPECT_EQ(q->limit, 10u);
  EXPECT_EQ(ParseJobQuery("")->dim, analysis::Dim::kTp);
  for (const char* bad : {"dim=xy", "limit=0", "limit=257", "limit=-1",
                          "offset=x", "colour=red", "dim=%zz"}) {
    absl::StatusOr<JobQuery> r = ParseJobQuery(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(std::string(ParseJobQuery("dim=xy").status().message()),
              ::testing::StartsWith("dim:"));
}

}  // namespace
}  // namespace fabricdiag::collector
