#include "agent/stream_client.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/collector_list.h"
#include "common/clock.h"
#include "tests/agent/fake_ingest_server.h"
#include "tests/testing/eventually.h"

namespace fabricdiag::agent {
namespace {

using ::testing::ElementsAre;
using testing::FakeIngestServer;
using ::testing::HasSubstr;

constexpr char kNode[] = "gpu-001";

// Polls `pred` until it holds or `timeout` passes. Polling with a deadline
// (not a fixed sleep) is the synchronisation: a fast machine finishes early.
using ::fabricdiag::testing::Eventually;

// Runs `fn` on another thread; true when it returned within `timeout`.
bool ReturnsWithin(std::function<void()> fn, absl::Duration timeout) {
  auto done = std::async(std::launch::async, std::move(fn));
  return done.wait_for(absl::ToChronoNanoseconds(timeout)) ==
         std::future_status::ready;
}

// A node name that ranks `targets` in `order` (client/collector_list.h).
// The fake servers' ports are random, so the name is searched for.
std::string NodeRanking(const std::vector<std::string>& targets,
                        const std::vector<size_t>& order) {
  for (int i = 0; i < 100000; ++i) {
    std::string name = absl::StrCat("gpu-", i);
    if (client::RankCollectors(name, targets) == order) return name;
  }
  ADD_FAILURE() << "no node ranks the targets so";
  return kNode;
}

std::vector<uint64_t> Range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> v;
  for (uint64_t s = first; s <= last; ++s) v.push_back(s);
  return v;
}

// Builds encoded reports for a node with `series` counters.
class ReportMaker {
 public:
  explicit ReportMaker(size_t series) : series_(series) {}

  EncodedReport Next() {
    Snapshot snap;
    snap.wall_time = absl::FromUnixSeconds(1795000000 + round_);
    snap.monotonic_nanos = round_ * 1'000'000'000;
    for (size_t i = 0; i < series_; ++i) {
      SeriesDesc d;
      d.device = absl::StrCat("mlx5_", i % 8);
      d.port = 1;
      d.name = absl::StrCat("counter_", i);
      snap.samples.push_back(
          Sample::Of(std::move(d), static_cast<uint64_t>(round_) * 1000 + i));
    }
    ++round_;
    absl::StatusOr<EncodedReport> r =
        encoder_.Encode(snap, std::vector<SampleRate>(snap.samples.size()));
    EXPECT_TRUE(r.ok()) << r.status();
    return *std::move(r);
  }

  void set_series(size_t series) { series_ = series; }

 private:
  size_t series_;
  int64_t round_ = 1;
  ReportEncoder encoder_;
};

class StreamClientTest : public ::testing::Test {
 protected:
  StreamClient::Options BaseOptions() const {
    StreamClient::Options o;
    o.targets = {server_.target()};
    o.node = kNode;
    o.agent_version = "test";
    o.backoff_initial = absl::Milliseconds(10);
    o.backoff_max = absl::Milliseconds(100);
    return o;
  }

