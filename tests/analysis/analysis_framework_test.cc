// Tests of the pieces every rate analyzer stands on: the FabricView, the
// shared helpers, the hysteresis and the config file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "analysis/analysis_config.h"
#include "analysis/analyzer_util.h"
#include "analysis/fabric_view.h"
#include "analysis/hysteresis.h"
#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"
#include "analysis/topology_index.h"
#include "analysis/tp_cross_node.h"
#include "analysis/traffic_model.h"

namespace fabricdiag::analysis {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

TEST(FabricViewTest, FindsPortsByDeviceAndNetdevAfterFinish) {
  FabricView view;
  view.AddPort("gpu-1", "mlx5_1").netdev = "eth1";
  view.AddPort("gpu-0", "mlx5_0").netdev = "eth0";
  view.AddPort("gpu-1", "mlx5_0").netdev = "eth0";
  view.Finish();
  ASSERT_EQ(view.ports().size(), 3u);
  EXPECT_EQ(view.ports()[0].node, "gpu-0");
  ASSERT_EQ(view.PortsOf("gpu-1").size(), 2u);
  EXPECT_EQ(view.PortsOf("gpu-1")[0].device, "mlx5_0");
  const PortView* p = view.Find("gpu-1", "eth1");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->device, "mlx5_1");
  EXPECT_EQ(view.Find("gpu-1", "mlx5_1"), p);
  EXPECT_EQ(view.Find("gpu-2", "mlx5_1"), nullptr);
  EXPECT_EQ(view.Find("gpu-1", "mlx5_7"), nullptr);
  EXPECT_TRUE(view.PortsOf("nope").empty());
}

TEST(FabricViewTest, FindsLongNamesThatShareTheirFirstBytes) {
  FabricView view;
  // Names longer than the 8 bytes Find() compares first, equal in those.
  view.AddPort("host-a", "enp65s0f0np0").netdev = "enp65s0f0np0";
  view.AddPort("host-a", "enp65s0f1np1").netdev = "enp65s0f1np1";
  view.AddPort("host-a", "mlx5_10").netdev = "ens10f0np0";
  view.AddPort("host-a", "mlx5_1").netdev = "ens10f0np1";
  view.AddPort("host-a", "mlx5_bond_0");
  view.Finish();
  for (const PortView& p : view.ports()) {
    EXPECT_EQ(view.Find("host-a", p.device), &p) << p.device;
    if (!p.netdev.empty()) {
      EXPECT_EQ(view.Find("host-a", p.netdev), &p) << p.netdev;
    }
  }
  EXPECT_EQ(view.Find("host-a", "enp65s0f2np2"), nullptr);
  EXPECT_EQ(view.Find("host-a", "mlx5_"), nullptr);
  EXPECT_EQ(view.Find("host-a", "mlx5_bond"), nullptr);
  EXPECT_EQ(view.Find("host-a", "ens10f0np"), nullptr);
  EXPECT_EQ(view.Find("host-a", ""), nullptr);  // no netdev is not a name
  // A copy finds its own ports.
  const FabricView copy = view;
  ASSERT_EQ(copy.ports()[2].device, "mlx5_1");
  EXPECT_EQ(copy.Find("host-a", "ens10f0np1"), &copy.ports()[2]);
}

TEST(FabricViewTest, FindsShortNamesByTheirBytesAndLength) {
  // Names of at most 8 bytes are matched without reading the port: the
  // bytes and the length must both be equal (a NUL is a byte like another).
  const std::string nul_padded("mlx5_1\0", 7);
  FabricView view;
  view.AddPort("host-a", "mlx5_1").netdev = "eth1";
  view.AddPort("host-a", nul_padded).netdev = "eth";
  view.AddPort("host-a", "mlx5_10");
  view.AddPort("host-b", "mlx5_1").netdev = "eth1";
  view.Finish();
  for (const PortView& p : view.ports()) {
    EXPECT_EQ(view.Find(p.node, p.device), &p) << p.device;
    if (!p.netdev.empty()) {
      EXPECT_EQ(view.Find(p.node, p.netdev), &p) << p.netdev;
    }
  }
  EXPECT_EQ(view.Find("host-a", "mlx5_"), nullptr);
  EXPECT_EQ(view.Find("host-a", std::string("mlx5_1\0\0", 8)), nullptr);
  EXPECT_EQ(view.Find("host-a", std::string("eth\0", 4)), nullptr);
  EXPECT_EQ(view.Find("host-a", "et"), nullptr);

  // In two steps: the node once, then its names.
  const FabricView::NodePorts a = view.PortsOfNode("host-a");
  EXPECT_EQ(a.end - a.begin, 3u);
  EXPECT_EQ(view.FindIn(a, nul_padded), view.Find("host-a", nul_padded));
  EXPECT_EQ(view.FindIn(a, "eth1"), view.Find("host-a", "mlx5_1"));
  EXPECT_EQ(view.FindIn(view.PortsOfNode("host-b"), "mlx5_1"),
            &view.PortsOf("host-b")[0]);
  const FabricView::NodePorts none = view.PortsOfNode("host-c");
  EXPECT_EQ(none.begin, none.end);
  EXPECT_EQ(view.FindIn(none, "mlx5_1"), nullptr);
}

TEST(FabricViewTest, PortsAddedAfterFinishAreFoundByTheirWholeNames) {
  FabricView view;
  view.AddPort("host-a", "mlx5_0");
  view.Finish();
  // Not indexed yet (no Finish() since): found by comparing whole names.
  view.AddPort("host-a", "mlx5_1").netdev = "eth1";
  const FabricView::NodePorts a = view.PortsOfNode("host-a");
  EXPECT_EQ(a.end - a.begin, 1u);
  EXPECT_EQ(view.FindIn(a, "mlx5_0"), &view.ports()[0]);
  EXPECT_EQ(view.Find("host-a", "mlx5_1"), nullptr);  // not in nodes_ yet
  view.Finish();
  ASSERT_NE(view.Find("host-a", "eth1"), nullptr);
  EXPECT_EQ(view.Find("host-a", "eth1")->device, "mlx5_1");
}

