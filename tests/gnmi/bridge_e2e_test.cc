// fabricdiag-gnmi-bridge as a process between a fake gNMI target (in this
// test) and a real fabricdiag-collector process: the topology applied
// through the collector's API names the switch with a gnmi block, the bridge
// picks it up, and the collector lists the switch as a node with its ports
// and rates; the bridge's /metrics shows the subscription up; SIGTERM stops
// it cleanly.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analysis/layout_parse.h"
#include "gtest/gtest.h"
#include "proto/collector.grpc.pb.h"
#include "tests/gnmi/fake_gnmi_target.h"
#include "tests/gnmi/fixtures.h"
#include "tests/testing/eventually.h"
#include "tests/testing/http_get.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::gnmi {
namespace {

using ::fabricdiag::testing::PortFromLog;
using ::fabricdiag::testing::Subprocess;

const std::string kBridge = FABRICDIAG_GNMI_BRIDGE_BINARY;
const std::string kCollector = FABRICDIAG_COLLECTOR_BINARY;
constexpr char kCounters[] = "/interfaces/interface/state/counters";

bool Eventually(const std::function<bool()>& pred) {
  return ::fabricdiag::testing::Eventually(pred, absl::Seconds(30),
                                           absl::Milliseconds(100));
}

::gnmi::SubscribeResponse Octets(const std::string& port, uint64_t in,
                                 uint64_t out) {
  ::gnmi::SubscribeResponse r;
  std::string json = absl::StrCat(R"({"in-octets":")", in,
                                  R"(","out-octets":")", out, R"("})");
  *r.mutable_update() = testing::JsonNotification(
      "", absl::StrCat("/interfaces/interface[name=", port, "]/state/counters"),
      json);
  return r;
}

class GnmiBridgeE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(target_.Start().ok());
    collector_ = std::make_unique<Subprocess>(std::vector<std::string>{
        kCollector, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
        "--state_dir=" + dir_.path() + "/state", "--analysis_interval=100ms"});
    ASSERT_TRUE(collector_->Start().ok());
    std::string line;
    ASSERT_TRUE(collector_->WaitForStderr("gRPC on port", &line))
        << collector_->Stderr();
    grpc_port_ = PortFromLog(line, "gRPC");
    http_port_ = PortFromLog(line, "HTTP");
    ASSERT_GT(grpc_port_, 0);
    ASSERT_GT(http_port_, 0);
    stub_ = v1::Collector::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", grpc_port_),
                            grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    stop_ = true;
    if (pusher_.joinable()) pusher_.join();
  }

  // The topology with switch leaf-01 streaming gNMI from target_.
  v1::Topology Topology() const {
    v1::Topology t;
    v1::Switch* sw = t.add_switches();
    sw->set_name("leaf-01");
    sw->add_uplinks("Ethernet1");
    sw->mutable_gnmi()->set_address(target_.address());
    sw->mutable_gnmi()->set_dialect("openconfig");
    sw->mutable_gnmi()->set_insecure(true);
    return t;
  }

  // Starts the bridge and waits for it to subscribe; its /metrics port.
  int StartBridge(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {
        kBridge, absl::StrCat("--collector=127.0.0.1:", grpc_port_),
        "--interval=100ms", "--topology_refresh=1s",
        "--http_listen=127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    bridge_ = std::make_unique<Subprocess>(argv);
    EXPECT_TRUE(bridge_->Start().ok());
    std::string line;
    EXPECT_TRUE(bridge_->WaitForStderr("serving /metrics on port", &line))
        << bridge_->Stderr();
    EXPECT_TRUE(target_.WaitForStreams(kCounters, 1, absl::Seconds(30)))
        << bridge_->Stderr();
    // The switch counts 1,000,000 bytes in and 2,000,000 out per push.
    pusher_ = std::thread([this] {
      for (uint64_t i = 1; !stop_; ++i) {
        target_.Push(kCounters, Octets("Ethernet1", i * 1000000, i * 2000000));
        target_.Push(kCounters, Octets("Ethernet2", i * 10, i * 10));
        absl::SleepFor(absl::Milliseconds(100));
      }
    });
    return PortFromLog(line, "/metrics");
  }

  // Waits until the collector lists leaf-01 with both ports, reporting:
  // the inventory naming the ports can arrive before the first report.
  bool WaitForNode(v1::NodeStatus* node) {
    return Eventually([&] {
      grpc::ClientContext context;
      v1::ListNodesResponse nodes;
      if (!stub_->ListNodes(&context, v1::ListNodesRequest(), &nodes).ok()) {
        return false;
      }
      for (const v1::NodeStatus& n : nodes.nodes()) {
        if (n.node() == "leaf-01" && n.netdevs_size() == 2 && n.up() &&
            n.series() > 0) {
          *node = n;
          return true;
        }
      }
      return false;
    });
  }

  ::fabricdiag::testing::TempDir dir_;
  testing::FakeGnmiTarget target_;
  std::unique_ptr<Subprocess> collector_;
  std::unique_ptr<Subprocess> bridge_;
  std::unique_ptr<v1::Collector::Stub> stub_;
  int grpc_port_ = 0;
  int http_port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread pusher_;
};

