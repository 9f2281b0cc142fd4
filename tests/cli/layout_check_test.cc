// `fabricdiag layout check`: which of a layout's hosts and NICs no agent
// reports (through hosts and rails, or ranks), and the command's table,
// JSON and exit status against the in-memory client.
#include "cli/layout_check.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/test_env.h"
#include "tests/client/fake_collector_client.h"

namespace fabricdiag::cli {
namespace {

using client::testing::FakeCollectorClient;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::TestEnv;

// Two 2-GPU hosts through hosts and rails.
v1::Layout HostsLayout(std::vector<std::string> hosts,
                       std::vector<std::string> rails) {
  v1::Layout l;
  l.set_job("moe-42");
  l.set_gpus_per_node(2);
  l.mutable_parallelism()->set_tp(2);
  l.mutable_parallelism()->set_pp(1);
  l.mutable_parallelism()->set_dp(static_cast<uint32_t>(hosts.size()));
  for (const std::string& h : hosts) l.add_hosts(h);
  for (const std::string& r : rails) l.add_rails(r);
  return l;
}

// `layout` resolved as the collector answers GetLayoutRequest.resolved:
// every rank listed, rank r's NIC source sources[r] ("agent": mlx5_<gpu> at
// pcie_switch distance; "rails": its rail; "unknown": none).
v1::Layout Resolved(const v1::Layout& layout,
                    const std::vector<std::string>& sources) {
  v1::Layout out = layout;
  const uint32_t gpn = layout.gpus_per_node();
  for (uint32_t r = 0; r < sources.size(); ++r) {
    v1::RankPlacement* p = out.add_ranks();
    p->set_rank(r);
    p->set_host(layout.hosts(static_cast<int>(r / gpn)));
    p->set_gpu(r % gpn);
    p->set_nic_source(sources[r]);
    if (sources[r] == "agent") {
      p->set_nic(absl::StrCat("mlx5_", r % gpn));
      p->set_nic_distance("pcie_switch");
    } else if (sources[r] == "rails") {
      p->set_nic(layout.rails(static_cast<int>(r % gpn)));
    }
  }
  return out;
}

std::vector<ReportedNode> TwoNodes() {
  return {{"gpu-000", {"mlx5_0", "mlx5_1"}, true},
          {"gpu-001", {"mlx5_0", "mlx5_1"}, true}};
}

TEST(CheckLayoutNamesTest, EverythingReported) {
  const LayoutCheck c = CheckLayoutNames(
      HostsLayout({"gpu-000", "gpu-001"}, {"mlx5_0", "mlx5_1"}), TwoNodes());
  EXPECT_EQ(c.hosts, 2U);
  EXPECT_EQ(c.nics, 4U);
  EXPECT_THAT(c.unmatched, IsEmpty());
}

TEST(CheckLayoutNamesTest, AnFqdnHostAndAWrongRail) {
  const LayoutCheck c = CheckLayoutNames(
      HostsLayout({"gpu-000.example.com", "gpu-001"}, {"mlx5_0", "mlx5_7"}),
      TwoNodes());
  ASSERT_EQ(c.unmatched.size(), 2U);
  EXPECT_EQ(c.unmatched[0].kind, "host");
  EXPECT_EQ(c.unmatched[0].host, "gpu-000.example.com");
  EXPECT_EQ(c.unmatched[0].ranks, 2U);
  EXPECT_THAT(c.unmatched[0].alike, ElementsAre("gpu-000", "gpu-001"));
  // The FQDN host's NICs are not checked again: its host is the problem.
  EXPECT_EQ(c.unmatched[1].kind, "nic");
  EXPECT_EQ(c.unmatched[1].host, "gpu-001");
  EXPECT_EQ(c.unmatched[1].nic, "mlx5_7");
  EXPECT_EQ(c.unmatched[1].ranks, 1U);
  EXPECT_THAT(c.unmatched[1].alike, ElementsAre("mlx5_0", "mlx5_1"));
}

TEST(CheckLayoutNamesTest, RanksWithTheirOwnNicOrTheRailOfTheirGpu) {
  v1::Layout l = HostsLayout({}, {"mlx5_0", "mlx5_1"});
  l.mutable_parallelism()->set_dp(1);
  auto add = [&](const char* host, uint32_t gpu, const char* nic) {
    v1::RankPlacement* r = l.add_ranks();
    r->set_host(host);
    r->set_gpu(gpu);
    r->set_nic(nic);
  };
  add("gpu-001", 0, "ib_x");  // its own NIC, unreported
  add("gpu-001", 1, "");      // rails[1]: mlx5_1, reported
  const LayoutCheck c = CheckLayoutNames(l, TwoNodes());
  EXPECT_EQ(c.hosts, 1U);
  EXPECT_EQ(c.nics, 2U);
  ASSERT_EQ(c.unmatched.size(), 1U);
  EXPECT_EQ(c.unmatched[0].nic, "ib_x");
  EXPECT_THAT(c.unmatched[0].alike, IsEmpty());
}

TEST(CheckLayoutNamesTest, NoRailsChecksHostsOnly) {
  const LayoutCheck c =
      CheckLayoutNames(HostsLayout({"gpu-000", "gpu-002"}, {}), TwoNodes());
  EXPECT_EQ(c.nics, 0U);
  ASSERT_EQ(c.unmatched.size(), 1U);
  EXPECT_EQ(c.unmatched[0].host, "gpu-002");
  EXPECT_THAT(c.unmatched[0].alike, ElementsAre("gpu-000", "gpu-001"));
}

TEST(CheckLayoutNamesTest, NicsOfNodesOfOtherCollectorsAreNotChecked) {
  std::vector<ReportedNode> nodes = TwoNodes();
  nodes[1].nics.clear();
  nodes[1].nics_known = false;
  const LayoutCheck c = CheckLayoutNames(
      HostsLayout({"gpu-000", "gpu-001"}, {"mlx5_0", "mlx5_1"}), nodes);
  EXPECT_THAT(c.unmatched, IsEmpty());
  EXPECT_EQ(c.nics_unchecked, 2U);
}

TEST(CheckLayoutNamesTest, NoAgentAtAllLeavesEveryHostUnmatched) {
  const LayoutCheck c = CheckLayoutNames(
      HostsLayout({"gpu-000", "gpu-001"}, {"mlx5_0", "mlx5_1"}), {});
  ASSERT_EQ(c.unmatched.size(), 2U);
  EXPECT_EQ(c.unmatched[1].host, "gpu-001");
}

TEST(ReportedNodesTest, RemoteNodesHaveUnknownNics) {
  v1::ListNodesResponse r;
  v1::NodeStatus* a = r.add_nodes();
  a->set_node("gpu-000");
  a->add_rdma_devices("mlx5_0");
  v1::NodeStatus* b = r.add_nodes();
  b->set_node("gpu-001");
  b->set_remote(true);
  const std::vector<ReportedNode> nodes = ReportedNodes(r);
  ASSERT_EQ(nodes.size(), 2U);
  EXPECT_THAT(nodes[0].nics, ElementsAre("mlx5_0"));
  EXPECT_TRUE(nodes[0].nics_known);
  EXPECT_FALSE(nodes[1].nics_known);
}

TEST(CountNicSourcesTest, CountsEachSourceAndNamesTheFirstUnknownRanks) {
  std::vector<std::string> sources(16, "agent");
  for (uint32_t r : {15u, 3u, 9u, 4u, 12u, 7u}) sources[r] = "unknown";
  v1::Layout resolved = Resolved(
      HostsLayout({"a", "b", "c", "d", "e", "f", "g", "h"}, {}), sources);
  // Out of rank order: the ones named are still the lowest.
  std::swap(*resolved.mutable_ranks(3), *resolved.mutable_ranks(15));
  resolved.mutable_ranks(0)->set_nic_source("rank");
  resolved.mutable_ranks(1)->set_nic_source("rails");
  const NicSources n = CountNicSources(resolved);
  EXPECT_TRUE(n.known);
  EXPECT_EQ(n.rank, 1u);
  EXPECT_EQ(n.rails, 1u);
  EXPECT_EQ(n.agent, 8u);
  EXPECT_EQ(n.unknown, 6u);
  ASSERT_EQ(n.unknown_ranks.size(), kNamedUnknownRanks);
  EXPECT_EQ(n.unknown_ranks[0].rank(), 3u);
  EXPECT_EQ(n.unknown_ranks[4].rank(), 12u);
}

TEST(CountNicSourcesTest, AnOlderCollectorSaysNothing) {
  const NicSources n = CountNicSources(HostsLayout({"gpu-000"}, {}));
  EXPECT_FALSE(n.known);
  EXPECT_EQ(n.unknown, 0u);
}

class LayoutCheckCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"gpu-000", "gpu-001"}) {
      v1::NodeStatus* n = client.nodes.add_nodes();
      n->set_node(name);
      n->add_rdma_devices("mlx5_0");
      n->add_rdma_devices("mlx5_1");
    }
  }
  FakeCollectorClient client;
  TestEnv t;
  CommandOptions options;
};