TEST(FabricViewTest, SignalsDefaultToAbsentNotZero) {
  PortSignals s;
  EXPECT_FALSE(Has(s.rx_bytes));
  EXPECT_FALSE(Has(s.tx_pause_fraction[3]));
  EXPECT_FALSE(Has(s.cnp_sent));
  EXPECT_EQ(Or(s.symbol_errors, 7), 7);
}

TEST(AnalyzerUtilTest, MedianIgnoresAbsentValues) {
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({kAbsent, 5, kAbsent}), 5);
  EXPECT_TRUE(std::isnan(Median({})));
  EXPECT_TRUE(std::isnan(Median({kAbsent})));
}

TEST(AnalyzerUtilTest, FormatsNumbersForHumans) {
  EXPECT_EQ(FormatBytesRate(38.2e9), "38.2 GB/s");
  EXPECT_EQ(FormatBytesRate(950e6), "950 MB/s");
  EXPECT_EQ(FormatBytesRate(12), "12 B/s");
  EXPECT_EQ(FormatBytesRate(kAbsent), "n/a");
  EXPECT_EQ(FormatFraction(0.943), "94%");
  EXPECT_EQ(FormatFraction(0.005), "0.5%");
  EXPECT_EQ(FormatPerSecond(123456), "123k/s");
  EXPECT_EQ(FormatPerSecond(0.2), "0.2/s");
  EXPECT_EQ(FormatRatio(5.123), "5.12x");
  EXPECT_EQ(FormatRanks({27, 24, 25, 26, 3, 8, 9}), "3,8-9,24-27");
  EXPECT_EQ(FormatRanks({}), "");
}

Finding Candidate(const std::string& node, bool immediate = false) {
  Finding f;
  f.kind = "pfc_storm";
  f.node = node;
  f.device = "mlx5_2";
  f.immediate = immediate;
  return f;
}

// A candidate `over` times past its threshold.
Finding Over(const std::string& node, double over) {
  Finding f = Candidate(node);
  f.evidence[kOverThresholdEvidence] = over;
  return f;
}

// The finding's evidence `name`, or -1 when it has none.
double EvidenceOf(const Finding& f, const std::string& name) {
  auto it = f.evidence.find(name);
  return it == f.evidence.end() ? -1 : it->second;
}

v1::Topology IndexTopology() {
  absl::StatusOr<v1::Topology> t = ParseTopology(
      "switches:\n"
      "  - {name: leaf-0, uplinks: [swp49, swp50]}\n"
      "links:\n"
      "  - {host: gpu-0, nic: mlx5_0, switch: leaf-0, port: swp1}\n"
      "  - {host: gpu-0, nic: eth1, switch: leaf-0, port: swp2}\n");
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : v1::Topology();
}

PortView IndexPort(std::string node, std::string device, std::string netdev,
                   bool is_switch_port) {
  PortView p;
  p.node = std::move(node);
  p.device = std::move(device);
  p.netdev = std::move(netdev);
  p.is_switch_port = is_switch_port;
  return p;
}

TEST(TopologyIndexTest, FindsBothEndsOfACableByDeviceOrNetdev) {
  const v1::Topology topology = IndexTopology();
  const TopologyIndex index(&topology);
  EXPECT_EQ(index.Partner(IndexPort("gpu-0", "mlx5_0", "eth0", false)),
            (LinkEnd{"leaf-0", "swp1", true}));
  // The topology names the second NIC by its netdev.
  EXPECT_EQ(index.Partner(IndexPort("gpu-0", "mlx5_1", "eth1", false)),
            (LinkEnd{"leaf-0", "swp2", true}));
  EXPECT_EQ(index.Partner(IndexPort("leaf-0", "swp1", "swp1", true)),
            (LinkEnd{"gpu-0", "mlx5_0", false}));
  // A view that did not mark the switch port still finds the cable.
  EXPECT_EQ(index.Partner(IndexPort("leaf-0", "swp2", "swp2", false)),
            (LinkEnd{"gpu-0", "eth1", false}));
  EXPECT_FALSE(index.Partner(IndexPort("gpu-0", "mlx5_7", "eth7", false)));
  EXPECT_FALSE(index.Partner(IndexPort("gpu-9", "mlx5_0", "", false)));
  ASSERT_NE(index.SwitchPortOf("gpu-0", "mlx5_0"), nullptr);
  EXPECT_EQ(index.SwitchPortOf("gpu-0", "mlx5_0")->device, "swp1");
  EXPECT_EQ(index.SwitchPortOf("gpu-0", "mlx5_1"), nullptr);
}

TEST(TopologyIndexTest, KnowsUplinksAndCabledSwitchPortsOnly) {
  const v1::Topology topology = IndexTopology();
  const TopologyIndex index(&topology);
  EXPECT_TRUE(index.IsUplink(IndexPort("leaf-0", "swp50", "swp50", true)));
  EXPECT_FALSE(index.IsUplink(IndexPort("leaf-0", "swp1", "swp1", true)));
  EXPECT_FALSE(index.IsUplink(IndexPort("leaf-1", "swp50", "swp50", true)));
  EXPECT_TRUE(index.KnowsSwitchPort(IndexPort("leaf-0", "swp1", "", true)));
  EXPECT_TRUE(index.KnowsSwitchPort(IndexPort("leaf-0", "swp49", "", true)));
  EXPECT_FALSE(index.KnowsSwitchPort(IndexPort("leaf-0", "swp30", "", true)));
  EXPECT_TRUE(index.IsSwitch("leaf-0"));
  EXPECT_FALSE(index.IsSwitch("gpu-0"));
}

