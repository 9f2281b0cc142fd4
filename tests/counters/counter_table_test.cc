#include "counters/counter_table.h"

#include <set>
#include <string>
#include <tuple>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::counters {
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
  CounterInfo s = Classify(Family::kEthtool, Driver::kUnknown, c.name);
  EXPECT_EQ(s.meaning, c.meaning) << MeaningName(s.meaning);
  EXPECT_EQ(s.direction, c.direction);
  EXPECT_EQ(s.priority, c.priority);
  EXPECT_DOUBLE_EQ(s.scale, c.scale);
  EXPECT_EQ(s.unit, c.unit);
  EXPECT_EQ(s.kind, c.kind);
  EXPECT_EQ(s.width_bits, c.width_bits);
}

INSTANTIATE_TEST_SUITE_P(
    EthtoolMlx5, ClassifyTest,
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
    EthtoolBnxtEn, ClassifyTest,
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
    EthtoolIceAndVeth, ClassifyTest,
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
    EthtoolNearMisses, ClassifyTest,
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
  CounterInfo s = Classify(Family::kEthtool, Driver::kMlx5, "rx_prio3_bytes");
  EXPECT_NE(s.meaning, Meaning::kPfcPauseFrames);
  EXPECT_NE(s.meaning, Meaning::kPfcPauseDuration);
}

// ---- sysfs families --------------------------------------------------------

struct SysfsCase {
  Family family;
  Driver driver;
  const char* name;
  Meaning meaning;
  Direction direction;
  uint32_t width_bits;
  bool pma_width;
  double scale;
  const char* unit;
};

void PrintTo(const SysfsCase& c, std::ostream* os) {
  *os << FamilyName(c.family) << "/" << DriverName(c.driver) << "/" << c.name;
}

class SysfsClassifyTest : public ::testing::TestWithParam<SysfsCase> {};

TEST_P(SysfsClassifyTest, DescribesTheCounter) {
  const SysfsCase& c = GetParam();
  CounterInfo s = Classify(c.family, c.driver, c.name);
  EXPECT_EQ(s.meaning, c.meaning) << MeaningName(s.meaning);
  EXPECT_EQ(s.direction, c.direction);
  EXPECT_EQ(s.width_bits, c.width_bits);
  EXPECT_EQ(s.pma_width, c.pma_width);
  EXPECT_DOUBLE_EQ(s.scale, c.scale);
  EXPECT_EQ(s.unit, c.unit);
  EXPECT_EQ(s.priority, -1);
}

constexpr Driver ANY = Driver::kAny;
constexpr Driver MLX5 = Driver::kMlx5;