  std::unique_ptr<StreamClient> MakeClient(const StreamClient::Options& o) {
    absl::StatusOr<std::unique_ptr<StreamClient>> c =
        StreamClient::Create(o, clock_);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  bool WaitForSeqs(const std::vector<uint64_t>& want) {
    return server_.WaitFor(kNode, [&](const FakeIngestServer::Node& n) {
      return n.report_seqs.size() >= want.size();
    });
  }

  FakeClock clock_;
  FakeIngestServer server_;
};

TEST_F(StreamClientTest, ValidateRejectsUnusableOptions) {
  StreamClient::Options o;
  o.targets = {"collector:9811"};
  o.node = kNode;
  EXPECT_TRUE(StreamClient::Validate(o).ok());

  StreamClient::Options no_target = o;
  no_target.targets = {};
  EXPECT_EQ(StreamClient::Validate(no_target).code(),
            absl::StatusCode::kInvalidArgument);

  StreamClient::Options no_node = o;
  no_node.node = "";
  EXPECT_THAT(std::string(StreamClient::Validate(no_node).message()),
              HasSubstr("node"));

  StreamClient::Options bad_backoff = o;
  bad_backoff.backoff_max = absl::Milliseconds(1);
  EXPECT_FALSE(StreamClient::Validate(bad_backoff).ok());

  StreamClient::Options cert_only = o;
  cert_only.tls.cert = "/etc/hostname";
  EXPECT_THAT(std::string(StreamClient::Validate(cert_only).message()),
              HasSubstr("together"));

  StreamClient::Options missing_ca = o;
  missing_ca.tls.ca = "/nonexistent/ca.pem";
  absl::Status s = StreamClient::Validate(missing_ca);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/nonexistent/ca.pem"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("No such file"));
  EXPECT_FALSE(StreamClient::Create(missing_ca, clock_).ok());
}

TEST_F(StreamClientTest, ValidateRejectsFilesThatAreNotPem) {
  const std::string dir = ::testing::TempDir();
  const std::string text = dir + "/not_pem.txt";
  std::ofstream(text) << "hello\n";
  StreamClient::Options o;
  o.targets = {"collector:9811"};
  o.node = kNode;
  o.tls.ca = text;
  EXPECT_THAT(std::string(StreamClient::Validate(o).message()),
              HasSubstr("not in PEM format"));
  // Hostile: an endless file must not be read into memory.
  o.tls.ca = "/dev/zero";
  EXPECT_THAT(std::string(StreamClient::Validate(o).message()),
              HasSubstr("/dev/zero is not a regular file"));
  const std::string big = dir + "/big.pem";
  std::ofstream(big) << "-----BEGIN " << std::string(2 << 20, 'a');
  o.tls.ca = big;
  EXPECT_THAT(std::string(StreamClient::Validate(o).message()),
              HasSubstr("larger than 1048576 bytes"));
  std::filesystem::remove(big);
  std::filesystem::remove(text);
}

TEST_F(StreamClientTest, ReportsArriveInOrderAfterHelloAndSchema) {
  ASSERT_TRUE(server_.Start().ok());
  StreamClient::Options o = BaseOptions();
  o.interval = absl::Milliseconds(500);
  auto client = MakeClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  ReportMaker maker(16);
  for (int i = 0; i < 5; ++i) client->Enqueue(maker.Next());

  ASSERT_TRUE(WaitForSeqs(Range(1, 5)));
  FakeIngestServer::Node n = server_.node(kNode);
  EXPECT_EQ(n.report_seqs, Range(1, 5));
  EXPECT_EQ(n.reports_without_schema, 0);
  ASSERT_EQ(n.hellos.size(), 1u);
  EXPECT_EQ(n.hellos[0].boot_id(), client->boot_id());
  EXPECT_EQ(n.hellos[0].boot_id().size(), 32u);
  EXPECT_EQ(n.hellos[0].interval_ms(), 500u);
  EXPECT_EQ(n.hellos[0].agent_version(), "test");
  EXPECT_EQ(n.hellos[0].acked_seq(), 0u) << "nothing acknowledged yet";
  // One collector: nothing for a collector to rank.
  EXPECT_TRUE(n.hellos[0].collectors().empty());
  ASSERT_EQ(n.schemas.count(1), 1u);
  EXPECT_EQ(n.schemas[1].series_size(), 16);
  EXPECT_TRUE(n.messages[0].has_hello());

  // A report counts as sent once its write returned, which can be after
  // the collector acknowledged it (the reader thread counts acks).
  ASSERT_TRUE(Eventually([&] {
    const StreamClient::Stats s = client->stats();
    return s.acked == 5 && s.sent == 5;
  }));
  StreamClient::Stats st = client->stats();
  EXPECT_TRUE(st.connected);
  EXPECT_EQ(st.buffered, 0u);
  EXPECT_EQ(st.last_acked_seq, 5u);
  EXPECT_EQ(st.dropped, 0u);
  EXPECT_EQ(st.last_ack_monotonic_nanos, clock_.MonotonicNanos());
  client->Stop();
}

TEST_F(StreamClientTest, OutageLosesNothingAndReplaysEachReportOnce) {
  ASSERT_TRUE(server_.Start().ok());
  auto client = MakeClient(BaseOptions());
  ASSERT_NE(client, nullptr);
  client->Start();
  ReportMaker maker(32);
  for (int i = 0; i < 3; ++i) client->Enqueue(maker.Next());
  ASSERT_TRUE(Eventually([&] { return client->stats().acked == 3; }));

  server_.Stop();  // the collector goes away
  constexpr int kDuringOutage = 20;
  for (int i = 0; i < kDuringOutage; ++i) client->Enqueue(maker.Next());
  // Enqueue completed without the network: everything is already buffered.
  EXPECT_EQ(client->stats().buffered, static_cast<uint64_t>(kDuringOutage));
  ASSERT_TRUE(Eventually([&] { return !client->stats().connected; }));
  ASSERT_TRUE(Eventually([&] { return client->stats().reconnects >= 1; }));
  EXPECT_FALSE(client->stats().last_error.empty());

  ASSERT_TRUE(server_.Restart().ok());  // same port
  ASSERT_TRUE(WaitForSeqs(Range(1, 3 + kDuringOutage)));
  ASSERT_TRUE(
      Eventually([&] { return client->stats().acked == 3 + kDuringOutage; }));
  FakeIngestServer::Node n = server_.node(kNode);
  // Each seq exactly once, in order, no gap.
  EXPECT_EQ(n.report_seqs, Range(1, 3 + kDuringOutage));
  EXPECT_GE(n.streams, 2);
  EXPECT_EQ(n.reports_without_schema, 0);  // schema re-sent on the new stream
  for (const v1::Hello& h : n.hellos) EXPECT_EQ(h.boot_id(), client->boot_id());
  EXPECT_EQ(client->stats().buffered, 0u);
  EXPECT_EQ(client->stats().dropped, 0u);
  client->Stop();
}

// Two collectors: the agent's first choice goes away with reports it has
// received but not acknowledged; the agent moves to its second and replays
// them there, so the two together hold every seq. Both get the agent's list
// in the Hello.
TEST_F(StreamClientTest, FailsOverToTheNextCollectorAndReplaysTheUnacked) {
  FakeIngestServer second;
  ASSERT_TRUE(server_.Start().ok());
  ASSERT_TRUE(second.Start().ok());
  StreamClient::Options o = BaseOptions();
  o.targets = {server_.target(), second.target()};
  const std::string node = NodeRanking(o.targets, {0, 1});
  o.node = node;
  auto client = MakeClient(o);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->stats().target, server_.target());
  client->Start();
  ReportMaker maker(16);
  for (int i = 0; i < 3; ++i) client->Enqueue(maker.Next());
  ASSERT_TRUE(Eventually([&] { return client->stats().acked == 3; }));

