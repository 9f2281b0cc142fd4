#include "analysis/pfc_storm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/hysteresis.h"
#include "tests/analysis/pfc_fabric_testing.h"

namespace fabricdiag::analysis {
namespace {

using ::fabricdiag::analysis::testing::Host;
using ::fabricdiag::analysis::testing::kRocePriority;
using ::fabricdiag::analysis::testing::Nic;
using ::fabricdiag::analysis::testing::TestFabric;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using ::testing::StartsWith;

constexpr int kP = kRocePriority;
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<Finding> Analyze(const TestFabric& fabric, double window = 5) {
  const FabricView view = fabric.View(window);
  return PfcStormFindings(fabric.Input(view));
}

// gpu-003 mlx5_2 (leaf-0 swp15) stops draining: it pauses its switch port,
// leaf-0 fills and relays pause out of swp1, swp2 (to gpu-000) and its
// uplinks; leaf-1's uplinks are paused from the spines.
void StuckReceiver(TestFabric& fabric) {
  PortView& source = fabric.Port("gpu-003", "mlx5_2");
  source.s.tx_pause_fraction[kP] = 0.94;
  source.s.rx_bytes = 1.2e9;
  fabric.Port("leaf-0", "swp15").s.rx_pause_fraction[kP] = 0.93;
  for (const char* relay : {"swp1", "swp2", "swp49", "swp50"}) {
    fabric.Port("leaf-0", relay).s.tx_pause_fraction[kP] = 0.6;
  }
  fabric.Port("gpu-000", "mlx5_0").s.rx_pause_fraction[kP] = 0.58;
  fabric.Port("gpu-000", "mlx5_1").s.rx_pause_fraction[kP] = 0.57;
  fabric.Port("leaf-1", "swp49").s.rx_pause_fraction[kP] = 0.3;
}

TEST(PfcStormTest, StuckReceiverIsTheSourceAndNamesItsVictims) {
  TestFabric fabric(1);
  StuckReceiver(fabric);
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));  // the relaying switch ports are not sources
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "pfc_storm");
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_EQ(f.node, "gpu-003");
  EXPECT_EQ(f.device, "mlx5_2");
  EXPECT_EQ(f.job, "moe-train-42");
  EXPECT_EQ(f.group, "");
  EXPECT_FALSE(f.immediate);
  EXPECT_THAT(f.nodes, ElementsAre("gpu-003", "gpu-000", "leaf-0", "leaf-1"));
  EXPECT_DOUBLE_EQ(f.evidence.at("tx_pause_fraction"), 0.94);
  // 94% of the time against the 20% warning threshold.
  EXPECT_DOUBLE_EQ(f.evidence.at(kOverThresholdEvidence), 0.94 / 0.2);
  EXPECT_EQ(f.evidence.at("priority"), 3);
  EXPECT_EQ(f.evidence.at("victims"), 4);
  EXPECT_DOUBLE_EQ(f.evidence.at("rx_bytes_per_second"), 1.2e9);
  // The link partner first, then by name.
  EXPECT_EQ(f.evidence_text.at("victim_ports"),
            "leaf-0 swp15, gpu-000 mlx5_0, gpu-000 mlx5_1, leaf-1 swp49");
  EXPECT_THAT(f.summary,
              StartsWith("gpu-003 mlx5_2 has transmitted PFC pause on "
                         "priority 3 for 94% of the last 5 s while draining "
                         "only 1.2 GB/s; 4 ports receive its pause (leaf-0 "
                         "swp15, gpu-000 mlx5_0, gpu-000 mlx5_1 ...)"));
  EXPECT_THAT(f.summary, HasSubstr("a stuck receiver is spreading "
                                   "back-pressure"));
}

TEST(PfcStormTest, SummaryUsesTheWindow) {
  TestFabric fabric(2);
  StuckReceiver(fabric);
  const std::vector<Finding> found = Analyze(fabric, /*window=*/10);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0].summary, HasSubstr("for 94% of the last 10 s"));
}

TEST(PfcStormTest, HealthyFabricWithNoiseRaisesNothing) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    TestFabric fabric(seed);
    EXPECT_THAT(Analyze(fabric), IsEmpty()) << "seed " << seed;
  }
}

