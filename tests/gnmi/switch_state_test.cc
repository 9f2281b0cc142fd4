#include "gnmi/switch_state.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

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
