#include "collector/ingest/ingest_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "collector/declared/node_facts_memory.h"
#include "collector/ingest/cut_off_placement.h"
#include "common/clock.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

constexpr int kSeries = 4;

v1::AgentMessage Hello(const std::string& node = "gpu-001",
                       const std::string& boot = "boot-1") {
  v1::AgentMessage m;
  m.mutable_hello()->set_node(node);
  m.mutable_hello()->set_boot_id(boot);
  m.mutable_hello()->set_interval_ms(1000);
  return m;
}

v1::AgentMessage Schema(uint64_t id = 1, int n = kSeries) {
  v1::AgentMessage m;
  v1::Schema* s = m.mutable_schema();
  s->set_schema_id(id);
  for (int i = 0; i < n; ++i) {
    v1::Series* series = s->add_series();
    series->set_subsystem(v1::SUBSYSTEM_RDMA_PORT_COUNTERS);
    series->set_device("mlx5_0");
    series->set_port(1);
    series->set_name(absl::StrCat("counter_", i));
  }
  return m;
}

// A valid report of `n` series: rate i = seq * 10 + i, except series 1,
// which has no rate.
v1::AgentMessage Report(uint64_t seq, uint64_t schema = 1, int n = kSeries) {
  v1::AgentMessage m;
  v1::Report* r = m.mutable_report();
  r->set_seq(seq);
  r->set_schema_id(schema);
  r->set_wall_time_unix_nanos(static_cast<int64_t>(seq) * 1'000'000'000);
  for (int i = 0; i < n; ++i) {
    r->add_raw(static_cast<uint64_t>(i));
    if (i == 1) {
      r->add_no_rate(1);
    } else {
      r->add_rate(static_cast<double>(seq * 10 + static_cast<uint64_t>(i)));
    }
  }
  return m;
}

SeriesKey Key(int i) {
  return {v1::SUBSYSTEM_RDMA_PORT_COUNTERS, "mlx5_0", 1,
          absl::StrCat("counter_", i)};
}

class IngestSessionTest : public ::testing::Test {
 protected:
  // Feeds Hello + Schema; both must be accepted.
  void Open(IngestSession& s) {
    IngestSession::Reply r = s.Handle(Hello());
    ASSERT_FALSE(r.reject.has_value()) << *r.reject;
    ASSERT_TRUE(r.ack.has_value());
    r = s.Handle(Schema());
    ASSERT_FALSE(r.reject.has_value()) << *r.reject;
  }

  // Expects `m` to reject an open session for `reason`, storing nothing.
  void ExpectRejected(const v1::AgentMessage& m, RejectReason reason,
                      bool open = true) {
    IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
    if (open) Open(s);
    const uint64_t reports = counters_.reports.load();
    IngestSession::Reply r = s.Handle(m);
    ASSERT_TRUE(r.reject.has_value()) << "not rejected";
    EXPECT_THAT(*r.reject, HasSubstr(RejectReasonName(reason)));
    EXPECT_EQ(counters_.rejects(reason), 1u);
    EXPECT_TRUE(s.rejected());
    EXPECT_EQ(counters_.reports.load(), reports);
    // Everything after a reject is ignored.
    IngestSession::Reply after = s.Handle(Report(1));
    EXPECT_FALSE(after.ack.has_value());
    EXPECT_FALSE(after.reject.has_value());
    EXPECT_EQ(counters_.reports.load(), reports);
  }

  FakeClock clock_;
  SeriesStore store_{SeriesStore::Options{}, clock_};
  IngestCounters counters_;
  KeepEveryAgent keep_every_agent_;  // one collector
  MemoryNodeFacts facts_;
  NoDeclaredSwitches no_switches_;
  NodeFactsIntake intake_{facts_, no_switches_};
};

TEST_F(IngestSessionTest, StoresReportsAndAcksHighestSeq) {
  IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
  EXPECT_THAT(s.Handle(Hello()).ack, Optional(0u));
  EXPECT_FALSE(s.Handle(Schema()).ack.has_value());
  EXPECT_THAT(s.Handle(Report(1)).ack, Optional(1u));
  EXPECT_THAT(s.Handle(Report(2)).ack, Optional(2u));
  EXPECT_EQ(store_.Latest("gpu-001", Key(3))->rate, 23);
  EXPECT_EQ(store_.Latest("gpu-001", Key(0))->rate, 20);
  EXPECT_EQ(counters_.reports.load(), 2u);
  EXPECT_EQ(counters_.values.load(), 2u * kSeries);
  EXPECT_EQ(s.node(), "gpu-001");
}

TEST_F(IngestSessionTest, ReplayAfterReconnectIsDeduplicated) {
  {
    IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
    Open(s);
    for (uint64_t seq = 1; seq <= 3; ++seq) s.Handle(Report(seq));
  }
  IngestSession again(&store_, &counters_, keep_every_agent_, intake_);
  // The Hello ack tells the agent what is already held.
  EXPECT_THAT(again.Handle(Hello()).ack, Optional(3u));
  again.Handle(Schema());
  EXPECT_THAT(again.Handle(Report(2)).ack, Optional(3u));
  EXPECT_THAT(again.Handle(Report(3)).ack, Optional(3u));
  EXPECT_THAT(again.Handle(Report(4)).ack, Optional(4u));
  EXPECT_EQ(counters_.duplicates.load(), 2u);
  EXPECT_EQ(counters_.reports.load(), 4u);
  auto window = *store_.Window("gpu-001", Key(0), absl::InfinitePast());
  ASSERT_EQ(window.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(window[i].seq, i + 1);
}

TEST_F(IngestSessionTest, SeqGapIsCountedAsDroppedReports) {
  IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
  Open(s);
  s.Handle(Report(1));
  s.Handle(Report(5));
  EXPECT_EQ(store_.FindNode("gpu-001")->Info().missing_reports, 3u);
}

// Back from another collector of a cluster, which acknowledged 3 to 6:
// the agent's Hello says so, and those are no gap here.
TEST_F(IngestSessionTest, ReportsAnotherCollectorAcknowledgedAreNoGap) {
  {
    IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
    Open(s);
    for (uint64_t seq = 1; seq <= 2; ++seq) s.Handle(Report(seq));
  }
  IngestSession again(&store_, &counters_, keep_every_agent_, intake_);
  v1::AgentMessage hello = Hello();
  hello.mutable_hello()->set_acked_seq(6);
  EXPECT_THAT(again.Handle(hello).ack, Optional(2u));
  again.Handle(Schema());
  EXPECT_THAT(again.Handle(Report(7)).ack, Optional(7u));
  EXPECT_EQ(store_.FindNode("gpu-001")->Info().missing_reports, 0u);
  again.Handle(Report(9));
  EXPECT_EQ(store_.FindNode("gpu-001")->Info().missing_reports, 1u);
}

TEST_F(IngestSessionTest, NewBootIdStartsFreshSeqSpace) {
  {
    IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
    Open(s);
    for (uint64_t seq = 1; seq <= 5; ++seq) s.Handle(Report(seq));
  }
  IngestSession restarted(&store_, &counters_, keep_every_agent_, intake_);
  EXPECT_THAT(restarted.Handle(Hello("gpu-001", "boot-2")).ack, Optional(0u));
  restarted.Handle(Schema());
  EXPECT_THAT(restarted.Handle(Report(1)).ack, Optional(1u));
  EXPECT_EQ(counters_.duplicates.load(), 0u);
  EXPECT_EQ(store_.Latest("gpu-001", Key(0))->rate, 10);
}

TEST_F(IngestSessionTest, ReportBeforeHello) {
  ExpectRejected(Report(1), RejectReason::kBeforeHello, /*open=*/false);
}

TEST_F(IngestSessionTest, SchemaBeforeHello) {
  ExpectRejected(Schema(), RejectReason::kBeforeHello, /*open=*/false);
}

TEST_F(IngestSessionTest, SecondHello) {
  ExpectRejected(Hello(), RejectReason::kSecondHello);
}

TEST_F(IngestSessionTest, EmptyMessage) {
  ExpectRejected(v1::AgentMessage(), RejectReason::kEmptyMessage);
}

// The report field sits outside the oneof (see ingest.proto): a message
// that carries a report and another message is refused, not half-read.
TEST_F(IngestSessionTest, ReportTogetherWithAnotherMessage) {
  v1::AgentMessage m = Report(1);
  *m.mutable_schema() = Schema().schema();
  ExpectRejected(m, RejectReason::kMixedMessage);
}

// Parsing stream after stream into one message object keeps the report's
// arrays: the receive path allocates nothing per report.
TEST(AgentMessageTest, ParsingAgainKeepsTheReportArrays) {
  v1::AgentMessage sent;
  for (int i = 0; i < 1000; ++i) {
    sent.mutable_report()->add_raw(static_cast<uint64_t>(i));
    sent.mutable_report()->add_rate(i);
  }
  const std::string wire = sent.SerializeAsString();
  v1::AgentMessage in;
  ASSERT_TRUE(in.ParseFromString(wire));
  const void* raw = in.report().raw().data();
  const void* rate = in.report().rate().data();
  v1::AgentMessage hello;
  hello.mutable_hello()->set_node("gpu-1");
  ASSERT_TRUE(in.ParseFromString(hello.SerializeAsString()));
  EXPECT_FALSE(in.has_report());
  ASSERT_TRUE(in.ParseFromString(wire));
  EXPECT_EQ(in.report().raw().data(), raw);
  EXPECT_EQ(in.report().rate().data(), rate);
  EXPECT_EQ(in.report().rate(999), 999);
}

TEST_F(IngestSessionTest, UnknownSchema) {
  ExpectRejected(Report(1, /*schema=*/7), RejectReason::kUnknownSchema);
}

TEST_F(IngestSessionTest, RawSizeMismatch) {
  v1::AgentMessage m = Report(1);
  m.mutable_report()->add_raw(1);
  ExpectRejected(m, RejectReason::kSizeMismatch);
}

TEST_F(IngestSessionTest, RateSizeMismatch) {
  v1::AgentMessage m = Report(1);
  m.mutable_report()->add_rate(1);
  ExpectRejected(m, RejectReason::kSizeMismatch);
}

TEST_F(IngestSessionTest, TooFewRates) {
  v1::AgentMessage m = Report(1);
  m.mutable_report()->mutable_rate()->RemoveLast();
  ExpectRejected(m, RejectReason::kSizeMismatch);
}

TEST_F(IngestSessionTest, NoRateIndexOutOfRange) {
  v1::AgentMessage m = Report(1);
  m.mutable_report()->mutable_no_rate()->Set(0, kSeries);
  ExpectRejected(m, RejectReason::kIndexOutOfRange);
}

TEST_F(IngestSessionTest, NoRateIndicesNotAscending) {
  v1::AgentMessage m = Report(1);
  m.mutable_report()->add_no_rate(0);  // 1, 0
  m.mutable_report()->mutable_rate()->RemoveLast();
  ExpectRejected(m, RejectReason::kIndexOutOfRange);
}

TEST_F(IngestSessionTest, OtherIndexListsOutOfRange) {
  for (const char* field : {"absent", "reset", "saturated", "wrapped"}) {
    SCOPED_TRACE(field);
    v1::AgentMessage m = Report(1);
    v1::Report* r = m.mutable_report();
    const google::protobuf::FieldDescriptor* f =
        r->GetDescriptor()->FindFieldByName(field);
    r->GetReflection()->AddUInt32(r, f, 1u << 31);
    IngestCounters counters;
    IngestSession s(&store_, &counters, keep_every_agent_, intake_);
    s.Handle(Hello("gpu-x"));
    s.Handle(Schema());
    IngestSession::Reply reply = s.Handle(m);
    ASSERT_TRUE(reply.reject.has_value());
    EXPECT_THAT(*reply.reject, HasSubstr(field));
    EXPECT_EQ(counters.rejects(RejectReason::kIndexOutOfRange), 1u);
  }
}

TEST_F(IngestSessionTest, NaNRate) {
  v1::AgentMessage m = Report(1);
  m.mutable_report()->set_rate(0, std::nan(""));
  ExpectRejected(m, RejectReason::kNonFiniteRate);
}

TEST_F(IngestSessionTest, InfiniteRate) {
  v1::AgentMessage m = Report(1);
  m.mutable_report()->set_rate(2, -std::numeric_limits<double>::infinity());
  ExpectRejected(m, RejectReason::kNonFiniteRate);
}

TEST_F(IngestSessionTest, RejectedReportStoresNothingEvenPartially) {
  IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
  Open(s);
  v1::AgentMessage m = Report(1);
  m.mutable_report()->set_rate(2, std::nan(""));  // the last rate is bad
  ASSERT_TRUE(s.Handle(m).reject.has_value());
  EXPECT_EQ(store_.Latest("gpu-001", Key(0)).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(IngestSessionTest, BadNodeNames) {
  const std::string cases[] = {"",         "-gpu",     ".hidden",
                               "gpu 1",    "gpu/../x", "gpu\n1",
                               "gpu{a=1}", "gpü",      std::string(254, 'a')};
  for (const std::string& name : cases) {
    SCOPED_TRACE(name);
    IngestCounters counters;
    IngestSession s(&store_, &counters, keep_every_agent_, intake_);
    IngestSession::Reply r = s.Handle(Hello(name));
    ASSERT_TRUE(r.reject.has_value());
    EXPECT_EQ(counters.rejects(RejectReason::kBadNodeName), 1u);
  }
  EXPECT_TRUE(store_.ListNodes(absl::Seconds(3)).empty());
  EXPECT_TRUE(IsValidNodeName("gpu-001.rack_2"));
  EXPECT_TRUE(IsValidNodeName(std::string(253, 'a')));
}

TEST_F(IngestSessionTest, BadBootId) {
  ExpectRejected(Hello("gpu-001", ""), RejectReason::kBadHello, false);
}

TEST_F(IngestSessionTest, AbsurdSchemaSize) {
  ExpectRejected(Schema(2, IngestSession::kMaxSeries + 1),
                 RejectReason::kTooLarge);
}

TEST_F(IngestSessionTest, SchemaWithDuplicateSeries) {
  v1::AgentMessage m = Schema(2);
  *m.mutable_schema()->add_series() = m.schema().series(0);
  ExpectRejected(m, RejectReason::kBadSchema);
}

TEST_F(IngestSessionTest, SchemaWithHugeName) {
  v1::AgentMessage m = Schema(2);
  m.mutable_schema()->mutable_series(0)->set_name(std::string(100000, 'x'));
  ExpectRejected(m, RejectReason::kBadSchema);
}

TEST_F(IngestSessionTest, TooManySchemas) {
  IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
  Open(s);
  for (uint64_t id = 2; id <= IngestSession::kMaxSchemasPerStream; ++id) {
    ASSERT_FALSE(s.Handle(Schema(id)).reject.has_value()) << id;
  }
  IngestSession::Reply r = s.Handle(Schema(1000));
  ASSERT_TRUE(r.reject.has_value());
  EXPECT_EQ(counters_.rejects(RejectReason::kTooLarge), 1u);
}

TEST_F(IngestSessionTest, SeqZero) {
  ExpectRejected(Report(0), RejectReason::kTooLarge);
}

// An IngestPlacement whose answers the test sets, counting the asks.
class FakePlacement final : public IngestPlacement {
 public:
  uint64_t Epoch() override { return epoch; }
  std::optional<HandoffOrder> HandOff(absl::string_view node,
                                      const std::vector<std::string>& list,
                                      uint64_t streams) override {
    ++asks;
    lists.push_back(list);
    last_streams = streams;
    if (node != hand_off) return std::nullopt;
    return HandoffOrder{"go elsewhere", target};
  }
  CollectorWeights Weights(const std::vector<std::string>& /*list*/) override {
    ++weight_asks;
    return weights;
  }
  void Advertise(const std::string& /*address*/) override {}

  uint64_t epoch = 0;
  CollectorWeights weights;
  int weight_asks = 0;
  std::string hand_off;  // the node handed off
  std::string target;    // its target
  int asks = 0;
  std::vector<std::vector<std::string>> lists;  // asked with
  uint64_t last_streams = 0;
};

// A Hello the placement hands off is answered with the Handoff alone: no
// Ack, the node not opened here, nothing after it handled.
TEST_F(IngestSessionTest, AHelloThePlacementHandsOffOpensNothing) {
  FakePlacement placement;
  placement.epoch = 7;
  placement.hand_off = "gpu-001";
  IngestSession s(&store_, &counters_, placement, intake_);
  IngestSession::Reply r = s.Handle(Hello());
  EXPECT_THAT(r.handoff, Optional(std::string("go elsewhere")));
  EXPECT_FALSE(r.ack.has_value());
  EXPECT_FALSE(r.reject.has_value());
  EXPECT_TRUE(s.handed_off());
  EXPECT_EQ(counters_.handoffs.load(), 1u);
  EXPECT_EQ(counters_.streams.load(), 0u);
  EXPECT_EQ(store_.FindNode("gpu-001"), nullptr);
  IngestSession::Reply after = s.Handle(Schema());
  EXPECT_FALSE(after.ack.has_value() || after.reject.has_value() ||
               after.handoff.has_value());
  // Another node is taken by the same collector.
  IngestSession other(&store_, &counters_, placement, intake_);
  EXPECT_THAT(other.Handle(Hello("gpu-002")).ack, Optional(0u));
}

// While the epoch is 0 (this collector takes everyone) nothing is asked;
// when it moves, the next report is answered with the Handoff and not
// stored (the agent replays it elsewhere), and the node's stream here
// ends; with the epoch unchanged, reports are not asked about again.
TEST_F(IngestSessionTest, AStreamIsHandedOffAtItsNextReportWhenTheEpochMoves) {
  FakePlacement placement;
  placement.hand_off = "gpu-001";
  IngestSession s(&store_, &counters_, placement, intake_);
  Open(s);
  EXPECT_THAT(s.Handle(Report(1)).ack, Optional(1u));
  EXPECT_THAT(s.Handle(Report(2)).ack, Optional(2u));
  EXPECT_EQ(placement.asks, 0);

  placement.epoch = 3;
  IngestSession::Reply r = s.Handle(Report(3));
  EXPECT_THAT(r.handoff, Optional(std::string("go elsewhere")));
  EXPECT_FALSE(r.ack.has_value());
  EXPECT_EQ(counters_.reports.load(), 2u);
  EXPECT_EQ(counters_.handoffs.load(), 1u);
  EXPECT_EQ(placement.asks, 1);
  EXPECT_FALSE(s.Handle(Report(4)).ack.has_value());
  EXPECT_EQ(counters_.reports.load(), 2u);
  // The node's facts say its agent is on its way, as of the hand-off.
  const std::shared_ptr<NodeSeries> node = store_.FindNode("gpu-001");
  ASSERT_NE(node, nullptr);
  // On the store's clock, the one its reports arrive by.
  EXPECT_EQ(node->StateForView().handed_off, clock_.Now());
  EXPECT_EQ(node->StateForView().last_report, clock_.Now());
  // The agent may come back here (taken back): its stream is not a
  // duplicate of the one that was handed off, and once it reports here
  // again it is no longer on its way.
  placement.hand_off.clear();
  IngestSession back(&store_, &counters_, placement, intake_);
  EXPECT_THAT(back.Handle(Hello("gpu-001", "boot-1")).ack, Optional(2u));
  clock_.Advance(absl::Seconds(1));
  back.Handle(Schema());
  EXPECT_THAT(back.Handle(Report(3)).ack, Optional(3u));
  EXPECT_EQ(node->StateForView().handed_off, absl::InfinitePast());

  // A node the placement keeps is asked once per epoch, not per report.
  FakePlacement keep;
  keep.epoch = 5;
  IngestSession kept(&store_, &counters_, keep, intake_);
  ASSERT_FALSE(kept.Handle(Hello("gpu-009")).handoff.has_value());
  kept.Handle(Schema());
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    EXPECT_THAT(kept.Handle(Report(seq)).ack, Optional(seq));
  }
  EXPECT_EQ(keep.asks, 1);
  keep.epoch = 6;
  EXPECT_THAT(kept.Handle(Report(4)).ack, Optional(4u));
  EXPECT_EQ(keep.asks, 2);
}

// A collector cut off from NATS for longer than its limit ends its open
// streams at their next report and refuses new ones, with a Handoff that
// names no target (the agent picks another collector), counted as
// refusals; connected again, it takes agents as before.
TEST_F(IngestSessionTest, ACutOffCollectorHandsItsAgentsToNoOneInParticular) {
  KeepEveryAgent inner;
  absl::Duration cut_off = absl::ZeroDuration();
  HandOffWhileCutOff placement(
      inner, [&cut_off] { return cut_off; }, absl::Seconds(3));
  IngestSession s(&store_, &counters_, placement, intake_);
  Open(s);
  EXPECT_THAT(s.Handle(Report(1)).ack, Optional(1u));
  cut_off = absl::Seconds(3);  // not longer than the limit yet
  EXPECT_THAT(s.Handle(Report(2)).ack, Optional(2u));

  cut_off = absl::Seconds(4);
  IngestSession::Reply r = s.Handle(Report(3));
  ASSERT_TRUE(r.handoff.has_value());
  EXPECT_THAT(*r.handoff, HasSubstr("cut off from NATS for 4s"));
  EXPECT_EQ(r.handoff_target, "");
  EXPECT_FALSE(r.ack.has_value());
  EXPECT_EQ(counters_.refused_nats_disconnected.load(), 1u);
  EXPECT_EQ(counters_.handbacks.load(), 0u);
  EXPECT_EQ(counters_.reports.load(), 2u);
  IngestSession refused(&store_, &counters_, placement, intake_);
  EXPECT_TRUE(refused.Handle(Hello("gpu-002")).handoff.has_value());
  EXPECT_EQ(counters_.refused_nats_disconnected.load(), 2u);
  EXPECT_EQ(store_.FindNode("gpu-002"), nullptr);

  cut_off = absl::ZeroDuration();
  IngestSession back(&store_, &counters_, placement, intake_);
  EXPECT_THAT(back.Handle(Hello("gpu-002")).ack, Optional(0u));
  EXPECT_EQ(counters_.refused_nats_disconnected.load(), 2u);
}

// A cut-off collector's open streams leave a few at a time: with two
// streams the budget is one a second, so the second stream stays (and is
// acknowledged) until the next second of the outage, when the epoch moves
// and it asks again.
TEST_F(IngestSessionTest, ACutOffCollectorsStreamsLeaveOneSecondAfterAnother) {
  KeepEveryAgent inner;
  absl::Duration cut_off = absl::ZeroDuration();
  HandOffWhileCutOff placement(
      inner, [&cut_off] { return cut_off; }, absl::Seconds(3));
  IngestSession first(&store_, &counters_, placement, intake_);
  IngestSession second(&store_, &counters_, placement, intake_);
  for (auto [s, node] :
       {std::pair{&first, "gpu-001"}, std::pair{&second, "gpu-002"}}) {
    ASSERT_TRUE(s->Handle(Hello(node)).ack.has_value());
    ASSERT_FALSE(s->Handle(Schema()).reject.has_value());
  }
  cut_off = absl::Seconds(4);
  EXPECT_TRUE(first.Handle(Report(1)).handoff.has_value());
  EXPECT_THAT(second.Handle(Report(1)).ack, Optional(1u));
  EXPECT_THAT(second.Handle(Report(2)).ack, Optional(2u));  // same second
  // A new stream is refused although this second's budget is spent.
  IngestSession late(&store_, &counters_, placement, intake_);
  EXPECT_TRUE(late.Handle(Hello("gpu-003")).handoff.has_value());
  cut_off = absl::Seconds(5);
  EXPECT_TRUE(second.Handle(Report(3)).handoff.has_value());
  EXPECT_EQ(counters_.refused_nats_disconnected.load(), 3u);
}

// The budget: a tenth of the most streams open during the hand-over,
// rounded up, per second of it; new streams are refused outside it; a
// later outage starts from its own count.
TEST(HandOffWhileCutOffTest, PacesTheHandOverToATenthOfItsStreamsPerSecond) {
  KeepEveryAgent inner;
  absl::Duration cut_off = absl::Seconds(3) + absl::Milliseconds(500);
  HandOffWhileCutOff placement(
      inner, [&cut_off] { return cut_off; }, absl::Seconds(3));
  auto handed = [&placement](int asks, uint64_t streams) {
    int n = 0;
    for (int i = 0; i < asks; ++i) {
      n += placement.HandOff(absl::StrCat("gpu-", i), {}, streams).has_value();
    }
    return n;
  };
  const uint64_t first_second = placement.Epoch();
  EXPECT_EQ(first_second & 1, 1u);
  EXPECT_EQ(handed(10, 25), 3);  // ceil(2.5)
  EXPECT_TRUE(placement.HandOffNew("gpu-new", {}, 25).has_value());
  cut_off += absl::Milliseconds(400);  // the same second
  EXPECT_EQ(placement.Epoch(), first_second);
  EXPECT_EQ(handed(10, 22), 0);
  cut_off += absl::Milliseconds(600);
  EXPECT_NE(placement.Epoch(), first_second);
  // 22 streams left, still 3 a second: the pace does not slow down.
  EXPECT_EQ(handed(10, 22), 3);

  cut_off = absl::ZeroDuration();  // connected again
  EXPECT_EQ(placement.Epoch(), 0u);
  EXPECT_FALSE(placement.HandOffNew("gpu-new", {}, 19).has_value());
  cut_off = absl::Seconds(4);
  EXPECT_EQ(handed(10, 5), 1);  // at least one a second
}

// An agent it sent away that comes back found every other collector cut
// off too (or down): taken, and kept until the outage ends; the next
// outage starts with no one remembered.
TEST(HandOffWhileCutOffTest, TakesBackAnAgentNoOtherCollectorTook) {
  KeepEveryAgent inner;
  absl::Duration cut_off = absl::Seconds(4);
  HandOffWhileCutOff placement(
      inner, [&cut_off] { return cut_off; }, absl::Seconds(3));
  // An open stream sent away, back on a new stream.
  ASSERT_TRUE(placement.HandOff("gpu-001", {}, 1).has_value());
  EXPECT_EQ(placement.HandOffNew("gpu-001", {}, 0), std::nullopt);
  cut_off += absl::Seconds(1);  // the next second's budget
  EXPECT_EQ(placement.HandOff("gpu-001", {}, 1), std::nullopt);
  // A new stream refused at its Hello, back.
  ASSERT_TRUE(placement.HandOffNew("gpu-002", {}, 1).has_value());
  EXPECT_EQ(placement.HandOffNew("gpu-002", {}, 1), std::nullopt);
  // Another node is still refused.
  EXPECT_TRUE(placement.HandOffNew("gpu-003", {}, 2).has_value());

  cut_off = absl::ZeroDuration();  // connected: the outage is over
  EXPECT_EQ(placement.Epoch() & 1, 0u);
  cut_off = absl::Seconds(4);
  EXPECT_TRUE(placement.HandOffNew("gpu-002", {}, 1).has_value());
  EXPECT_TRUE(placement.HandOff("gpu-001", {}, 1).has_value());
}

// Cut off: the NATS link down for any time, or publishes failing, with the
// link up, for kPublishFailureGrace at least (a JetStream election fails
// them for a few seconds and must not count).
TEST(HandOffWhileCutOffTest, PublishesFailingLongerThanAnElectionAreCutOff) {
  const absl::Duration zero = absl::ZeroDuration();
  ASSERT_EQ(kPublishFailureGrace, absl::Seconds(15));
  EXPECT_EQ(CutOffFromCluster(zero, zero), zero);
  EXPECT_EQ(CutOffFromCluster(absl::Seconds(4), zero), absl::Seconds(4));
  EXPECT_EQ(CutOffFromCluster(zero, absl::Seconds(10)), zero) << "an election";
  EXPECT_EQ(CutOffFromCluster(zero, absl::Seconds(15)), absl::Seconds(15));
  EXPECT_EQ(CutOffFromCluster(zero, absl::Seconds(40)), absl::Seconds(40));
  EXPECT_EQ(CutOffFromCluster(absl::Seconds(20), absl::Seconds(5)),
            absl::Seconds(20))
      << "the link's time";

  // Through the placement, with the cluster's 3 s limit: refused once the
  // publishes have failed 15 s, not before.
  FakePlacement inner;
  absl::Duration failing = absl::Seconds(14);
  HandOffWhileCutOff placement(
      inner,
      [&failing] { return CutOffFromCluster(absl::ZeroDuration(), failing); },
      absl::Seconds(3));
  EXPECT_EQ(placement.HandOffNew("gpu-001", {}, 1), std::nullopt);
  failing = absl::Seconds(16);
  std::optional<HandoffOrder> refused = placement.HandOffNew("gpu-001", {}, 1);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->refusal, Refusal::kNatsDisconnected);
  EXPECT_THAT(refused->reason, HasSubstr("cut off from NATS for 16s"));
}

// Over a cluster's placement: connected, its answers and epochs pass
// through; cut off, the epoch moves (open streams ask again) and every
// node is refused; connected again, the epoch moves back and the inner
// placement answers again.
TEST(HandOffWhileCutOffTest, PassesTheInnerPlacementThroughWhileConnected) {
  FakePlacement inner;
  inner.epoch = 5;
  inner.hand_off = "gpu-001";
  inner.target = "10.0.0.2:9811";
  absl::Duration cut_off = absl::ZeroDuration();
  HandOffWhileCutOff placement(
      inner, [&cut_off] { return cut_off; }, absl::Seconds(3));
  const uint64_t connected = placement.Epoch();
  EXPECT_NE(connected, 0u);
  EXPECT_EQ(placement.HandOff("gpu-002", {}, 1), std::nullopt);
  std::optional<HandoffOrder> go = placement.HandOff("gpu-001", {}, 1);
  ASSERT_TRUE(go.has_value());
  EXPECT_EQ(go->target, "10.0.0.2:9811");
  EXPECT_EQ(go->refusal, Refusal::kNone);
  EXPECT_EQ(inner.asks, 2);

  cut_off = absl::Seconds(10);
  EXPECT_NE(placement.Epoch(), connected);
  go = placement.HandOff("gpu-002", {}, 1);
  ASSERT_TRUE(go.has_value());
  EXPECT_EQ(go->target, "");
  EXPECT_EQ(go->refusal, Refusal::kNatsDisconnected);
  EXPECT_EQ(inner.asks, 2);

  cut_off = absl::ZeroDuration();
  EXPECT_EQ(placement.Epoch(), connected);
  inner.epoch = 6;
  EXPECT_NE(placement.Epoch(), connected);
}

// The Hello's collector list reaches the placement, as does the number of
// streams open here; a Handoff with a target counts as a hand-back and
// leaves the open streams.
TEST_F(IngestSessionTest, ThePlacementGetsTheListAndTheOpenStreams) {
  FakePlacement placement;
  placement.epoch = 2;
  v1::AgentMessage hello = Hello("gpu-002");
  hello.mutable_hello()->add_collectors("c0:9811");
  hello.mutable_hello()->add_collectors("c1:9811");
  IngestSession kept(&store_, &counters_, placement, intake_);
  ASSERT_TRUE(kept.Handle(hello).ack.has_value());
  EXPECT_EQ(counters_.open_streams.load(), 1);
  placement.hand_off = "gpu-001";
  placement.target = "c1:9811";
  hello.mutable_hello()->set_node("gpu-001");
  {
    IngestSession moved(&store_, &counters_, placement, intake_);
    IngestSession::Reply r = moved.Handle(hello);
    EXPECT_EQ(r.handoff_target, "c1:9811");
    EXPECT_EQ(counters_.open_streams.load(), 1);
  }
  ASSERT_EQ(placement.lists.size(), 2u);
  EXPECT_EQ(placement.lists[1],
            (std::vector<std::string>{"c0:9811", "c1:9811"}));
  EXPECT_EQ(placement.last_streams, 1u);
  EXPECT_EQ(counters_.handoffs.load(), 1u);
  EXPECT_EQ(counters_.handbacks.load(), 1u);
  {
    IngestSession other(&store_, &counters_, placement, intake_);
    ASSERT_TRUE(other.Handle(Hello("gpu-003")).ack.has_value());
    EXPECT_EQ(counters_.open_streams.load(), 2);
    EXPECT_TRUE(placement.lists.back().empty());  // no list: an older agent
  }
  EXPECT_EQ(counters_.open_streams.load(), 1);  // ended
}

// The weights of the agent's list go with the Hello's Ack (all 1: an
// empty list, still sent, so the agent drops weights an earlier collector
// gave), then with the first Ack after they changed, once; never to an
// agent without a list, nor while the epoch is 0.
TEST_F(IngestSessionTest, TheWeightsGoWithTheHelloAckAndWhenTheyChange) {
  FakePlacement placement;
  placement.epoch = 2;
  v1::AgentMessage hello = Hello("gpu-002");
  hello.mutable_hello()->add_collectors("c0:9811");
  hello.mutable_hello()->add_collectors("c1:9811");
  IngestSession s(&store_, &counters_, placement, intake_);
  IngestSession::Reply r = s.Handle(hello);
  ASSERT_TRUE(r.ack.has_value());
  EXPECT_THAT(r.weights, Optional(CollectorWeights{}));
  s.Handle(Schema());
  placement.epoch = 3;  // the same weights: nothing sent
  r = s.Handle(Report(1));
  EXPECT_THAT(r.ack, Optional(1u));
  EXPECT_FALSE(r.weights.has_value());
  placement.weights = {{"c1:9811", 2.0 / 3.0}};
  EXPECT_FALSE(s.Handle(Report(2)).weights.has_value());  // epoch unchanged
  placement.epoch = 4;
  r = s.Handle(Report(3));
  EXPECT_THAT(r.ack, Optional(3u));
  EXPECT_THAT(r.weights, Optional(placement.weights));
  placement.epoch = 5;
  EXPECT_FALSE(s.Handle(Report(4)).weights.has_value());

  IngestSession no_list(&store_, &counters_, placement, intake_);
  EXPECT_FALSE(no_list.Handle(Hello("gpu-003")).weights.has_value());
  FakePlacement embedded;
  IngestSession alone(&store_, &counters_, embedded, intake_);
  hello.mutable_hello()->set_node("gpu-004");
  EXPECT_FALSE(alone.Handle(hello).weights.has_value());
  EXPECT_EQ(embedded.weight_asks, 0);
}

// A list too long, or with an empty or over-long entry, is a bad Hello.
TEST_F(IngestSessionTest, ABadCollectorListIsABadHello) {
  v1::AgentMessage too_many = Hello();
  for (size_t i = 0; i <= IngestSession::kMaxCollectors; ++i) {
    too_many.mutable_hello()->add_collectors(absl::StrCat("c", i, ":9811"));
  }
  v1::AgentMessage empty_entry = Hello();
  empty_entry.mutable_hello()->add_collectors("");
  v1::AgentMessage long_entry = Hello();
  long_entry.mutable_hello()->add_collectors(
      std::string(IngestSession::kMaxCollectorBytes + 1, 'c'));
  for (const v1::AgentMessage& m : {too_many, empty_entry, long_entry}) {
    IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
    IngestSession::Reply r = s.Handle(m);
    ASSERT_TRUE(r.reject.has_value());
    EXPECT_THAT(*r.reject, HasSubstr("collectors"));
  }
  EXPECT_EQ(counters_.rejects(RejectReason::kBadHello), 3u);
  EXPECT_EQ(counters_.open_streams.load(), 0);
}

// Two agent processes started with the same --node: the second is refused
// with a reason that names the first, and the first keeps reporting (they
// used to take turns, each rejecting the other as stale).
TEST_F(IngestSessionTest, SecondLiveAgentWithSameNodeIsRefused) {
  IngestSession first(&store_, &counters_, keep_every_agent_, intake_);
  first.set_peer("ipv4:10.0.0.1:40000");
  Open(first);
  first.Handle(Report(1));
  IngestSession second(&store_, &counters_, keep_every_agent_, intake_);
  second.set_peer("ipv4:10.0.0.2:40000");
  IngestSession::Reply r = second.Handle(Hello("gpu-001", "boot-2"));
  ASSERT_TRUE(r.reject.has_value());
  EXPECT_THAT(*r.reject, HasSubstr("duplicate_node"));
  EXPECT_THAT(*r.reject, HasSubstr("ipv4:10.0.0.1:40000"));
  EXPECT_EQ(counters_.rejects(RejectReason::kDuplicateNode), 1u);
  EXPECT_THAT(first.Handle(Report(2)).ack, Optional(2u));
  EXPECT_EQ(store_.FindNode("gpu-001")->Info().duplicate_streams, 1u);
}

// An agent that restarted after its stream ended takes over; the old
// process, should it still send (it was stopped, not dead), is stale.
TEST_F(IngestSessionTest, RestartedAgentTakesOverAndOldReportsAreStale) {
  auto first = std::make_unique<IngestSession>(&store_, &counters_,
                                               keep_every_agent_, intake_);
  Open(*first);
  first->Handle(Report(1));
  store_.FindNode("gpu-001")->EndStream(0);  // not its stream: no effect
  IngestSession second(&store_, &counters_, keep_every_agent_, intake_);
  ASSERT_TRUE(second.Handle(Hello("gpu-001", "boot-2")).reject.has_value());
  first.reset();  // the first stream ends
  IngestSession third(&store_, &counters_, keep_every_agent_, intake_);
  EXPECT_FALSE(third.Handle(Hello("gpu-001", "boot-3")).reject.has_value());
}

// With mutual TLS, a node may only report as itself.
TEST_F(IngestSessionTest, NodeMustBeNamedInTheClientCertificate) {
  IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
  s.set_peer_identities({"gpu-001.example", "gpu-001"});
  EXPECT_FALSE(s.Handle(Hello("gpu-001", "b")).reject.has_value());
  IngestSession impostor(&store_, &counters_, keep_every_agent_, intake_);
  impostor.set_peer_identities({"gpu-002"});
  IngestSession::Reply r = impostor.Handle(Hello("gpu-003", "b"));
  ASSERT_TRUE(r.reject.has_value());
  EXPECT_THAT(*r.reject, HasSubstr("identity_mismatch"));
  EXPECT_THAT(*r.reject, HasSubstr("gpu-002"));
  IngestSession nameless(&store_, &counters_, keep_every_agent_, intake_);
  nameless.set_peer_identities({});
  EXPECT_TRUE(nameless.Handle(Hello("gpu-004", "b")).reject.has_value());
  EXPECT_EQ(counters_.rejects(RejectReason::kIdentityMismatch), 2u);
  EXPECT_EQ(store_.FindNode("gpu-003"), nullptr);
}

TEST_F(IngestSessionTest, HostileStreamDoesNotDisturbAnother) {
  IngestSession good(&store_, &counters_, keep_every_agent_, intake_);
  Open(good);
  good.Handle(Report(1));
  IngestSession bad(&store_, &counters_, keep_every_agent_, intake_);
  bad.Handle(Hello("gpu-002", "b"));
  bad.Handle(Schema());
  ASSERT_TRUE(bad.Handle(Report(1, 99)).reject.has_value());
  EXPECT_THAT(good.Handle(Report(2)).ack, Optional(2u));
  EXPECT_EQ(store_.Latest("gpu-001", Key(0))->seq, 2u);
}

TEST_F(IngestSessionTest, InventorySetsDevices) {
  IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
  Open(s);
  v1::AgentMessage m;
  m.mutable_inventory()->add_rdma_devices()->set_name("mlx5_3");
  EXPECT_FALSE(s.Handle(m).reject.has_value());
  EXPECT_THAT(store_.FindNode("gpu-001")->Info().devices,
              ::testing::ElementsAre("mlx5_3"));
}

v1::AgentMessage InventoryWithFacts(const std::string& leaf_port) {
  v1::AgentMessage m;
  v1::Inventory* inv = m.mutable_inventory();
  v1::Netdev* nd = inv->add_netdevs();
  nd->set_name("eth0");
  nd->set_rdma_device("mlx5_0");
  v1::RdmaPort* port = inv->add_rdma_ports();
  port->set_device("mlx5_1");
  port->add_netdevs("eth1");
  inv->set_lldp_source("lldpd");
  v1::LldpNeighbor* n = inv->add_lldp_neighbors();
  n->set_local_port("eth0");
  n->set_system_name("leaf-0");
  n->set_chassis_id("12:27:29:d0:18:68");
  n->set_port_id(leaf_port);
  inv->set_gpus_read(true);
  v1::GpuNic* g = inv->add_gpu_nics();
  g->set_gpu(0);
  g->set_device("mlx5_0");
  g->set_netdev("eth0");
  g->set_distance("pcie_switch");
  return m;
}

TEST_F(IngestSessionTest, InventoryRecordsTheNodesFacts) {
  IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
  Open(s);
  EXPECT_FALSE(s.Handle(InventoryWithFacts("swp1")).reject.has_value());
  std::shared_ptr<const NodeFactsMap> all = facts_.Snapshot();
  ASSERT_EQ(all->count("gpu-001"), 1u);
  const v1::NodeFacts& f = *all->at("gpu-001");
  EXPECT_EQ(f.node(), "gpu-001");
  EXPECT_FALSE(f.is_switch());
  EXPECT_EQ(f.reported_unix_nanos(), absl::ToUnixNanos(clock_.Now()));
  EXPECT_EQ(f.lldp_source(), "lldpd");
  ASSERT_EQ(f.lldp_neighbors_size(), 1);
  EXPECT_EQ(f.lldp_neighbors(0).port_id(), "swp1");
  EXPECT_TRUE(f.gpus_read());
  ASSERT_EQ(f.gpu_nics_size(), 1);
  EXPECT_EQ(f.gpu_nics(0).device(), "mlx5_0");
  EXPECT_EQ(f.rdma_device_of_netdev().at("eth0"), "mlx5_0");
  EXPECT_EQ(f.rdma_device_of_netdev().at("eth1"), "mlx5_1");

  // The same inventory again (a new stream) changes nothing; a moved cable
  // does.
  const uint64_t generation = facts_.Generation();
  EXPECT_FALSE(s.Handle(InventoryWithFacts("swp1")).reject.has_value());
  EXPECT_EQ(facts_.Generation(), generation);
  EXPECT_FALSE(s.Handle(InventoryWithFacts("swp7")).reject.has_value());
  EXPECT_GT(facts_.Generation(), generation);
  EXPECT_EQ(facts_.Snapshot()->at("gpu-001")->lldp_neighbors(0).port_id(),
            "swp7");
}

TEST_F(IngestSessionTest, AnInventoryWithoutLldpOrGpusKeepsWhatWasKnown) {
  IngestSession s(&store_, &counters_, keep_every_agent_, intake_);
  Open(s);
  ASSERT_FALSE(s.Handle(InventoryWithFacts("swp1")).reject.has_value());
  v1::AgentMessage unread = InventoryWithFacts("swp9");
  unread.mutable_inventory()->clear_lldp_source();  // the read failed
  unread.mutable_inventory()->set_gpus_read(false);
  unread.mutable_inventory()->clear_gpu_nics();
  EXPECT_FALSE(s.Handle(unread).reject.has_value());
  const std::shared_ptr<const v1::NodeFacts> held =
      facts_.Snapshot()->at("gpu-001");
  const v1::NodeFacts& f = *held;
  EXPECT_EQ(f.lldp_source(), "lldpd");
  ASSERT_EQ(f.lldp_neighbors_size(), 1);
  EXPECT_EQ(f.lldp_neighbors(0).port_id(), "swp1");
  EXPECT_EQ(f.gpu_nics_size(), 1);
}

class SwitchNamed final : public DeclaredSwitches {
 public:
  bool IsSwitch(absl::string_view node) const override {
    return node == "leaf-0";
  }
};

TEST_F(IngestSessionTest, ASwitchIsOneTheTopologyListsOrTheBridgeSends) {
  SwitchNamed topology;
  NodeFactsIntake intake{facts_, topology};
  for (const char* node : {"leaf-0", "gpu-001"}) {
    IngestSession s(&store_, &counters_, keep_every_agent_, intake);
    ASSERT_TRUE(s.Handle(Hello(node)).ack.has_value());
    EXPECT_FALSE(s.Handle(InventoryWithFacts("swp1")).reject.has_value());
  }
  v1::AgentMessage bridge = Hello("spine-0");
  bridge.mutable_hello()->set_agent_version("gnmi-bridge 0.2.0");
  IngestSession b(&store_, &counters_, keep_every_agent_, intake);
  ASSERT_TRUE(b.Handle(bridge).ack.has_value());
  EXPECT_FALSE(b.Handle(InventoryWithFacts("Ethernet0")).reject.has_value());
  std::shared_ptr<const NodeFactsMap> all = facts_.Snapshot();
  EXPECT_TRUE(all->at("leaf-0")->is_switch());
  EXPECT_FALSE(all->at("gpu-001")->is_switch());
  EXPECT_TRUE(all->at("spine-0")->is_switch());
}

}  // namespace
}  // namespace fabricdiag::collector