TEST(PfcStormTest, SeverityFollowsTheThresholds) {
  struct Case {
    double fraction;
    bool found;
    Severity severity;
  };
  const AnalysisConfig defaults;
  const double warning = defaults.pfc_storm.warning_pause_fraction;
  const double critical = defaults.pfc_storm.critical_pause_fraction;
  for (const Case& c : {Case{warning - 1e-4, false, Severity::kWarning},
                        Case{warning, true, Severity::kWarning},
                        Case{critical - 1e-4, true, Severity::kWarning},
                        Case{critical, true, Severity::kCritical},
                        Case{1.0, true, Severity::kCritical}}) {
    TestFabric fabric(3);
    fabric.Port("gpu-005", "mlx5_6").s.tx_pause_fraction[kP] = c.fraction;
    const std::vector<Finding> found = Analyze(fabric);
    if (!c.found) {
      EXPECT_THAT(found, IsEmpty()) << c.fraction;
      continue;
    }
    ASSERT_THAT(found, SizeIs(1)) << c.fraction;
    EXPECT_EQ(found[0].severity, c.severity) << c.fraction;
    EXPECT_EQ(found[0].node, "gpu-005");
    EXPECT_EQ(found[0].device, "mlx5_6");
    EXPECT_EQ(found[0].evidence.at("victims"), 0);
    EXPECT_THAT(found[0].summary,
                HasSubstr("no port in telemetry reports receiving its pause"));
  }
}

TEST(PfcStormTest, ConfiguredThresholdsAreUsed) {
  TestFabric fabric(4);
  fabric.config().pfc_storm.warning_pause_fraction = 0.05;
  fabric.Port("gpu-005", "mlx5_6").s.tx_pause_fraction[kP] = 0.08;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].severity, Severity::kWarning);
}

TEST(PfcStormTest, WatchdogEventIsCriticalAtOnce) {
  TestFabric fabric(5);
  // The NIC's watchdog cut the storm: pause stopped, the event remains.
  PortView& p = fabric.Port("gpu-002", "mlx5_4");
  p.s.pause_storm_errors = 0.2;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  const Finding& f = found[0];
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_TRUE(f.immediate);
  EXPECT_EQ(f.node, "gpu-002");
  EXPECT_EQ(f.device, "mlx5_4");
  EXPECT_EQ(f.evidence.at("priority"), 3);
  EXPECT_DOUBLE_EQ(f.evidence.at("pause_storm_errors_per_second"), 0.2);
  EXPECT_THAT(f.summary, HasSubstr("PFC storm watchdog fired"));
}

TEST(PfcStormTest, WatchdogWarningAloneIsCriticalToo) {
  TestFabric fabric(6);
  fabric.Port("gpu-002", "mlx5_4").s.pause_storm_warnings = 0.4;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].severity, Severity::kCritical);
  EXPECT_TRUE(found[0].immediate);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("pause_storm_warnings_per_second"),
                   0.4);
}

TEST(PfcStormTest, FramesAndLinkRateEstimateTheFraction) {
  TestFabric fabric(7);
  PortView& p = fabric.Port("gpu-004", "mlx5_1");
  p.s.tx_pause_fraction[kP] = kAbsent;  // a driver without durations
  // One max-quanta frame holds a 400 Gb/s link for 83.9 us.
  const double frame_seconds = 65535.0 * 512 / 400e9;
  p.s.tx_pause_frames[kP] = 0.6 / frame_seconds;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].severity, Severity::kCritical);
  EXPECT_THAT(found[0].evidence.at("tx_pause_fraction"), DoubleNear(0.6, 1e-9));
  EXPECT_THAT(found[0].evidence.at("tx_pause_frames_per_second"),
              DoubleNear(7153, 1));
  EXPECT_THAT(found[0].summary, HasSubstr("for about 60% of the last 5 s"));
}

