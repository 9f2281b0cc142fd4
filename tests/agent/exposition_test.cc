#include "agent/exposition.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/metrics_page.h"
#include "common/gzip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/sample_testing.h"
#include "tests/testing/promtool.h"

namespace fabricdiag::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Sample MakeSample(Subsystem subsystem, std::string device, uint32_t port,
                  std::string name, uint64_t raw, double scale = 1.0) {
  SeriesDesc d;
  d.subsystem = subsystem;
  d.device = std::move(device);
  d.port = port;
  d.name = std::move(name);
  d.scale = scale;
  return Sample::Of(std::move(d), raw);
}

Snapshot TestSnapshot() {
  Snapshot snap;
  snap.wall_time = absl::FromUnixSeconds(1795000000);
  snap.samples.push_back(MakeSample(Subsystem::kRdmaPortCounters, "mlx5_0", 1,
                                    "port_xmit_data", 2880761508848, 4));
  snap.samples.push_back(MakeSample(Subsystem::kRdmaPortCounters, "mlx5_0", 1,
                                    "port_rcv_data", 18126345378, 4));
  Sample wait = Edited(MakeSample(Subsystem::kRdmaPortCounters, "mlx5_0", 1,
                                  "port_xmit_wait", 4294967295),
                       [](SeriesDesc& d) { d.width_bits = 32; });
  wait.saturated = true;
  snap.samples.push_back(wait);
  snap.samples.push_back(MakeSample(Subsystem::kRdmaPortHwCounters, "mlx5_0", 1,
                                    "np_cnp_sent", 77));
  Sample pause = Edited(MakeSample(Subsystem::kEthtool, "eth0", 0,
                                   "tx_prio3_pause_duration", 940000, 1e-6),
                        [](SeriesDesc& d) {
                          d.meaning = Meaning::kPfcPauseDuration;
                          d.direction = Direction::kTx;
                          d.priority = 3;
                        });
  snap.samples.push_back(pause);
  Sample frames = Edited(
      MakeSample(Subsystem::kEthtool, "eth0", 0, "rx_pfc_ena_frames_pri3", 12),
      [](SeriesDesc& d) {
        d.meaning = Meaning::kPfcPauseFrames;
        d.direction = Direction::kRx;
        d.priority = 3;
      });
  snap.samples.push_back(frames);
  snap.samples.push_back(
      MakeSample(Subsystem::kNetdevStatistics, "eth0", 0, "rx_bytes", 123));
  snap.samples.push_back(
      MakeSample(Subsystem::kNetdevStatistics, "eth0", 0, "rx_crc_errors", 2));
  snap.netdevs.push_back({"eth0", "up", "mlx5_0", 1});
  snap.rdma_devices.push_back({"mlx5_0",
                               "14.28.2006",
                               "SM_2001000001034",
                               "MT4118",
                               "0a7f:bc12:45ef:d23b",
                               {"eth0"}});
  SourceStatus ok;
  ok.source = "rdma_sysfs";
  ok.duration = absl::Microseconds(250);
  snap.sources.push_back(ok);
  SourceStatus bad;
  bad.source = "ethtool";
  bad.ok = false;
  bad.errors = 1;
  snap.sources.push_back(bad);
  return snap;
}

std::string Render(const Snapshot& snap, const AgentHealth& health) {
  ExpositionRenderer renderer;
  std::string text;
  renderer.Render(snap, health, &text);
  return text;
}