TEST(TopologyIndexTest, SwitchLinksGiveTheFarEndOfAnUplink) {
  absl::StatusOr<v1::Topology> topology = ParseTopology(
      "switches:\n"
      "  - {name: leaf-0, uplinks: [swp49]}\n"
      "  - {name: spine-0}\n"
      "links:\n"
      "  - {host: gpu-0, nic: mlx5_0, switch: leaf-0, port: swp1}\n"
      "switch_links:\n"
      "  - {switch_a: leaf-0, port_a: swp49, switch_b: spine-0, port_b: swp7}\n"
      "  - {switch_a: leaf-0, port_a: swp60, switch_b: spine-0, port_b: "
      "swp8}\n");
  ASSERT_TRUE(topology.ok()) << topology.status();
  const TopologyIndex index(&*topology);
  EXPECT_EQ(index.Partner(IndexPort("leaf-0", "swp49", "swp49", true)),
            (LinkEnd{"spine-0", "swp7", true}));
  EXPECT_EQ(index.Partner(IndexPort("spine-0", "swp7", "swp7", true)),
            (LinkEnd{"leaf-0", "swp49", true}));
  EXPECT_EQ(index.Partner(IndexPort("leaf-0", "swp1", "swp1", true)),
            (LinkEnd{"gpu-0", "mlx5_0", false}));
  // A cabled switch port is known even when it is no uplink.
  EXPECT_TRUE(index.KnowsSwitchPort(IndexPort("leaf-0", "swp60", "", true)));
  EXPECT_FALSE(index.IsUplink(IndexPort("leaf-0", "swp60", "", true)));
  EXPECT_TRUE(index.KnowsSwitchPort(IndexPort("spine-0", "swp8", "", true)));
  EXPECT_FALSE(index.KnowsSwitchPort(IndexPort("spine-0", "swp9", "", true)));
  EXPECT_EQ(index.SwitchPortOf("leaf-0", "swp49"), nullptr);
}

TEST(TopologyIndexTest, NoTopologyKnowsNothing) {
  const TopologyIndex index(nullptr);
  EXPECT_FALSE(index.Partner(IndexPort("gpu-0", "mlx5_0", "eth0", false)));
  EXPECT_FALSE(index.IsUplink(IndexPort("leaf-0", "swp49", "", true)));
  EXPECT_FALSE(index.KnowsSwitchPort(IndexPort("leaf-0", "swp1", "", true)));
}

LayoutModel BuildLayout(const std::string& yaml) {
  absl::StatusOr<v1::Layout> layout = ParseLayout(yaml);
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<LayoutModel> model =
      LayoutModel::Build(layout.ok() ? *layout : v1::Layout());
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

constexpr char kTp16Layout[] =
    "job: dense-tp16\n"
    "gpus_per_node: 8\n"
    "parallelism: {tp: 16, pp: 1, dp: 1}\n"
    "hosts: [gpu-000, gpu-001]\n"
    "rails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, "
    "mlx5_7]\n";

TEST(TpCrossNodeTest, NamesTheGroupItsNodesAndThePredictedCost) {
  const LayoutModel model = BuildLayout(absl::StrCat(
      kTp16Layout,
      "model: {params: 7.0e9, hidden: 4096, layers: 32, seq_len: 4096, "
      "micro_batch: 1, micro_batches: 4, dtype_bytes: 2}\n"));
  const std::vector<Finding> found = TpCrossNodeFindings(model);
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "tp_cross_node");
  EXPECT_EQ(f.job, "dense-tp16");
  EXPECT_EQ(f.group, "tp:0");
  EXPECT_THAT(f.nodes, ElementsAre("gpu-000", "gpu-001"));
  EXPECT_EQ(f.evidence.at("nvlink_domains_spanned"), 2);
  // The cost is the traffic model's, not a number of the analyzer's own.
  absl::StatusOr<TrafficModel> traffic =
      TrafficModel::Predict(model, LinkParams{});
  ASSERT_TRUE(traffic.ok()) << traffic.status();
  const DimTraffic* tp = traffic->Find(Dim::kTp);
  ASSERT_NE(tp, nullptr);
  EXPECT_GT(tp->seconds, tp->seconds_if_nvlink);
  EXPECT_DOUBLE_EQ(f.evidence.at("predicted_extra_seconds_per_step"),
                   tp->seconds - tp->seconds_if_nvlink);
  EXPECT_DOUBLE_EQ(f.evidence.at("predicted_nic_bytes_per_step"),
                   tp->nic_bytes);
  EXPECT_THAT(f.summary, HasSubstr("The traffic model predicts"));
  EXPECT_THAT(f.summary, HasSubstr("on NVLink (+"));
}

TEST(TpCrossNodeTest, WithoutAModelSectionStillRaisedWithoutCost) {
  const std::vector<Finding> found =
      TpCrossNodeFindings(BuildLayout(kTp16Layout));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].evidence.count("predicted_extra_seconds_per_step"), 0u);
  EXPECT_THAT(found[0].summary, Not(HasSubstr("predicts")));
}

// gpu-000 and gpu-001, mlx5_0..7, each sending `tx` of a 400 Gb/s link.
FabricView TpView(double tx) {
  FabricView view;
  for (const char* node : {"gpu-000", "gpu-001"}) {
    for (int n = 0; n < 8; ++n) {
      PortView& p = view.AddPort(node, absl::StrCat("mlx5_", n));
      p.s.tx_bytes = tx;
      p.s.link_rate = 50e9;
    }
  }
  view.Finish();
  return view;
}

