// NicPorts: every layout NIC's port resolved once, the same port
// FabricView::Find gives by name.
#include "analysis/nic_ports.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/analyzer.h"
#include "analysis/layout_parse.h"

namespace fabricdiag::analysis {
namespace {

// 16 ranks on gpu-000..gpu-003, 4 GPUs each, on rails mlx5_0..mlx5_3.
LayoutModel FourHosts(const std::string& job, int first_host) {
  std::string hosts;
  for (int h = first_host; h < first_host + 4; ++h) {
    absl::StrAppend(&hosts, hosts.empty() ? "" : ", ",
                    absl::StrFormat("gpu-%03d", h));
  }
  absl::StatusOr<v1::Layout> layout = ParseLayout(absl::StrCat(
      "job: ", job, "\ngpus_per_node: 4\nparallelism: {tp: 4, pp: 1, dp: 4}\n",
      "hosts: [", hosts, "]\nrails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3]\n"));
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<LayoutModel> model = LayoutModel::Build(*layout);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// gpu-000..gpu-005, each with mlx5_0..mlx5_3 (netdevs eth0..eth3), but
// gpu-001 without mlx5_2: that port never reported.
FabricView SixHosts(double rx_bytes) {
  FabricView view;
  for (int h = 0; h < 6; ++h) {
    for (int n = 0; n < 4; ++n) {
      if (h == 1 && n == 2) continue;
      PortView& p = view.AddPort(absl::StrFormat("gpu-%03d", h),
                                 absl::StrCat("mlx5_", n));
      p.netdev = absl::StrCat("eth", n);
      p.s.rx_bytes = rx_bytes + h * 10 + n;
    }
  }
  view.Finish();
  return view;
}

TEST(NicPortsTest, EveryLayoutNicIsThePortFindGives) {
  const LayoutModel a = FourHosts("job-a", 0);
  const LayoutModel b = FourHosts("job-b", 2);  // shares gpu-002, gpu-003
  const FabricView view = SixHosts(1000);
  const NicPorts ports(view, {&a, nullptr, &b});
  EXPECT_EQ(&ports.view(), &view);
  for (const LayoutModel* model : {&a, &b}) {
    const LayoutPorts table = ports.Of(*model);
    for (uint32_t h = 0; h < model->Hosts().size(); ++h) {
      for (uint32_t n = 0; n < model->Nics().size(); ++n) {
        SCOPED_TRACE(absl::StrCat(model->Hosts()[h], "/", model->Nics()[n]));
        EXPECT_EQ(table.At(h, n),
                  view.Find(model->Hosts()[h], model->Nics()[n]));
      }
    }
  }
  const LayoutPorts table = ports.Of(a);
  ASSERT_NE(table.At(0, 3), nullptr);
  EXPECT_EQ(table.At(0, 3)->s.rx_bytes, 1003);
  EXPECT_EQ(table.At(1, 2), nullptr);  // gpu-001 mlx5_2 never reported
  EXPECT_EQ(table.At(4, 0), nullptr);  // no such host in the layout
  EXPECT_EQ(table.At(0, kNoNic), nullptr);
}

// Given the layouts' hosts indexed, a view of fewer nodes than the layouts
// list hosts (a switch shard's) is resolved from its nodes: the same ports.
// A layout the index lacks is resolved host by host.
TEST(NicPortsTest, AViewOfFewNodesIsResolvedFromItsNodes) {
  const LayoutModel a = FourHosts("job-a", 0);     // gpu-000..003
  const LayoutModel b = FourHosts("job-b", 2);     // gpu-002..005
  const LayoutModel late = FourHosts("job-c", 1);  // gpu-001..004
  const LayoutsByHost index({&a, &b});
  FabricView few;  // 3 nodes; the layouts list 12 hosts
  for (const char* device : {"mlx5_0", "mlx5_3"}) {
    few.AddPort("gpu-003", device).s.rx_bytes = 3;
    few.AddPort("gpu-004", device).s.rx_bytes = 4;
  }
  few.AddPort("leaf-1", "Ethernet0");
  few.Finish();
  const FabricView six = SixHosts(1000);
  for (const FabricView* view : std::vector<const FabricView*>{&few, &six}) {
    const NicPorts ports(*view, {&a, &late, &b}, &index);
    for (const LayoutModel* model : {&a, &b, &late}) {
      const LayoutPorts table = ports.Of(*model);
      for (uint32_t h = 0; h < model->Hosts().size(); ++h) {
        for (uint32_t n = 0; n < model->Nics().size(); ++n) {
          SCOPED_TRACE(absl::StrCat(view->node_count(), " nodes: ",
                                    model->Hosts()[h], "/", model->Nics()[n]));
          EXPECT_EQ(table.At(h, n),
                    view->Find(model->Hosts()[h], model->Nics()[n]));
        }
      }
    }
  }
  const NicPorts ports(few, {&a, &b}, &index);
  ASSERT_NE(ports.Of(b).At(1, 3), nullptr);  // gpu-003 mlx5_3
  EXPECT_EQ(ports.Of(b).At(1, 3)->s.rx_bytes, 3);
  EXPECT_EQ(ports.Of(b).At(1, 1), nullptr);  // not in the view
  EXPECT_EQ(ports.Of(a).At(0, 0), nullptr);  // gpu-000 is not either
}

TEST(NicPortsTest, ALayoutNotResolvedAsksTheView) {
  const LayoutModel a = FourHosts("job-a", 0);
  const LayoutModel late = FourHosts("job-late", 2);
  const FabricView view = SixHosts(1000);
  const NicPorts ports(view, {&a});
  const LayoutPorts table = ports.Of(late);
  ASSERT_NE(table.At(0, 1), nullptr);
  EXPECT_EQ(table.At(0, 1), view.Find("gpu-002", "mlx5_1"));
  EXPECT_EQ(table.At(9, 1), nullptr);
}

// A pass runs the analyzers over two views with the same input: ports
// resolved for one view are never used for the other.
TEST(NicPortsTest, PortsOfAnotherViewAreNotUsed) {
  const LayoutModel a = FourHosts("job-a", 0);
  const FabricView window = SixHosts(1000);
  const FabricView recent = SixHosts(5000);
  const NicPorts of_window(window, {&a});
  AnalysisInput in;
  in.layouts = {&a};
  in.nic_ports = &of_window;

  in.view = &window;
  std::optional<NicPorts> local;
  EXPECT_EQ(&NicPortsOf(in, &local), &of_window);
  EXPECT_FALSE(local.has_value());

  in.view = &recent;
  const NicPorts& ports = NicPortsOf(in, &local);
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(&ports, &*local);
  ASSERT_NE(ports.Of(a).At(0, 0), nullptr);
  EXPECT_EQ(ports.Of(a).At(0, 0)->s.rx_bytes, 5000);
}

TEST(NicPortsTest, OnlyLayoutsWithAReportingHostAreAnalysed) {
  const LayoutModel a = FourHosts("job-a", 0);      // gpu-000..003
  const LayoutModel b = FourHosts("job-b", 5);      // gpu-005..008
  const LayoutModel quiet = FourHosts("job-c", 6);  // gpu-006..009
  const FabricView view = SixHosts(1e9);            // gpu-000..005
  EXPECT_EQ(LayoutsReportingIn(view, {&quiet, &a, nullptr, &b, &quiet}),
            (std::vector<const LayoutModel*>{&a, &b}));
  EXPECT_TRUE(LayoutsReportingIn(FabricView(), {&a, &b}).empty());
  // Only a's last host reports.
  FabricView one;
  one.AddPort("gpu-003", "mlx5_0");
  one.Finish();
  EXPECT_EQ(LayoutsReportingIn(one, {&a, &b}),
            (std::vector<const LayoutModel*>{&a}));
}

// The index answers as LayoutsReportingIn() for every view, asking each
// view's nodes rather than each layout's hosts.
TEST(NicPortsTest, LayoutsByHostAnswersAsEachLayoutAsked) {
  const LayoutModel a = FourHosts("job-a", 0);      // gpu-000..003
  const LayoutModel b = FourHosts("job-b", 5);      // gpu-005..008
  const LayoutModel quiet = FourHosts("job-c", 6);  // gpu-006..009
  const std::vector<const LayoutModel*> layouts = {&quiet, &a,     nullptr,
                                                   &b,     &quiet, &a};
  const LayoutsByHost index(layouts);
  FabricView one;
  one.AddPort("gpu-003", "mlx5_0");
  one.AddPort("gpu-003", "mlx5_1");
  one.Finish();
  FabricView far;
  far.AddPort("gpu-009", "mlx5_0");  // quiet's last host, not b's
  far.AddPort("leaf-1", "Ethernet0");
  far.Finish();
  const FabricView six = SixHosts(1e9);
  for (const FabricView* view :
       std::vector<const FabricView*>{&six, &one, &far}) {
    EXPECT_EQ(index.ReportingIn(*view), LayoutsReportingIn(*view, layouts));
  }
  EXPECT_EQ(index.ReportingIn(one), (std::vector<const LayoutModel*>{&a, &a}));
  EXPECT_EQ(index.ReportingIn(far),
            (std::vector<const LayoutModel*>{&quiet, &quiet}));
  EXPECT_TRUE(index.ReportingIn(FabricView()).empty());
  EXPECT_TRUE(LayoutsByHost({}).ReportingIn(one).empty());

  // Each host's layouts, in order, with the host's index in each; the
  // nulls left out.
  ASSERT_EQ(index.layouts().size(), 5u);
  EXPECT_EQ(index.layouts()[1], &a);
  const absl::Span<const LayoutsByHost::HostIn> of = index.LayoutsOf("gpu-006");
  ASSERT_EQ(of.size(), 3u);
  for (const LayoutsByHost::HostIn& in : of) {
    const LayoutModel& m = *index.layouts()[in.layout];
    EXPECT_EQ(m.Hosts()[in.host], "gpu-006") << m.job();
  }
  EXPECT_EQ(index.layouts()[of[0].layout], &quiet);
  EXPECT_EQ(index.layouts()[of[1].layout], &b);
  EXPECT_EQ(of[1].host, 1u);
  EXPECT_EQ(index.layouts()[of[2].layout], &quiet);
  EXPECT_TRUE(index.LayoutsOf("gpu-004").empty());
}

}  // namespace
}  // namespace fabricdiag::analysis