// Widths of the IBA PortCounters attribute
// (Documentation/ABI/stable/sysfs-class-infiniband); data in 4-octet words.
INSTANTIATE_TEST_SUITE_P(
    IbPma, SysfsClassifyTest,
    ::testing::Values(
        SysfsCase{Family::kIbPma, ANY, "symbol_error", Meaning::kSymbolErrors,
                  NODIR, 16, false, 1, "events"},
        SysfsCase{Family::kIbPma, MLX5, "link_downed", Meaning::kLinkDowned,
                  NODIR, 8, false, 1, "events"},
        SysfsCase{Family::kIbPma, ANY, "link_error_recovery",
                  Meaning::kLinkErrorRecovery, NODIR, 8, false, 1, "events"},
        SysfsCase{Family::kIbPma, ANY, "local_link_integrity_errors",
                  Meaning::kNone, NODIR, 4, false, 1, "events"},
        SysfsCase{Family::kIbPma, ANY, "excessive_buffer_overrun_errors",
                  Meaning::kNone, NODIR, 4, false, 1, "events"},
        SysfsCase{Family::kIbPma, ANY, "port_rcv_constraint_errors",
                  Meaning::kNone, RX, 8, false, 1, "packets"},
        SysfsCase{Family::kIbPma, ANY, "VL15_dropped", Meaning::kNone, NODIR,
                  16, false, 1, "packets"},
        SysfsCase{Family::kIbPma, ANY, "port_xmit_wait", Meaning::kNone, TX, 32,
                  false, 1, "ticks"},
        SysfsCase{Family::kIbPma, ANY, "port_rcv_errors", Meaning::kRxErrors,
                  RX, 16, false, 1, "packets"},
        SysfsCase{Family::kIbPma, ANY, "port_xmit_data", Meaning::kRdmaBytes,
                  TX, 32, true, 4, "bytes"},
        SysfsCase{Family::kIbPma, ANY, "port_rcv_data", Meaning::kRdmaBytes, RX,
                  32, true, 4, "bytes"},
        SysfsCase{Family::kIbPma, ANY, "port_rcv_packets",
                  Meaning::kRdmaPackets, RX, 32, true, 1, "packets"},
        SysfsCase{Family::kIbPma, ANY, "unicast_xmit_packets", Meaning::kNone,
                  TX, 64, false, 1, "packets"},
        SysfsCase{Family::kIbPmaExt, ANY, "port_rcv_data_64",
                  Meaning::kRdmaBytes, RX, 64, false, 4, "bytes"},
        SysfsCase{Family::kIbPmaExt, ANY, "port_unicast_xmit_packets",
                  Meaning::kNone, TX, 64, false, 1, "packets"},
        // A counter a future kernel adds: a 64-bit counter, no meaning, the
        // unit and direction its name suggests.
        SysfsCase{Family::kIbPma, ANY, "port_rcv_future_packets",
                  Meaning::kNone, RX, 64, false, 1, "packets"},
        SysfsCase{Family::kIbPma, ANY, "some_future_counter", Meaning::kNone,
                  NODIR, 64, false, 1, "events"}));

// drivers/infiniband/hw/mlx5/counters.c: Q-counters are 32-bit and wrap;
// congestion counters and rx_icrc_encapsulated are 64-bit.
INSTANTIATE_TEST_SUITE_P(
    RdmaHw, SysfsClassifyTest,
    ::testing::Values(
        SysfsCase{Family::kRdmaHw, MLX5, "out_of_sequence",
                  Meaning::kOutOfSequence, NODIR, 32, false, 1, "events"},
        SysfsCase{Family::kRdmaHw, MLX5, "rx_write_requests", Meaning::kNone,
                  RX, 32, false, 1, "events"},
        SysfsCase{Family::kRdmaHw, MLX5, "rp_cnp_handled", Meaning::kCnpHandled,
                  NODIR, 64, false, 1, "events"},
        SysfsCase{Family::kRdmaHw, MLX5, "rp_cnp_ignored", Meaning::kNone,
                  NODIR, 64, false, 1, "events"},
        SysfsCase{Family::kRdmaHw, MLX5, "np_cnp_sent", Meaning::kCnpSent,
                  NODIR, 64, false, 1, "events"},
        SysfsCase{Family::kRdmaHw, MLX5, "np_ecn_marked_roce_packets",
                  Meaning::kEcnMarked, NODIR, 64, false, 1, "packets"},
        SysfsCase{Family::kRdmaHw, MLX5, "rx_icrc_encapsulated", Meaning::kNone,
                  RX, 64, false, 1, "events"},
        SysfsCase{Family::kRdmaHw, MLX5, "brand_new_counter", Meaning::kNone,
                  NODIR, 64, false, 1, "events"},
        // Switchdev representors: the width of the Q-counter, no meaning.
        SysfsCase{Family::kRdmaHw, MLX5, "vport_duplicate_request",
                  Meaning::kNone, NODIR, 32, false, 1, "events"},
        // rxe's duplicate_request is an atomic64, not mlx5's Q-counter.
        SysfsCase{Family::kRdmaHw, Driver::kRxe, "duplicate_request",
                  Meaning::kDuplicateRequest, NODIR, 64, false, 1, "events"},
        // bnxt_re adopted mlx5 spellings: the meaning carries over, the
        // 32-bit width of mlx5's Q-counter does not.
        SysfsCase{Family::kRdmaHw, Driver::kBnxt, "out_of_buffer",
                  Meaning::kRxOutOfBuffer, NODIR, 64, false, 1, "events"},
        SysfsCase{Family::kRdmaHw, Driver::kBnxt, "np_cnp_pkts",
                  Meaning::kCnpSent, NODIR, 64, false, 1, "packets"},
        SysfsCase{Family::kRdmaHw, Driver::kIrdma, "cnpSent", Meaning::kCnpSent,
                  NODIR, 32, false, 1, "events"},
        // Unknown driver (a collector looking up an old agent's names): the
        // first row, whole.
        SysfsCase{Family::kRdmaHw, Driver::kUnknown, "local_ack_timeout_err",
                  Meaning::kLocalAckTimeout, NODIR, 32, false, 1, "events"}));

