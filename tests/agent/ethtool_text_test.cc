#include "agent/ethtool_text.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;
using ::testing::Pair;
using ::testing::SizeIs;

std::string FixturePath(const std::string& relative) {
  const char* env = std::getenv("FABRICDIAG_FIXTURES");
  std::string root =
      env != nullptr ? std::string(env)
                     : std::string(FABRICDIAG_SOURCE_DIR) + "/tests/fixtures";
  return root + "/ethtool/" + relative;
}

std::string ReadFixture(const std::string& relative) {
  std::ifstream in(FixturePath(relative), std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open fixture " << FixturePath(relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The value of the first stat called `name`, if any.
std::optional<uint64_t> Lookup(const EthtoolText& parsed,
                               const std::string& name) {
  for (const auto& [n, v] : parsed.stats) {
    if (n == name) return v;
  }
  return std::nullopt;
}

struct FixtureCase {
  const char* file;
  size_t stats;  // "name: value" lines in the file
};

class FixtureParseTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(FixtureParseTest, EveryLineParsesWithoutErrors) {
  EthtoolText parsed = ParseEthtoolStatsText(ReadFixture(GetParam().file));
  EXPECT_THAT(parsed.errors, IsEmpty());
  EXPECT_EQ(parsed.dropped_errors, 0u);
  EXPECT_THAT(parsed.stats, SizeIs(GetParam().stats));
  for (const auto& [name, value] : parsed.stats) {
    EXPECT_FALSE(name.empty());
    EXPECT_EQ(name.front() == ' ' || name.front() == '\t', false) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllCaptures, FixtureParseTest,
    ::testing::Values(
        FixtureCase{"mlx5/cx6dx_100g_kernel5.15_xdp_nonzero_only.txt", 101},
        FixtureCase{"mlx5/cx6dx_100g_kernel6.5_xdp_nonzero_only.txt", 108},
        FixtureCase{"bnxt_en/bcm_10gsr85.statistics.txt", 397},
        FixtureCase{"i40e/i40e_02_sfp_10_or_25g_sr.statistics.txt", 607},
        FixtureCase{"veth/veth_manpage_peer_ifindex_only.txt", 1}));

TEST(EthtoolTextFixtureTest, Mlx5Kernel515ValuesAreExact) {
  EthtoolText parsed = ParseEthtoolStatsText(
      ReadFixture("mlx5/cx6dx_100g_kernel5.15_xdp_nonzero_only.txt"));
  EXPECT_THAT(Lookup(parsed, "rx_discards_phy"), Optional(58591428329u));
  EXPECT_THAT(Lookup(parsed, "rx_prio0_discards"), Optional(58591314012u));
  EXPECT_THAT(Lookup(parsed, "rx_out_of_buffer"), Optional(990473555u));
  EXPECT_THAT(Lookup(parsed, "tx_global_pause_duration"), Optional(771103810u));
  EXPECT_THAT(Lookup(parsed, "rx0_packets"), Optional(70812690u));
  // First and last lines survive (no header confusion, no lost tail).
  EXPECT_THAT(parsed.stats.front(), Pair("rx_packets", 333854100u));
}

TEST(EthtoolTextFixtureTest, Mlx5Kernel65ValuesAreExact) {
  EthtoolText parsed = ParseEthtoolStatsText(
      ReadFixture("mlx5/cx6dx_100g_kernel6.5_xdp_nonzero_only.txt"));
  EXPECT_THAT(Lookup(parsed, "rx_discards_phy"), Optional(441063206498u));
  EXPECT_THAT(Lookup(parsed, "rx_buffer_passed_thres_phy"), Optional(1192226u));
  EXPECT_THAT(Lookup(parsed, "tx_global_pause_duration"),
              Optional(5961284324u));
  EXPECT_THAT(parsed.stats.back(), Pair("rx0_xdp_tx_cqes", 733694572u));
}

TEST(EthtoolTextFixtureTest, BnxtTabsAndPerRingPrefixes) {
  EthtoolText parsed =
      ParseEthtoolStatsText(ReadFixture("bnxt_en/bcm_10gsr85.statistics.txt"));
  // The "[N]: " ring prefix is part of the driver's name.
  EXPECT_THAT(Lookup(parsed, "[0]: rx_ucast_packets"), Optional(276347403u));
  EXPECT_THAT(Lookup(parsed, "[2]: rx_ucast_packets"), Optional(855422489u));
  EXPECT_EQ(Lookup(parsed, "rx_ucast_packets"), std::nullopt);
  EXPECT_THAT(Lookup(parsed, "rx_pfc_ena_frames_pri3"), Optional(0u));
  EXPECT_THAT(Lookup(parsed, "pfc_pri3_rx_duration_us"), Optional(0u));
  EXPECT_THAT(Lookup(parsed, "rx_total_discard_pkts"), Optional(13u));
  // The file has no final newline: its last line still counts.
  EXPECT_THAT(parsed.stats.back(), Pair("tx_packets_pri7", 0u));
}

TEST(EthtoolTextFixtureTest, IceDottedNames) {
  EthtoolText parsed = ParseEthtoolStatsText(
      ReadFixture("i40e/i40e_02_sfp_10_or_25g_sr.statistics.txt"));
  EXPECT_THAT(Lookup(parsed, "tx_priority_3_xoff.nic"), Optional(0u));
  EXPECT_THAT(Lookup(parsed, "rx_crc_errors.nic"), Optional(1u));
  EXPECT_THAT(Lookup(parsed, "rx_csum_bad.nic"), Optional(4757u));
  EXPECT_THAT(Lookup(parsed, "rx_bytes"), Optional(14645706696119u));
  EXPECT_THAT(Lookup(parsed, "rx_bytes.nic"), Optional(14645706706667u));
}

TEST(EthtoolTextFixtureTest, VethPeerIfindex) {
  EthtoolText parsed = ParseEthtoolStatsText(
      ReadFixture("veth/veth_manpage_peer_ifindex_only.txt"));
  EXPECT_THAT(parsed.stats, ElementsAre(Pair("peer_ifindex", 16u)));
}

TEST(EthtoolTextTest, ValuesAboveTwoToTheSixtyThreeAreKept) {
  EthtoolText parsed = ParseEthtoolStatsText(
      "NIC statistics:\n"
      "     big: 9223372036854775808\n"
      "     max: 18446744073709551615\n");
  EXPECT_THAT(parsed.errors, IsEmpty());
  EXPECT_THAT(parsed.stats, ElementsAre(Pair("big", uint64_t{1} << 63),
                                        Pair("max", UINT64_MAX)));
}

TEST(EthtoolTextTest, BadValuesAreReportedAndTheRestKept) {
  EthtoolText parsed = ParseEthtoolStatsText(
      "NIC statistics:\n"
      "     good_before: 1\n"
      "     negative: -1\n"
      "     overflow: 18446744073709551616\n"
      "     garbage: 12abc\n"
      "     hex: 0x10\n"
      "     plus: +5\n"
      "     float: 1.5\n"
      "     empty:\n"
      "no colon here\n"
      "     : 7\n"
      "     good_after: 2\n");
  EXPECT_THAT(parsed.stats,
              ElementsAre(Pair("good_before", 1u), Pair("good_after", 2u)));
  ASSERT_THAT(parsed.errors, SizeIs(9));
  EXPECT_EQ(parsed.errors[0].line, 3);
  EXPECT_THAT(parsed.errors[0].message, HasSubstr("negative"));
  EXPECT_THAT(parsed.errors[1].message, HasSubstr("overflow"));
  EXPECT_EQ(parsed.errors[7].line, 10);
  EXPECT_THAT(parsed.errors[8].message, HasSubstr("empty name"));
}

TEST(EthtoolTextTest, WhitespaceVariantsAndHeaders) {
  EthtoolText parsed = ParseEthtoolStatsText(
      "\n"
      "NIC statistics:\r\n"
      "\t\ttab_indented: 3\r\n"
      "     spaced:   4   \n"
      "no_indent: 5\n"
      "   \t  \n"
      "     tx_priority_3_xoff.nic: 6");  // no final newline
  EXPECT_THAT(parsed.errors, IsEmpty());
  EXPECT_THAT(
      parsed.stats,
      ElementsAre(Pair("tab_indented", 3u), Pair("spaced", 4u),
                  Pair("no_indent", 5u), Pair("tx_priority_3_xoff.nic", 6u)));
}

TEST(EthtoolTextTest, NameWithColonsKeepsEverythingBeforeTheLastOne) {
  EthtoolText parsed =
      ParseEthtoolStatsText("     [12]: rx_ucast_packets: 42\n");
  EXPECT_THAT(parsed.stats, ElementsAre(Pair("[12]: rx_ucast_packets", 42u)));
}

TEST(EthtoolTextTest, DuplicatesAreKeptForTheCallerToDecide) {
  EthtoolText parsed = ParseEthtoolStatsText("a: 1\na: 2\n");
  EXPECT_THAT(parsed.stats, ElementsAre(Pair("a", 1u), Pair("a", 2u)));
}

TEST(EthtoolTextTest, EmptyInputHasNoStatsAndNoErrors) {
  EthtoolText parsed = ParseEthtoolStatsText("");
  EXPECT_THAT(parsed.stats, IsEmpty());
  EXPECT_THAT(parsed.errors, IsEmpty());
  EXPECT_THAT(ParseEthtoolStatsText("NIC statistics:\n").stats, IsEmpty());
}

TEST(EthtoolTextTest, BinaryJunkNeverCrashesAndNeverYieldsControlBytes) {
  std::string junk;
  uint32_t x = 12345;
  for (int i = 0; i < 200000; ++i) {
    x = x * 1103515245u + 12345u;  // deterministic LCG
    junk.push_back(static_cast<char>(x >> 24));
  }
  junk += "\nreal_after_junk: 9\n";
  junk += std::string("nul\0name: 1\n", 12);
  EthtoolText parsed = ParseEthtoolStatsText(junk);
  for (const auto& [name, value] : parsed.stats) {
    for (char c : name) {
      unsigned char u = static_cast<unsigned char>(c);
      EXPECT_TRUE(u >= 0x20 && u < 0x7f) << "control byte in a name";
    }
  }
  EXPECT_THAT(Lookup(parsed, "real_after_junk"), Optional(9u));
  EXPECT_FALSE(parsed.errors.empty());
  EXPECT_LE(parsed.errors.size(), kMaxEthtoolTextErrors);
  for (const EthtoolTextError& e : parsed.errors) {
    EXPECT_LT(e.message.size(), 300u);  // quoted input is capped
  }
}

TEST(EthtoolTextTest, HugeLineIsOneBoundedError) {
  std::string text = "ok: 1\n" + std::string(4 << 20, 'a') + ": 5\nok2: 2\n";
  EthtoolText parsed = ParseEthtoolStatsText(text);
  EXPECT_THAT(parsed.stats, ElementsAre(Pair("ok", 1u), Pair("ok2", 2u)));
  ASSERT_THAT(parsed.errors, SizeIs(1));
  EXPECT_EQ(parsed.errors[0].line, 2);
  EXPECT_THAT(parsed.errors[0].message, HasSubstr("longer than"));
  EXPECT_LT(parsed.errors[0].message.size(), 300u);
}

TEST(EthtoolTextTest, ErrorListIsCappedAndTheRestCounted) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "bad line\n";
  text += "good: 1\n";
  EthtoolText parsed = ParseEthtoolStatsText(text);
  EXPECT_THAT(parsed.errors, SizeIs(kMaxEthtoolTextErrors));
  EXPECT_EQ(parsed.dropped_errors, 100 - kMaxEthtoolTextErrors);
  EXPECT_THAT(parsed.errors.front(), Field(&EthtoolTextError::line, 1));
  EXPECT_THAT(parsed.stats, ElementsAre(Pair("good", 1u)));
}

// A reader re-parsing the same file learns on the way whether the names
// are still the ones it classified; a name that differs is checked as usual.
TEST(EthtoolTextTest, ExpectedNamesAreComparedOnTheWay) {
  const std::vector<std::string> expected = {"rx_prio3_pause", "tx_bytes_phy"};
  EthtoolTextView view;
  ParseEthtoolStatsText(
      "NIC statistics:\n  rx_prio3_pause: 7\n tx_bytes_phy: 9\n", &view,
      &expected);
  EXPECT_TRUE(view.matches_expected);
  EXPECT_THAT(view.stats, ElementsAre(Pair("rx_prio3_pause", 7u),
                                      Pair("tx_bytes_phy", 9u)));

  ParseEthtoolStatsText("rx_prio4_pause: 7\ntx_bytes_phy: 9\n", &view,
                        &expected);
  EXPECT_FALSE(view.matches_expected);  // PFC moved to priority 4
  EXPECT_THAT(view.stats, SizeIs(2));

  ParseEthtoolStatsText("rx_prio3_pause: 7\n", &view, &expected);
  EXPECT_FALSE(view.matches_expected);  // a stat went away
  ParseEthtoolStatsText("rx_prio3_pause: 7\ntx_bytes_phy: 9\nnew: 1\n", &view,
                        &expected);
  EXPECT_FALSE(view.matches_expected);  // a stat appeared
  ParseEthtoolStatsText("rx_prio3_pause: 7\ntx_bytes_phy: x\n", &view,
                        &expected);
  EXPECT_FALSE(view.matches_expected);  // a line that does not parse
  EXPECT_THAT(view.errors, SizeIs(1));

  // Past the first mismatch names are checked again.
  ParseEthtoolStatsText("rx_prio3_pause: 7\nbad\x01name: 9\n", &view,
                        &expected);
  EXPECT_FALSE(view.matches_expected);
  ASSERT_THAT(view.errors, SizeIs(1));
  EXPECT_THAT(view.errors[0].message, HasSubstr("non-printable"));
  ParseEthtoolStatsText("rx_prio3_pause: 7\n", &view, nullptr);
  EXPECT_FALSE(view.matches_expected);  // nothing expected, nothing matched
}

// With names expected, every line must parse exactly as it does without
// them: the same stats, the same errors. Lines are built from the pieces
// that tell the steady-state path from the general one (blanks and CRs in
// every position, colons inside names, long and overflowing values).
TEST(EthtoolTextTest, ExpectedNamesNeverChangeWhatIsParsed) {
  const std::vector<std::string> names = {"rx_bytes_phy", "rx_prio3_pause",
                                          "[0]: rx_ucast", "tx"};
  const std::vector<std::string> blanks = {"", " ", "\t", "  \t", "\r", " \r"};
  const std::vector<std::string> values = {"0",
                                           "7",
                                           "0000000000000000000000042",
                                           "1234567890123456789",
                                           "18446744073709551615",
                                           "18446744073709551616",
                                           "",
                                           "12x",
                                           "-1"};
  std::mt19937 rng(20261124);
  auto pick = [&rng](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  for (int round = 0; round < 2000; ++round) {
    std::string text = rng() % 2 ? "NIC statistics:\n" : "";
    const int lines = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < lines; ++i) {
      text += pick(blanks) + pick(names) + pick(blanks) + ":" + pick(blanks) +
              pick(values) + pick(blanks);
      if (i + 1 < lines || rng() % 2) text += "\n";
    }
    EthtoolTextView plain;
    ParseEthtoolStatsText(text, &plain);
    std::vector<std::string> expected;
    for (const auto& stat : plain.stats) expected.emplace_back(stat.first);
    if (rng() % 4 == 0 && !expected.empty()) expected.pop_back();

    EthtoolTextView guided;
    ParseEthtoolStatsText(text, &guided, &expected);
    ASSERT_EQ(guided.stats, plain.stats) << text;
    ASSERT_EQ(guided.errors.size(), plain.errors.size()) << text;
    for (size_t e = 0; e < plain.errors.size(); ++e) {
      EXPECT_EQ(guided.errors[e].line, plain.errors[e].line) << text;
      EXPECT_EQ(guided.errors[e].message, plain.errors[e].message) << text;
    }
    EXPECT_EQ(guided.matches_expected,
              plain.errors.empty() && expected.size() == plain.stats.size())
        << text;
  }
}

}  // namespace
}  // namespace fabricdiag::agent