TEST(TpCrossNodeTest, ConfirmedAtRuntimeWhenTheGroupsNicsCarryTraffic) {
  const LayoutModel model = BuildLayout(absl::StrCat(
      kTp16Layout,
      "model: {params: 7.0e9, hidden: 4096, layers: 32, seq_len: 4096, "
      "micro_batch: 1, micro_batches: 4, dtype_bytes: 2}\n"));
  const FabricView busy = TpView(20e9);
  std::vector<Finding> found = TpCrossNodeFindings(model, &busy);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].evidence.at("confirmed_at_runtime"), 1);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("measured_nic_tx_bytes_per_second"),
                   20e9);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("measured_tp_seconds_per_step"),
                   found[0].evidence.at("predicted_nic_bytes_per_step") / 20e9);
  EXPECT_THAT(found[0].summary,
              HasSubstr("Confirmed at runtime: its 16 NICs send 20 GB/s"));

  // 1% of the link: not running, or idle for the whole window.
  const FabricView idle = TpView(0.5e9);
  found = TpCrossNodeFindings(model, &idle);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].evidence.at("confirmed_at_runtime"), 0);
  EXPECT_THAT(found[0].summary, Not(HasSubstr("Confirmed")));

  // NICs the view does not report: no runtime evidence at all.
  const FabricView empty;
  found = TpCrossNodeFindings(model, &empty);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].evidence.count("confirmed_at_runtime"), 0u);
}

// Measured elsewhere (a job shard's owner), a load confirms a group only if
// it was measured over the same NICs: not a group of the same index of
// another version of the layout.
TEST(TpCrossNodeTest, ALoadConfirmsOnlyTheGroupOfTheNicsItWasMeasuredOver) {
  const LayoutModel model = BuildLayout(kTp16Layout);
  const LayoutModel moved =
      BuildLayout(absl::StrReplaceAll(kTp16Layout, {{"gpu-001", "gpu-002"}}));
  const LayoutModel other_rails =
      BuildLayout(absl::StrReplaceAll(kTp16Layout, {{"mlx5_7]", "mlx5_8]"}}));
  const uint64_t members = TpGroupMembers(model, 0);
  EXPECT_NE(members, TpGroupMembers(moved, 0));
  EXPECT_NE(members, TpGroupMembers(other_rails, 0));
  EXPECT_EQ(members, TpGroupMembers(BuildLayout(kTp16Layout), 0));
  // The same in every process and version: collectors of two versions
  // compare it.
  EXPECT_EQ(members, 0x8b4e574ae2f2252bu) << std::hex << members;

  const FabricView busy = TpView(20e9);
  const std::vector<TpGroupLoad> measured = MeasureTpCrossings(model, busy);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_EQ(measured[0].members, members);
  const auto confirmed = [&](const LayoutModel& m) {
    std::vector<Finding> found =
        TpCrossNodeFindings(m, [&](uint32_t g) -> const TpGroupLoad* {
          return g == 0 ? &measured[0] : nullptr;
        });
    EXPECT_EQ(found.size(), 1u);
    return found.empty() ? -1.0
           : found[0].evidence.count("confirmed_at_runtime") == 0
               ? -1.0
               : found[0].evidence.at("confirmed_at_runtime");
  };
  EXPECT_EQ(confirmed(model), 1);
  EXPECT_EQ(confirmed(moved), -1) << "measured over the old hosts";
  EXPECT_EQ(confirmed(other_rails), -1) << "measured over the old NICs";
  TpGroupLoad unknown = measured[0];
  unknown.members = 0;
  EXPECT_THAT(
      TpCrossNodeFindings(model, [&](uint32_t) { return &unknown; })[0].summary,
      Not(HasSubstr("Confirmed")));
}

TEST(TpCrossNodeTest, TpInsideTheNvlinkDomainRaisesNothing) {
  EXPECT_THAT(
      TpCrossNodeFindings(BuildLayout("job: ok\ngpus_per_node: 8\n"
                                      "parallelism: {tp: 8, pp: 1, dp: 2}\n"
                                      "hosts: [gpu-000, gpu-001]\n")),
      IsEmpty());
}

TEST(HysteresisTest, OpensAfterOpenAfterPassesAndResolvesAfterClearAfter) {
  Hysteresis gate({/*open_after=*/3, /*clear_after=*/2});
  EXPECT_THAT(gate.Step({Candidate("gpu-1")}), IsEmpty());
  EXPECT_THAT(gate.Step({Candidate("gpu-1")}), IsEmpty());
  ASSERT_EQ(gate.Step({Candidate("gpu-1")}).size(), 1u);
  // One clear pass keeps it open, the second resolves it.
  EXPECT_EQ(gate.Step({}).size(), 1u);
  EXPECT_THAT(gate.Step({}), IsEmpty());
  EXPECT_EQ(gate.tracked(), 0u);
}

TEST(HysteresisTest, NodesNotKeptAreForgottenNotResolved) {
  Hysteresis gate({/*open_after=*/2, /*clear_after=*/3});
  gate.Step({Candidate("gpu-1"), Candidate("gpu-2")});
  ASSERT_EQ(gate.Step({Candidate("gpu-1"), Candidate("gpu-2")}).size(), 2u);
  // gpu-2 is another's now: dropped at once, not counted down.
  EXPECT_EQ(gate.KeepNodes([](absl::string_view n) { return n == "gpu-1"; }),
            1u);
  EXPECT_EQ(gate.tracked(), 1u);
  const std::vector<Finding> open = gate.Step({Candidate("gpu-1")});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].node, "gpu-1");
  // Back here later: counts up from nothing.
  EXPECT_EQ(gate.Step({Candidate("gpu-1"), Candidate("gpu-2")}).size(), 1u);
}

TEST(HysteresisTest, ANoisySampleNeverOpensAndAFlickerDoesNotResolve) {
  Hysteresis gate({3, 3});
  for (int i = 0; i < 10; ++i) {
    // True every other pass: never 3 in a row.
    EXPECT_THAT(gate.Step(i % 2 == 0 ? std::vector<Finding>{Candidate("a")}
                                     : std::vector<Finding>{}),
                IsEmpty());
  }
  for (int i = 0; i < 3; ++i) gate.Step({Candidate("a")});
  for (int i = 0; i < 10; ++i) {
    // Open now; clear only one pass at a time: stays open.
    EXPECT_EQ(gate.Step(i % 2 == 0 ? std::vector<Finding>{}
                                   : std::vector<Finding>{Candidate("a")})
                  .size(),
              1u);
  }
}