INSTANTIATE_TEST_SUITE_P(
    Netdev, SysfsClassifyTest,
    ::testing::Values(
        SysfsCase{Family::kNetdevStatistics, ANY, "rx_bytes",
                  Meaning::kNetdevBytes, RX, 64, false, 1, "bytes"},
        SysfsCase{Family::kNetdevStatistics, ANY, "tx_packets",
                  Meaning::kNetdevPackets, TX, 64, false, 1, "packets"},
        SysfsCase{Family::kNetdevStatistics, ANY, "rx_crc_errors",
                  Meaning::kCrcErrors, RX, 64, false, 1, "packets"},
        SysfsCase{Family::kNetdevStatistics, ANY, "collisions", Meaning::kNone,
                  NODIR, 64, false, 1, "events"},
        SysfsCase{Family::kNetdevStatistics, ANY, "rx_future_bytes",
                  Meaning::kNone, RX, 64, false, 1, "bytes"},
        SysfsCase{Family::kNetdevAttribute, ANY, "carrier_changes",
                  Meaning::kCarrierChanges, NODIR, 32, false, 1, "events"}));

TEST(CounterTableTest, RowsAreUniquePerFamilyDriverAndName) {
  std::set<std::tuple<Family, Driver, std::string>> seen;
  for (const CounterSpec& row : Rows()) {
    EXPECT_TRUE(
        seen.emplace(row.family, row.driver, std::string(row.name)).second)
        << FamilyName(row.family) << " " << row.name;
  }
}

TEST(CounterTableTest, EveryRowIsComplete) {
  for (const CounterSpec& row : Rows()) {
    SCOPED_TRACE(std::string(row.name));
    EXPECT_FALSE(row.name.empty());
    EXPECT_FALSE(row.doc.empty());
    EXPECT_NE(row.driver, Driver::kUnknown);
    EXPECT_GT(row.scale, 0);
    EXPECT_TRUE(row.width_bits == kPmaWidth || row.width_bits == 4 ||
                row.width_bits == 8 || row.width_bits == 16 ||
                row.width_bits == 32 || row.width_bits == 64);
    EXPECT_TRUE(row.width_bits != kPmaWidth || row.family == Family::kIbPma);
    // A row's name classifies back to the row (for its own driver).
    const std::string name = ExpandName(row, IsPerPriority(row) ? 5 : -1);
    CounterInfo info = Classify(row.family, row.driver, name);
    EXPECT_EQ(info.row, &row);
    EXPECT_EQ(info.priority, IsPerPriority(row) ? 5 : -1);
    // Per-priority meanings carry a priority; others do not need one.
    if (row.meaning == Meaning::kPfcPauseFrames ||
        row.meaning == Meaning::kPfcPauseDuration) {
      EXPECT_TRUE(IsPerPriority(row) || row.family != Family::kEthtool);
      EXPECT_NE(row.direction, Direction::kNone);
    }
  }
}

TEST(CounterTableTest, PriorityRowsExpandToEightNames) {
  for (const CounterSpec& row : Rows()) {
    if (!IsPerPriority(row)) continue;
    std::set<std::string> names;
    for (int p = 0; p < 8; ++p) names.insert(ExpandName(row, p));
    EXPECT_EQ(names.size(), 8u) << row.name;
    EXPECT_EQ(Classify(row.family, row.driver, ExpandName(row, 8)).row, nullptr)
        << row.name;
  }
}

