// The real agent-side StreamClient and ReportEncoder streaming into the real
// collector server on loopback.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/rate.h"
#include "agent/report_encoder.h"
#include "agent/stream_client.h"
#include "client/collector_list.h"
#include "collector/declared/node_facts_memory.h"
#include "collector/ingest/ingest_service.h"
#include "collector/ingest/node_facts_intake.h"
#include "collector/ingest/server.h"
#include "collector/store/series_store.h"
#include "common/clock.h"
#include "proto/ingest.grpc.pb.h"
#include "tests/testing/eventually.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;

constexpr int kSeries = 24;

// Polls `pred` until it holds or `timeout` passes (no fixed sleeps).
using ::fabricdiag::testing::Eventually;

// One agent: snapshots -> rates -> encoder -> StreamClient. Counter i grows
// by 1000 * (i + 1) per (fake) second, so its rate is exactly that.
class Agent {
 public:
  Agent(const std::string& node, std::vector<std::string> targets,
        int series = kSeries)
      : series_(series) {
    agent::StreamClient::Options o;
    o.targets = std::move(targets);
    o.node = node;
    o.agent_version = "test";
    o.backoff_initial = absl::Milliseconds(20);
    o.backoff_max = absl::Milliseconds(200);
    auto client = agent::StreamClient::Create(o, clock_);
    EXPECT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    client_->Start();
  }

  void Sample() {
    agent::Snapshot snap;
    snap.wall_time = absl::FromUnixSeconds(1795000000 + round_);
    snap.monotonic_nanos = round_ * 1'000'000'000;
    for (int i = 0; i < series_; ++i) {
      agent::SeriesDesc d;
      d.device = absl::StrCat("mlx5_", i % 2);
      d.port = 1;
      d.name = absl::StrCat("counter_", i);
      d.unit = "bytes";
      snap.samples.push_back(agent::Sample::Of(
          std::move(d),
          static_cast<uint64_t>(round_) * 1000 * static_cast<uint64_t>(i + 1)));
    }
    snap.rdma_devices.push_back({"mlx5_0", "", "", "", "", {}});
    ++round_;
    auto encoded = encoder_.Encode(snap, rates_.Update(snap));
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    client_->Enqueue(*std::move(encoded));
  }

  agent::StreamClient& client() { return *client_; }

 private:
  SystemClock clock_;
  agent::RateCalculator rates_;
  agent::ReportEncoder encoder_;
  std::unique_ptr<agent::StreamClient> client_;
  const int series_;
  int64_t round_ = 0;
};

SeriesKey Key(int i) {
  return {v1::SUBSYSTEM_RDMA_PORT_COUNTERS, absl::StrCat("mlx5_", i % 2), 1,
          absl::StrCat("counter_", i)};
}