TEST(HysteresisTest, ImmediateFindingsOpenAtOnceAndKeepLatestEvidence) {
  Hysteresis gate({5, 5});
  Finding f = Candidate("gpu-1", /*immediate=*/true);
  f.evidence["x"] = 1;
  std::vector<Finding> open = gate.Step({f});
  ASSERT_EQ(open.size(), 1u);
  f.evidence["x"] = 2;
  f.immediate = false;
  open = gate.Step({f});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].evidence["x"], 2);
}

TEST(HysteresisTest, SeededFindingsStayOpenUntilClearAfter) {
  Hysteresis gate({3, 2});
  gate.Seed({Candidate("gpu-1")});
  EXPECT_EQ(gate.Step({Candidate("gpu-1")}).size(), 1u);  // no re-count
  EXPECT_EQ(gate.Step({}).size(), 1u);
  EXPECT_THAT(gate.Step({}), IsEmpty());
}

// A node whose agent is restarting (quiet): its finding, absent from the
// passes it is quiet, neither counts down nor resolves, nor does a
// condition counting up lose its count; once the node is not quiet,
// absence counts again.
TEST(HysteresisTest, AQuietNodesFindingsHold) {
  Hysteresis gate({/*open_after=*/2, /*clear_after=*/2});
  const absl::flat_hash_set<std::string> quiet = {"gpu-1", "gpu-2"};
  gate.Step({Candidate("gpu-1"), Candidate("gpu-2")});
  // gpu-1 opens; gpu-2's agent is restarting already.
  ASSERT_EQ(gate.Step({Candidate("gpu-1")}, {}, {"gpu-2"}).size(), 1u);
  for (int i = 0; i < 5; ++i) {
    std::vector<Finding> open = gate.Step({}, {}, quiet);
    ASSERT_EQ(open.size(), 1u) << "pass " << i;
    EXPECT_EQ(open[0].node, "gpu-1");
  }
  // gpu-2 held 1 of 2 before going quiet: one more pass opens it.
  EXPECT_EQ(gate.Step({Candidate("gpu-1"), Candidate("gpu-2")}).size(), 2u);
  // Not quiet: two clean passes resolve both.
  EXPECT_EQ(gate.Step({}).size(), 2u);
  EXPECT_THAT(gate.Step({}), IsEmpty());
  // A quiet node does not hold another node's finding.
  gate.Step({Candidate("gpu-3")});
  ASSERT_EQ(gate.Step({Candidate("gpu-3")}).size(), 1u);
  EXPECT_EQ(gate.Step({}, {}, quiet).size(), 1u);
  EXPECT_THAT(gate.Step({}, {}, quiet), IsEmpty());
}

TEST(HysteresisTest, DuplicateCandidatesKeepTheMoreSevere) {
  Hysteresis gate({1, 1});
  Finding a = Candidate("gpu-1");
  Finding b = a;
  b.severity = Severity::kCritical;
  std::vector<Finding> open = gate.Step({a, b});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].severity, Severity::kCritical);
}

TEST(HysteresisTest, KeysAreIndependent) {
  Hysteresis gate({2, 1});
  gate.Step({Candidate("a")});
  std::vector<Finding> open = gate.Step({Candidate("a"), Candidate("b")});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].node, "a");
}

// open_after 3, clear_after 2, the newest second, 2x past, 2 passes.
constexpr HysteresisConfig kFastPath{3, 2, 1, 2, 2};

TEST(HysteresisTest, StrongNewestSamplesOpenBeforeTheWindowConfirms) {
  Hysteresis gate(kFastPath);
  EXPECT_THAT(gate.Step({}, {Over("gpu-1", 2.5)}), IsEmpty());
  std::vector<Finding> open = gate.Step({}, {Over("gpu-1", 3)});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(EvidenceOf(open[0], kOverThresholdEvidence), 3);
  EXPECT_EQ(EvidenceOf(open[0], kIntervalsHeldEvidence), 2);
}

TEST(HysteresisTest, WeakOrSingleStrongSamplesDoNotOpen) {
  Hysteresis gate(kFastPath);
  for (int i = 0; i < 10; ++i) {
    // Past the threshold, but not twice past it.
    EXPECT_THAT(gate.Step({}, {Over("gpu-1", 1.9)}), IsEmpty());
  }
  // Its newest-samples history is all that is kept.
  EXPECT_EQ(gate.tracked(), 1u);
  for (int i = 0; i < 10; ++i) {
    // One strong sample between clean ones: a stale read, then its lump.
    std::vector<Finding> recent;
    if (i % 2 == 0) recent.push_back(Over("gpu-1", 50));
    EXPECT_THAT(gate.Step({}, recent), IsEmpty());
  }
  // A finding without the number is never strong.
  EXPECT_THAT(gate.Step({}, {Candidate("gpu-2")}), IsEmpty());
  EXPECT_THAT(gate.Step({}, {Candidate("gpu-2")}), IsEmpty());
}

// k of n: a weak condition in the newest samples in open_after (3) of the
// last open_within (4) passes opens as soon as the window mean has it.
TEST(HysteresisTest, WeakNewestSamplesOpenOnceTheWindowConfirms) {
  Hysteresis gate(kFastPath);
  EXPECT_THAT(gate.Step({}, {Over("gpu-1", 1.3)}), IsEmpty());
  EXPECT_THAT(gate.Step({}, {Over("gpu-1", 1.3)}), IsEmpty());
  Finding window = Over("gpu-1", 1.1);
  window.evidence["x"] = 1;
  // The first pass the window sees it: the third of the newest samples.
  std::vector<Finding> open = gate.Step({window}, {Over("gpu-1", 1.3)});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(EvidenceOf(open[0], "x"), 1) << "the window's account";
  EXPECT_EQ(EvidenceOf(open[0], kIntervalsHeldEvidence), 3);
}