TEST(CounterTableTest, OwnDriverRowWinsOverAnotherDrivers) {
  // duplicate_request is spelled by mlx5 (32-bit) and rxe (64-bit).
  EXPECT_EQ(Classify(Family::kRdmaHw, MLX5, "duplicate_request").width_bits,
            32u);
  EXPECT_EQ(
      Classify(Family::kRdmaHw, Driver::kRxe, "duplicate_request").width_bits,
      64u);
  EXPECT_EQ(
      Classify(Family::kRdmaHw, Driver::kRxe, "duplicate_request").row->driver,
      Driver::kRxe);
}

TEST(CounterTableTest, FamiliesDoNotLeakIntoEachOther) {
  // rx_bytes is a netdev statistic, not an ethtool PHY counter.
  EXPECT_EQ(Classify(Family::kEthtool, Driver::kUnknown, "rx_bytes").meaning,
            Meaning::kNone);
  EXPECT_EQ(Classify(Family::kNetdevStatistics, ANY, "rx_bytes").meaning,
            Meaning::kNetdevBytes);
  EXPECT_EQ(Classify(Family::kRdmaHw, MLX5, "port_xmit_data").meaning,
            Meaning::kNone);
}

TEST(CounterTableTest, RowsForListsOwnAndDriverIndependentRows) {
  std::vector<const CounterSpec*> rows =
      RowsFor(Family::kRdmaHw, Driver::kMlx5);
  ASSERT_FALSE(rows.empty());
  for (const CounterSpec* row : rows) {
    EXPECT_EQ(row->family, Family::kRdmaHw);
    EXPECT_TRUE(row->driver == Driver::kMlx5 || row->driver == Driver::kAny);
  }
  EXPECT_EQ(RowsFor(Family::kIbPma, Driver::kMlx5).size(),
            RowsFor(Family::kIbPma, Driver::kAny).size());
}

struct GnmiCase {
  Family family;
  const char* name;
  Meaning meaning;
  Direction direction;
  int priority;
  double scale;
  const char* unit;
  Kind kind;
  uint32_t width_bits;
};

void PrintTo(const GnmiCase& c, std::ostream* os) {
  *os << FamilyName(c.family) << " " << c.name;
}

class GnmiClassifyTest : public ::testing::TestWithParam<GnmiCase> {};

TEST_P(GnmiClassifyTest, MapsPathOntoMeaning) {
  const GnmiCase& c = GetParam();
  CounterInfo s = Classify(c.family, Driver::kAny, c.name);
  EXPECT_EQ(s.meaning, c.meaning) << MeaningName(s.meaning);
  EXPECT_EQ(s.direction, c.direction);
  EXPECT_EQ(s.priority, c.priority);
  EXPECT_DOUBLE_EQ(s.scale, c.scale);
  EXPECT_EQ(s.unit, c.unit);
  EXPECT_EQ(s.kind, c.kind);
  EXPECT_EQ(s.width_bits, c.width_bits);
}

constexpr Family OC = Family::kGnmiOpenConfig;
constexpr Family SONIC = Family::kGnmiSonic;

