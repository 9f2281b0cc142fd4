// The arena a stream reads its messages into (collector/ingest/
// inbound_message.h): what is read is what was sent, a Schema's memory goes
// back once it is handled, a Report's arrays stay between reports, and the
// arena never keeps more than its bound.
#include "collector/ingest/inbound_message.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace fabricdiag::collector {
namespace {

// As an 8-NIC node's agent sends it: ~1,300 series with kernel names.
std::string SchemaBytes(int series = 1300) {
  v1::AgentMessage m;
  v1::Schema* s = m.mutable_schema();
  s->set_schema_id(7);
  for (int i = 0; i < series; ++i) {
    v1::Series* x = s->add_series();
    x->set_subsystem(v1::SUBSYSTEM_ETHTOOL);
    x->set_device(absl::StrCat("ens", 100 + i % 8, "np0"));
    x->set_name(absl::StrCat("rx_prio", i % 8, "_pause_duration_", i));
    x->set_unit("seconds");
    x->set_priority(i % 8);
  }
  return m.SerializeAsString();
}

std::string ReportBytes(uint64_t seq, int series = 1300) {
  v1::AgentMessage m;
  v1::Report* r = m.mutable_report();
  r->set_seq(seq);
  r->set_schema_id(7);
  for (int i = 0; i < series; ++i) {
    r->add_raw(seq * 1000 + static_cast<uint64_t>(i));
    r->add_rate(static_cast<double>(seq) + i);
  }
  return m.SerializeAsString();
}

TEST(InboundMessageTest, ReadsWhatWasSentAndGivesASchemasMemoryBack) {
  InboundMessage in;
  const std::string schema = SchemaBytes();
  ASSERT_TRUE(in.get()->ParseFromString(schema));
  ASSERT_TRUE(in.get()->has_schema());
  EXPECT_EQ(in.get()->SerializeAsString(), schema);
  // The schema's series and strings are on the arena...
  EXPECT_GT(in.arena_bytes(), size_t{100} << 10);
  in.Handled();
  // ... and go with it: the next read starts on an empty arena.
  EXPECT_LT(in.arena_bytes(), size_t{1} << 10);
  EXPECT_FALSE(in.get()->has_schema());

  // The first report spreads over growing blocks and is read again into
  // one of its size; from the second on, the arrays are reused.
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    const std::string report = ReportBytes(seq);
    ASSERT_TRUE(in.get()->ParseFromString(report));
    EXPECT_EQ(in.get()->SerializeAsString(), report);
    in.Handled();
  }
  const v1::AgentMessage* const kept = in.get();
  const size_t one_report = in.arena_bytes();
  // 1,300 raw values and rates: 20,800 bytes of arrays.
  EXPECT_GT(one_report, size_t{20'800});
  EXPECT_LE(one_report, InboundMessage::kKeptBytes);
  const size_t held = in.held_bytes();
  EXPECT_LE(held, one_report + one_report / 8 + InboundMessage::kSlackBytes);
  for (uint64_t seq = 3; seq <= 100; ++seq) {
    const std::string report = ReportBytes(seq);
    ASSERT_TRUE(in.get()->ParseFromString(report));
    ASSERT_EQ(in.get()->SerializeAsString(), report) << seq;
    in.Handled();
  }
  // The same message, its arrays reused: the arena did not grow.
  EXPECT_EQ(in.get(), kept);
  EXPECT_EQ(in.arena_bytes(), one_report);
  EXPECT_EQ(in.held_bytes(), held);

  // Another Schema after reports (a second one on the stream): read whole,
  // nothing of the reports left in it, and given back in turn.
  ASSERT_TRUE(in.get()->ParseFromString(schema));
  EXPECT_EQ(in.get()->SerializeAsString(), schema);
  EXPECT_FALSE(in.get()->has_report());
  in.Handled();
  EXPECT_LT(in.arena_bytes(), size_t{1} << 10);
}

TEST(InboundMessageTest, AReportBeyondTheBoundIsNotKept) {
  InboundMessage in;
  // 20,000 series: 320 KB of arrays, more than an arena keeps.
  const std::string large = ReportBytes(1, 20'000);
  ASSERT_TRUE(in.get()->ParseFromString(large));
  EXPECT_GT(in.arena_bytes(), InboundMessage::kKeptBytes);
  in.Handled();
  EXPECT_LT(in.arena_bytes(), size_t{1} << 10);
  const std::string small = ReportBytes(2);
  ASSERT_TRUE(in.get()->ParseFromString(small));
  EXPECT_EQ(in.get()->SerializeAsString(), small);
}

TEST(InboundMessageTest, GarbageFailsToParseAndLeavesNothingBehind) {
  InboundMessage in;
  // Field 2 (the schema) with a length far beyond the bytes.
  EXPECT_FALSE(
      in.get()->ParseFromString(std::string("\x12\xff\xff\xff\x0f"
                                            "not a schema",
                                            17)));
  in.Handled();
  EXPECT_LT(in.arena_bytes(), size_t{1} << 10);
  const std::string report = ReportBytes(3);
  ASSERT_TRUE(in.get()->ParseFromString(report));
  EXPECT_EQ(in.get()->SerializeAsString(), report);
}

}  // namespace
}  // namespace fabricdiag::collector