TEST(PfcStormTest, FramesWithoutLinkRateCompareWithTheFrameThreshold) {
  const AnalysisConfig defaults;
  const double threshold = defaults.pfc_storm.warning_pause_frames_per_second;
  for (double frames : {threshold - 1, threshold, 20 * threshold}) {
    TestFabric fabric(8);
    PortView& p = fabric.Port("gpu-004", "mlx5_1");
    p.s.link_rate = 0;
    p.s.tx_pause_fraction[kP] = kAbsent;
    p.s.tx_pause_frames[kP] = frames;
    const std::vector<Finding> found = Analyze(fabric);
    if (frames < threshold) {
      EXPECT_THAT(found, IsEmpty());
      continue;
    }
    ASSERT_THAT(found, SizeIs(1)) << frames;
    // The fraction is unknown, so never critical and not claimed.
    EXPECT_EQ(found[0].severity, Severity::kWarning);
    EXPECT_EQ(found[0].evidence.count("tx_pause_fraction"), 0);
    EXPECT_DOUBLE_EQ(found[0].evidence.at("tx_pause_frames_per_second"),
                     frames);
    EXPECT_THAT(found[0].summary, HasSubstr("link rate unknown"));
  }
}

// The sweep passes over ports paused less than both thresholds on every
// priority: each of these must still be weighed.
TEST(PfcStormTest, FramesOnAnyPriorityAreWeighedPastGarbageOnAnother) {
  TestFabric fabric(21);
  PortView& p = fabric.Port("gpu-004", "mlx5_1");
  p.s.tx_pause_frames[1] = kInf;  // garbage: no signal
  p.s.tx_pause_frames[2] = -5;    // garbage too
  const double frame_seconds = 65535.0 * 512 / 400e9;
  p.s.tx_pause_frames[5] = 0.6 / frame_seconds;  // no duration counter
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].node, "gpu-004");
  EXPECT_EQ(found[0].evidence.at("priority"), 5);
  EXPECT_THAT(found[0].evidence.at("tx_pause_fraction"), DoubleNear(0.6, 1e-9));
}

TEST(PfcStormTest, AVictimPausedExactlyAtTheThresholdIsListed) {
  TestFabric fabric(22);
  const AnalysisConfig defaults;
  fabric.Port("gpu-003", "mlx5_2").s.tx_pause_fraction[5] = 0.94;
  fabric.Port("leaf-0", "swp15").s.rx_pause_fraction[5] =
      defaults.pfc_storm.victim_pause_fraction;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].device, "mlx5_2");
  EXPECT_EQ(found[0].evidence.at("victims"), 1);
  EXPECT_THAT(found[0].nodes, ElementsAre("gpu-003", "leaf-0"));
}

TEST(PfcStormTest, WatchdogEventsOfAPortThatCountsNoPauseAreFound) {
  TestFabric fabric(23);
  PortView& p = fabric.Port("gpu-002", "mlx5_4");
  p.s.tx_pause_fraction = AbsentPerPriority();
  p.s.rx_pause_fraction = AbsentPerPriority();
  p.s.tx_pause_frames = AbsentPerPriority();
  p.s.rx_pause_frames = AbsentPerPriority();
  p.s.pause_storm_warnings = 0.4;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].node, "gpu-002");
  EXPECT_EQ(found[0].device, "mlx5_4");
  EXPECT_EQ(found[0].evidence.count("priority"), 0);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("pause_storm_warnings_per_second"),
                   0.4);
}

TEST(PfcStormTest, VictimWithoutVisibleSource) {
  TestFabric fabric(9);
  // gpu-005 mlx5_1 (leaf-0 swp22) stopped reporting; its switch port is
  // paused and leaf-0 relays the pause to gpu-000 mlx5_0.
  fabric.Remove("gpu-005", "mlx5_1");
  fabric.Port("leaf-0", "swp22").s.rx_pause_fraction[kP] = 0.9;
  fabric.Port("leaf-0", "swp1").s.tx_pause_fraction[kP] = 0.45;
  fabric.Port("gpu-000", "mlx5_0").s.rx_pause_fraction[kP] = 0.4;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  const Finding& f = found[0];
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.node, "leaf-0");
  EXPECT_EQ(f.device, "swp22");
  EXPECT_EQ(f.job, "");
  EXPECT_THAT(f.nodes, ElementsAre("leaf-0", "gpu-000"));
  EXPECT_DOUBLE_EQ(f.evidence.at("rx_pause_fraction"), 0.9);
  EXPECT_EQ(f.evidence.at("priority"), 3);
  EXPECT_EQ(f.evidence.at("victims"), 2);
  EXPECT_EQ(f.evidence_text.at("link_partner"), "gpu-005 mlx5_1");
  EXPECT_THAT(f.summary, HasSubstr("leaf-0 swp22 has received PFC pause on "
                                   "priority 3 for 90% of the last 5 s"));
  EXPECT_THAT(f.summary, HasSubstr("gpu-005 mlx5_1 (which reports no "
                                   "telemetry)"));
  EXPECT_THAT(f.summary, HasSubstr("victim without a visible source"));
}

