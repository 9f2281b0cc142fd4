#include "agent/ethtool_names.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "agent/ethtool_text.h"
#include "counters/counter_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::agent {
namespace {

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

// On the real captures: every per-priority PFC name is found through the
// counter table, no per-queue stat carries a Meaning, and the expected
// number of names is classified.
TEST(ClassifyFixtureTest, BnxtHasEightPrioritiesPerPfcCounter) {
  EthtoolText parsed =
      ParseEthtoolStatsText(ReadFixture("bnxt_en/bcm_10gsr85.statistics.txt"));
  int pfc_frames[2][8] = {};
  int pfc_duration = 0;
  int per_queue = 0;
  for (const auto& [name, value] : parsed.stats) {
    counters::CounterInfo s = counters::Classify(counters::Family::kEthtool,
                                                 counters::Driver::kBnxt, name);
    if (IsPerQueueStat(name)) {
      ++per_queue;
      EXPECT_EQ(s.meaning, counters::Meaning::kNone) << name;
    }
    if (s.meaning == counters::Meaning::kPfcPauseFrames) {
      ++pfc_frames[s.direction == counters::Direction::kTx][s.priority];
    }
    if (s.meaning == counters::Meaning::kPfcPauseDuration) ++pfc_duration;
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
    if (counters::Classify(counters::Family::kEthtool,
                           counters::Driver::kUnknown, name)
            .meaning == counters::Meaning::kPfcPauseFrames) {
      ++xoff;
    }
    if (IsPerQueueStat(name)) ++per_queue;
  }
  EXPECT_EQ(xoff, 16);  // 8 priorities x rx/tx
  EXPECT_GT(per_queue, 400);
  EXPECT_FALSE(IsPerQueueStat("rx_dropped.nic"));
}

}  // namespace
}  // namespace fabricdiag::agent