TEST_F(GnmiBridgeE2eTest, SwitchFromGnmiBecomesACollectorNodeWithRates) {
  v1::ApplyTopologyRequest apply;
  *apply.mutable_topology() = Topology();
  {
    grpc::ClientContext context;
    v1::ApplyTopologyResponse response;
    grpc::Status s = stub_->ApplyTopology(&context, apply, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  const int metrics_port = StartBridge({});
  ASSERT_GT(metrics_port, 0);
  v1::NodeStatus node;
  EXPECT_TRUE(WaitForNode(&node)) << bridge_->Stderr() << collector_->Stderr();
  EXPECT_TRUE(node.up());
  EXPECT_GE(node.series(), 4u);  // in- and out-octets of two ports

  double rate = 0;
  const bool rated = Eventually([&] {
    grpc::ClientContext context;
    v1::GetSeriesRequest request;
    request.set_node("leaf-01");
    request.set_device("Ethernet1");
    request.set_name("/interfaces/interface/state/counters/out-octets");
    v1::GetSeriesResponse response;
    if (!stub_->GetSeries(&context, request, &response).ok()) return false;
    for (const v1::SeriesRates& s : response.series()) {
      for (const v1::SeriesPoint& p : s.points()) rate = p.rate();
    }
    return rate > 0;
  });
  EXPECT_TRUE(rated) << bridge_->Stderr();
  // 2,000,000 bytes per ~100 ms push: about 2e7 bytes/s, never negative.
  EXPECT_GT(rate, 5e6);
  EXPECT_LT(rate, 1e8);

  // The switch's ports are in the same fabric view as agent-fed ports: its
  // uplink is reported, with the traffic the switch counted.
  double uplink_tx = 0;
  const bool in_view = Eventually([&] {
    absl::StatusOr<std::string> body =
        ::fabricdiag::testing::HttpGet(http_port_, "/api/v1/fabric");
    if (!body.ok()) return false;
    nlohmann::json fabric = nlohmann::json::parse(*body, nullptr, false);
    if (!fabric.is_object() || !fabric["switches"].is_array() ||
        fabric["switches"].empty()) {
      return false;
    }
    const nlohmann::json& uplink = fabric["switches"][0]["uplinks"][0];
    if (!uplink.value("reported", false) || !uplink["tx_bytes"].is_number()) {
      return false;
    }
    uplink_tx = uplink["tx_bytes"].get<double>();
    return uplink_tx > 0;
  });
  EXPECT_TRUE(in_view);
  EXPECT_GT(uplink_tx, 5e6);

  absl::StatusOr<std::string> metrics =
      ::fabricdiag::testing::HttpGet(metrics_port, "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(absl::StrContains(
      *metrics, "fabricdiag_gnmi_subscription_up{switch=\"leaf-01\"} 1"))
      << *metrics;
  EXPECT_TRUE(absl::StrContains(*metrics,
                                "fabricdiag_gnmi_ingest_connected{switch="
                                "\"leaf-01\"} 1"));

  bridge_->Signal(SIGTERM);
  EXPECT_EQ(bridge_->Wait(absl::Seconds(20)), 0) << bridge_->Stderr();
}

TEST_F(GnmiBridgeE2eTest, TopologyFromAFile) {
  // The collector has no topology: the bridge reads the file.
  const std::string file = dir_.path() + "/topology.json";
  std::ofstream(file) << analysis::TopologyToJson(Topology());
  const int metrics_port = StartBridge({"--topology=" + file});
  ASSERT_GT(metrics_port, 0);
  v1::NodeStatus node;
  EXPECT_TRUE(WaitForNode(&node)) << bridge_->Stderr();
}

TEST(GnmiBridgeFlagsTest, BadFlagsExitTwoNamingTheFlag) {
  using ::fabricdiag::testing::RunCommand;
  using ::fabricdiag::testing::RunResult;
  RunResult r = RunCommand({kBridge});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(r.err, "--collector is required")) << r.err;
  r = RunCommand({kBridge, "--collector=127.0.0.1:9811", "--interval=5ms"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(r.err, "--interval=5ms")) << r.err;
  r = RunCommand(
      {kBridge, "--collector=127.0.0.1:9811", "--gnmi_max_message_size=1MiB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(r.err, "--gnmi_max_message_size")) << r.err;
  r = RunCommand({kBridge, "--collector=127.0.0.1:9811", "--tls_cert=/x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(r.err, "--tls_cert")) << r.err;
}

}  // namespace
}  // namespace fabricdiag::gnmi