TEST_F(LayoutCheckCommandTest, AllReportedIsExitZero) {
  client.layouts["moe-42"] =
      HostsLayout({"gpu-000", "gpu-001"}, {"mlx5_0", "mlx5_1"});
  EXPECT_EQ(LayoutCheckCommand(client, "moe-42", options, t.env), kExitOk);
  EXPECT_EQ(t.out.str(),
            "layout moe-42: every host (2) and NIC (4) is reported by an "
            "agent\n");
}

TEST_F(LayoutCheckCommandTest, UnmatchedIsATableAndExitThree) {
  client.layouts["moe-42"] =
      HostsLayout({"gpu-000.example.com", "gpu-001"}, {"mlx5_0", "mlx5_7"});
  EXPECT_EQ(LayoutCheckCommand(client, "moe-42", options, t.env),
            kExitUnmatched);
  EXPECT_THAT(
      t.out.str(),
      AllOf(HasSubstr("layout moe-42: 1 of 2 hosts and 1 of 4 NICs are "
                      "reported by no agent\n"),
            HasSubstr("KIND  NAME"), HasSubstr("LOOKS LIKE"),
            HasSubstr("host  gpu-000.example.com  -"),
            HasSubstr("gpu-000, gpu-001"),
            HasSubstr("nic   mlx5_7               gpu-001  1      mlx5_0, "
                      "mlx5_1")));
}