TEST(HysteresisTest, KOfNForgivesOneMissingNewestSample) {
  Hysteresis gate(kFastPath);
  gate.Step({}, {Over("gpu-1", 1.3)});
  gate.Step({}, {Over("gpu-1", 1.3)});
  // A stale read: the newest sample lacks it.
  EXPECT_THAT(gate.Step({}, {}), IsEmpty());
  EXPECT_EQ(gate.Step({Over("gpu-1", 1.1)}, {Over("gpu-1", 1.3)}).size(), 1u);
}

TEST(HysteresisTest, TooFewNewestSamplesOrNoWindowDoNotOpen) {
  Hysteresis gate(kFastPath);
  // Newest samples alone, every pass: the window never confirms.
  for (int i = 0; i < 10; ++i) {
    EXPECT_THAT(gate.Step({}, {Over("gpu-1", 1.9)}), IsEmpty());
  }
  // 2 of the last 4, then the window: not enough.
  Hysteresis other(kFastPath);
  other.Step({}, {Over("gpu-2", 1.5)});
  other.Step({}, {});
  other.Step({}, {Over("gpu-2", 1.5)});
  EXPECT_THAT(other.Step({Over("gpu-2", 1.1)}, {}), IsEmpty());
  // Samples older than the last 4 passes do not count.
  Hysteresis old(kFastPath);
  for (int i = 0; i < 3; ++i) old.Step({}, {Over("gpu-3", 1.5)});
  old.Step({}, {});
  old.Step({}, {});
  EXPECT_THAT(old.Step({Over("gpu-3", 1.1)}, {Over("gpu-3", 1.5)}), IsEmpty());
  EXPECT_EQ(old.tracked(), 1u);
}

TEST(HysteresisTest, OpenWithinBelowOpenAfterCountsAsOpenAfter) {
  // 3 of the last 1: read as 3 of the last 3.
  Hysteresis gate({3, 2, 1, 2, 2, /*open_within=*/1});
  gate.Step({}, {Over("gpu-1", 1.5)});
  gate.Step({}, {Over("gpu-1", 1.5)});
  EXPECT_EQ(gate.Step({Over("gpu-1", 1.1)}, {Over("gpu-1", 1.5)}).size(), 1u);
}

TEST(HysteresisTest, TheWindowsAccountWinsOverTheNewestSamples) {
  Hysteresis gate(kFastPath);
  Finding window = Over("gpu-1", 1.2);
  window.evidence["x"] = 1;
  gate.Step({window}, {Over("gpu-1", 4)});
  std::vector<Finding> open = gate.Step({window}, {Over("gpu-1", 4)});
  ASSERT_EQ(open.size(), 1u) << "strong twice: open before open_after";
  EXPECT_EQ(EvidenceOf(open[0], "x"), 1);
  EXPECT_EQ(EvidenceOf(open[0], kOverThresholdEvidence), 1.2);
}

TEST(HysteresisTest, StrongNewestSamplesKeepAFindingFromCountingDown) {
  Hysteresis gate(kFastPath);
  for (int i = 0; i < 3; ++i) gate.Step({Candidate("gpu-1")});
  // The window mean dips under the threshold; the newest samples are
  // still far past it: no clear pass.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(gate.Step({}, {Over("gpu-1", 3)}).size(), 1u);
  }
  EXPECT_EQ(gate.Step({}).size(), 1u);
  EXPECT_THAT(gate.Step({}), IsEmpty());
}

TEST(HysteresisTest, IntervalsHeldCountsPassesWithTheCondition) {
  Hysteresis gate({3, 3});
  gate.Step({Candidate("gpu-1")});
  gate.Step({Candidate("gpu-1")});
  std::vector<Finding> open = gate.Step({Candidate("gpu-1")});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(EvidenceOf(open[0], kIntervalsHeldEvidence), 3);
  // A clear pass while open neither counts nor restarts the count.
  open = gate.Step({});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(EvidenceOf(open[0], kIntervalsHeldEvidence), 3);
  open = gate.Step({Candidate("gpu-1")});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(EvidenceOf(open[0], kIntervalsHeldEvidence), 4);
}

TEST(HysteresisTest, SeededFindingsGoOnCountingWhereTheyWere) {
  Hysteresis gate({3, 2});
  Finding f = Candidate("gpu-1");
  f.evidence[kIntervalsHeldEvidence] = 40;
  gate.Seed({f});
  std::vector<Finding> open = gate.Step({Candidate("gpu-1")});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(EvidenceOf(open[0], kIntervalsHeldEvidence), 41);
}

// A candidate of fault "storm" named by the port `node` mlx5_2 in `job`.
Finding OfFault(const std::string& node, const std::string& job = "") {
  Finding f = Candidate(node);
  f.job = job;
  f.nodes = {node, "leaf-0"};
  f.evidence_text[kFaultEvidence] = "storm";
  return f;
}

// The port an analyzer names for one fault moves from pass to pass: the
// fault keeps the key it was first tracked under, and opens and stays open
// under it.
TEST(HysteresisTest, OneFaultKeepsTheKeyItWasFirstTrackedUnder) {
  Hysteresis gate({/*open_after=*/3, /*clear_after=*/2});
  EXPECT_THAT(gate.Step({OfFault("gpu-1", "a")}), IsEmpty());
  EXPECT_THAT(gate.Step({OfFault("gpu-2", "b")}), IsEmpty());
  for (const char* node : {"gpu-3", "gpu-1", "gpu-2", "leaf-0"}) {
    std::vector<Finding> open = gate.Step({OfFault(node, "b")});
    ASSERT_EQ(open.size(), 1u) << node;
    EXPECT_EQ(open[0].node, "gpu-1");
    EXPECT_EQ(open[0].device, "mlx5_2");
    EXPECT_EQ(open[0].job, "a");
    // The node it keeps leads `nodes`, once.
    EXPECT_EQ(open[0].nodes.front(), "gpu-1");
    EXPECT_EQ(std::count(open[0].nodes.begin(), open[0].nodes.end(), "gpu-1"),
              1);
  }
  EXPECT_EQ(gate.tracked(), 1u);
  // Gone: it resolves once; then a new storm starts a new key.
  EXPECT_EQ(gate.Step({}).size(), 1u);
  EXPECT_THAT(gate.Step({}), IsEmpty());
  gate.Step({OfFault("gpu-4")});
  gate.Step({OfFault("gpu-5")});
  std::vector<Finding> open = gate.Step({OfFault("gpu-6")});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].node, "gpu-4");
}

