#include "agent/sysfs_parse.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::agent {
namespace {

using ::testing::HasSubstr;

struct U64Case {
  std::string text;
  absl::StatusCode code;
  uint64_t value;
};

TEST(ParseU64Test, Table) {
  const U64Case cases[] = {
      {"0\n", absl::StatusCode::kOk, 0},
      {"18126345378\n", absl::StatusCode::kOk, 18126345378ULL},
      {"  42 \t\n", absl::StatusCode::kOk, 42},
      {"18446744073709551615\n", absl::StatusCode::kOk,
       18446744073709551615ULL},
      {"18446744073709551616\n", absl::StatusCode::kOutOfRange, 0},
      {"99999999999999999999999\n", absl::StatusCode::kOutOfRange, 0},
      {"N/A (no PMA)\n", absl::StatusCode::kUnimplemented, 0},
      {"", absl::StatusCode::kInvalidArgument, 0},
      {"\n\n", absl::StatusCode::kInvalidArgument, 0},
      {"-1\n", absl::StatusCode::kInvalidArgument, 0},
      {"+1\n", absl::StatusCode::kInvalidArgument, 0},
      {"abc\n", absl::StatusCode::kInvalidArgument, 0},
      {"12abc\n", absl::StatusCode::kInvalidArgument, 0},
      {"1 2\n", absl::StatusCode::kInvalidArgument, 0},
      {"0x10\n", absl::StatusCode::kInvalidArgument, 0},
      {"1.5\n", absl::StatusCode::kInvalidArgument, 0},
      {std::string("12\0"
                   "34",
                   5),
       absl::StatusCode::kInvalidArgument, 0},
      {"\xff\xfe\x01\x02", absl::StatusCode::kInvalidArgument, 0},
  };
  for (const U64Case& c : cases) {
    absl::StatusOr<uint64_t> v = ParseU64(c.text);
    EXPECT_EQ(v.status().code(), c.code) << DescribeValue(c.text);
    if (c.code == absl::StatusCode::kOk && v.ok()) {
      EXPECT_EQ(*v, c.value) << DescribeValue(c.text);
    }
  }
}

TEST(ParseU64Test, ErrorMessagesShowHostileBytesEscaped) {
  absl::StatusOr<uint64_t> v = ParseU64("\x01\xff junk");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("\\x01\\xff"));
  absl::StatusOr<uint64_t> longv = ParseU64(std::string(1000, 'z'));
  ASSERT_FALSE(longv.ok());
  EXPECT_LT(longv.status().message().size(), 120u);
}

