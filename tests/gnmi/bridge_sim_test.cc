// The bridge's per-switch state (gnmi/switch_state.h: what a switch's
// session applies every response to, with the response's group) fed by the
// simulator's gNMI targets (sim/gnmi_target.h) through one real Subscribe
// stream per subscription group, in both dialects, on an injected receive
// clock: each group's responses to a tick arrive a few milliseconds after
// the previous group's. Two targets that real switches resemble: one that
// answers overlapping subscriptions (every counter arrives through several
// groups, each copy sampled at its own moment), and one whose PFC counters
// are polled every 10 s, the port statistics every second.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gnmi/dialect.h"
#include "gnmi/switch_state.h"
#include "gtest/gtest.h"
#include "sim/gnmi_subscription.h"
#include "sim/gnmi_target.h"
#include "tests/sim/gnmi_test_client.h"

namespace fabricdiag::gnmi {
namespace {

using sim::testing::GnmiTestClient;

constexpr int64_t kSecond = 1'000'000'000;
// A whole multiple of 10 s: the targets poll at multiples of their refresh.
constexpr int64_t kStartNanos = int64_t{1700000000} * kSecond;
// 60% of a 400G port (50 GB/s): twice that is refused as above line rate.
constexpr uint64_t kBytesPerSecond = 30'000'000'000;
constexpr uint64_t kPauseFramesPerSecond = 10'000;
constexpr uint64_t kPauseMicrosPerSecond = 500'000;

// leaf-0 at `t` seconds: swp1 carries kBytesPerSecond each way and has
// received PFC pause on priority 3 since 0 s.
sim::SwitchState Leaf(int64_t t) {
  sim::SwitchState s;
  s.name = "leaf-0";
  s.timestamp_nanos = kStartNanos + t * kSecond;
  s.boot_time_nanos = kStartNanos - 3600 * kSecond;
  s.ports = {"swp1"};
  s.counters.resize(1);
  auto& v = s.counters[0].value;
  const auto n = static_cast<uint64_t>(t);
  v[sim::kTxBytes] = v[sim::kRxBytes] = n * kBytesPerSecond;
  v[sim::kTxPackets] = v[sim::kRxPackets] = n * 7'000'000;
  v[sim::kRxPauseFrames + 3] = n * kPauseFramesPerSecond;
  v[sim::kRxPauseMicros + 3] = n * kPauseMicrosPerSecond;
  return s;
}

// Series of swp1 -> the rate the simulated traffic has.
std::map<std::string, double> Expected(Dialect d) {
  if (d == Dialect::kSonic) {
    return {{"SAI_PORT_STAT_IF_IN_OCTETS", kBytesPerSecond},
            {"SAI_PORT_STAT_IF_OUT_OCTETS", kBytesPerSecond},
            {"SAI_PORT_STAT_PFC_3_RX_PKTS", kPauseFramesPerSecond},
            {"SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US",
             kPauseMicrosPerSecond / 1e6}};
  }
  return {{sim::testing::kInOctets, kBytesPerSecond},
          {sim::testing::kOutOctets, kBytesPerSecond},
          {sim::testing::kPfc3In, kPauseFramesPerSecond}};
}

// `rate` is the simulated `want`, as measured over receive times that
// jitter by a few milliseconds: never above it (a rate is never above what
// the receive clock or the timestamps give), at most 3% below.
void ExpectRate(double rate, double want, const std::string& what) {
  EXPECT_LE(rate, want * (1 + 1e-9)) << what;
  EXPECT_GE(rate, want * 0.97) << what;
}

bool IsPfc(const std::string& series) {
  return absl::StrContains(series, "PFC") || absl::StrContains(series, "pfc");
}

class BridgeSimTest : public ::testing::TestWithParam<Dialect> {
 protected:
  struct Stream {
    size_t group;  // index into GroupsFor(dialect)
    std::string db;
    std::unique_ptr<GnmiTestClient> client;
    size_t per_tick = 0;  // notifications per Publish
  };

  // Starts the target, publishes ticks 0 .. `first`, and subscribes every
  // group the target implements, applying what they send until their sync
  // as received at tick `first`.
  void Start(const sim::GnmiTargetOptions& options, int64_t first) {
    options_ = options;
    options_.dialect = GetParam();
    absl::StatusOr<std::unique_ptr<sim::GnmiTarget>> t =
        sim::GnmiTarget::Start("leaf-0", options_);
    ASSERT_TRUE(t.ok()) << t.status();
    target_ = *std::move(t);
    for (int64_t i = 0; i <= first; ++i) target_->Publish(Leaf(i));
    const std::vector<GroupSpec>& groups = GroupsFor(GetParam());
    for (size_t g = 0; g < groups.size(); ++g) {
      Stream s;
      s.group = g;
      s.db = groups[g].target;
      s.client = std::make_unique<GnmiTestClient>(
          target_->address(), grpc::InsecureChannelCredentials(), GetParam());
      ASSERT_TRUE(s.client->Subscribe(groups[g], kSecond).ok());
      s.per_tick = PerTick(groups[g]);
      bool sync = false;
      size_t order = streams_.size();
      while (!sync) {
        absl::Status st = s.client->ReadOne(&sync);
        if (absl::IsUnimplemented(st)) break;  // a group it does not serve
        ASSERT_TRUE(st.ok()) << groups[g].name << ": " << st;
        if (!sync) Apply(s, first, order);
      }
      if (sync) streams_.push_back(std::move(s));
    }
    tick_ = first;
  }