INSTANTIATE_TEST_SUITE_P(
    OpenConfig, GnmiClassifyTest,
    ::testing::Values(
        GnmiCase{OC, "/interfaces/interface/state/counters/in-octets",
                 Meaning::kPhyBytes, RX, -1, 1, "bytes", C, 64},
        GnmiCase{OC, "/interfaces/interface/state/counters/out-octets",
                 Meaning::kPhyBytes, TX, -1, 1, "bytes", C, 64},
        GnmiCase{OC, "/interfaces/interface/state/counters/in-fcs-errors",
                 Meaning::kCrcErrors, RX, -1, 1, "packets", C, 64},
        GnmiCase{OC, "/interfaces/interface/state/counters/in-discards",
                 Meaning::kRxDiscardsPhy, RX, -1, 1, "packets", C, 64},
        // The deprecated leaf and both successors count the same flaps.
        GnmiCase{OC, "/interfaces/interface/state/counters/carrier-transitions",
                 Meaning::kCarrierChanges, NODIR, -1, 1, "events", C, 64},
        GnmiCase{OC,
                 "/interfaces/interface/state/counters/interface-transitions",
                 Meaning::kCarrierChanges, NODIR, -1, 1, "events", C, 64},
        GnmiCase{OC, "/interfaces/interface/state/counters/link-transitions",
                 Meaning::kCarrierChanges, NODIR, -1, 1, "events", C, 64},
        // timeticks64: a time, not a count.
        GnmiCase{OC, "/interfaces/interface/state/counters/last-clear",
                 Meaning::kNone, NODIR, -1, 1e-9, "seconds", G, 64},
        GnmiCase{OC,
                 "/interfaces/interface/ethernet/state/counters/"
                 "in-mac-pause-frames",
                 Meaning::kGlobalPauseFrames, RX, -1, 1, "frames", C, 64},
        GnmiCase{OC,
                 "/interfaces/interface/ethernet/pfc/priorities/"
                 "priority[index=3]/state/out-frames",
                 Meaning::kPfcPauseFrames, TX, 3, 1, "frames", C, 64},
        // counter32 in arista-intf-augments; any queue index and type.
        GnmiCase{OC,
                 "/interfaces/interface/ethernet/pfc/watchdog/tx-queues/"
                 "tx-queue[index=3][queue-type=UNICAST]/state/stuck-count",
                 Meaning::kPfcWatchdogStorms, TX, -1, 1, "events", C, 32},
        // Queue names are the switch's: "3", "UC3", "BE1".
        GnmiCase{OC,
                 "/qos/interfaces/interface/output/queues/queue[name=UC3]/"
                 "state/ecn-marked-pkts",
                 Meaning::kQueueEcnMarked, TX, -1, 1, "packets", C, 64},
        GnmiCase{OC,
                 "/qos/interfaces/interface/output/queues/queue[name=3]/"
                 "state/transmit-octets",
                 Meaning::kQueueBytes, TX, -1, 1, "bytes", C, 64},
        GnmiCase{OC,
                 "/qos/interfaces/interface/state/switch-priority[priority=4]/"
                 "counters/in-pause-pkts",
                 Meaning::kPfcPauseFrames, RX, 4, 1, "frames", C, 64},
        GnmiCase{OC,
                 "/qos/interfaces/interface/switch-priority[priority=3]/state/"
                 "counters/out-pause-duration",
                 Meaning::kPfcPauseDuration, TX, 3, 1e-6, "seconds", C, 64},
        // Unknown leaves: raw statistics, shape only, never a meaning.
        GnmiCase{OC, "/interfaces/interface/state/counters/in-vendor-octets",
                 Meaning::kNone, RX, -1, 1, "bytes", C, 64},
        GnmiCase{OC,
                 "/interfaces/interface/ethernet/state/counters/"
                 "out-mystery-frames",
                 Meaning::kNone, TX, -1, 1, "frames", C, 64},
        // A priority outside 0..7 is not a priority row.
        GnmiCase{OC,
                 "/interfaces/interface/ethernet/pfc/priorities/"
                 "priority[index=9]/state/in-frames",
                 Meaning::kNone, RX, -1, 1, "frames", C, 64}));

