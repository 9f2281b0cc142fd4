// What the simulator produces for each counter meaning (CounterOf), and
// the gNMI leaves of a simulated switch, which are the counter table's
// rows: a meaning an analyzer reads must be simulated somewhere, and every
// counter leaf must be one the gNMI bridge knows.
#include "sim/port_counters.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "counters/counter_table.h"
#include "counters/meanings.h"
#include "gmock/gmock.h"
#include "gnmi/gnmi_path.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sim/gnmi_leaves.h"

namespace fabricdiag::sim {
namespace {

using counters::Family;
using counters::Meaning;

// A meaning the analyzers read, with no simulated counter behind any of
// its mlx5 or switch spellings, would read 0 in every scenario: a new
// meaning with a signal needs its case in CounterOf.
TEST(CounterOfTest, EveryMeaningWithASignalIsSimulated) {
  std::set<Meaning> simulated;
  std::set<Meaning> spelled;
  for (const counters::CounterSpec& row : counters::Rows()) {
    if (row.driver != counters::Driver::kMlx5 &&
        row.driver != counters::Driver::kAny) {
      continue;
    }
    spelled.insert(row.meaning);
    if (CounterOf(row.family, row.meaning, row.direction, false)) {
      simulated.insert(row.meaning);
    }
  }
  for (const counters::MeaningSpec& spec : counters::Meanings()) {
    if (spec.signal == counters::Signal::kNone ||
        !spelled.count(spec.meaning)) {
      continue;
    }
    EXPECT_TRUE(simulated.count(spec.meaning)) << spec.name;
  }
}

TEST(CounterOfTest, FamiliesDifferWhereDriversDo) {
  // The IB PMA's own 16-bit symbol errors; the PHY's elsewhere.
  EXPECT_EQ(CounterOf(Family::kIbPma, Meaning::kSymbolErrors,
                      counters::Direction::kNone, false),
            kSymbolErrors);
  EXPECT_EQ(CounterOf(Family::kEthtool, Meaning::kSymbolErrors,
                      counters::Direction::kNone, false),
            kSymbolErrorsPhy);
  // A host netdev counts the kernel stack; a switch port the wire.
  EXPECT_EQ(CounterOf(Family::kNetdevStatistics, Meaning::kNetdevBytes,
                      counters::Direction::kTx, false),
            kStackTxBytes);
  EXPECT_EQ(CounterOf(Family::kNetdevStatistics, Meaning::kNetdevBytes,
                      counters::Direction::kTx, true),
            kTxBytes);
  EXPECT_FALSE(CounterOf(Family::kEthtool, Meaning::kQueueDrops,
                         counters::Direction::kTx, true));
}

// Every counter of a port, a distinct non-zero value.
SwitchState OnePort() {
  SwitchState s;
  s.name = "leaf-0";
  s.ports = {"Ethernet0"};
  s.counters.resize(1);
  for (size_t i = 0; i < s.counters[0].value.size(); ++i) {
    s.counters[0].value[i] = 1000 + i;
  }
  return s;
}

// The values of the counter leaves of `dialect`, by the name the counter
// table has for them.
std::map<std::string, uint64_t> CounterValues(gnmi::Dialect dialect) {
  std::map<std::string, uint64_t> out;
  for (const Leaf& leaf : SwitchLeaves(dialect, OnePort())) {
    if (dialect == gnmi::Dialect::kSonic) {
      if (leaf.prefix.target() != "COUNTERS_DB" ||
          gnmi::PathToString(leaf.path) != "/COUNTERS/Ethernet0") {
        continue;
      }
      const nlohmann::json j =
          nlohmann::json::parse(leaf.value.json_ietf_val());
      for (const auto& [name, value] : j.items()) {
        out[name] = std::stoull(value.get<std::string>());
      }
      continue;
    }
    if (!leaf.value.has_uint_val() || leaf.prefix.elem_size() == 0) continue;
    // The table's names leave the interface's key out.
    ::gnmi::Path full;
    *full.mutable_elem() = leaf.prefix.elem();
    full.mutable_elem(0)->clear_key();
    full.mutable_elem(1)->clear_key();
    for (const auto& e : leaf.path.elem()) *full.add_elem() = e;
    out[gnmi::PathToString(full)] = leaf.value.uint_val();
  }
  return out;
}

class SwitchLeavesTest : public ::testing::TestWithParam<gnmi::Dialect> {};

// Each counter leaf is a counter-table row of the dialect (the bridge
// knows it), and each leaf whose meaning an analyzer reads carries its
// simulated counter.
TEST_P(SwitchLeavesTest, EveryCounterLeafIsATableRowWithItsCounter) {
  const gnmi::Dialect dialect = GetParam();
  const Family family = dialect == gnmi::Dialect::kSonic
                            ? Family::kGnmiSonic
                            : Family::kGnmiOpenConfig;
  const std::map<std::string, uint64_t> values = CounterValues(dialect);
  ASSERT_FALSE(values.empty());
  int with_signal = 0;
  for (const auto& [name, value] : values) {
    SCOPED_TRACE(name);
    const counters::CounterInfo info =
        counters::Classify(family, counters::Driver::kUnknown, name);
    ASSERT_NE(info.row, nullptr) << "a leaf the counter table does not know";
    EXPECT_EQ(info.kind, counters::Kind::kCounter);
    if (counters::SpecOf(info.meaning).signal == counters::Signal::kNone) {
      continue;
    }
    ++with_signal;
    const std::optional<Counter> counter =
        CounterOf(family, info.meaning, info.direction, true);
    ASSERT_TRUE(counter.has_value());
    EXPECT_EQ(value, 1000 + *counter + std::max(info.priority, 0));
  }
  EXPECT_GT(with_signal, 10);
}

TEST_P(SwitchLeavesTest, UnicastCountsEveryPacket) {
  const std::map<std::string, uint64_t> values = CounterValues(GetParam());
  const uint64_t rx_packets = 1000 + kRxPackets;
  if (GetParam() == gnmi::Dialect::kSonic) {
    EXPECT_EQ(values.at("SAI_PORT_STAT_IF_IN_UCAST_PKTS"), rx_packets);
    EXPECT_EQ(values.at("SAI_PORT_STAT_IF_IN_NON_UCAST_PKTS"), 0u);
  } else {
    EXPECT_EQ(values.at("/interfaces/interface/state/counters/in-unicast-pkts"),
              rx_packets);
    EXPECT_EQ(
        values.at("/interfaces/interface/state/counters/in-multicast-pkts"),
        0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Dialects, SwitchLeavesTest,
                         ::testing::Values(gnmi::Dialect::kOpenConfig,
                                           gnmi::Dialect::kSonic));

}  // namespace
}  // namespace fabricdiag::sim