  // Received by the first collector, never acknowledged: still buffered.
  server_.set_withhold_acks(true);
  for (int i = 0; i < 2; ++i) client->Enqueue(maker.Next());
  ASSERT_TRUE(server_.WaitFor(node, [](const FakeIngestServer::Node& n) {
    return n.report_seqs.size() >= 5;
  }));
  server_.Stop();
  for (int i = 0; i < 5; ++i) client->Enqueue(maker.Next());

  ASSERT_TRUE(second.WaitFor(node, [](const FakeIngestServer::Node& n) {
    return n.report_seqs.size() >= 7;
  }));
  ASSERT_TRUE(Eventually([&] { return client->stats().buffered == 0; }));
  const FakeIngestServer::Node b = second.node(node);
  // Everything the first did not acknowledge, in order, each once.
  EXPECT_EQ(b.report_seqs, Range(4, 10));
  EXPECT_EQ(b.reports_without_schema, 0);
  ASSERT_FALSE(b.hellos.empty());
  EXPECT_EQ(b.hellos[0].boot_id(), client->boot_id());
  EXPECT_THAT(b.hellos[0].collectors(),
              ElementsAre(server_.target(), second.target()));
  // What the first acknowledged: the second holds none of it, and need not
  // count 1 to 3 as lost.
  EXPECT_EQ(b.hellos[0].acked_seq(), 3u);
  EXPECT_EQ(server_.node(node).report_seqs, Range(1, 5));
  const StreamClient::Stats st = client->stats();
  EXPECT_EQ(st.target, second.target());
  EXPECT_EQ(st.failovers, 1u);
  EXPECT_EQ(st.dropped, 0u);
  EXPECT_THAT(st.last_error, HasSubstr(server_.target()));
  client->Stop();
}

// A Handoff naming a target moves the agent at once to that collector (not
// the next of its ranking), replaying what the first did not acknowledge;
// it is counted as a handoff, not a failover, and the collector between
// them gets nothing.
TEST_F(StreamClientTest, AHandoffMovesToItsTargetAndReplays) {
  FakeIngestServer second;
  FakeIngestServer third;
  ASSERT_TRUE(server_.Start().ok());
  ASSERT_TRUE(second.Start().ok());
  ASSERT_TRUE(third.Start().ok());
  StreamClient::Options o = BaseOptions();
  o.targets = {server_.target(), second.target(), third.target()};
  const std::string node = NodeRanking(o.targets, {0, 1, 2});
  o.node = node;
  auto client = MakeClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  ReportMaker maker(16);
  for (int i = 0; i < 3; ++i) client->Enqueue(maker.Next());
  ASSERT_TRUE(Eventually([&] { return client->stats().acked == 3; }));
  server_.set_withhold_acks(true);
  for (int i = 0; i < 2; ++i) client->Enqueue(maker.Next());
  ASSERT_TRUE(server_.WaitFor(node, [](const FakeIngestServer::Node& n) {
    return n.report_seqs.size() >= 5;
  }));
  server_.set_hand_off_target(third.target());
  server_.set_hand_off(true);
  client->Enqueue(maker.Next());

  ASSERT_TRUE(third.WaitFor(node, [](const FakeIngestServer::Node& n) {
    return n.report_seqs.size() >= 3;
  }));
  ASSERT_TRUE(Eventually([&] { return client->stats().buffered == 0; }));
  EXPECT_EQ(third.node(node).report_seqs, Range(4, 6));
  EXPECT_EQ(third.node(node).reports_without_schema, 0);
  EXPECT_EQ(second.node(node).streams, 0);
  const StreamClient::Stats st = client->stats();
  EXPECT_EQ(st.target, third.target());
  EXPECT_EQ(st.handoffs, 1u);
  EXPECT_EQ(st.failovers, 0u);
  EXPECT_EQ(st.dropped, 0u);
  client->Stop();
}

// A Handoff without a target, or naming a collector the agent does not
// list (or the one handing off), moves it to the next of its ranking.
TEST_F(StreamClientTest, AHandoffWithoutAUsableTargetMovesDownTheRanking) {
  for (const std::string& target :
       {std::string(""), std::string("elsewhere:9811"), std::string("self")}) {
    FakeIngestServer first;
    FakeIngestServer second;
    FakeIngestServer third;
    ASSERT_TRUE(first.Start().ok());
    ASSERT_TRUE(second.Start().ok());
    ASSERT_TRUE(third.Start().ok());
    StreamClient::Options o = BaseOptions();
    o.targets = {first.target(), second.target(), third.target()};
    // Ranked third, first, second: the next after the first is the second.
    o.node = NodeRanking(o.targets, {2, 0, 1});
    third.set_hand_off_target(target == "self" ? third.target() : target);
    third.set_hand_off(true);
    auto client = MakeClient(o);
    ASSERT_NE(client, nullptr);
    client->Start();
    // Connected counts the Handoff itself as an answer: wait for the first.
    EXPECT_TRUE(Eventually([&] {
      const StreamClient::Stats st = client->stats();
      return st.connected && st.target == first.target();
    })) << target;
    EXPECT_EQ(client->stats().handoffs, 1u) << target;
    EXPECT_EQ(second.node(o.node).streams, 0) << target;
    client->Stop();
  }
}

// Two collectors that hand the agent to each other at every Hello (ours
// never do) cannot make it reconnect every backoff_initial: a hand-off
// within a minute of the last waits the growing backoff. Once one of them
// takes the agent, it streams there.
TEST_F(StreamClientTest, CollectorsBouncingTheAgentMeetTheGrowingBackoff) {
  FakeIngestServer second;
  ASSERT_TRUE(server_.Start().ok());
  ASSERT_TRUE(second.Start().ok());
  server_.set_hand_off(true);
  second.set_hand_off(true);
  StreamClient::Options o = BaseOptions();
  o.targets = {server_.target(), second.target()};
  o.backoff_max = absl::Seconds(2);
  auto client = MakeClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  // 10, 20, 40, ... 640 ms: 7 moves in 1.5 s at most; at 10 ms each, with
  // the backoff started over at every hand-off, over a hundred.
  absl::SleepFor(absl::Milliseconds(1500));
  const uint64_t moves = client->stats().handoffs;
  EXPECT_GE(moves, 3u);
  EXPECT_LE(moves, 8u);
  EXPECT_EQ(client->stats().failovers, 0u);

  server_.set_hand_off(false);
  second.set_hand_off(false);
  ReportMaker maker(8);
  client->Enqueue(maker.Next());
  EXPECT_TRUE(
      Eventually([&] { return client->stats().acked == 1; }, absl::Seconds(5)));
  client->Stop();
}

// The preferred collector returning does not pull the agent back: it stays
// where it streams until that stream ends.
// The weights a collector sends with the Hello's Ack re-rank the list:
// when that collector dies the agent goes to its weighted second choice,
// not its unweighted one (which the collectors would not place it on).
TEST_F(StreamClientTest, FailsOverToItsWeightedSecondChoice) {
  FakeIngestServer second;
  FakeIngestServer third;
  ASSERT_TRUE(server_.Start().ok());
  ASSERT_TRUE(second.Start().ok());
  ASSERT_TRUE(third.Start().ok());
  StreamClient::Options o = BaseOptions();
  o.targets = {server_.target(), second.target(), third.target()};
  // Ranked 0, 1, 2; with entry 1 weighing 1/1000, 0, 2, 1.
  std::string node;
  for (int i = 0; node.empty() && i < 100000; ++i) {
    const std::string name = absl::StrCat("gpu-", i);
    if (client::RankCollectors(name, o.targets) ==
            std::vector<size_t>{0, 1, 2} &&
        client::RankCollectors(name, o.targets, {1, 0.001, 1}) ==
            std::vector<size_t>{0, 2, 1}) {
      node = name;
    }
  }
  ASSERT_FALSE(node.empty());
  o.node = node;
  v1::CollectorWeights weights;
  v1::CollectorWeight* light = weights.add_entries();
  light->set_entry(second.target());
  light->set_weight(0.001);
  server_.set_hello_weights(weights);
  auto client = MakeClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  ASSERT_TRUE(Eventually([&] { return client->stats().connected; }));
  ASSERT_EQ(client->stats().target, server_.target());
  server_.Stop();
  EXPECT_TRUE(Eventually([&] {
    const StreamClient::Stats st = client->stats();
    return st.connected && st.target == third.target();
  }));
  EXPECT_EQ(second.node(o.node).streams, 0);
  EXPECT_EQ(client->stats().failovers, 1u);
  client->Stop();
}

TEST_F(StreamClientTest, StaysOnTheNewCollectorWhenTheFirstReturns) {
  FakeIngestServer second;
  ASSERT_TRUE(server_.Start().ok());
  ASSERT_TRUE(second.Start().ok());
  StreamClient::Options o = BaseOptions();
  o.targets = {server_.target(), second.target()};
  const std::string node = NodeRanking(o.targets, {0, 1});
  o.node = node;
  auto client = MakeClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  ReportMaker maker(8);
  client->Enqueue(maker.Next());
  ASSERT_TRUE(server_.WaitFor(node, [](const FakeIngestServer::Node& n) {
    return !n.report_seqs.empty();
  }));
  server_.Stop();
  client->Enqueue(maker.Next());
  ASSERT_TRUE(second.WaitFor(node, [](const FakeIngestServer::Node& n) {
    return !n.report_seqs.empty();
  }));
  ASSERT_TRUE(server_.Restart().ok());
  for (int i = 0; i < 5; ++i) client->Enqueue(maker.Next());
  ASSERT_TRUE(second.WaitFor(node, [](const FakeIngestServer::Node& n) {
    return n.report_seqs.size() >= 6;
  }));
  // The client only moves when a stream ends: the second's stream never
  // did, and the first got nothing after seq 1.
  EXPECT_EQ(server_.node(node).report_seqs, Range(1, 1));
  EXPECT_EQ(second.node(node).streams, 1);
  EXPECT_EQ(client->stats().failovers, 1u);
  EXPECT_EQ(client->stats().target, second.target());
  client->Stop();
}

// Targets are tried in the node's ranking, wrapping around, whatever their
// order in the list: the number of moves before the live one is reached
// shows the order.
TEST_F(StreamClientTest, TriesTheTargetsDownItsRankingAndWraps) {
  FakeIngestServer dead0;
  FakeIngestServer dead1;
  ASSERT_TRUE(dead0.Start().ok());
  ASSERT_TRUE(dead1.Start().ok());
  dead0.Stop();  // their ports now refuse connections
  dead1.Stop();
  ASSERT_TRUE(server_.Start().ok());
  struct Case {
    std::vector<std::string> targets;
    std::vector<size_t> ranking;
    uint64_t failovers;
  };
  const std::vector<Case> cases = {
      {{dead0.target(), dead1.target(), server_.target()}, {0, 1, 2}, 2},
      {{dead0.target(), dead1.target(), server_.target()}, {1, 2, 0}, 1},
      {{dead0.target(), dead1.target(), server_.target()}, {2, 0, 1}, 0},
      {{dead0.target(), dead1.target(), server_.target()}, {1, 0, 2}, 2},
      {{server_.target(), dead0.target(), dead1.target()}, {1, 2, 0}, 2},
  };
  for (const Case& c : cases) {
    StreamClient::Options o = BaseOptions();
    o.targets = c.targets;
    o.node = NodeRanking(c.targets, c.ranking);
    auto client = MakeClient(o);
    ASSERT_NE(client, nullptr);
    client->Start();
    ASSERT_TRUE(Eventually([&] { return client->stats().connected; }))
        << o.node;
    EXPECT_EQ(client->stats().target, server_.target());
    EXPECT_EQ(client->stats().failovers, c.failovers) << o.node;
    client->Stop();
  }
}

TEST_F(StreamClientTest, ValidateRejectsAFirstTargetOutOfRange) {
  StreamClient::Options o;
  o.targets = {"c0:9811", "c1:9811"};
  o.node = kNode;
  o.first_target = 1;
  EXPECT_TRUE(StreamClient::Validate(o).ok());
  o.first_target = 2;
  EXPECT_THAT(std::string(StreamClient::Validate(o).message()),
              HasSubstr("out of range"));
  o.first_target = 0;
  o.targets = {"c0:9811", ""};
  EXPECT_FALSE(StreamClient::Validate(o).ok());
}

TEST_F(StreamClientTest, OverflowDuringOutageDropsOldestButKeepsTheirSchema) {
  ASSERT_TRUE(server_.Start().ok());
  StreamClient::Options o = BaseOptions();
  o.buffer.max_reports = 5;
  auto client = MakeClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  ASSERT_TRUE(Eventually([&] { return client->stats().connected; }));
  server_.Stop();

  ReportMaker maker(8);
  // Report 1 carries the only schema; it is dropped, the schema must not be.
  for (int i = 0; i < 12; ++i) client->Enqueue(maker.Next());
  StreamClient::Stats st = client->stats();
  EXPECT_EQ(st.buffered, 5u);
  EXPECT_EQ(st.dropped, 7u);

  ASSERT_TRUE(server_.Restart().ok());
  ASSERT_TRUE(WaitForSeqs(Range(8, 12)));
  FakeIngestServer::Node n = server_.node(kNode);
  EXPECT_EQ(n.report_seqs, Range(8, 12));  // the gap 1..7 shows the loss
  EXPECT_EQ(n.reports_without_schema, 0);
  EXPECT_EQ(n.schemas.count(1), 1u);
  client->Stop();
}

TEST_F(StreamClientTest, WithheldAcksKeepReportsBufferedUntilAcked) {
  ASSERT_TRUE(server_.Start().ok());
  server_.set_withhold_acks(true);
  auto client = MakeClient(BaseOptions());
  ASSERT_NE(client, nullptr);
  client->Start();
  ReportMaker maker(4);
  for (int i = 0; i < 4; ++i) client->Enqueue(maker.Next());
  ASSERT_TRUE(WaitForSeqs(Range(1, 4)));
  EXPECT_EQ(client->stats().acked, 0u);
  EXPECT_EQ(client->stats().buffered, 4u);

  server_.set_withhold_acks(false);
  client->Enqueue(maker.Next());  // its Ack covers everything before it
  ASSERT_TRUE(Eventually([&] { return client->stats().acked == 5; }));
  EXPECT_EQ(client->stats().buffered, 0u);
  EXPECT_EQ(server_.node(kNode).report_seqs, Range(1, 5));
  client->Stop();
}

TEST_F(StreamClientTest, NewSchemaMidStreamPrecedesItsReports) {
  ASSERT_TRUE(server_.Start().ok());
  auto client = MakeClient(BaseOptions());
  ASSERT_NE(client, nullptr);
  client->Start();
  ReportMaker maker(4);
  client->Enqueue(maker.Next());
  client->Enqueue(maker.Next());
  maker.set_series(6);  // a NIC appeared
  client->Enqueue(maker.Next());
  client->Enqueue(maker.Next());
  ASSERT_TRUE(WaitForSeqs(Range(1, 4)));
  FakeIngestServer::Node n = server_.node(kNode);
  EXPECT_EQ(n.reports_without_schema, 0);
  ASSERT_EQ(n.schemas.size(), 2u);
  EXPECT_EQ(n.schemas[2].series_size(), 6);
  std::vector<uint64_t> schema_of_report;
  for (const v1::AgentMessage& m : n.messages) {
    if (m.has_report()) schema_of_report.push_back(m.report().schema_id());
  }
  EXPECT_THAT(schema_of_report, ElementsAre(1, 1, 2, 2));
  client->Stop();
}

TEST_F(StreamClientTest, StopIsPromptWhenTheCollectorNeverAnswers) {
  // A socket that accepts TCP (the kernel completes the handshake) but never
  // speaks HTTP/2: the call hangs in "connecting" until cancelled.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 16), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);

  StreamClient::Options o = BaseOptions();
  o.targets = {absl::StrCat("127.0.0.1:", ntohs(addr.sin_port))};
  auto client = MakeClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  ReportMaker maker(4);
  client->Enqueue(maker.Next());
  EXPECT_TRUE(ReturnsWithin([&] { client->Stop(); }, absl::Seconds(10)));
  EXPECT_FALSE(client->stats().connected);
  close(fd);
}

TEST_F(StreamClientTest, StopIsPromptDuringALongBackoff) {
  ASSERT_TRUE(server_.Start().ok());
  server_.Stop();  // nothing listens: every attempt fails at once
  StreamClient::Options o = BaseOptions();
  o.backoff_initial = absl::Hours(1);
  o.backoff_max = absl::Hours(1);
  auto client = MakeClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  ASSERT_TRUE(Eventually([&] { return client->stats().reconnects == 1; }));
  EXPECT_THAT(client->stats().last_error, HasSubstr(server_.target()));
  EXPECT_TRUE(ReturnsWithin([&] { client->Stop(); }, absl::Seconds(10)));
}

TEST_F(StreamClientTest, EnqueueNeverWaitsForAStalledCollector) {
  ASSERT_TRUE(server_.Start().ok());
  // The collector accepts the stream but never reads it: HTTP/2 flow control
  // soon blocks the writer. Were Enqueue to write to the network, this
  // thread would block forever in the loop below.
  server_.set_stall(true);
  StreamClient::Options o = BaseOptions();
  o.buffer.max_reports = 600;
  auto client = MakeClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  ReportMaker maker(1000);  // ~10 KB per report, 20 MB in all
  for (int i = 0; i < 2000; ++i) client->Enqueue(maker.Next());
  StreamClient::Stats st = client->stats();
  EXPECT_EQ(st.buffered, 600u);
  EXPECT_EQ(st.dropped, 1400u);
  EXPECT_EQ(st.acked, 0u);
  // The writer may be stuck in a flow-controlled Write; Stop cancels it.
  EXPECT_TRUE(ReturnsWithin([&] { client->Stop(); }, absl::Seconds(10)));
  server_.set_stall(false);
}

// Certificates for one test, made by the openssl CLI in a temporary dir.
class TestPki {
 public:
  TestPki() {
    std::string tmpl = ::testing::TempDir() + "/stream_pki_XXXXXX";
    char* made = mkdtemp(tmpl.data());
    if (made == nullptr) return;
    dir_ = made;
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1";
    std::ofstream(dir_ + "/server.ext")
        << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    std::ofstream(dir_ + "/client.ext") << "extendedKeyUsage=clientAuth\n";
    std::ostringstream script;
    script << "(cd '" << dir_ << "' && "
           << "openssl req -x509 " << ec
           << " -nodes -keyout ca.key -out ca.pem -days 2 -subj '/CN=test CA'"
           << " && openssl req " << ec
           << " -nodes -keyout server.key -out server.csr -subj /CN=localhost"
           << " && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key"
           << " -CAcreateserial -out server.pem -days 2 -extfile server.ext"
           << " && openssl req " << ec
           << " -nodes -keyout client.key -out client.csr -subj /CN=gpu-001"
           << " && openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key"
           << " -CAcreateserial -out client.pem -days 2 -extfile client.ext"
           << ") >/dev/null 2>&1";
    ok_ = std::system(script.str().c_str()) == 0;
  }
  ~TestPki() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  bool ok() const { return ok_; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string Read(const std::string& name) const {
    std::ifstream in(path(name));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string dir_;
  bool ok_ = false;
};

class StreamClientTlsTest : public StreamClientTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pki_.ok()) << "openssl could not create test certificates";
    FakeIngestServer::Tls tls;
    tls.cert_pem = pki_.Read("server.pem");
    tls.key_pem = pki_.Read("server.key");
    tls.client_ca_pem = pki_.Read("ca.pem");
    tls.require_client_cert = true;
    ASSERT_TRUE(server_.Start(0, tls).ok());
  }