INSTANTIATE_TEST_SUITE_P(
    Sonic, GnmiClassifyTest,
    ::testing::Values(
        GnmiCase{SONIC, "SAI_PORT_STAT_IF_IN_OCTETS", Meaning::kPhyBytes, RX,
                 -1, 1, "bytes", C, 64},
        GnmiCase{SONIC, "SAI_PORT_STAT_IF_IN_ERRORS", Meaning::kRxErrors, RX,
                 -1, 1, "packets", C, 64},
        GnmiCase{SONIC, "SAI_PORT_STAT_PFC_7_RX_PKTS", Meaning::kPfcPauseFrames,
                 RX, 7, 1, "frames", C, 64},
        GnmiCase{SONIC, "SAI_PORT_STAT_PFC_3_TX_PKTS", Meaning::kPfcPauseFrames,
                 TX, 3, 1, "frames", C, 64},
        // saiport.h: the _US statistics are microseconds ...
        GnmiCase{SONIC, "SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US",
                 Meaning::kPfcPauseDuration, RX, 3, 1e-6, "seconds", C, 64},
        // ... the plain ones pause quanta: no meaning, no guessed unit.
        GnmiCase{SONIC, "SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION", Meaning::kNone,
                 RX, 3, 1, "quanta", C, 64},
        GnmiCase{SONIC, "SAI_PORT_STAT_PFC_0_ON2OFF_RX_PKTS",
                 Meaning::kPfcPauseTransitions, RX, 0, 1, "events", C, 64},
        GnmiCase{SONIC, "Queues[3]/PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED",
                 Meaning::kPfcWatchdogStorms, TX, -1, 1, "events", C, 64},
        GnmiCase{SONIC, "Queues[12]/SAI_QUEUE_STAT_DROPPED_PACKETS",
                 Meaning::kQueueDrops, TX, -1, 1, "packets", C, 64},
        GnmiCase{SONIC,
                 "Queues[1:periodic]/SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES",
                 Meaning::kNone, TX, -1, 1, "bytes", G, 64},
        GnmiCase{SONIC, "SAI_PORT_STAT_ETHER_IN_PKTS_64_OCTETS", Meaning::kNone,
                 RX, -1, 1, "bytes", C, 64},
        GnmiCase{SONIC, "SAI_PORT_STAT_IF_OUT_FABRIC_DATA_UNITS",
                 Meaning::kNone, TX, -1, 1, "", C, 64}));

TEST(CounterTableTest, GnmiDialectsDoNotLeakIntoEachOther) {
  EXPECT_EQ(
      Classify(SONIC, ANY, "/interfaces/interface/state/counters/in-octets")
          .row,
      nullptr);
  EXPECT_EQ(Classify(OC, ANY, "SAI_PORT_STAT_IF_IN_OCTETS").row, nullptr);
  // Keys are wildcarded only where a row has a wildcard.
  EXPECT_EQ(Classify(OC, ANY,
                     "/interfaces/interface[name=Ethernet1]/state/counters/"
                     "in-octets")
                .row,
            nullptr);
}

TEST(VocabularyTest, DriversFromModulesAndNames) {
  EXPECT_EQ(DriverFromKernelModule("mlx5_core"), Driver::kMlx5);
  EXPECT_EQ(DriverFromKernelModule("bnxt_en"), Driver::kBnxt);
  EXPECT_EQ(DriverFromKernelModule("e1000e"), Driver::kUnknown);
  EXPECT_EQ(RdmaDriverFromKernelModule("ice"), Driver::kIrdma);
  EXPECT_EQ(RdmaDriverFromKernelModule("mlx5_core"), Driver::kMlx5);
  EXPECT_EQ(DriverFromRdmaDeviceName("mlx5_7"), Driver::kMlx5);
  EXPECT_EQ(DriverFromRdmaDeviceName("bnxt_re0"), Driver::kBnxt);
  EXPECT_EQ(DriverFromRdmaDeviceName("rocep1s0f0"), Driver::kUnknown);
}

TEST(VocabularyTest, EveryMeaningHasANameAndIsSpelledSomewhere) {
  std::set<std::string> names;
  std::set<Meaning> spelled;
  for (const CounterSpec& row : Rows()) spelled.insert(row.meaning);
  for (int i = 1; i < kMeaningCount; ++i) {
    const Meaning m = static_cast<Meaning>(i);
    const std::string name = MeaningName(m);
    EXPECT_FALSE(name.empty()) << i;
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_TRUE(spelled.count(m)) << name << " has no spelling in the table";
  }
}

}  // namespace
}  // namespace fabricdiag::counters