TEST_F(LayoutCheckCommandTest, Json) {
  client.layouts["moe-42"] =
      HostsLayout({"gpu-000.example.com", "gpu-001"}, {"mlx5_0", "mlx5_7"});
  options.json = true;
  EXPECT_EQ(LayoutCheckCommand(client, "moe-42", options, t.env),
            kExitUnmatched);
  const nlohmann::json j = nlohmann::json::parse(t.out.str());
  EXPECT_EQ(j["job"], "moe-42");
  EXPECT_EQ(j["hosts"], 2);
  EXPECT_EQ(j["nics"], 4);
  EXPECT_EQ(j["reporting_nodes"], 2);
  ASSERT_EQ(j["unmatched"].size(), 2U);
  EXPECT_EQ(j["unmatched"][0]["kind"], "host");
  EXPECT_TRUE(j["unmatched"][0]["nic"].is_null());
  EXPECT_EQ(j["unmatched"][0]["looks_like"][0], "gpu-000");
  EXPECT_EQ(j["unmatched"][1]["nic"], "mlx5_7");
  EXPECT_EQ(j["unmatched"][1]["ranks"], 1);
}

TEST_F(LayoutCheckCommandTest, NicsPairedByTheAgentsAreKnown) {
  const v1::Layout layout = HostsLayout({"gpu-000", "gpu-001"}, {});
  client.layouts["moe-42"] = layout;
  client.resolved_layouts["moe-42"] =
      Resolved(layout, {"agent", "agent", "agent", "agent"});
  EXPECT_EQ(LayoutCheckCommand(client, "moe-42", options, t.env), kExitOk);
  EXPECT_EQ(t.out.str(),
            "layout moe-42: every host (2) and NIC (0) is reported by an "
            "agent\n"
            "layout moe-42: 4 of 4 ranks have a known NIC (0 declared in "
            "ranks, 0 from rails, 4 paired by the agent)\n");
}