class IngestE2eTest : public ::testing::Test {
 protected:
  void StartServer(int port = 0) {
    service_ = std::make_unique<IngestService>(&store_, &counters_);
    CollectorServer::Options o;
    o.listen = absl::StrCat("127.0.0.1:", port);
    auto server = CollectorServer::Start(o, {service_.get()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  void StopServer() {
    server_->Shutdown(absl::ZeroDuration());
    server_->Wait();
    server_.reset();
    service_.reset();
  }
  std::string target() const {
    return absl::StrCat("127.0.0.1:", server_->port());
  }
  // The seqs the store holds for series 0 of `node`.
  std::vector<uint64_t> HeldSeqs(const std::string& node) {
    std::vector<uint64_t> seqs;
    auto w = store_.Window(node, Key(0), absl::InfinitePast());
    if (w.ok()) {
      for (const RatePoint& p : *w) seqs.push_back(p.seq);
    }
    return seqs;
  }

  SystemClock clock_;
  SeriesStore store_{SeriesStore::Options{}, clock_};
  IngestCounters counters_;
  std::unique_ptr<IngestService> service_;
  std::unique_ptr<CollectorServer> server_;
};

TEST_F(IngestE2eTest, ReportsArriveAndRatesAreQueryable) {
  StartServer();
  Agent agent("gpu-001", {target()});
  for (int i = 0; i < 3; ++i) agent.Sample();
  ASSERT_TRUE(Eventually([&] { return HeldSeqs("gpu-001").size() == 3; }));
  for (int i = 0; i < kSeries; ++i) {
    auto latest = store_.Latest("gpu-001", Key(i));
    ASSERT_TRUE(latest.ok()) << latest.status();
    EXPECT_EQ(latest->rate, 1000.0 * (i + 1));
    EXPECT_EQ(latest->seq, 3u);
  }
  // The first report has no rate (first sample).
  auto window = *store_.Window("gpu-001", Key(5), absl::InfinitePast());
  ASSERT_EQ(window.size(), 3u);
  EXPECT_TRUE(std::isnan(window[0].rate));
  EXPECT_EQ(window[1].rate, 6000);
  std::vector<NodeStatus> nodes = store_.ListNodes(absl::Seconds(30));
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_TRUE(nodes[0].up);
  EXPECT_THAT(nodes[0].info.devices, ::testing::ElementsAre("mlx5_0"));
  EXPECT_EQ(nodes[0].info.series, static_cast<size_t>(kSeries));
  // The agent learns that everything is stored.
  ASSERT_TRUE(
      Eventually([&] { return agent.client().stats().last_acked_seq == 3; }));
}

TEST_F(IngestE2eTest, CollectorRestartOnSamePortLeavesNoGap) {
  StartServer();
  const int port = server_->port();
  Agent agent("gpu-001", {target()});
  for (int i = 0; i < 3; ++i) agent.Sample();
  ASSERT_TRUE(Eventually([&] { return HeldSeqs("gpu-001").size() == 3; }));

  StopServer();
  // Sampled while the collector is away: buffered by the agent.
  for (int i = 0; i < 4; ++i) agent.Sample();
  StartServer(port);
  ASSERT_EQ(server_->port(), port);
  ASSERT_TRUE(Eventually([&] { return HeldSeqs("gpu-001").size() >= 7; }))
      << HeldSeqs("gpu-001").size();
  EXPECT_THAT(HeldSeqs("gpu-001"), ::testing::ElementsAre(1, 2, 3, 4, 5, 6, 7));
  auto window = *store_.Window("gpu-001", Key(2), absl::InfinitePast());
  for (size_t i = 1; i < window.size(); ++i) EXPECT_EQ(window[i].rate, 3000);
  EXPECT_EQ(store_.FindNode("gpu-001")->Info().missing_reports, 0u);
  ASSERT_TRUE(
      Eventually([&] { return agent.client().stats().last_acked_seq == 7; }));
}

TEST_F(IngestE2eTest, HostileStreamIsRejectedAndOthersUnaffected) {
  StartServer();
  Agent good("gpu-good", {target()});
  good.Sample();
  ASSERT_TRUE(Eventually([&] { return HeldSeqs("gpu-good").size() == 1; }));

  // A hand-written hostile stream: a report with a schema it never sent.
  auto channel =
      grpc::CreateChannel(target(), grpc::InsecureChannelCredentials());
  auto stub = v1::Ingest::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = stub->Stream(&ctx);
  v1::AgentMessage m;
  m.mutable_hello()->set_node("gpu-evil");
  m.mutable_hello()->set_boot_id("x");
  ASSERT_TRUE(stream->Write(m));
  v1::AgentMessage report;
  report.mutable_report()->set_seq(1);
  report.mutable_report()->set_schema_id(42);
  ASSERT_TRUE(stream->Write(report));

  good.Sample();  // concurrently with the hostile stream
  v1::CollectorMessage reply;
  bool rejected = false;
  while (stream->Read(&reply)) {
    if (reply.has_reject()) {
      rejected = true;
      EXPECT_THAT(reply.reject().reason(), HasSubstr("unknown_schema"));
    }
  }
  EXPECT_TRUE(rejected);
  grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(counters_.rejects(RejectReason::kUnknownSchema), 1u);

  good.Sample();
  ASSERT_TRUE(Eventually([&] { return HeldSeqs("gpu-good").size() == 3; }));
  EXPECT_THAT(HeldSeqs("gpu-good"), ::testing::ElementsAre(1, 2, 3));
  EXPECT_EQ(good.client().stats().reconnects, 0u);
  EXPECT_FALSE(store_.Latest("gpu-evil", Key(0)).ok());
}

// Each stream keeps only its last report's arrays to read the next message
// into: a schema's memory goes back once it is mapped
// (collector/ingest/inbound_message.h), and a stream that ends gives back
// everything.
TEST_F(IngestE2eTest, StreamsKeepTheirReportsNotTheirSchemas) {
  StartServer();
  // A schema of 3,000 series takes ~500 KiB parsed (a message and three
  // strings per series); a report's two arrays 48,000 bytes.
  constexpr int kWide = 3000;
  constexpr int64_t kArrays = int64_t{kWide} * 16;
  {
    Agent agent("gpu-wide", {target()}, kWide);
    for (int i = 0; i < 3; ++i) agent.Sample();
    ASSERT_TRUE(Eventually([&] { return HeldSeqs("gpu-wide").size() == 3; }));
    ASSERT_TRUE(
        Eventually([&] { return agent.client().stats().last_acked_seq == 3; }));
    // A report's arrays (with the first report's list of series without a
    // rate, kept for the next) in one block of their size: not the schema,
    // nor the growing blocks the first report was read into (~190 KiB).
    const int64_t kept = counters_.read_buffer_bytes.load();
    EXPECT_GT(kept, kArrays);
    EXPECT_LT(kept, kArrays * 2);
  }
  // The agent gone, its stream ends and gives its buffer back.
  ASSERT_TRUE(Eventually([&] { return counters_.open_streams.load() == 0; }));
  EXPECT_TRUE(Eventually([&] {
    return counters_.read_buffer_bytes.load() == 0;
  })) << counters_.read_buffer_bytes.load();
}

// Hands off every node named in `nodes` (set before any stream starts).
class HandOffNodes final : public IngestPlacement {
 public:
  void set_nodes(std::vector<std::string> nodes) { nodes_ = std::move(nodes); }
  uint64_t Epoch() override { return 1; }
  std::optional<HandoffOrder> HandOff(absl::string_view node,
                                      const std::vector<std::string>& /*list*/,
                                      uint64_t /*streams*/) override {
    for (const std::string& n : nodes_) {
      if (n == node) return HandoffOrder{"test placement", ""};
    }
    return std::nullopt;
  }
  CollectorWeights Weights(
      const std::vector<std::string>& /*collectors*/) override {
    return {};
  }
  void Advertise(const std::string& /*address*/) override {}

 private:
  std::vector<std::string> nodes_;
};

// Through real gRPC: a collector whose placement hands a node off ends its
// stream with the Handoff (UNAVAILABLE), the real agent moves to the other
// collector and every report lands there, none on the first; a node the
// placement keeps stays.
TEST(IngestHandoffTest, AHandedOffAgentStreamsToTheOtherCollector) {
  SystemClock clock;
  SeriesStore first_store(SeriesStore::Options{}, clock);
  SeriesStore second_store(SeriesStore::Options{}, clock);
  IngestCounters first_counters;
  IngestCounters second_counters;
  HandOffNodes placement;
  MemoryNodeFacts first_facts;
  NoDeclaredSwitches no_switches;
  IngestService first_service(&first_store, &first_counters, {}, placement,
                              {first_facts, no_switches});
  IngestService second_service(&second_store, &second_counters);
  CollectorServer::Options o;
  o.listen = "127.0.0.1:0";
  auto first = CollectorServer::Start(o, {&first_service});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = CollectorServer::Start(o, {&second_service});
  ASSERT_TRUE(second.ok()) << second.status();
  const std::string first_target = absl::StrCat("127.0.0.1:", (*first)->port());
  const std::string second_target =
      absl::StrCat("127.0.0.1:", (*second)->port());

  // Two nodes that rank the first collector first (the ports, and so the
  // ranking, differ per run).
  std::vector<std::string> names;
  for (int i = 0; names.size() < 2; ++i) {
    std::string name = absl::StrCat("gpu-", i);
    if (client::RankCollectors(name, {first_target, second_target})[0] == 0) {
      names.push_back(name);
    }
  }
  placement.set_nodes({names[0]});
  Agent moved(names[0], {first_target, second_target});
  Agent kept(names[1], {first_target, second_target});
  for (int i = 0; i < 3; ++i) {
    moved.Sample();
    kept.Sample();
  }
  auto seqs = [](const SeriesStore& store, const std::string& node) {
    std::vector<uint64_t> out;
    auto w = store.Window(node, Key(0), absl::InfinitePast());
    if (w.ok()) {
      for (const RatePoint& p : *w) out.push_back(p.seq);
    }
    return out;
  };
  ASSERT_TRUE(Eventually([&] {
    return seqs(second_store, names[0]).size() == 3 &&
           seqs(first_store, names[1]).size() == 3;
  }));
  EXPECT_THAT(seqs(second_store, names[0]), ::testing::ElementsAre(1, 2, 3));
  EXPECT_TRUE(seqs(first_store, names[0]).empty());
  EXPECT_TRUE(seqs(second_store, names[1]).empty());
  EXPECT_EQ(first_counters.handoffs.load(), 1u);
  EXPECT_EQ(moved.client().stats().handoffs, 1u);
  EXPECT_EQ(moved.client().stats().target, second_target);
  EXPECT_EQ(kept.client().stats().handoffs, 0u);
  EXPECT_EQ(kept.client().stats().reconnects, 0u);
  moved.client().Stop();
  kept.client().Stop();
  for (auto* server : {&*first, &*second}) {
    (*server)->Shutdown(absl::ZeroDuration());
    (*server)->Wait();
  }
}

TEST(CollectorServerTest, RefusesHalfConfiguredTls) {
  CollectorServer::Options o;
  o.listen = "127.0.0.1:0";
  o.tls_cert_file = "/nonexistent.pem";
  EXPECT_EQ(CollectorServer::Start(o, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.tls_key_file = "/nonexistent.key";
  EXPECT_EQ(CollectorServer::Start(o, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  CollectorServer::Options ca_only;
  ca_only.listen = "127.0.0.1:0";
  ca_only.tls_client_ca_file = "/etc/hostname";
  EXPECT_EQ(CollectorServer::Start(ca_only, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fabricdiag::collector
