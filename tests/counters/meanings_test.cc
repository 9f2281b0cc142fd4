// Every meaning has all of its parts: a row in counters/meanings.cc, its
// value on the ingest wire, a counter that spells it, and (for the signals
// and the /metrics families it names) a consistent shape.
#include "counters/meanings.h"

#include <iterator>
#include <map>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "counters/counter_table.h"
#include "counters/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::counters {
namespace {

// Every Meaning value, kNone included.
std::vector<Meaning> AllMeanings() {
  std::vector<Meaning> out;
  for (int i = 0; i < kMeaningCount; ++i)
    out.push_back(static_cast<Meaning>(i));
  return out;
}

TEST(MeaningsTest, EveryMeaningHasItsRowAndAName) {
  ASSERT_EQ(Meanings().size(), static_cast<size_t>(kMeaningCount));
  std::set<std::string> names;
  for (Meaning m : AllMeanings()) {
    const MeaningSpec& spec = SpecOf(m);
    EXPECT_EQ(spec.meaning, m);
    EXPECT_EQ(std::string(MeaningName(m)), spec.name);
    if (m == Meaning::kNone) {
      EXPECT_STREQ(spec.name, "");
      continue;
    }
    const std::string name = spec.name;
    EXPECT_FALSE(name.empty()) << static_cast<int>(m);
    EXPECT_EQ(name, absl::AsciiStrToLower(name));
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    EXPECT_FALSE(spec.unit.empty()) << name;
  }
  // Out of range: kNone's row.
  EXPECT_EQ(SpecOf(static_cast<Meaning>(kMeaningCount)).meaning,
            Meaning::kNone);
}

// The ingest wire enum carries the same meanings under the same names: a
// meaning missing from proto/ingest.proto (or numbered differently) fails.
TEST(MeaningsTest, EveryMeaningIsOnTheIngestWireUnderItsName) {
  for (Meaning m : AllMeanings()) {
    if (m == Meaning::kNone) continue;
    EXPECT_EQ(v1::Meaning_Name(ToWire(m)),
              absl::StrCat("MEANING_", absl::AsciiStrToUpper(MeaningName(m))));
    EXPECT_EQ(FromWire(ToWire(m)), m);
  }
  EXPECT_EQ(v1::Meaning_MAX + 1, kMeaningCount);
}

// A meaning no counter spells is dead weight: every one has a row in the
// counter table.
TEST(MeaningsTest, EveryMeaningIsSpelledByACounter) {
  std::set<Meaning> spelled;
  for (const CounterSpec& row : Rows()) spelled.insert(row.meaning);
  for (Meaning m : AllMeanings()) {
    if (m == Meaning::kNone) continue;
    EXPECT_TRUE(spelled.count(m)) << MeaningName(m) << " has no counter";
  }
}

// What a count counts differs by driver (events, packets, frames, errors),
// but a time or a size has one unit per meaning: a row left in pause quanta
// or microseconds under a duration meaning would add up wrong numbers.
TEST(MeaningsTest, EveryRowIsInItsMeaningsUnit) {
  auto is_count = [](absl::string_view unit) {
    return unit == "events" || unit == "packets" || unit == "frames" ||
           unit == "errors";
  };
  for (const CounterSpec& row : Rows()) {
    if (row.meaning == Meaning::kNone) continue;
    const absl::string_view unit = SpecOf(row.meaning).unit;
    if (is_count(unit) && is_count(row.unit)) continue;
    EXPECT_EQ(row.unit, unit)
        << row.name << " (" << MeaningName(row.meaning) << ")";
  }
}

TEST(MeaningsTest, SignalsHaveTheirShape) {
  for (const MeaningSpec& spec : Meanings()) {
    SCOPED_TRACE(spec.name);
    if (spec.tx_signal != Signal::kNone) {
      // Split by direction: both signals of one kind.
      EXPECT_NE(spec.signal, Signal::kNone);
      EXPECT_EQ(IsPerPriority(spec.signal), IsPerPriority(spec.tx_signal));
    }
    if (spec.source != Source::kNone) {
      // A traffic source feeds rx_bytes and tx_bytes.
      EXPECT_EQ(spec.signal, Signal::kRxBytes);
      EXPECT_EQ(spec.tx_signal, Signal::kTxBytes);
    }
    if (spec.signal == Signal::kRxBytes || spec.signal == Signal::kTxBytes) {
      EXPECT_NE(spec.source, Source::kNone) << "traffic needs a source rank";
    }
    // The inventory's signals are no meaning's.
    for (Signal s : {spec.signal, spec.tx_signal}) {
      EXPECT_NE(s, Signal::kLinkRate);
      EXPECT_NE(s, Signal::kExpectedRate);
    }
  }
}

// The slots are those of proto/cluster.proto's PortBlock: in order, the
// per-priority signals 8 apart, the last one ending at kSignalSlots.
TEST(MeaningsTest, SignalSlotsAreTheWireSlots) {
  int next = 0;
  std::set<std::string> names;
  for (const SignalInfo& info : kSignals) {
    const Signal s = info.signal;
    EXPECT_EQ(static_cast<int>(s), next) << SignalName(s);
    next += IsPerPriority(s) ? 8 : 1;
    EXPECT_TRUE(names.insert(SignalName(s)).second) << SignalName(s);
    EXPECT_STRNE(SignalName(s), "");
  }
  EXPECT_EQ(next, kSignalSlots);
  EXPECT_EQ(static_cast<int>(Signal::kLinkRate), 27);
  EXPECT_EQ(static_cast<int>(Signal::kRxPauseFraction), 29);
  EXPECT_STREQ(SignalName(Signal::kNone), "");
}

// Every meaning an ethtool statistic has is exported under a family, and
// meanings that share a family give it one help text and one label set.
TEST(MeaningsTest, EthtoolMeaningsHaveAFamily) {
  std::set<Meaning> ethtool;
  for (const CounterSpec& row : Rows()) {
    if (row.family == Family::kEthtool) ethtool.insert(row.meaning);
  }
  std::map<absl::string_view, const MeaningSpec*> by_family;
  for (const MeaningSpec& spec : Meanings()) {
    SCOPED_TRACE(spec.name);
    const Exposition& e = spec.exposition;
    if (spec.meaning != Meaning::kNone && ethtool.count(spec.meaning)) {
      EXPECT_FALSE(e.family.empty()) << "an ethtool meaning needs a family";
    }
    if (e.family.empty()) {
      EXPECT_TRUE(e.tx_family.empty());
      continue;
    }
    for (absl::string_view f : {e.family, e.tx_family}) {
      if (f.empty()) continue;
      EXPECT_TRUE(absl::StartsWith(f, "fabricdiag_")) << f;
      EXPECT_TRUE(absl::EndsWith(f, "_total")) << f;
    }
    EXPECT_STRNE(e.help, "");
    EXPECT_EQ(e.fixed_label.empty(), e.fixed_value.empty());
    auto [it, first] = by_family.emplace(e.family, &spec);
    if (first) continue;
    const Exposition& other = it->second->exposition;
    EXPECT_STREQ(e.help, other.help) << e.family;
    EXPECT_EQ(e.direction_label, other.direction_label) << e.family;
    EXPECT_EQ(e.priority_label, other.priority_label) << e.family;
    EXPECT_EQ(e.fixed_label, other.fixed_label) << e.family;
    // One family, told apart by the fixed label's value.
    EXPECT_NE(e.fixed_value, other.fixed_value) << e.family;
  }
}

}  // namespace
}  // namespace fabricdiag::counters