// The same in the newest samples, and across a restart: the seeded finding
// carries its fault in evidence_text.
TEST(HysteresisTest, FaultKeysHoldInTheNewestSamplesAndAfterASeed) {
  Hysteresis gate(kFastPath);
  Finding seeded = OfFault("gpu-1");
  gate.Seed({seeded});
  Finding strong = OfFault("gpu-2");
  strong.evidence[kOverThresholdEvidence] = 3;
  std::vector<Finding> open = gate.Step({}, {strong});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].node, "gpu-1");
  open = gate.Step({OfFault("gpu-3")}, {strong});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].node, "gpu-1");
  EXPECT_EQ(gate.tracked(), 1u);
}

// Only the same fault of the same kind and group is merged; a finding
// without a fault never is, and a candidate that is itself tracked keeps
// its own key.
TEST(HysteresisTest, OtherFaultsKindsAndGroupsKeepTheirKeys) {
  Hysteresis gate({1, 1});
  Finding other_fault = OfFault("gpu-2");
  other_fault.evidence_text[kFaultEvidence] = "another storm";
  Finding other_kind = OfFault("gpu-3");
  other_kind.kind = "congestion";
  Finding other_group = OfFault("gpu-4");
  other_group.group = "ep:1";
  Finding plain = Candidate("gpu-5");
  std::vector<Finding> open = gate.Step({OfFault("gpu-1")});
  ASSERT_EQ(open.size(), 1u);
  open = gate.Step({OfFault("gpu-1"), other_fault, other_kind, other_group,
                    plain, OfFault("gpu-6")});
  std::vector<std::string> nodes;
  for (const Finding& f : open) nodes.push_back(f.node);
  EXPECT_THAT(
      nodes, UnorderedElementsAre("gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5"));
}

TEST(AnalyzerUtilTest, OverThresholdSaysHowFarPast) {
  Finding f;
  SetOverThreshold(0.5, 0.2, &f);
  EXPECT_DOUBLE_EQ(EvidenceOf(f, kOverThresholdEvidence), 2.5);
  SetUnderThreshold(10, 40, &f);  // a quarter of the limit: 4x past
  EXPECT_DOUBLE_EQ(EvidenceOf(f, kOverThresholdEvidence), 4);
  SetUnderThreshold(0, 40, &f);
  EXPECT_EQ(EvidenceOf(f, kOverThresholdEvidence), kMaxOverThreshold);
  Finding none;
  SetOverThreshold(1, 0, &none);  // a threshold of 0 has no "how far"
  SetOverThreshold(kAbsent, 1, &none);
  SetUnderThreshold(1, kAbsent, &none);
  EXPECT_EQ(EvidenceOf(none, kOverThresholdEvidence), -1);
}

TEST(AnalysisConfigTest, EmptyTextGivesDefaults) {
  absl::StatusOr<AnalysisConfig> c = ParseAnalysisConfig("");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->window_seconds, 3);
  EXPECT_EQ(c->hysteresis.open_after, 3);
  EXPECT_EQ(c->hot_expert_incast.rx_over_median, 4);
  EXPECT_EQ(c->agent_down.missed_intervals, 10);
  EXPECT_EQ(c->agent_down.default_interval_seconds, 1);
}

