// The load generator's virtual agents look like real agents to the
// collector: their series are real names with meanings that the view
// builder maps onto analysis signals, and a short run against a real
// in-process collector is stored, acknowledged and analysed like real
// traffic. (The collector benchmark is only as honest as this.)
#include "collector/loadgen/loadgen.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "collector/fabric_view_builder.h"
#include "collector/ingest_service.h"
#include "collector/loadgen/agent_series.h"
#include "collector/server.h"
#include "collector/signal_map.h"
#include "common/clock.h"

namespace fabricdiag::collector {
namespace {

using loadgen::AgentNicSeries;
using loadgen::LoadSeries;

TEST(AgentSeriesTest, OneNicIsWhatAnAgentReportsForAnMlx5Port) {
  const std::vector<LoadSeries> nic = AgentNicSeries(3);
  ASSERT_EQ(nic.size(), 150u);
  std::set<std::tuple<int, std::string, uint32_t, std::string>> keys;
  int moving = 0;
  int gauges = 0;
  std::set<SignalField> signals;
  for (const LoadSeries& l : nic) {
    const v1::Series& s = l.series;
    EXPECT_TRUE(
        keys.emplace(s.subsystem(), s.device(), s.port(), s.name()).second)
        << s.name();
    EXPECT_TRUE(s.device() == "mlx5_3" || s.device() == "eth3") << s.device();
    EXPECT_GE(l.rate, 0);
    moving += l.moving;
    gauges += s.kind() == v1::KIND_GAUGE;
    signals.insert(ClassifySeries(MetaOf(s)).field);
  }
  // Traffic moves, errors and idle priorities do not: about a fifth.
  EXPECT_GE(moving, 25);
  EXPECT_LE(moving, 40);
  EXPECT_EQ(gauges, 6);
  // The analyzers get the signals they need from it.
  for (SignalField f : {SignalField::kRdmaRxBytes, SignalField::kRdmaTxBytes,
                        SignalField::kPhyRxBytes, SignalField::kRxPauseSeconds,
                        SignalField::kTxPauseSeconds, SignalField::kCnpSent,
                        SignalField::kCnpHandled, SignalField::kEcnMarked,
                        SignalField::kRxDiscards, SignalField::kSymbolErrors,
                        SignalField::kCarrierChanges}) {
    EXPECT_EQ(signals.count(f), 1u) << static_cast<int>(f);
  }
}

TEST(LoadgenTest, VirtualAgentsAreStoredAcknowledgedAndAnalysed) {
  SystemClock clock;
  SeriesStore store(SeriesStore::Options{}, clock);
  IngestCounters counters;
  IngestService service(&store, &counters);
  CollectorServer::Options o;
  o.listen = "127.0.0.1:0";
  auto server = CollectorServer::Start(o, {&service});
  ASSERT_TRUE(server.ok()) << server.status();

  loadgen::LoadgenOptions opts;
  opts.target = absl::StrCat("127.0.0.1:", (*server)->port());
  opts.nodes = 20;
  opts.nics = 2;
  opts.interval = absl::Milliseconds(100);
  opts.duration = absl::Seconds(2);
  opts.warmup = absl::Milliseconds(500);
  absl::StatusOr<loadgen::LoadgenResult> r = loadgen::RunLoadgen(opts, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->reports_sent, 200u);
  EXPECT_EQ(r->reports_acked + r->reports_dropped, r->reports_sent);
  EXPECT_EQ(r->streams_rejected, 0u);
  EXPECT_EQ(r->streams_failed, 0u);
  EXPECT_GT(r->latency_samples, 0u);
  EXPECT_GT(r->latency_p99_ms, 0);
  EXPECT_THAT(loadgen::LatencySummary(*r), ::testing::HasSubstr("p99"));
  EXPECT_EQ(counters.values.load(), counters.reports.load() * 300);

  const StoreMemory m = store.Memory();
  EXPECT_EQ(m.nodes, 20u);
  EXPECT_EQ(m.series, 20u * 300);
  EXPECT_EQ(m.layouts, 1u);  // identical agents share one layout

  // The view the analyzers see: every port of every node, with traffic.
  FabricViewBuilder builder(&store);
  analysis::FabricView view = builder.Build(nullptr, 0.5, clock.Now());
  ASSERT_EQ(view.ports().size(), 40u);
  for (const analysis::PortView& p : view.ports()) {
    EXPECT_NEAR(p.s.tx_bytes, 1.5e10, 0.1e10) << p.node << " " << p.device;
    EXPECT_EQ(p.s.link_rate, 5e10);
    EXPECT_EQ(p.s.rx_pause_fraction[3], 0);
  }
  (*server)->Shutdown(absl::ZeroDuration());
}

// Nobody listening: every stream fails, nothing is acknowledged, and no
// latency is reported (rather than a reassuring 0 ms).
TEST(LoadgenTest, DeadCollectorIsReportedNotMeasured) {
  // A port that was free a moment ago.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);

  loadgen::LoadgenOptions opts;
  opts.target = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  opts.nodes = 4;
  opts.nics = 1;
  opts.interval = absl::Milliseconds(100);
  opts.duration = absl::Seconds(1);
  opts.warmup = absl::Milliseconds(200);
  absl::StatusOr<loadgen::LoadgenResult> r = loadgen::RunLoadgen(opts, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->reports_acked, 0u);
  EXPECT_GT(r->streams_failed, 0u);
  EXPECT_EQ(r->latency_samples, 0u);
  EXPECT_THAT(loadgen::LatencySummary(*r),
              ::testing::HasSubstr("latency not measured"));
}

}  // namespace
}  // namespace fabricdiag::collector