TEST(ParseI64Test, Table) {
  EXPECT_EQ(ParseI64("-1\n").value(), -1);
  EXPECT_EQ(ParseI64("1000\n").value(), 1000);
  EXPECT_EQ(ParseI64("-9223372036854775808").value(),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ParseI64("9223372036854775808").status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ParseI64("-").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseI64("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseI64("--1").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ParseHexU64Test, Table) {
  EXPECT_EQ(ParseHexU64("0x1303\n").value(), 0x1303u);
  EXPECT_EQ(ParseHexU64("0x20").value(), 0x20u);
  EXPECT_EQ(ParseHexU64("0XfFfF").value(), 0xffffu);
  EXPECT_EQ(ParseHexU64("0xffffffffffffffff").value(), ~uint64_t{0});
  EXPECT_EQ(ParseHexU64("0x1ffffffffffffffff").status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ParseHexU64("1303").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseHexU64("0x").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseHexU64("0xg1").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ParseStateLineTest, Table) {
  struct Case {
    const char* text;
    bool ok;
    int id;
    const char* name;
  } cases[] = {
      {"4: ACTIVE\n", true, 4, "ACTIVE"},
      {"5: LinkUp\n", true, 5, "LinkUp"},
      {"7: Phy Test\n", true, 7, "Phy Test"},
      {"1: DOWN", true, 1, "DOWN"},
      {"0: <unknown>\n", true, 0, "<unknown>"},
      {"ACTIVE\n", false, 0, ""},
      {": ACTIVE\n", false, 0, ""},
      {"-4: ACTIVE\n", false, 0, ""},
      {"x: ACTIVE\n", false, 0, ""},
      {"99999999999: ACTIVE\n", false, 0, ""},
      {"", false, 0, ""},
  };
  for (const Case& c : cases) {
    absl::StatusOr<StateLine> s = ParseStateLine(c.text);
    EXPECT_EQ(s.ok(), c.ok) << c.text;
    if (c.ok && s.ok()) {
      EXPECT_EQ(s->id, c.id) << c.text;
      EXPECT_EQ(s->name, c.name) << c.text;
    }
  }
}

TEST(ParseRateTest, Table) {
  struct Case {
    const char* text;
    bool ok;
    uint64_t bytes_per_second;
  } cases[] = {
      {"100 Gb/sec (4X EDR)\n", true, 12500000000ULL},
      {"40 Gb/sec (4X QDR)\n", true, 5000000000ULL},
      {"25 Gb/sec (1X EDR)\n", true, 3125000000ULL},
      {"2.5 Gb/sec (1X SDR)\n", true, 312500000ULL},
      {"500 Gb/sec (4X HDR)\n", true, 62500000000ULL},
      {"400 Gb/sec (4X NDR)\n", true, 50000000000ULL},
      {"10 Gb/sec (4X)\n", true, 1250000000ULL},
      {"0 GB/sec", true, 0},
      {"14.0625 Gb/sec (1X FDR)", true, 1757812500ULL},
      {"", false, 0},
      {"fast", false, 0},
      {"100 Mb/sec", false, 0},
      {"-100 Gb/sec (4X EDR)", false, 0},
      {"1e3 Gb/sec", false, 0},
      {"99999999999999999999 Gb/sec", false, 0},
      {".5 Gb/sec", false, 0},
      {"\xff\xff Gb/sec", false, 0},
  };
  for (const Case& c : cases) {
    absl::StatusOr<uint64_t> r = ParseRateBytesPerSecond(c.text);
    EXPECT_EQ(r.ok(), c.ok) << c.text << " " << r.status();
    if (c.ok && r.ok()) {
      EXPECT_EQ(*r, c.bytes_per_second) << c.text;
    }
  }
}

TEST(WidthTest, ExtendedWidthDetection) {
  EXPECT_TRUE(PmaUsesExtendedWidth({{"unicast_xmit_packets", 0}}));
  EXPECT_TRUE(PmaUsesExtendedWidth({{"port_xmit_data", 4294967296ULL}}));
  EXPECT_FALSE(PmaUsesExtendedWidth({{"port_xmit_data", 4294967295ULL}}));
  EXPECT_FALSE(PmaUsesExtendedWidth({{"symbol_error", 1ULL << 40}}));
  EXPECT_FALSE(PmaUsesExtendedWidth({}));
}

TEST(WidthTest, LifespanIsASettingNotACounter) {
  EXPECT_TRUE(IsHwCounterSetting("lifespan"));
  EXPECT_FALSE(IsHwCounterSetting("out_of_sequence"));
}

TEST(SaturationTest, AllOnesAtWidth) {
  EXPECT_TRUE(IsSaturated(65535, 16));
  EXPECT_TRUE(IsSaturated(4294967295ULL, 32));
  EXPECT_TRUE(IsSaturated(255, 8));
  EXPECT_TRUE(IsSaturated(15, 4));
  EXPECT_FALSE(IsSaturated(65534, 16));
  EXPECT_FALSE(IsSaturated(65535, 32));
  EXPECT_FALSE(IsSaturated(~uint64_t{0}, 64));
}

TEST(InterpretCounterReadTest, ClassifiesOutcomes) {
  using R = CounterReadResult;
  EXPECT_EQ(InterpretCounterRead("p", std::string("7\n")).result, R::kValue);
  EXPECT_EQ(InterpretCounterRead("p", std::string("7\n")).value, 7u);
  EXPECT_EQ(InterpretCounterRead("p", std::string("N/A (no PMA)\n")).result,
            R::kAbsent);
  EXPECT_EQ(InterpretCounterRead("p", std::string("")).result, R::kAbsent);
  EXPECT_EQ(
      InterpretCounterRead("p", absl::InvalidArgumentError("EINVAL")).result,
      R::kAbsent);
  EXPECT_EQ(InterpretCounterRead("p", absl::NotFoundError("gone")).result,
            R::kGone);
  EXPECT_EQ(InterpretCounterRead("p", absl::PermissionDeniedError("no")).result,
            R::kError);
  CounterRead junk = InterpretCounterRead("dir/junk", std::string("zz\n"));
  EXPECT_EQ(junk.result, R::kError);
  EXPECT_THAT(junk.error.message(), HasSubstr("dir/junk"));
}

}  // namespace
}  // namespace fabricdiag::agent
