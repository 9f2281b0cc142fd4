#include "common/prom_text.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/exposition_text.h"
#include "tests/testing/promtool.h"

namespace fabricdiag {
namespace {

TEST(FormatValueTest, ShortestRoundTripInPercentGLayout) {
  struct Case {
    double value;
    const char* text;
  };
  const Case cases[] = {
      {0, "0"},
      {-0.0, "-0"},
      {123456789, "123456789"},
      {0.94, "0.94"},
      {5961.284324, "5961.284324"},
      {1.0 / 3, "0.3333333333333333"},
      {0.1 + 0.2, "0.30000000000000004"},  // %.16g would print 0.3
      {4e15, "4000000000000000"},
      {1e16, "1e+16"},
      {1e20, "1e+20"},
      {1e-7, "1e-07"},
      {0.000123, "0.000123"},
      {-2.5e-5, "-2.5e-05"},
      // 2^64 - 1 bytes: what node_exporter prints, not 1.844674407370955e+19.
      {18446744073709551615.0, "1.8446744073709552e+19"},
      {12345678901234567.0, "1.2345678901234568e+16"},
      {std::nan(""), "NaN"},
      {HUGE_VAL, "+Inf"},
      {-HUGE_VAL, "-Inf"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FormatValue(c.value), c.text) << c.text;
    if (std::isfinite(c.value)) {
      EXPECT_EQ(std::stod(FormatValue(c.value)), c.value) << c.text;
    }
  }
}

// Integers take a shortcut: the same text as the general path, for every
// integer a double holds exactly, at the edges and at random.
TEST(FormatValueTest, IntegerShortcutPrintsWhatTheGeneralPathPrints) {
  std::vector<double> values = {0,
                                1,
                                -1,
                                9,
                                10,
                                99,
                                100,
                                1e15,
                                1e15 + 1,
                                999999999999999.0,
                                4503599627370496.0,
                                9007199254740991.0,
                                -9007199254740991.0,
                                9007199254740992.0,
                                1e16 - 2};
  std::mt19937_64 rng(42);
  for (int i = 0; i < 100000; ++i) {
    const int bits = static_cast<int>(rng() % 54);
    const uint64_t v = bits == 0 ? 0 : rng() >> (64 - bits);
    values.push_back(static_cast<double>(v));
    values.push_back(-static_cast<double>(v));
  }
  for (double v : values) {
    ASSERT_EQ(FormatValue(v), internal::FormatShortest(v)) << v;
  }
}

// FormatValueTo writes FormatValue's text into a caller's buffer, never
// past kMaxValueTextBytes, for the longest texts a double has too.
TEST(FormatValueTest, IntoABufferAtTheEdges) {
  const double values[] = {0,
                           -0.0,
                           1,
                           99999999,
                           100000000,
                           9999999999999999.0,
                           9007199254740991.0,
                           9007199254740992.0,  // 2^53
                           -9007199254740992.0,
                           18446744073709551615.0,  // 2^64 - 1
                           std::nan(""),
                           HUGE_VAL,
                           -HUGE_VAL,
                           0.94,
                           1e-7,
                           -0.00012345678901234567,
                           -1.2345678901234567e-308,
                           -1.7976931348623157e+308,
                           4.9406564584124654e-324,
                           -9.8765432109876543e+15};
  for (double v : values) {
    char buf[kMaxValueTextBytes + 8];
    std::memset(buf, '#', sizeof(buf));
    const size_t n = FormatValueTo(v, buf);
    ASSERT_LE(n, 24u) << v;
    EXPECT_EQ(std::string(buf, n), FormatValue(v)) << v;
    EXPECT_EQ(std::string(buf + kMaxValueTextBytes, 8), "########") << v;
    if (std::isfinite(v)) {
      // strtod: std::stod refuses subnormals.
      EXPECT_EQ(std::strtod(std::string(buf, n).c_str(), nullptr), v)
          << std::string(buf, n);
    }
  }
  EXPECT_EQ(FormatValue(9007199254740992.0), "9007199254740992");
  EXPECT_EQ(FormatValue(-1.2345678901234567e-308), "-1.2345678901234567e-308");
  EXPECT_EQ(FormatValue(-0.00012345678901234567), "-0.00012345678901234567");
  EXPECT_EQ(FormatValue(100000000), "100000000");
}

// Label values a layout or a misbehaving driver could bring: each one must
// come back from a parser unchanged.
const char* const kHostileValues[] = {
    "back\\slash", "qu\"ote", "new\nline", "\\\"\n",     "} 1\nfake 2",
    "a,b=\"c\"",   "ünïcødé", "",          "trailing\\",
};

std::string HostileExposition() {
  std::string out;
  PromWriter w(&out);
  w.Family("fabricdiag_test_hostile", "Help with \\ and\nnewline \"kept\".",
           PromType::kGauge);
  double i = 0;
  for (const char* v : kHostileValues) w.Sample({{"value", v}}, ++i);
  w.Family("fabricdiag_test_events_total", "Events.", PromType::kCounter);
  w.Sample(0.1 + 0.2);
  return out;
}

TEST(PromWriterTest, WritesEachHeaderOnceThenItsSamples) {
  std::string out;
  PromWriter w(&out);
  w.Family("fabricdiag_x_total", "What it counts.", PromType::kCounter);
  w.Sample({{"node", "gpu-001"}, {"port", "1"}}, 42);
  w.Sample({{"node", "gpu-002"}, {"port", "1"}}, 18446744073709551615.0);
  w.Family("fabricdiag_y", "A gauge.", PromType::kGauge);
  w.Sample(0.5);
  w.Sample(std::nan(""));
  EXPECT_EQ(out,
            "# HELP fabricdiag_x_total What it counts.\n"
            "# TYPE fabricdiag_x_total counter\n"
            "fabricdiag_x_total{node=\"gpu-001\",port=\"1\"} 42\n"
            "fabricdiag_x_total{node=\"gpu-002\",port=\"1\"} "
            "1.8446744073709552e+19\n"
            "# HELP fabricdiag_y A gauge.\n"
            "# TYPE fabricdiag_y gauge\n"
            "fabricdiag_y 0.5\n"
            "fabricdiag_y NaN\n");
}

TEST(PromWriterTest, SamplesOfWritesNoHeader) {
  std::string out;
  PromWriter w(&out);
  w.SamplesOf("fabricdiag_z");
  w.Sample({{"job", "j"}}, 1);
  EXPECT_EQ(out, "fabricdiag_z{job=\"j\"} 1\n");
}

TEST(PromWriterTest, EscapesLabelValuesAndHelp) {
  const std::string out = HostileExposition();
  EXPECT_THAT(
      out, ::testing::HasSubstr("# HELP fabricdiag_test_hostile Help with \\\\ "
                                "and\\nnewline \"kept\".\n"));
  EXPECT_THAT(out, ::testing::HasSubstr(
                       "fabricdiag_test_hostile{value=\"\\\\\\\"\\n\"} 4\n"));
  EXPECT_THAT(out, ::testing::HasSubstr(
                       "fabricdiag_test_hostile{value=\"} 1\\nfake 2\"} 5\n"));
  absl::StatusOr<std::vector<testing::ExpositionSample>> samples =
      testing::ParseExpositionText(out);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), std::size(kHostileValues) + 1);
  for (size_t i = 0; i < std::size(kHostileValues); ++i) {
    EXPECT_EQ((*samples)[i].labels.at("value"), kHostileValues[i]);
    EXPECT_EQ((*samples)[i].value, static_cast<double>(i + 1));
  }
  EXPECT_EQ(samples->back().value, 0.1 + 0.2);
}

TEST(PromWriterTest, PromtoolAcceptsHostileLabelValues) {
  if (!testing::PromtoolInstalled()) {
    GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  }
  std::string lint;
  EXPECT_TRUE(testing::PromtoolAccepts(HostileExposition(), &lint)) << lint;
}

}  // namespace
}  // namespace fabricdiag