  // How many notifications the target sends `group` per Publish: the
  // simulator's own subscription logic, on leaves of the same shape.
  size_t PerTick(const GroupSpec& group) {
    absl::StatusOr<::gnmi::SubscribeRequest> request =
        GnmiTestClient::Request(group, kSecond);
    EXPECT_TRUE(request.ok());
    absl::StatusOr<sim::SubscriptionSet> set = sim::SubscriptionSet::Create(
        GetParam(), request->subscribe(), options_.overlap);
    if (!set.ok()) return 0;
    sim::Snapshot at0{kStartNanos, sim::SwitchLeaves(GetParam(), Leaf(0))};
    if (!set->Bind(at0.leaves).ok()) return 0;
    set->Initial(at0);
    sim::Snapshot at1{kStartNanos + kSecond,
                      sim::SwitchLeaves(GetParam(), Leaf(1)), kStartNanos,
                      options_.overlap ? at0.leaves : std::vector<sim::Leaf>{}};
    return set->Next(at1).size();
  }

  // The last notification of `s`, received at tick `t`, `order` streams
  // after the first: 3 ms apart.
  void Apply(const Stream& s, int64_t t, size_t order) {
    state_.Apply(s.client->last_notification, s.db, Rx(t, order), s.group);
  }
  static int64_t Rx(int64_t t, size_t order) {
    return 100 * kSecond + t * kSecond +
           static_cast<int64_t>(order) * 3'000'000;
  }

  // Publishes the next tick and applies every stream's responses, the
  // streams in forward order on even ticks and backwards on odd ones.
  void Tick() {
    ++tick_;
    target_->Publish(Leaf(tick_));
    for (size_t i = 0; i < streams_.size(); ++i) {
      const size_t order = tick_ % 2 == 0 ? i : streams_.size() - 1 - i;
      Stream& s = streams_[order];
      for (size_t n = 0; n < s.per_tick; ++n) {
        ASSERT_TRUE(s.client->ReadOne().ok());
        Apply(s, tick_, i);
      }
    }
  }

  // Series of swp1 -> rate (-1: none), as the next report would carry.
  std::map<std::string, double> Rates() {
    agent::Snapshot snap;
    std::vector<agent::SampleRate> rates;
    state_.Build(Rx(tick_, streams_.size()), absl::FromUnixNanos(kStartNanos),
                 absl::Seconds(30), &snap, &rates);
    std::map<std::string, double> out;
    for (size_t i = 0; i < snap.samples.size(); ++i) {
      if (snap.samples[i].desc->device != "swp1") continue;
      out[snap.samples[i].desc->name] = rates[i].per_second.value_or(-1);
    }
    return out;
  }

  uint64_t Errors(const std::string& reason) const {
    auto it = state_.ErrorCounts().find(reason);
    return it == state_.ErrorCounts().end() ? 0 : it->second;
  }

  sim::GnmiTargetOptions options_;
  std::unique_ptr<sim::GnmiTarget> target_;
  std::vector<Stream> streams_;
  SwitchState state_{GetParam()};
  int64_t tick_ = 0;
};

TEST_P(BridgeSimTest, OverlappingSubscriptionsAreRatedFromOneOfThem) {
  sim::GnmiTargetOptions o;
  o.overlap = true;
  ASSERT_NO_FATAL_FAILURE(Start(o, 1));
  // The target answers overlapping paths: each counter arrives through
  // every SAMPLE group (OpenConfig: interfaces, ethernet and Arista's PFC;
  // SONiC: COUNTERS and its queues), one copy a tick older than another.
  const std::string in = GetParam() == Dialect::kSonic
                             ? "SAI_PORT_STAT_IF_IN_OCTETS"
                             : sim::testing::kInOctets;
  int delivering = 0;
  for (const Stream& s : streams_) {
    delivering += s.client->series["swp1"].count(in) > 0 ? 1 : 0;
  }
  EXPECT_GE(delivering, 2);

  for (int i = 0; i < 8; ++i) {
    ASSERT_NO_FATAL_FAILURE(Tick());
    const std::map<std::string, double> rates = Rates();
    for (const auto& [series, want] : Expected(GetParam())) {
      ASSERT_EQ(rates.count(series), 1u) << series;
      ExpectRate(rates.at(series), want,
                 absl::StrCat(series, " at tick ", tick_));
    }
  }
  EXPECT_EQ(Errors("above_line_rate"), 0u);
  EXPECT_EQ(state_.resets(), 0u);
}

TEST_P(BridgeSimTest, PfcCountersPolledEveryTenSecondsGiveSteadyRates) {
  sim::GnmiTargetOptions o;
  o.refresh = absl::Seconds(1);
  o.pfc_refresh = absl::Seconds(10);
  ASSERT_NO_FATAL_FAILURE(Start(o, 3));
  // The PFC counters repeat the poll of 0 s until 10 s. The poll of 10 s is
  // rated over the sample before it (the cadence is not known yet), the
  // samples up to 20 s read 0, and from the poll of 20 s on every sample
  // reads the pause rate: neither 0 nor a spike. Octets every sample.
  for (int64_t t = 4; t <= 34; ++t) {
    ASSERT_NO_FATAL_FAILURE(Tick());
    const std::map<std::string, double> rates = Rates();
    for (const auto& [series, want] : Expected(GetParam())) {
      ASSERT_EQ(rates.count(series), 1u) << series;
      const std::string what = absl::StrCat(series, " at ", t, " s");
      if (!IsPfc(series) || t >= 20) {
        ExpectRate(rates.at(series), want, what);
      } else if (t != 10) {
        EXPECT_EQ(rates.at(series), 0) << what;
      }
    }
  }
  EXPECT_EQ(Errors("above_line_rate"), 0u);
  EXPECT_EQ(state_.resets(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Dialects, BridgeSimTest,
                         ::testing::Values(Dialect::kOpenConfig,
                                           Dialect::kSonic));

}  // namespace
}  // namespace fabricdiag::gnmi