// A storm whose source's node is held (its agent away, its finding kept):
// the victims, still in view, make a source-less warning, which the runner
// drops for that priority (DropSourcelessOnPriorities); the held source
// keeps the one finding. A source finding and other priorities stay.
TEST(PfcStormTest, ASourcelessWarningOfAHeldSourcesPriorityIsDropped) {
  TestFabric fabric(1);
  StuckReceiver(fabric);
  std::vector<Finding> with_source = Analyze(fabric);
  ASSERT_THAT(with_source, SizeIs(1));
  EXPECT_FALSE(IsSourceless(with_source[0]));
  fabric.Remove("gpu-003", "mlx5_2");  // the source's agent is away
  std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_TRUE(IsSourceless(found[0]));

  std::vector<Finding> other_priority = found;
  DropSourcelessOnPriorities({kP + 1}, &other_priority);
  EXPECT_THAT(other_priority, SizeIs(1));
  std::vector<Finding> none_held = found;
  DropSourcelessOnPriorities({}, &none_held);
  EXPECT_THAT(none_held, SizeIs(1));
  DropSourcelessOnPriorities({kP}, &found);
  EXPECT_THAT(found, IsEmpty());
  DropSourcelessOnPriorities({kP}, &with_source);
  EXPECT_THAT(with_source, SizeIs(1));
}

// Priorities read back from a store are not trusted: only 0..7 count.
TEST(PfcStormTest, OnlyASanePriorityIsAStormPriority) {
  EXPECT_EQ(StormPriority({{"priority", 3}}), 3);
  EXPECT_EQ(StormPriority({{"priority", 0}}), 0);
  for (double bad : {-1.0, 8.0, 2.5, 1e300, -kInf, kInf,
                     std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_EQ(StormPriority({{"priority", bad}}), std::nullopt) << bad;
  }
  EXPECT_EQ(StormPriority({}), std::nullopt);
  // A source-less warning whose priority is garbage is never dropped.
  TestFabric fabric(1);
  StuckReceiver(fabric);
  fabric.Remove("gpu-003", "mlx5_2");
  std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  found[0].evidence["priority"] = std::numeric_limits<double>::quiet_NaN();
  DropSourcelessOnPriorities({0, 1, 2, 3, 4, 5, 6, 7}, &found);
  EXPECT_THAT(found, SizeIs(1));
}

// One storm whose source is out of sight, its most-paused victim
// alternating from pass to pass (the switch buffer pauses whichever ingress
// is busiest): one finding under the port it named first, for as long as
// the storm lasts, the victims of the moment in its evidence.
TEST(PfcStormTest, VictimWithoutVisibleSourceKeepsOneIdentity) {
  const AnalysisConfig config;
  Hysteresis gate(config.hysteresis);
  std::set<std::string> keys;  // node device job of every open finding
  std::vector<Finding> open;
  for (int pass = 0; pass < 12; ++pass) {
    TestFabric fabric(9);
    fabric.Remove("gpu-005", "mlx5_1");
    const bool odd = pass % 2 == 1;
    fabric.Port("leaf-0", "swp22").s.rx_pause_fraction[kP] = odd ? 0.5 : 0.9;
    fabric.Port("leaf-0", "swp1").s.tx_pause_fraction[kP] = 0.45;
    fabric.Port("gpu-000", "mlx5_0").s.rx_pause_fraction[kP] = odd ? 0.95 : 0.4;
    const FabricView view = fabric.View();
    std::vector<Finding> found = PfcStormFindings(fabric.Input(view));
    ASSERT_THAT(found, SizeIs(1));
    // What the analyzer names moves ...
    EXPECT_EQ(found[0].node, odd ? "gpu-000" : "leaf-0") << "pass " << pass;
    EXPECT_EQ(found[0].evidence_text.at(kFaultEvidence),
              "PFC pause on priority 3 without a visible source");
    open = gate.Step(std::move(found));
    for (const Finding& f : open) {
      keys.insert(absl::StrCat(f.node, " ", f.device, " ", f.job));
    }
  }
  // ... the finding does not.
  EXPECT_THAT(keys, ElementsAre("leaf-0 swp22 "));
  ASSERT_THAT(open, SizeIs(1));
  EXPECT_EQ(open[0].nodes.front(), "leaf-0");
  EXPECT_THAT(open[0].summary, StartsWith("gpu-000 mlx5_0 has received"));
}

TEST(PfcStormTest, MildVictimsAloneAreOrdinaryBackPressure) {
  TestFabric fabric(10);
  // Incast back-pressure: paused 10% of the time, nobody storming.
  fabric.Port("gpu-001", "mlx5_3").s.rx_pause_fraction[kP] = 0.1;
  fabric.Port("gpu-002", "mlx5_3").s.rx_pause_fraction[kP] = 0.12;
  EXPECT_THAT(Analyze(fabric), IsEmpty());
}

TEST(PfcStormTest, TwoSourcesEachGetTheirOwnVictims) {
  TestFabric fabric(11);
  fabric.Port("gpu-001", "mlx5_0").s.tx_pause_fraction[kP] = 0.7;  // swp5
  fabric.Port("leaf-0", "swp5").s.rx_pause_fraction[kP] = 0.69;
  fabric.Port("gpu-006", "mlx5_5").s.tx_pause_fraction[kP] = 0.3;  // swp26
  fabric.Port("leaf-1", "swp26").s.rx_pause_fraction[kP] = 0.29;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(2));
  EXPECT_EQ(found[0].node, "gpu-001");
  EXPECT_EQ(found[0].severity, Severity::kCritical);
  EXPECT_EQ(found[0].evidence_text.at("victim_ports"), "leaf-0 swp5");
  EXPECT_EQ(found[1].node, "gpu-006");
  EXPECT_EQ(found[1].severity, Severity::kWarning);
  EXPECT_EQ(found[1].evidence_text.at("victim_ports"), "leaf-1 swp26");
}

