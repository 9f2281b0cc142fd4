#include "agent/ethtool_semantics.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "agent/ethtool_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::agent {
namespace {

struct Case {
  const char* name;
  Meaning meaning;
  Direction direction;
  int priority;
  double scale;
  const char* unit;
  Kind kind;
  uint32_t width_bits;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

constexpr Kind C = Kind::kCounter;
constexpr Kind G = Kind::kGauge;
constexpr Direction RX = Direction::kRx;
constexpr Direction TX = Direction::kTx;
constexpr Direction NODIR = Direction::kNone;

class ClassifyTest : public ::testing::TestWithParam<Case> {};

TEST_P(ClassifyTest, MapsDriverSpellingOntoMeaning) {
  const Case& c = GetParam();
  StatSemantics s = ClassifyEthtoolStat(c.name);
  EXPECT_EQ(s.meaning, c.meaning) << MeaningName(s.meaning);
  EXPECT_EQ(s.direction, c.direction);
  EXPECT_EQ(s.priority, c.priority);
  EXPECT_DOUBLE_EQ(s.scale, c.scale);
  EXPECT_EQ(s.unit, c.unit);
  EXPECT_EQ(s.kind, c.kind);
  EXPECT_EQ(s.width_bits, c.width_bits);
}

INSTANTIATE_TEST_SUITE_P(
    Mlx5, ClassifyTest,
    ::testing::Values(
        Case{"rx_prio3_pause", Meaning::kPfcPauseFrames, RX, 3, 1, "frames", C,
             64},
        Case{"tx_prio3_pause", Meaning::kPfcPauseFrames, TX, 3, 1, "frames", C,
             64},
        Case{"rx_prio0_pause", Meaning::kPfcPauseFrames, RX, 0, 1, "frames", C,
             64},
        Case{"tx_prio7_pause", Meaning::kPfcPauseFrames, TX, 7, 1, "frames", C,
             64},
        // counters.rst: pause durations are in microseconds.
        Case{"rx_prio3_pause_duration", Meaning::kPfcPauseDuration, RX, 3, 1e-6,
             "seconds", C, 64},
        Case{"tx_prio3_pause_duration", Meaning::kPfcPauseDuration, TX, 3, 1e-6,
             "seconds", C, 64},
        Case{"rx_prio3_pause_transition", Meaning::kPfcPauseTransitions, RX, 3,
             1, "events", C, 64},
        Case{"rx_global_pause", Meaning::kGlobalPauseFrames, RX, -1, 1,
             "frames", C, 64},
        Case{"tx_global_pause", Meaning::kGlobalPauseFrames, TX, -1, 1,
             "frames", C, 64},
        Case{"rx_global_pause_duration", Meaning::kGlobalPauseDuration, RX, -1,
             1e-6, "seconds", C, 64},
        Case{"tx_global_pause_duration", Meaning::kGlobalPauseDuration, TX, -1,
             1e-6, "seconds", C, 64},
        Case{"tx_pause_storm_warning_events", Meaning::kPauseStormWarning, TX,
             -1, 1, "events", C, 64},
        Case{"tx_pause_storm_error_events", Meaning::kPauseStormError, TX, -1,
             1, "events", C, 64},
        Case{"rx_bytes_phy", Meaning::kPhyBytes, RX, -1, 1, "bytes", C, 64},
        Case{"tx_bytes_phy", Meaning::kPhyBytes, TX, -1, 1, "bytes", C, 64},
        Case{"rx_packets_phy", Meaning::kPhyPackets, RX, -1, 1, "packets", C,
             64},
        Case{"tx_packets_phy", Meaning::kPhyPackets, TX, -1, 1, "packets", C,
             64},
        Case{"rx_discards_phy", Meaning::kRxDiscardsPhy, RX, -1, 1, "packets",
             C, 64},
        Case{"tx_discards_phy", Meaning::kTxDiscardsPhy, TX, -1, 1, "packets",
             C, 64},
        Case{"rx_out_of_buffer", Meaning::kRxOutOfBuffer, RX, -1, 1, "packets",
             C, 64},
        Case{"rx_prio5_discards", Meaning::kPriorityDiscards, RX, 5, 1,
             "packets", C, 64},
        Case{"rx_prio3_bytes", Meaning::kPriorityBytes, RX, 3, 1, "bytes", C,
             64},
        Case{"tx_prio3_bytes", Meaning::kPriorityBytes, TX, 3, 1, "bytes", C,
             64},
        Case{"rx_prio3_marked", Meaning::kEcnMarked, RX, 3, 1, "packets", C,
             64},
        Case{"rx_crc_errors_phy", Meaning::kCrcErrors, RX, -1, 1, "packets", C,
             64},
        Case{"rx_symbol_err_phy", Meaning::kSymbolErrors, RX, -1, 1, "errors",
             C, 64},
        Case{"rx_pcs_symbol_err_phy", Meaning::kPcsSymbolErrors, RX, -1, 1,
             "errors", C, 64},
        Case{"rx_corrected_bits_phy", Meaning::kCorrectedBits, RX, -1, 1,
             "bits", C, 64},
        Case{"rx_bits_phy", Meaning::kReceivedBits, RX, -1, 1, "bits", C, 64},
        // en_stats.c: 32-bit field, wraps at 2^32.
        Case{"link_down_events_phy", Meaning::kLinkDownEvents, NODIR, -1, 1,
             "events", C, 32},
        Case{"outbound_pci_stalled_rd", Meaning::kNone, NODIR, -1, 1, "percent",
             G, 32},
        Case{"outbound_pci_stalled_wr", Meaning::kNone, NODIR, -1, 1, "percent",
             G, 32}));

INSTANTIATE_TEST_SUITE_P(
    BnxtEn, ClassifyTest,
    ::testing::Values(
        Case{"rx_pfc_ena_frames_pri3", Meaning::kPfcPauseFrames, RX, 3, 1,
             "frames", C, 64},
        Case{"tx_pfc_ena_frames_pri3", Meaning::kPfcPauseFrames, TX, 3, 1,
             "frames", C, 64},
        Case{"pfc_pri3_rx_duration_us", Meaning::kPfcPauseDuration, RX, 3, 1e-6,
             "seconds", C, 64},
        Case{"pfc_pri3_tx_duration_us", Meaning::kPfcPauseDuration, TX, 3, 1e-6,
             "seconds", C, 64},
        Case{"pfc_pri3_rx_transitions", Meaning::kPfcPauseTransitions, RX, 3, 1,
             "events", C, 64},
        Case{"rx_pause_frames", Meaning::kGlobalPauseFrames, RX, -1, 1,
             "frames", C, 64},
        Case{"tx_pause_frames", Meaning::kGlobalPauseFrames, TX, -1, 1,
             "frames", C, 64},
        Case{"continuous_pause_events", Meaning::kPauseStormWarning, NODIR, -1,
             1, "events", C, 64},
        Case{"continuous_roce_pause_events", Meaning::kPauseStormWarning, NODIR,
             -1, 1, "events", C, 64},
        Case{"rx_total_discard_pkts", Meaning::kRxDiscardsPhy, RX, -1, 1,
             "packets", C, 64},
        Case{"rx_fcs_err_frames", Meaning::kCrcErrors, RX, -1, 1, "packets", C,
             64},
        Case{"rx_bytes_pri3", Meaning::kPriorityBytes, RX, 3, 1, "bytes", C,
             64}));

INSTANTIATE_TEST_SUITE_P(
    IceAndVeth, ClassifyTest,
    ::testing::Values(Case{"rx_priority_3_xoff.nic", Meaning::kPfcPauseFrames,
                           RX, 3, 1, "frames", C, 64},
                      Case{"tx_priority_3_xoff.nic", Meaning::kPfcPauseFrames,
                           TX, 3, 1, "frames", C, 64},
                      // XON resumes a priority: per priority, but not pause.
                      Case{"tx_priority_3_xon.nic", Meaning::kNone, TX, 3, 1,
                           "frames", C, 64},
                      Case{"link_xoff_rx.nic", Meaning::kGlobalPauseFrames, RX,
                           -1, 1, "frames", C, 64},
                      Case{"link_xoff_tx.nic", Meaning::kGlobalPauseFrames, TX,
                           -1, 1, "frames", C, 64},
                      Case{"rx_dropped.nic", Meaning::kRxDiscardsPhy, RX, -1, 1,
                           "packets", C, 64},
                      Case{"rx_crc_errors.nic", Meaning::kCrcErrors, RX, -1, 1,
                           "packets", C, 64},
                      Case{"peer_ifindex", Meaning::kNone, NODIR, -1, 1, "", G,
                           64}));

// Near misses: must not be taken for the concept they resemble.
INSTANTIATE_TEST_SUITE_P(
    NearMisses, ClassifyTest,
    ::testing::Values(
        // Link-level pause of unknown PFC inclusion: not per priority.
        Case{"rx_pause_ctrl_phy", Meaning::kNone, RX, -1, 1, "frames", C, 64},
        // 802.1p has priorities 0..7 only.
        Case{"rx_prio8_pause", Meaning::kNone, NODIR, -1, 1, "", C, 64},
        Case{"rx_prio10_pause", Meaning::kNone, NODIR, -1, 1, "", C, 64},
        Case{"pfc_pri9_rx_duration_us", Meaning::kNone, NODIR, -1, 1, "", C,
             64},
        Case{"rx_priority_8_xoff.nic", Meaning::kNone, NODIR, -1, 1, "", C, 64},
        Case{"rx_prio_pause", Meaning::kNone, NODIR, -1, 1, "", C, 64},
        Case{"rx_prioX_pause", Meaning::kNone, NODIR, -1, 1, "", C, 64},
        Case{"rx_prio3_pause_durations", Meaning::kNone, NODIR, -1, 1, "", C,
             64},
        Case{"xrx_prio3_pause", Meaning::kNone, NODIR, -1, 1, "", C, 64},
        Case{"RX_PRIO3_PAUSE", Meaning::kNone, NODIR, -1, 1, "", C, 64},
        Case{"tx_prio3_pause_transition", Meaning::kNone, NODIR, -1, 1, "", C,
             64},
        // Intel without the port-level suffix is not the port counter.
        Case{"tx_priority_3_xoff", Meaning::kNone, NODIR, -1, 1, "", C, 64},
        // bnxt CoS queues are not priorities; all-PFC totals have no prio.
        Case{"rx_bytes_cos3", Meaning::kNone, NODIR, -1, 1, "", C, 64},
        Case{"rx_discard_packets_cos3", Meaning::kNone, NODIR, -1, 1, "", C,
             64},
        Case{"rx_pfc_frames", Meaning::kNone, NODIR, -1, 1, "", C, 64},
        // The *_events variants count seconds: counters, not gauges.
        Case{"outbound_pci_stalled_rd_events", Meaning::kNone, NODIR, -1, 1, "",
             C, 64},
        // Software ring sums, not the physical port.
        Case{"rx_bytes", Meaning::kNone, NODIR, -1, 1, "", C, 64},
        Case{"rx_discards", Meaning::kNone, NODIR, -1, 1, "", C, 64},
        Case{"", Meaning::kNone, NODIR, -1, 1, "", C, 64}));

TEST(ClassifyTest, PauseBytesAreNotPauseFrames) {
  // "rx_prio3_bytes" must not be counted as pause anywhere.
  StatSemantics s = ClassifyEthtoolStat("rx_prio3_bytes");
  EXPECT_NE(s.meaning, Meaning::kPfcPauseFrames);
  EXPECT_NE(s.meaning, Meaning::kPfcPauseDuration);
}

struct QueueCase {
  const char* name;
  bool per_queue;
};

void PrintTo(const QueueCase& c, std::ostream* os) { *os << c.name; }

class PerQueueTest : public ::testing::TestWithParam<QueueCase> {};

TEST_P(PerQueueTest, Recognises) {
  EXPECT_EQ(IsPerQueueStat(GetParam().name), GetParam().per_queue);
}

INSTANTIATE_TEST_SUITE_P(
    AllDrivers, PerQueueTest,
    ::testing::Values(
        QueueCase{"rx0_packets", true}, QueueCase{"tx3_packets", true},
        QueueCase{"rx12_xdp_tx_cqes", true}, QueueCase{"ch0_events", true},
        QueueCase{"qos_tx0_packets", true}, QueueCase{"ptp_cq0_abort", true},
        QueueCase{"rx_queue_0_xdp_packets", true},
        QueueCase{"tx_queue_12_bytes", true},
        QueueCase{"[0]: rx_ucast_packets", true},
        QueueCase{"[15]: tpa_aborts", true}, QueueCase{"tx-0.tx_packets", true},
        QueueCase{"rx-3.rx_bytes", true},
        // Port-level and per-priority stats are not per-queue.
        QueueCase{"rx_packets", false}, QueueCase{"ch_events", false},
        QueueCase{"rx_prio0_bytes", false}, QueueCase{"rx_prio3_pause", false},
        QueueCase{"rx_65_to_127_bytes_phy", false},
        QueueCase{"rx_pp_alloc_fast", false},
        QueueCase{"tx_queue_dropped", false}, QueueCase{"rx_queue_", false},
        QueueCase{"[x]: foo", false}, QueueCase{"[0] foo", false},
        QueueCase{"rx-.rx_bytes", false}, QueueCase{"peer_ifindex", false},
        QueueCase{"", false}));

std::string ReadFixture(const std::string& relative) {
  const char* env = std::getenv("FABRICDIAG_FIXTURES");
  std::string root =
      env != nullptr ? std::string(env)
                     : std::string(FABRICDIAG_SOURCE_DIR) + "/tests/fixtures";
  std::ifstream in(root + "/ethtool/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << relative;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// On the real captures: every per-priority PFC name is found, no per-queue
// stat carries a Meaning, and the expected number of names is classified.
TEST(ClassifyFixtureTest, BnxtHasEightPrioritiesPerPfcCounter) {
  EthtoolText parsed =
      ParseEthtoolStatsText(ReadFixture("bnxt_en/bcm_10gsr85.statistics.txt"));
  int pfc_frames[2][8] = {};
  int pfc_duration = 0;
  int per_queue = 0;
  for (const auto& [name, value] : parsed.stats) {
    StatSemantics s = ClassifyEthtoolStat(name);
    if (IsPerQueueStat(name)) {
      ++per_queue;
      EXPECT_EQ(s.meaning, Meaning::kNone) << name;
    }
    if (s.meaning == Meaning::kPfcPauseFrames) {
      ++pfc_frames[s.direction == Direction::kTx][s.priority];
    }
    if (s.meaning == Meaning::kPfcPauseDuration) ++pfc_duration;
  }
  for (int dir = 0; dir < 2; ++dir) {
    for (int p = 0; p < 8; ++p) EXPECT_EQ(pfc_frames[dir][p], 1) << p;
  }
  EXPECT_EQ(pfc_duration, 16);
  EXPECT_EQ(per_queue, 8 * 24);  // 8 rings x 24 ring stats
}

TEST(ClassifyFixtureTest, IcePfcXoffAndQueues) {
  EthtoolText parsed = ParseEthtoolStatsText(
      ReadFixture("i40e/i40e_02_sfp_10_or_25g_sr.statistics.txt"));
  int xoff = 0;
  int per_queue = 0;
  for (const auto& [name, value] : parsed.stats) {
    if (ClassifyEthtoolStat(name).meaning == Meaning::kPfcPauseFrames) ++xoff;
    if (IsPerQueueStat(name)) ++per_queue;
  }
  EXPECT_EQ(xoff, 16);  // 8 priorities x rx/tx
  EXPECT_GT(per_queue, 400);
  EXPECT_FALSE(IsPerQueueStat("rx_dropped.nic"));
}

}  // namespace
}  // namespace fabricdiag::agent