TEST(ExpositionTest, RdmaByteCountersAreWordsTimesFour) {
  std::string text = Render(TestSnapshot(), AgentHealth{});
  EXPECT_THAT(text, HasSubstr("fabricdiag_rdma_port_transmitted_bytes_total{"
                              "device=\"mlx5_0\",port=\"1\"} 11523046035392"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_rdma_port_received_bytes_total{"
                              "device=\"mlx5_0\",port=\"1\"} 72505381512"));
  EXPECT_THAT(text, HasSubstr("# TYPE fabricdiag_rdma_port_transmitted_bytes_"
                              "total counter"));
}

// The value of the first line of `text` that starts with `series ` (full
// name and labels), or NaN.
double ValueOf(const std::string& text, const std::string& series) {
  const std::string prefix = series + " ";
  size_t pos = text.find("\n" + prefix);
  if (pos == std::string::npos) return std::nan("");
  return std::stod(text.substr(pos + 1 + prefix.size()));
}

TEST(ExpositionTest, PfcFamiliesHaveDirectionAndPriorityInSeconds) {
  std::string text = Render(TestSnapshot(), AgentHealth{});
  // 940000 microseconds of transmitted pause.
  EXPECT_DOUBLE_EQ(
      ValueOf(text,
              "fabricdiag_pfc_pause_duration_seconds_total{netdev=\"eth0\","
              "direction=\"tx\",priority=\"3\"}"),
      0.94);
  EXPECT_DOUBLE_EQ(ValueOf(text,
                           "fabricdiag_pfc_pause_frames_total{netdev=\"eth0\","
                           "direction=\"rx\",priority=\"3\"}"),
                   12);
  // The raw driver name stays visible for people who know it.
  EXPECT_DOUBLE_EQ(
      ValueOf(text,
              "fabricdiag_ethtool_statistic{netdev=\"eth0\",statistic=\"tx_"
              "prio3_pause_duration\"}"),
      940000);
}

TEST(ExpositionTest, SaturatedCounterIsFlagged) {
  std::string text = Render(TestSnapshot(), AgentHealth{});
  EXPECT_THAT(
      text, HasSubstr("fabricdiag_rdma_port_statistic_saturated{device="
                      "\"mlx5_0\",port=\"1\",statistic=\"port_xmit_wait\"} 1"));
}

TEST(ExpositionTest, SourceHealthIsPerSource) {
  std::string text = Render(TestSnapshot(), AgentHealth{});
  EXPECT_THAT(
      text,
      HasSubstr("fabricdiag_agent_source_success{source=\"rdma_sysfs\"} 1"));
  EXPECT_THAT(
      text, HasSubstr("fabricdiag_agent_source_success{source=\"ethtool\"} 0"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_agent_source_duration_seconds{source="
                              "\"rdma_sysfs\"} 0.00025"));
}

TEST(ExpositionTest, StreamMetricsOnlyWithACollector) {
  EXPECT_THAT(Render(TestSnapshot(), AgentHealth{}),
              Not(HasSubstr("fabricdiag_agent_stream_connected")));
  AgentHealth health;
  health.stream = AgentHealth::Stream{};
  health.stream->buffered = 42;
  health.stream->collector = "c1:9811";
  health.stream->failovers = 3;
  health.stream->handoffs = 2;
  std::string text = Render(TestSnapshot(), health);
  EXPECT_THAT(text, HasSubstr("fabricdiag_agent_stream_connected 0"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_agent_stream_reports_buffered 42"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "fabricdiag_agent_stream_collector_info{collector=\"c1:9811\"} 1"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_agent_stream_failovers_total 3"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_agent_stream_handoffs_total 2"));
}

TEST(ExpositionTest, PageServesNothingBeforeFirstSnapshot) {
  MetricsPage page;
  HttpRequest request;
  EXPECT_EQ(page.Serve(request).status, 503);
  page.Publish(std::make_shared<Snapshot>(TestSnapshot()), AgentHealth{});
  HttpResponse r = page.Serve(request);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, Render(TestSnapshot(), AgentHealth{}));
  EXPECT_TRUE(r.gzip_body.empty());
  // A client that accepts gzip gets the compressed page, made once.
  request.accepts_gzip = true;
  HttpResponse z = page.Serve(request);
  EXPECT_FALSE(z.gzip_body.empty());
  EXPECT_EQ(*GzipDecompress(z.gzip_body, 1 << 20), r.body);
}

// The prepared lines are kept while the sources describe the same series,
// values are still those of the snapshot rendered, and a rescan (new
// descriptions) rebuilds them.
TEST(ExpositionTest, PreparedLinesFollowTheSnapshot) {
  ExpositionRenderer renderer;
  Snapshot first = TestSnapshot();
  std::string text;
  renderer.Render(first, AgentHealth{}, &text);
  EXPECT_EQ(renderer.plans_built(), 1u);
  Snapshot second = first;  // same descriptions, new values
  second.samples[0].raw += 25;
  second.samples[2].saturated = false;
  renderer.Render(second, AgentHealth{}, &text);
  EXPECT_EQ(renderer.plans_built(), 1u);
  EXPECT_EQ(text, Render(second, AgentHealth{}));
  EXPECT_DOUBLE_EQ(ValueOf(text,
                           "fabricdiag_rdma_port_transmitted_bytes_total{"
                           "device=\"mlx5_0\",port=\"1\"}"),
                   (2880761508848.0 + 25) * 4);
  EXPECT_THAT(text, Not(HasSubstr("statistic_saturated")));
  Snapshot rescanned = TestSnapshot();  // new description objects
  renderer.Render(rescanned, AgentHealth{}, &text);
  EXPECT_EQ(renderer.plans_built(), 2u);
  EXPECT_EQ(text, Render(rescanned, AgentHealth{}));
}

TEST(ExpositionTest, LabelValuesAreEscaped) {
  Snapshot snap;
  snap.samples.push_back(MakeSample(Subsystem::kNetdevStatistics,
                                    "we\"ird\\dev\n", 0, "rx_bytes", 1));
  const std::string text = Render(snap, AgentHealth{});
  EXPECT_THAT(text, HasSubstr("{netdev=\"we\\\"ird\\\\dev\\n\"} 1\n"));
}

// promtool is the reference for the exposition format; Debian ships it in
// the `prometheus` package, which scripts/test.sh installs.
TEST(ExpositionTest, PromtoolAcceptsTheExposition) {
  if (!::fabricdiag::testing::PromtoolInstalled()) {
    GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  }
  AgentHealth health;
  health.version = "test";
  health.stream = AgentHealth::Stream{};
  std::string lint;
  EXPECT_TRUE(::fabricdiag::testing::PromtoolAccepts(
      Render(TestSnapshot(), health), &lint))
      << lint;
}

}  // namespace
}  // namespace fabricdiag::agent