TEST(AnalysisConfigTest, OverridesNestedAndTopLevelKeys) {
  absl::StatusOr<AnalysisConfig> c = ParseAnalysisConfig(
      "window_seconds: 10\n"
      "hysteresis: {open_after: 2, clear_after: 7, open_within: 6}\n"
      "pfc_storm:\n  warning_pause_fraction: 0.3\n"
      "ecmp_imbalance: {max_over_mean: 2}\n"
      "agent_down: {missed_intervals: 5, default_interval_seconds: 0.5}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->window_seconds, 10);
  EXPECT_EQ(c->hysteresis.open_after, 2);
  EXPECT_EQ(c->hysteresis.clear_after, 7);
  EXPECT_EQ(c->hysteresis.open_within, 6);
  EXPECT_DOUBLE_EQ(c->pfc_storm.warning_pause_fraction, 0.3);
  EXPECT_DOUBLE_EQ(c->ecmp_imbalance.max_over_mean, 2);
  EXPECT_EQ(c->agent_down.missed_intervals, 5);
  EXPECT_DOUBLE_EQ(c->agent_down.default_interval_seconds, 0.5);
  // Untouched keys keep their defaults.
  EXPECT_DOUBLE_EQ(c->pfc_storm.critical_pause_fraction, 0.5);
}

TEST(AnalysisConfigTest, JsonWorksToo) {
  absl::StatusOr<AnalysisConfig> c =
      ParseAnalysisConfig(R"({"link_errors": {"errors_per_second": 5}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->link_errors.errors_per_second, 5);
}

struct BadConfig {
  const char* text;
  const char* message;
};

class AnalysisConfigErrorTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(AnalysisConfigErrorTest, NamesTheKey) {
  absl::StatusOr<AnalysisConfig> c = ParseAnalysisConfig(GetParam().text);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, AnalysisConfigErrorTest,
    ::testing::Values(
        BadConfig{"pfc_storm: {warning_pause_fractoin: 0.3}",
                  "pfc_storm.warning_pause_fractoin: unknown setting"},
        BadConfig{"no_such_analyzer: {x: 1}", "no_such_analyzer: unknown"},
        BadConfig{"pfc_storm: {warning_pause_fraction: 1.5}",
                  "pfc_storm.warning_pause_fraction: 1.5 is outside"},
        BadConfig{"pfc_storm: {warning_pause_fraction: lots}",
                  "expected a number, got \"lots\""},
        BadConfig{"hysteresis: {open_after: 2.5}", "whole number"},
        BadConfig{"hysteresis: {open_after: 0}", "hysteresis.open_after"},
        BadConfig{"hysteresis: {strong_over_threshold: 0.5}",
                  "hysteresis.strong_over_threshold: 0.5 is outside"},
        BadConfig{"hysteresis: {open_within: 33}",
                  "hysteresis.open_within: 33 is outside"},
        BadConfig{"hysteresis: {open_within: 0}",
                  "hysteresis.open_within: 0 is outside"},
        BadConfig{"hysteresis: {recent_seconds: -1}",
                  "hysteresis.recent_seconds: -1 is outside"},
        BadConfig{"window_seconds: .nan", "window_seconds"},
        BadConfig{"hysteresis: 3", "hysteresis: expected a mapping"},
        BadConfig{"[1, 2]", "expected a mapping"}, BadConfig{"a: [", "line"},
        BadConfig{"pfc_storm: {warning_pause_fraction: 0.6}",
                  "critical_pause_fraction: must not be below"},
        BadConfig{"hot_expert_incast: {rx_over_median: [1]}",
                  "hot_expert_incast.rx_over_median: expected a number"},
        BadConfig{"straggler_nic: {below_own_history_fraction: 1.2}",
                  "straggler_nic.below_own_history_fraction: 1.2 is outside"},
        BadConfig{"straggler_nic: {min_history_passes: 0}",
                  "straggler_nic.min_history_passes: 0 is outside"},
        BadConfig{"straggler_nic: {max_interval_over_median: 0.9}",
                  "straggler_nic.max_interval_over_median: 0.9 is outside"},
        BadConfig{"agent_down: {missed_intervals: 0}",
                  "agent_down.missed_intervals: 0 is outside"},
        BadConfig{"agent_down: {missed_intervals: 2.5}", "whole number"},
        BadConfig{"agent_down: {default_interval_seconds: 0}",
                  "agent_down.default_interval_seconds: 0 is outside"}));

}  // namespace
}  // namespace fabricdiag::analysis

namespace fabricdiag::analysis {
namespace {

// The shipped example config parses and states exactly the defaults, so
// the file operators copy never drifts from the code.
TEST(AnalysisConfigTest, ShippedExampleIsValidAndMatchesTheDefaults) {
  std::ifstream in(std::string(FABRICDIAG_SOURCE_DIR) +
                   "/deploy/analysis.yaml");
  ASSERT_TRUE(in) << "deploy/analysis.yaml missing";
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<AnalysisConfig> c = ParseAnalysisConfig(text.str());
  ASSERT_TRUE(c.ok()) << c.status();
  const AnalysisConfig d;
  EXPECT_EQ(c->window_seconds, d.window_seconds);
  EXPECT_EQ(c->hysteresis.open_after, d.hysteresis.open_after);
  EXPECT_EQ(c->hysteresis.clear_after, d.hysteresis.clear_after);
  EXPECT_EQ(c->hysteresis.recent_seconds, d.hysteresis.recent_seconds);
  EXPECT_EQ(c->hysteresis.strong_over_threshold,
            d.hysteresis.strong_over_threshold);
  EXPECT_EQ(c->hysteresis.strong_open_after, d.hysteresis.strong_open_after);
  EXPECT_EQ(c->hysteresis.open_within, d.hysteresis.open_within);
  EXPECT_EQ(c->hot_expert_incast.rx_over_median,
            d.hot_expert_incast.rx_over_median);
  EXPECT_EQ(c->hot_expert_incast.min_rx_bytes_per_second,
            d.hot_expert_incast.min_rx_bytes_per_second);
  EXPECT_EQ(c->pfc_storm.warning_pause_frames_per_second,
            d.pfc_storm.warning_pause_frames_per_second);
  EXPECT_EQ(c->ecmp_imbalance.max_over_mean, d.ecmp_imbalance.max_over_mean);
  EXPECT_EQ(c->link_errors.post_fec_ber, d.link_errors.post_fec_ber);
  EXPECT_EQ(c->link_degraded.min_rate_fraction,
            d.link_degraded.min_rate_fraction);
  EXPECT_EQ(c->retransmissions.events_per_second,
            d.retransmissions.events_per_second);
  EXPECT_EQ(c->congestion.cnp_per_second, d.congestion.cnp_per_second);
  EXPECT_EQ(c->straggler_nic.below_median_fraction,
            d.straggler_nic.below_median_fraction);
  EXPECT_EQ(c->straggler_nic.below_own_history_fraction,
            d.straggler_nic.below_own_history_fraction);
  EXPECT_EQ(c->straggler_nic.history_passes, d.straggler_nic.history_passes);
  EXPECT_EQ(c->straggler_nic.min_history_passes,
            d.straggler_nic.min_history_passes);
  EXPECT_EQ(c->straggler_nic.min_window_coverage,
            d.straggler_nic.min_window_coverage);
  EXPECT_EQ(c->straggler_nic.max_interval_over_median,
            d.straggler_nic.max_interval_over_median);
  EXPECT_EQ(c->agent_down.missed_intervals, d.agent_down.missed_intervals);
  EXPECT_EQ(c->agent_down.default_interval_seconds,
            d.agent_down.default_interval_seconds);
}

}  // namespace
}  // namespace fabricdiag::analysis