TEST_F(LayoutCheckCommandTest, UnknownNicsAreNamedAndExitThree) {
  const v1::Layout layout = HostsLayout({"gpu-000", "gpu-001"}, {});
  client.layouts["moe-42"] = layout;
  client.resolved_layouts["moe-42"] =
      Resolved(layout, {"agent", "agent", "unknown", "unknown"});
  EXPECT_EQ(LayoutCheckCommand(client, "moe-42", options, t.env),
            kExitUnmatched);
  EXPECT_THAT(t.out.str(),
              AllOf(HasSubstr("2 of 4 ranks have a known NIC (0 declared in "
                              "ranks, 0 from rails, 2 paired by the agent)\n"),
                    HasSubstr("2 ranks have no known NIC (no nic, no rails, "
                              "no pairing from the host's agent): ranks 2 "
                              "(gpu-001 GPU 0), 3 (gpu-001 GPU 1)\n")));

  TestEnv json;
  options.json = true;
  EXPECT_EQ(LayoutCheckCommand(client, "moe-42", options, json.env),
            kExitUnmatched);
  const nlohmann::json j = nlohmann::json::parse(json.out.str());
  EXPECT_EQ(j["nic_sources"]["agent"], 2);
  EXPECT_EQ(j["nic_sources"]["unknown"], 2);
  ASSERT_EQ(j["unknown_nic_ranks"].size(), 2U);
  EXPECT_EQ(j["unknown_nic_ranks"][1]["rank"], 3);
  EXPECT_EQ(j["unknown_nic_ranks"][1]["host"], "gpu-001");
  EXPECT_EQ(j["unknown_nic_ranks"][1]["gpu"], 1);
}

TEST_F(LayoutCheckCommandTest, AnOlderCollectorChecksNamesOnly) {
  client.layouts["moe-42"] = HostsLayout({"gpu-000", "gpu-001"}, {});
  options.json = true;
  EXPECT_EQ(LayoutCheckCommand(client, "moe-42", options, t.env), kExitOk);
  const nlohmann::json j = nlohmann::json::parse(t.out.str());
  EXPECT_TRUE(j["nic_sources"].is_null());
  EXPECT_THAT(j["unknown_nic_ranks"], IsEmpty());
}

TEST_F(LayoutCheckCommandTest, UnknownJobIsNotFoundAndBadNameIsInput) {
  EXPECT_EQ(LayoutCheckCommand(client, "nope", options, t.env), kExitNotFound);
  EXPECT_EQ(LayoutCheckCommand(client, "../x", options, t.env), kExitInvalid);
}

TEST_F(LayoutCheckCommandTest, NoAgentSaysSo) {
  client.nodes.Clear();
  client.layouts["moe-42"] = HostsLayout({"gpu-000"}, {});
  EXPECT_EQ(LayoutCheckCommand(client, "moe-42", options, t.env),
            kExitUnmatched);
  EXPECT_THAT(t.out.str(), HasSubstr("no agent has reported"));
}

}  // namespace
}  // namespace fabricdiag::cli
