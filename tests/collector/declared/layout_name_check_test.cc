#include "collector/declared/layout_name_check.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::collector {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// gpu-000 and gpu-001 with mlx5_0..1 each.
analysis::FabricView TwoHosts() {
  analysis::FabricView view;
  for (const char* host : {"gpu-000", "gpu-001"}) {
    for (const char* nic : {"mlx5_0", "mlx5_1"}) view.AddPort(host, nic);
  }
  view.Finish();
  return view;
}

v1::Layout Layout(const std::vector<std::string>& hosts,
                  const std::vector<std::string>& rails) {
  v1::Layout l;
  l.set_job("j");
  l.set_gpus_per_node(2);
  for (const std::string& h : hosts) l.add_hosts(h);
  for (const std::string& r : rails) l.add_rails(r);
  return l;
}

TEST(UnreportedNamesTest, KnownNamesGiveNoWarning) {
  EXPECT_THAT(
      UnreportedNames(Layout({"gpu-000", "gpu-001"}, {"mlx5_0", "mlx5_1"}),
                      TwoHosts()),
      IsEmpty());
  EXPECT_THAT(UnreportedNames(Layout({"gpu-000"}, {}), TwoHosts()), IsEmpty());
}

TEST(UnreportedNamesTest, UnknownHostsAndNicsAreNamedOnce) {
  EXPECT_THAT(
      UnreportedNames(
          Layout({"gpu-000.example", "gpu-001"}, {"mlx5_0", "mlx5_9"}),
          TwoHosts()),
      ElementsAre(
          "hosts: host \"gpu-000.example\" is reported by no agent",
          "hosts: NIC \"mlx5_9\" is reported by no agent on \"gpu-001\""));
}

TEST(UnreportedNamesTest, RanksAreCheckedWithTheirNics) {
  v1::Layout l;
  l.set_job("j");
  l.set_gpus_per_node(2);
  l.add_rails("mlx5_0");
  l.add_rails("mlx5_1");
  auto rank = [&](const char* host, uint32_t gpu, const char* nic) {
    v1::RankPlacement* r = l.add_ranks();
    r->set_rank(static_cast<uint32_t>(l.ranks_size() - 1));
    r->set_host(host);
    r->set_gpu(gpu);
    r->set_nic(nic);
  };
  rank("gpu-000", 0, "");        // rails[0]: known
  rank("gpu-000", 1, "eth9");    // unknown NIC
  rank("gpu-007", 0, "mlx5_0");  // unknown host
  rank("gpu-007", 1, "mlx5_1");  // same host: named once
  EXPECT_THAT(
      UnreportedNames(l, TwoHosts()),
      ElementsAre("ranks: NIC \"eth9\" is reported by no agent on \"gpu-000\"",
                  "ranks: host \"gpu-007\" is reported by no agent"));
}

TEST(UnreportedNamesTest, NothingIsCheckedBeforeAnyAgentReports) {
  analysis::FabricView empty;
  empty.Finish();
  EXPECT_THAT(UnreportedNames(Layout({"x"}, {"y"}), empty), IsEmpty());
  LayoutNameCheck no_view([] { return ReportedNames{}; });
  EXPECT_THAT(no_view.Check(Layout({"x"}, {})), IsEmpty());
}

// A collector of a sharded cluster: its own agents' ports, and the hosts
// the other collectors heard from, whose NICs it does not know.
TEST(UnreportedNamesTest, HostsElsewhereAreKnownTheirNicsUnchecked) {
  const absl::flat_hash_set<std::string> elsewhere = {"gpu-100", "gpu-101"};
  EXPECT_THAT(UnreportedNames(Layout({"gpu-000", "gpu-100", "gpu-101"},
                                     {"mlx5_0", "mlx5_7"}),
                              TwoHosts(), elsewhere),
              ElementsAre("hosts: NIC \"mlx5_7\" is reported by no agent "
                          "on \"gpu-000\""));
  EXPECT_THAT(UnreportedNames(Layout({"gpu-100", "gpu-1O2"}, {}), TwoHosts(),
                              elsewhere),
              ElementsAre("hosts: host \"gpu-1O2\" is reported by no agent"));
  // No port here (every agent streams to the others): still checked.
  analysis::FabricView none;
  none.Finish();
  EXPECT_THAT(UnreportedNames(Layout({"gpu-100", "gpu-000"}, {"mlx5_0"}), none,
                              elsewhere),
              ElementsAre("hosts: host \"gpu-000\" is reported by no agent"));
  LayoutNameCheck check([&elsewhere] { return ReportedNames{{}, elsewhere}; });
  EXPECT_THAT(check.Check(Layout({"gpu-101", "gpu-9"}, {"mlx5_0"})),
              ElementsAre("hosts: host \"gpu-9\" is reported by no agent"));
}

TEST(UnreportedNamesTest, WarningsAreBoundedAndCounted) {
  std::vector<std::string> hosts;
  hosts.reserve(100);
  for (int i = 0; i < 100; ++i) hosts.push_back(absl::StrFormat("n%03d", i));
  auto view = std::make_shared<const analysis::FabricView>(TwoHosts());
  LayoutNameCheck check([view] { return ReportedNames{view, {}}; });
  std::vector<std::string> w = check.Check(Layout(hosts, {}));
  ASSERT_THAT(w, SizeIs(kMaxNameWarnings));
  EXPECT_EQ(w.back(), "... and 81 more names no agent reports");
  std::string metrics;
  check.AppendMetrics(&metrics);
  EXPECT_THAT(metrics,
              HasSubstr("\nfabricdiag_layout_name_warnings_total 20\n"));
  EXPECT_THAT(metrics,
              HasSubstr("\nfabricdiag_layouts_with_name_warnings_total 1\n"));
}

}  // namespace
}  // namespace fabricdiag::collector