TEST(PfcStormTest, ManyVictimsAreCappedInTheText) {
  TestFabric fabric(12);
  fabric.Port("gpu-003", "mlx5_2").s.tx_pause_fraction[kP] = 0.8;
  // 14 NICs paused with no switch telemetry connecting them to the source:
  // each is listed under it.
  for (int h = 0; h < 7; ++h) {
    for (int k : {4, 5}) {
      fabric.Port(Host(h), Nic(k)).s.rx_pause_fraction[kP] = 0.2;
    }
  }
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].evidence.at("victims"), 14);
  EXPECT_THAT(found[0].evidence_text.at("victim_ports"),
              StartsWith("gpu-000 mlx5_4, gpu-000 mlx5_5, gpu-001 mlx5_4"));
  EXPECT_THAT(found[0].evidence_text.at("victim_ports"), HasSubstr(" +4 more"));
  EXPECT_THAT(found[0].summary, HasSubstr("14 ports receive its pause ("));
  EXPECT_THAT(found[0].nodes, SizeIs(7));  // gpu-003 + gpu-000..006 minus dup
}

TEST(PfcStormTest, SwitchPortCanBeTheSource) {
  TestFabric fabric(13);
  // leaf-1 swp30 pauses gpu-007 mlx5_5 and no port of leaf-1 is paused:
  // the switch itself is not draining.
  fabric.Port("leaf-1", "swp30").s.tx_pause_fraction[kP] = 0.7;
  fabric.Port("gpu-007", "mlx5_5").s.rx_pause_fraction[kP] = 0.69;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].node, "leaf-1");
  EXPECT_EQ(found[0].device, "swp30");
  EXPECT_EQ(found[0].job, "");
  EXPECT_THAT(found[0].nodes, ElementsAre("leaf-1", "gpu-007"));
  EXPECT_EQ(found[0].evidence_text.at("victim_ports"), "gpu-007 mlx5_5");
  EXPECT_THAT(found[0].summary, HasSubstr("this switch port is not draining"));
}