  StreamClient::Options TlsOptions() const {
    StreamClient::Options o = BaseOptions();
    o.tls.ca = pki_.path("ca.pem");
    o.tls.server_name = "localhost";
    return o;
  }

  TestPki pki_;
};

TEST_F(StreamClientTlsTest, MutualTlsDeliversReports) {
  StreamClient::Options o = TlsOptions();
  o.tls.cert = pki_.path("client.pem");
  o.tls.key = pki_.path("client.key");
  auto client = MakeClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  ReportMaker maker(4);
  for (int i = 0; i < 3; ++i) client->Enqueue(maker.Next());
  ASSERT_TRUE(WaitForSeqs(Range(1, 3)));
  EXPECT_EQ(server_.node(kNode).report_seqs, Range(1, 3));
  ASSERT_TRUE(Eventually([&] { return client->stats().acked == 3; }));
  client->Stop();
}

TEST_F(StreamClientTlsTest, ClientWithoutCertificateIsRefused) {
  auto client = MakeClient(TlsOptions());  // trusts the CA, has no cert
  ASSERT_NE(client, nullptr);
  client->Start();
  ReportMaker maker(4);
  client->Enqueue(maker.Next());
  ASSERT_TRUE(Eventually([&] { return client->stats().reconnects >= 2; }));
  StreamClient::Stats st = client->stats();
  EXPECT_FALSE(st.connected);
  EXPECT_EQ(st.acked, 0u);
  EXPECT_EQ(st.buffered, 1u);
  EXPECT_FALSE(st.last_error.empty());
  EXPECT_TRUE(server_.node(kNode).report_seqs.empty());
  EXPECT_EQ(server_.node(kNode).streams, 0);
  client->Stop();
}

TEST_F(StreamClientTlsTest, PlaintextClientIsRefused) {
  auto client = MakeClient(BaseOptions());
  ASSERT_NE(client, nullptr);
  client->Start();
  ReportMaker maker(4);
  client->Enqueue(maker.Next());
  ASSERT_TRUE(Eventually([&] { return client->stats().reconnects >= 2; }));
  EXPECT_EQ(client->stats().acked, 0u);
  EXPECT_EQ(server_.node(kNode).streams, 0);
  client->Stop();
}

}  // namespace
}  // namespace fabricdiag::agent
