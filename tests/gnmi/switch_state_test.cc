#include "gnmi/switch_state.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/gnmi/fixtures.h"

namespace fabricdiag::gnmi {
namespace {

using agent::Meaning;
using testing::JsonNotification;
using testing::ReadNotifications;
using testing::UintNotification;

constexpr int64_t kSecond = 1'000'000'000;
constexpr char kInOctets[] =
    "/interfaces/interface[name=Ethernet1]/state/counters/in-octets";

// The built snapshot as series name -> (sample, rate) for one device.
struct Built {
  agent::Snapshot snap;
  std::vector<agent::SampleRate> rates;

  const agent::Sample* Find(const std::string& device, const std::string& name,
                            size_t* index) const {
    for (size_t i = 0; i < snap.samples.size(); ++i) {
      const agent::Sample& s = snap.samples[i];
      if (s.desc->device == device && s.desc->name == name) {
        *index = i;
        return &s;
      }
    }
    return nullptr;
  }
  agent::SampleRate Rate(const std::string& device,
                         const std::string& name) const {
    size_t i = 0;
    EXPECT_NE(Find(device, name, &i), nullptr) << device << " " << name;
    return rates[i];
  }
};

Built Build(SwitchState* state, int64_t now) {
  Built b;
  state->Build(now, absl::FromUnixSeconds(1795000000), absl::Seconds(30),
               &b.snap, &b.rates);
  return b;
}

TEST(SwitchStateTest, OpenConfigFixtureUintValBecomesPortSeriesWithMeaning) {
  SwitchState state(Dialect::kOpenConfig);
  const ::gnmi::GetResponse r =
      ReadNotifications("arista_subscribe_management1_counters.textproto");
  ASSERT_GT(r.notification_size(), 3);
  for (const ::gnmi::Notification& n : r.notification()) {
    state.Apply(n, "", kSecond);
  }
  state.Apply(UintNotification(kInOctets, 1000), "", kSecond);
  Built b = Build(&state, kSecond);
  size_t i = 0;
  const agent::Sample* s =
      b.Find("Management1",
             "/interfaces/interface/state/counters/in-unicast-pkts", &i);
  ASSERT_NE(s, nullptr);
  // The last of the four values the stream carries for this leaf.
  EXPECT_EQ(s->raw, 21151566u);
  EXPECT_EQ(s->desc->subsystem, agent::Subsystem::kGnmi);
  s = b.Find("Ethernet1", "/interfaces/interface/state/counters/in-octets", &i);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->desc->meaning, Meaning::kPhyBytes);
  EXPECT_EQ(s->desc->direction, agent::Direction::kRx);
  // Both ports are in the inventory as netdevs.
  ASSERT_EQ(b.snap.netdevs.size(), 2u);
  EXPECT_EQ(b.snap.netdevs[0].name, "Ethernet1");
  EXPECT_EQ(b.snap.netdevs[1].name, "Management1");
  EXPECT_EQ(state.ErrorCounts().size(), 0u);
}

TEST(SwitchStateTest, SonicStringValAndJsonIetfValBecomeMeanings) {
  SwitchState state(Dialect::kSonic);
  for (const char* fixture :
       {"sonic_get_ethernet9_pfc7_rx_string_val.textproto",
        "sonic_get_counters_ethernet9.textproto"}) {
    const ::gnmi::GetResponse r = ReadNotifications(fixture);
    for (const ::gnmi::Notification& n : r.notification()) {
      state.Apply(n, "COUNTERS_DB", kSecond);
    }
  }
  Built b = Build(&state, kSecond);
  size_t i = 0;
  const agent::Sample* pfc =
      b.Find("Ethernet9", "SAI_PORT_STAT_PFC_7_RX_PKTS", &i);
  ASSERT_NE(pfc, nullptr);
  EXPECT_EQ(pfc->desc->meaning, Meaning::kPfcPauseFrames);
  EXPECT_EQ(pfc->desc->priority, 7);
  const agent::Sample* octets =
      b.Find("Ethernet9", "SAI_PORT_STAT_IF_IN_OCTETS", &i);
  ASSERT_NE(octets, nullptr);
  EXPECT_EQ(octets->desc->meaning, Meaning::kPhyBytes);
  EXPECT_EQ(state.ErrorCounts().size(), 0u);
}

TEST(SwitchStateTest, RepeatedTimestampsStillGiveRatesOnTheReceiveClock) {
  SwitchState state(Dialect::kOpenConfig);
  // The target stamps every sample with the same last-change time.
  const int64_t stamp = 1616116201161694227;
  state.Apply(UintNotification(kInOctets, 1000, stamp), "", 10 * kSecond);
  state.Apply(UintNotification(kInOctets, 3000, stamp), "", 12 * kSecond);
  Built b = Build(&state, 12 * kSecond);
  const agent::SampleRate r =
      b.Rate("Ethernet1", "/interfaces/interface/state/counters/in-octets");
  ASSERT_TRUE(r.per_second.has_value());
  EXPECT_DOUBLE_EQ(*r.per_second, 1000.0);
  EXPECT_FALSE(r.reset);
}

constexpr char kInOctetsName[] =
    "/interfaces/interface/state/counters/in-octets";

// The rate of in-octets after `samples` (value, timestamp, receive time).
struct Timed {
  uint64_t value;
  int64_t timestamp;
  int64_t rx;
};
double RateAfter(const std::vector<Timed>& samples) {
  SwitchState state(Dialect::kOpenConfig);
  for (const Timed& t : samples) {
    state.Apply(UintNotification(kInOctets, t.value, t.timestamp), "", t.rx);
  }
  const agent::SampleRate r =
      Build(&state, samples.back().rx).Rate("Ethernet1", kInOctetsName);
  EXPECT_TRUE(r.per_second.has_value());
  return r.per_second.value_or(-1);
}

TEST(SwitchStateTest, ASampleArrivingLateIsNoBaselineForABurst) {
  // 1,000 bytes/s, sampled every 0.5 s. The stream broke; the initial sync
  // of the new one replays the sample taken at 13.0 s, received 0.497 s late,
  // 3 ms before the sample of 13.5 s. On the receive clock alone, that
  // sample's 500 bytes over 3 ms read as 166,667 bytes/s.
  const int64_t ms = kSecond / 1000;
  const std::vector<Timed> samples = {{10'000, 10'000 * ms, 10'010 * ms},
                                      {13'000, 13'000 * ms, 13'497 * ms},
                                      {13'500, 13'500 * ms, 13'500 * ms}};
  EXPECT_DOUBLE_EQ(RateAfter(samples), 1000.0);
  // The late sample itself: 3,000 bytes over the longer, received interval.
  EXPECT_NEAR(RateAfter({samples[0], samples[1]}), 3000.0 / 3.487, 1e-9);
  // And so does a sample the bridge itself took late to read.
  EXPECT_DOUBLE_EQ(RateAfter({{10'000, 10'000 * ms, 10'000 * ms},
                              {10'500, 10'500 * ms, 10'900 * ms},
                              {11'000, 11'000 * ms, 11'000 * ms}}),
                   1000.0);
}

TEST(SwitchStateTest, TimestampsThatCannotBeTheSampleIntervalAreNotUsed) {
  const int64_t ms = kSecond / 1000;
  const int64_t hour = 3600 * kSecond;
  // The target's clock stepped forward an hour: the receive clock counts.
  EXPECT_DOUBLE_EQ(RateAfter({{1'000, 10'000 * ms, 10'000 * ms},
                              {2'000, 11'000 * ms + hour, 11'000 * ms}}),
                   1000.0);
  // A last-change time from long ago, then a fresh one (a counter that sat
  // still): the receive interval, not the time since it last moved.
  EXPECT_DOUBLE_EQ(RateAfter({{1'000, 100 * ms, 10'000 * ms},
                              {1'500, 10'500 * ms, 10'500 * ms}}),
                   1000.0);
  // Stepped back, or slower than the receive clock: never a higher rate
  // than the receive clock gives.
  EXPECT_DOUBLE_EQ(RateAfter({{1'000, 10'000 * ms, 10'000 * ms},
                              {2'000, 10'100 * ms, 11'000 * ms}}),
                   1000.0);
  EXPECT_DOUBLE_EQ(RateAfter({{1'000, 10'000 * ms, 10'000 * ms},
                              {2'000, 9'000 * ms, 11'000 * ms}}),
                   1000.0);
  // No timestamp on either side, and timestamps at the ends of int64 (no
  // overflow: the sanitizer build runs this).
  EXPECT_DOUBLE_EQ(
      RateAfter({{1'000, 0, 10'000 * ms}, {2'000, 10'500 * ms, 11'000 * ms}}),
      1000.0);
  EXPECT_DOUBLE_EQ(
      RateAfter({{1'000, std::numeric_limits<int64_t>::min(), 10'000 * ms},
                 {2'000, std::numeric_limits<int64_t>::max(), 11'000 * ms}}),
      1000.0);
  EXPECT_DOUBLE_EQ(
      RateAfter({{1'000, std::numeric_limits<int64_t>::max(), 10'000 * ms},
                 {2'000, std::numeric_limits<int64_t>::min(), 11'000 * ms}}),
      1000.0);
}

TEST(SwitchStateTest, CounterGoingDownIsAResetNotANegativeRate) {
  SwitchState state(Dialect::kOpenConfig);
  state.Apply(UintNotification(kInOctets, 5000), "", 1 * kSecond);
  state.Apply(UintNotification(kInOctets, 100), "", 2 * kSecond);
  Built b = Build(&state, 2 * kSecond);
  agent::SampleRate r =
      b.Rate("Ethernet1", "/interfaces/interface/state/counters/in-octets");
  EXPECT_TRUE(r.reset);
  EXPECT_FALSE(r.per_second.has_value());
  // Counting resumes from the new value.
  state.Apply(UintNotification(kInOctets, 600), "", 3 * kSecond);
  b = Build(&state, 3 * kSecond);
  r = b.Rate("Ethernet1", "/interfaces/interface/state/counters/in-octets");
  EXPECT_FALSE(r.reset);
  ASSERT_TRUE(r.per_second.has_value());
  EXPECT_DOUBLE_EQ(*r.per_second, 500.0);
  EXPECT_EQ(state.resets(), 1u);
}

TEST(SwitchStateTest, LastClearChangeIsAResetOfThatPort) {
  SwitchState state(Dialect::kOpenConfig);
  const char* clear =
      "/interfaces/interface[name=Ethernet1]/state/counters/last-clear";
  const char* other =
      "/interfaces/interface[name=Ethernet2]/state/counters/in-octets";
  state.Apply(UintNotification(clear, 111), "", kSecond);
  state.Apply(UintNotification(kInOctets, 1000), "", kSecond);
  state.Apply(UintNotification(other, 1000), "", kSecond);
  // Cleared and counted up again past the old value within one interval:
  // without last-clear this would look like 9,000 bytes/s.
  state.Apply(UintNotification(clear, 222), "", 2 * kSecond);
  state.Apply(UintNotification(kInOctets, 10000), "", 2 * kSecond);
  state.Apply(UintNotification(other, 2000), "", 2 * kSecond);
  Built b = Build(&state, 2 * kSecond);
  agent::SampleRate r =
      b.Rate("Ethernet1", "/interfaces/interface/state/counters/in-octets");
  EXPECT_TRUE(r.reset);
  EXPECT_FALSE(r.per_second.has_value());
  r = b.Rate("Ethernet2", "/interfaces/interface/state/counters/in-octets");
  EXPECT_FALSE(r.reset);
  EXPECT_DOUBLE_EQ(r.per_second.value_or(-1), 1000.0);
}

TEST(SwitchStateTest, BootTimeChangeResetsEverySeriesAndReportsAReload) {
  SwitchState state(Dialect::kOpenConfig);
  const char* boot = "/system/state/boot-time";
  state.Apply(UintNotification(boot, 1000), "", kSecond);
  state.Apply(UintNotification(kInOctets, 1000), "", kSecond);
  EXPECT_FALSE(state.TakeReload());
  state.Apply(UintNotification(boot, 5000), "", 2 * kSecond);
  EXPECT_TRUE(state.TakeReload());
  EXPECT_FALSE(state.TakeReload());
  // The first value after the reload is a baseline, whatever it is.
  state.Apply(UintNotification(kInOctets, 900000), "", 3 * kSecond);
  Built b = Build(&state, 3 * kSecond);
  agent::SampleRate r =
      b.Rate("Ethernet1", "/interfaces/interface/state/counters/in-octets");
  EXPECT_TRUE(r.reset);
  EXPECT_FALSE(r.per_second.has_value());
}

TEST(SwitchStateTest, BadValuesAreCountedByReason) {
  SwitchState state(Dialect::kSonic);
  ::gnmi::TypedValue text;
  text.set_string_val("drop");
  ::gnmi::TypedValue huge;
  huge.set_string_val("99999999999999999999");
  ::gnmi::TypedValue negative;
  negative.set_int_val(-5);
  ::gnmi::TypedValue bytes;
  bytes.set_bytes_val("x");
  const char* path = "/COUNTERS/Ethernet0/SAI_PORT_STAT_IF_IN_OCTETS";
  for (const auto& v : {text, huge, negative, bytes}) {
    auto n = testing::ValueNotification(path, v);
    n.mutable_prefix()->set_target("COUNTERS_DB");
    state.Apply(n, "COUNTERS_DB", kSecond);
  }
  state.Apply(JsonNotification("COUNTERS_DB", "/COUNTERS/Ethernet0", "{bad"),
              "COUNTERS_DB", kSecond);
  const auto& e = state.ErrorCounts();
  EXPECT_EQ(e.at("not_a_number"), 1u);
  EXPECT_EQ(e.at("out_of_range"), 1u);
  EXPECT_EQ(e.at("negative"), 1u);
  EXPECT_EQ(e.at("unsupported_type"), 1u);
  EXPECT_EQ(e.at("bad_json"), 1u);
  Built b = Build(&state, kSecond);
  EXPECT_TRUE(b.snap.samples.empty());
}

TEST(SwitchStateTest, OperStatusAndSpeedGoToTheInventory) {
  SwitchState state(Dialect::kOpenConfig);
  ::gnmi::TypedValue down;
  down.set_string_val("LOWER_LAYER_DOWN");
  ::gnmi::TypedValue speed;
  speed.set_string_val("openconfig-if-ethernet:SPEED_400GB");
  state.Apply(
      testing::ValueNotification(
          "/interfaces/interface[name=Ethernet1]/state/oper-status", down),
      "", kSecond);
  state.Apply(
      testing::ValueNotification(
          "/interfaces/interface[name=Ethernet1]/ethernet/state/port-speed",
          speed),
      "", kSecond);
  state.Apply(UintNotification(kInOctets, 1), "", kSecond);
  Built b = Build(&state, kSecond);
  ASSERT_EQ(b.snap.netdevs.size(), 1u);
  EXPECT_EQ(b.snap.netdevs[0].operstate, "down");
  EXPECT_DOUBLE_EQ(b.snap.netdevs[0].speed_bytes_per_second, 400e9 / 8);
}

// ---- Rates a port cannot carry, leaves from two groups -------------------

constexpr double kGB = 1e9;
constexpr char kPortSpeed[] =
    "/interfaces/interface[name=Ethernet1]/ethernet/state/port-speed";

void SetSpeed(SwitchState* state, const char* identity, int64_t rx) {
  ::gnmi::TypedValue speed;
  speed.set_string_val(identity);
  state->Apply(testing::ValueNotification(kPortSpeed, speed), "", rx);
}

// The in-octets rate of Ethernet1 now, -1 when there is none.
double InOctetsRate(SwitchState* state, int64_t now) {
  return Build(state, now)
      .Rate("Ethernet1", kInOctetsName)
      .per_second.value_or(-1);
}

uint64_t Errors(const SwitchState& state, const std::string& reason) {
  auto it = state.ErrorCounts().find(reason);
  return it == state.ErrorCounts().end() ? 0 : it->second;
}

TEST(SwitchStateTest, RateAboveThePortsSpeedIsRefusedAndCounted) {
  SwitchState state(Dialect::kOpenConfig);
  SetSpeed(&state, "openconfig-if-ethernet:SPEED_400GB", kSecond);
  uint64_t v = 1'000'000'000'000;
  state.Apply(UintNotification(kInOctets, v), "", 1 * kSecond);
  // 45 GB/s on a 400G port (50 GB/s): believed.
  state.Apply(UintNotification(kInOctets, v += 45'000'000'000), "",
              2 * kSecond);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 2 * kSecond), 45 * kGB);
  // 210 GB/s, as a target answering overlapping subscriptions made the
  // bridge compute: refused, counted, no rate reported.
  state.Apply(UintNotification(kInOctets, v += 210'000'000'000), "",
              3 * kSecond);
  Built b = Build(&state, 3 * kSecond);
  const agent::SampleRate r = b.Rate("Ethernet1", kInOctetsName);
  EXPECT_FALSE(r.per_second.has_value());
  EXPECT_FALSE(r.delta.has_value());
  EXPECT_FALSE(r.reset);
  EXPECT_EQ(Errors(state, "above_line_rate"), 1u);
  // The value is a baseline again: the next interval's rate is believed.
  state.Apply(UintNotification(kInOctets, v += 40'000'000'000), "",
              4 * kSecond);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 4 * kSecond), 40 * kGB);
  // Just above the speed (53 GB/s: a sample received 60 ms late) is within
  // the slack; 56 GB/s is not.
  state.Apply(UintNotification(kInOctets, v += 53'000'000'000), "",
              5 * kSecond);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 5 * kSecond), 53 * kGB);
  state.Apply(UintNotification(kInOctets, v += 56'000'000'000), "",
              6 * kSecond);
  EXPECT_EQ(InOctetsRate(&state, 6 * kSecond), -1);
  EXPECT_EQ(Errors(state, "above_line_rate"), 2u);
  // Packets are not bytes: no limit from the speed.
  const char kInPkts[] =
      "/interfaces/interface[name=Ethernet1]/state/counters/in-pkts";
  state.Apply(UintNotification(kInPkts, 0), "", 6 * kSecond);
  state.Apply(UintNotification(kInPkts, 400'000'000'000), "", 7 * kSecond);
  EXPECT_TRUE(
      Build(&state, 7 * kSecond)
          .Rate("Ethernet1", "/interfaces/interface/state/counters/in-pkts")
          .per_second.has_value());
}

TEST(SwitchStateTest, LineRateIsTheFastestSpeedThePortReported) {
  SwitchState state(Dialect::kOpenConfig);
  SetSpeed(&state, "SPEED_400GB", kSecond);
  // Renegotiated down to 100G (12.5 GB/s): traffic of the interval before
  // may still be counted at the old speed.
  SetSpeed(&state, "SPEED_100GB", kSecond);
  state.Apply(UintNotification(kInOctets, 0), "", 1 * kSecond);
  state.Apply(UintNotification(kInOctets, 45'000'000'000), "", 2 * kSecond);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 2 * kSecond), 45 * kGB);
  // SPEED_UNKNOWN lowers nothing; a port that never said its speed has no
  // limit.
  SwitchState unknown(Dialect::kOpenConfig);
  SetSpeed(&unknown, "SPEED_UNKNOWN", kSecond);
  unknown.Apply(UintNotification(kInOctets, 0), "", 1 * kSecond);
  unknown.Apply(UintNotification(kInOctets, 210'000'000'000), "", 2 * kSecond);
  EXPECT_DOUBLE_EQ(InOctetsRate(&unknown, 2 * kSecond), 210 * kGB);
  EXPECT_EQ(Errors(unknown, "above_line_rate"), 0u);
}

TEST(SwitchStateTest, SonicSpeedInMbpsLimitsTheOctetRate) {
  SwitchState state(Dialect::kSonic);
  state.Apply(JsonNotification("APPL_DB", "/PORT_TABLE/Ethernet9",
                               R"({"oper_status": "up", "speed": "400000"})"),
              "APPL_DB", kSecond);
  auto octets = [&](uint64_t v, int64_t rx) {
    state.Apply(
        JsonNotification(
            "COUNTERS_DB", "/COUNTERS/Ethernet9",
            absl::StrCat(R"({"SAI_PORT_STAT_IF_IN_OCTETS": ")", v, R"("})")),
        "COUNTERS_DB", rx);
  };
  octets(0, 1 * kSecond);
  octets(215'000'000'000, 2 * kSecond);
  Built b = Build(&state, 2 * kSecond);
  EXPECT_FALSE(
      b.Rate("Ethernet9", "SAI_PORT_STAT_IF_IN_OCTETS").per_second.has_value());
  EXPECT_EQ(Errors(state, "above_line_rate"), 1u);
  octets(260'000'000'000, 3 * kSecond);
  b = Build(&state, 3 * kSecond);
  EXPECT_EQ(
      b.Rate("Ethernet9", "SAI_PORT_STAT_IF_IN_OCTETS").per_second.value_or(-1),
      45 * kGB);
}

TEST(SwitchStateTest, ALeafFromTwoGroupsIsRatedFromOneOfThem) {
  // 45 GB/s. Group 0 samples at whole seconds; a target answering group
  // 1's overlapping path samples the same counter 20 ms later and its copy
  // arrives 4 ms after group 0's: 900 MB more over 4 ms of receive clock
  // would read 225 GB/s, and back again a negative step, a reset.
  const int64_t ms = kSecond / 1000;
  const uint64_t per_ms = 45'000'000;
  SwitchState state(Dialect::kOpenConfig);
  for (int64_t t = 10; t <= 14; ++t) {
    const uint64_t at = static_cast<uint64_t>(t) * 1000 * per_ms;
    state.Apply(UintNotification(kInOctets, at), "", t * kSecond, 0);
    state.Apply(UintNotification(kInOctets, at + 20 * per_ms), "",
                t * kSecond + 4 * ms, 1);
    if (t > 10) {
      EXPECT_DOUBLE_EQ(InOctetsRate(&state, t * kSecond + 5 * ms), 45 * kGB)
          << "at " << t << " s";
    }
  }
  EXPECT_EQ(state.resets(), 0u);
  // Group 0's stream ended: group 1 takes the series over once group 0 has
  // been silent for the handover time (3 s), from a new baseline.
  state.Apply(UintNotification(kInOctets, 16'000 * per_ms), "", 16 * kSecond,
              1);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 16 * kSecond), 45 * kGB)
      << "group 0's last rate, until the series is handed over";
  state.Apply(UintNotification(kInOctets, 17'020 * per_ms), "",
              17 * kSecond + 4 * ms, 1);
  EXPECT_EQ(InOctetsRate(&state, 17 * kSecond + 5 * ms), -1)
      << "a new baseline: no rate across the two groups' samples";
  state.Apply(UintNotification(kInOctets, 18'020 * per_ms), "",
              18 * kSecond + 4 * ms, 1);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 18 * kSecond + 5 * ms), 45 * kGB);
  // Group 0 back: group 1 keeps the series.
  state.Apply(UintNotification(kInOctets, 19'000 * per_ms), "", 19 * kSecond,
              0);
  state.Apply(UintNotification(kInOctets, 19'020 * per_ms), "",
              19 * kSecond + 4 * ms, 1);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 19 * kSecond + 5 * ms), 45 * kGB);
  EXPECT_EQ(state.resets(), 0u);
  EXPECT_EQ(Errors(state, "above_line_rate"), 0u);
}

TEST(SwitchStateTest, CountersRefreshedOnceASecondGiveSteadyRates) {
  // 45 GB/s on a switch that refreshes its counters every second (SONiC's
  // port statistics), sampled every 0.5 s: every other sample repeats the
  // last value. On the samples alone the rate would swing 0, 90, 0, 90 GB/s.
  const int64_t half = kSecond / 2;
  SwitchState state(Dialect::kOpenConfig);
  uint64_t polled = 0;
  for (int64_t i = 20; i <= 40; ++i) {
    if (i % 2 == 0) polled = static_cast<uint64_t>(i / 2) * 45'000'000'000;
    state.Apply(UintNotification(kInOctets, polled), "", i * half);
    // From the second change on (the first is rated over the half second
    // since the previous sample: the cadence is not known yet).
    if (i >= 24) {
      EXPECT_DOUBLE_EQ(InOctetsRate(&state, i * half), 45 * kGB)
          << "at " << i * 0.5 << " s";
    }
  }
  // The traffic stops: the rate holds for one and a half refresh periods,
  // then is zero.
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 40 * half), 45 * kGB);
  for (int64_t i = 41; i <= 42; ++i) {
    state.Apply(UintNotification(kInOctets, polled), "", i * half);
    EXPECT_DOUBLE_EQ(InOctetsRate(&state, i * half), 45 * kGB);
  }
  state.Apply(UintNotification(kInOctets, polled), "", 43 * half);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 43 * half), 0);
  state.Apply(UintNotification(kInOctets, polled), "", 44 * half);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 44 * half), 0);
  // And starts again: the increase is one poll's, rated over one refresh
  // period (not over the half second since the last sample: 2x).
  state.Apply(UintNotification(kInOctets, polled + 10'000'000'000), "",
              45 * half);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 45 * half), 10 * kGB);
}

TEST(SwitchStateTest, ASampleTheTargetSentLateDoesNotSwingAPolledRate) {
  // 20 GB/s, polled on every whole second and sampled every 0.5 s (at .1
  // and .6), each sample stamped when it is taken. The target is slow to
  // take the sample of 14.1 s: it goes out at 14.5 s, stamped then, with
  // the poll of 14 s. Rated over the time between the changes it would read
  // 14.3 GB/s (1.4 s) and then, the poll of 15 s seen 0.6 s later, 33.3
  // GB/s: the swing the gNMI end-to-end test saw on a loaded machine. Each
  // change is one poll's increase: the rate stays within 5% throughout.
  const int64_t ms = kSecond / 1000;
  SwitchState state(Dialect::kOpenConfig);
  auto sample = [&](int64_t at_ms, int64_t polled_s) {
    state.Apply(UintNotification(
                    kInOctets,
                    static_cast<uint64_t>(polled_s) * 20 * 1000 * 1000 * 1000,
                    at_ms * ms),
                "", at_ms * ms);
  };
  for (int64_t t = 10'100; t < 14'000; t += 500) sample(t, t / 1000);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 13'600 * ms), 20 * kGB);
  sample(14'500, 14);  // the late sample
  EXPECT_NEAR(InOctetsRate(&state, 14'500 * ms), 20 * kGB, kGB);
  sample(14'600, 14);
  EXPECT_NEAR(InOctetsRate(&state, 14'600 * ms), 20 * kGB, kGB);
  for (int64_t t = 15'100; t < 20'000; t += 500) {
    sample(t, t / 1000);
    EXPECT_NEAR(InOctetsRate(&state, t * ms), 20 * kGB, kGB) << t << " ms";
  }
  // From 20 s on the switch polls every 0.5 s and is sampled every 0.25 s
  // (every other sample repeats): a change 0.5 s after the last one is
  // the new cadence, rated over it at once, not one poll of the old one
  // (10 GB/s).
  for (int64_t t = 20'100; t < 24'000; t += 250) {
    const uint64_t polls = static_cast<uint64_t>(t - 20'000) / 500;
    state.Apply(
        UintNotification(kInOctets, 400'000'000'000 + polls * 10'000'000'000,
                         t * ms),
        "", t * ms);
    EXPECT_NEAR(InOctetsRate(&state, t * ms), 20 * kGB, kGB / 5) << t << " ms";
  }
}

// SONiC's COUNTERS/<port> hash as flex counters fill it: port statistics
// polled every second, PFC every ten seconds (the PFC watchdog and queue
// groups' default), sampled every second.
class TenSecondPfcPoll : public ::testing::Test {
 protected:
  static constexpr char kPause[] = "SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US";
  static constexpr char kOctets[] = "SAI_PORT_STAT_IF_IN_OCTETS";

  // The sample of second `t`: octets at 20 GB/s, and the pause duration
  // (`pause_us_per_s_` over every second before `t`) as of its last poll,
  // at a multiple of 10 s.
  void Sample(int64_t t) {
    const uint64_t octets = static_cast<uint64_t>(t) * 20'000'000'000;
    for (; counted_until_ < t; ++counted_until_) {
      pause_us_ += pause_us_per_s_;
      if ((counted_until_ + 1) % 10 == 0) polled_us_ = pause_us_;
    }
    state_.Apply(JsonNotification("COUNTERS_DB", "/COUNTERS/Ethernet9",
                                  absl::StrCat(R"({")", kOctets, R"(": ")",
                                               octets, R"(", ")", kPause,
                                               R"(": ")", polled_us_, R"("})")),
                 "COUNTERS_DB", t * kSecond);
  }
  // Seconds paused per second (-1: no rate) and bytes per second.
  double Pause(int64_t t) {
    return Build(&state_, t * kSecond)
        .Rate("Ethernet9", kPause)
        .per_second.value_or(-1);
  }
  double Octets(int64_t t) {
    return Build(&state_, t * kSecond)
        .Rate("Ethernet9", kOctets)
        .per_second.value_or(-1);
  }

  SwitchState state_{Dialect::kSonic};
  int64_t counted_until_ = 0;  // seconds
  uint64_t pause_us_ = 0;      // the switch's counter
  uint64_t polled_us_ = 0;     // as of its last poll
  uint64_t pause_us_per_s_ = 0;
};

TEST_F(TenSecondPfcPoll, PfcRatesAreSteadyFromTheSecondPollOn) {
  // Paused half of every second since 0 s; sampled from 5 s. The first
  // poll's increase is rated over the last second (the cadence is not known
  // yet: 10x) and the samples up to the second poll read 0; from the second
  // poll on every sample reads 0.5, never 0 or a spike.
  pause_us_per_s_ = 500'000;
  for (int64_t t = 5; t <= 60; ++t) {
    Sample(t);
    if (t > 5) {
      EXPECT_DOUBLE_EQ(Octets(t), 20 * kGB) << "at " << t << " s";
    }
    const double want = t == 5 ? -1 : t == 10 ? 5.0 : t < 20 ? 0.0 : 0.5;
    EXPECT_DOUBLE_EQ(Pause(t), want) << "at " << t << " s";
  }
  // The storm ends at 60 s: the poll of 60 s is the last that moves; its
  // rate holds until 1.5 cadences after it, then reads zero.
  pause_us_per_s_ = 0;
  for (int64_t t = 61; t <= 90; ++t) {
    Sample(t);
    const double want = t < 75 ? 0.5 : 0.0;
    EXPECT_DOUBLE_EQ(Pause(t), want) << "at " << t << " s";
  }
  // A new storm (0.8 s/s) from 95 s, on the counter whose cadence is
  // known: the first poll that sees it is rated over one cadence, the mean
  // of the ten seconds it covers (0.8 for the last 5 of them), then steady.
  for (int64_t t = 91; t <= 120; ++t) {
    Sample(t);
    if (t == 95) pause_us_per_s_ = 800'000;
    const double want = t < 100 ? 0.0 : t < 110 ? 0.4 : 0.8;
    EXPECT_DOUBLE_EQ(Pause(t), want) << "at " << t << " s";
  }
  EXPECT_EQ(state_.resets(), 0u);
}

TEST(SwitchStateTest, CountersThatMoveEverySampleHoldOnlyOneRepeat) {
  // A target that refreshes at every sample: a repeated value is held
  // once (it might be a sample taken before a refresh), the next is zero.
  SwitchState state(Dialect::kOpenConfig);
  uint64_t v = 0;
  for (int64_t t = 1; t <= 4; ++t) {
    state.Apply(UintNotification(kInOctets, v += 1000), "", t * kSecond);
  }
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 4 * kSecond), 1000);
  state.Apply(UintNotification(kInOctets, v), "", 5 * kSecond);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 5 * kSecond), 1000);
  state.Apply(UintNotification(kInOctets, v), "", 6 * kSecond);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 6 * kSecond), 0);
  // An idle counter is zero at every sample, never held.
  state.Apply(UintNotification(kInOctets, v), "", 7 * kSecond);
  EXPECT_DOUBLE_EQ(InOctetsRate(&state, 7 * kSecond), 0);
}

TEST(SwitchStateTest, DeleteForgetsThePortAndStaleSeriesAreLeftOut) {
  SwitchState state(Dialect::kOpenConfig);
  state.Apply(UintNotification(kInOctets, 1), "", kSecond);
  state.Apply(
      UintNotification(
          "/interfaces/interface[name=Ethernet2]/state/counters/in-octets", 1),
      "", kSecond);
  ::gnmi::Notification del;
  *del.add_delete_() = *ParsePath("/interfaces/interface[name=Ethernet2]");
  state.Apply(del, "", 2 * kSecond);
  Built b = Build(&state, 2 * kSecond);
  ASSERT_EQ(b.snap.samples.size(), 1u);
  EXPECT_EQ(b.snap.samples[0].desc->device, "Ethernet1");
  // 31 s without an update: older than stale_after (30 s).
  b = Build(&state, 32 * kSecond);
  EXPECT_TRUE(b.snap.samples.empty());
}

}  // namespace
}  // namespace fabricdiag::gnmi