TEST(PfcStormTest, NicOutsideEveryLayoutHasNoJob) {
  TestFabric fabric(14);
  fabric.Add("gpu-099", "mlx5_0", false).s.tx_pause_fraction[kP] = 0.4;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].node, "gpu-099");
  EXPECT_EQ(found[0].job, "");
}

TEST(PfcStormTest, AbsentSignalsRaiseNothing) {
  TestFabric fabric(15);
  fabric.ForEachPort([](PortView& p) {
    p.s.tx_pause_fraction = AbsentPerPriority();
    p.s.rx_pause_fraction = AbsentPerPriority();
    p.s.tx_pause_frames = AbsentPerPriority();
    p.s.rx_pause_frames = AbsentPerPriority();
    p.s.pause_storm_errors = kAbsent;
    p.s.pause_storm_warnings = kAbsent;
    p.s.rx_bytes = kAbsent;
  });
  EXPECT_THAT(Analyze(fabric), IsEmpty());
}

TEST(PfcStormTest, HostileValuesNeverRaiseOrCrash) {
  TestFabric fabric(16);
  PortView& a = fabric.Port("gpu-001", "mlx5_1");
  a.s.tx_pause_fraction[kP] = kInf;
  a.s.pause_storm_errors = kInf;
  PortView& b = fabric.Port("gpu-002", "mlx5_2");
  b.s.tx_pause_fraction[kP] = -0.9;
  b.s.pause_storm_warnings = -3;
  PortView& c = fabric.Port("gpu-003", "mlx5_3");
  c.s.tx_pause_fraction[kP] = kAbsent;
  c.s.tx_pause_frames[kP] = kInf;
  c.s.link_rate = -5;
  PortView& d = fabric.Port("gpu-004", "mlx5_4");
  d.s.tx_pause_fraction[kP] = kAbsent;
  d.s.tx_pause_frames[kP] = 10;
  d.s.link_rate = kInf;
  fabric.Port("leaf-0", "swp3").s.rx_pause_fraction[kP] = -kInf;
  EXPECT_THAT(Analyze(fabric), IsEmpty());
}

TEST(PfcStormTest, EmptyOrMissingInputsRaiseNothing) {
  AnalysisInput in;
  EXPECT_THAT(PfcStormFindings(in), IsEmpty());
  FabricView empty;
  empty.Finish();
  AnalysisConfig config;
  in.view = &empty;
  EXPECT_THAT(PfcStormFindings(in), IsEmpty());  // no config
  in.config = &config;
  EXPECT_THAT(PfcStormFindings(in), IsEmpty());  // no topology, no ports

  // A layout naming hosts that never reported, and a storm on a switch that
  // the (absent) topology does not describe.
  TestFabric fabric(17);
  FabricView view;
  PortView& p = view.AddPort("leaf-9", "swp1");
  p.is_switch_port = true;
  p.s.tx_pause_fraction[kP] = 0.9;
  view.Finish();
  in = fabric.Input(view);
  in.topology = nullptr;
  const std::vector<Finding> found = PfcStormFindings(in);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].node, "leaf-9");
  EXPECT_EQ(found[0].job, "");
  EXPECT_THAT(found[0].summary, Not(HasSubstr("n/a")));
}

TEST(PfcStormTest, SeveralFaultsAtOnceAreSortedAndDeterministic) {
  TestFabric fabric(18);
  StuckReceiver(fabric);
  fabric.Port("gpu-007", "mlx5_7").s.pause_storm_errors = 1;
  fabric.Port("gpu-001", "mlx5_6").s.tx_pause_fraction[kP] = 0.25;
  const std::vector<Finding> first = Analyze(fabric);
  ASSERT_THAT(first, SizeIs(3));
  EXPECT_EQ(first[0].node, "gpu-001");
  EXPECT_EQ(first[1].node, "gpu-003");
  EXPECT_EQ(first[2].node, "gpu-007");
  EXPECT_TRUE(first[2].immediate);
  const std::vector<Finding> second = Analyze(fabric);
  ASSERT_EQ(second.size(), first.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(second[i].summary, first[i].summary);
    EXPECT_EQ(second[i].evidence, first[i].evidence);
  }
}

}  // namespace
}  // namespace fabricdiag::analysis
