#include "gnmi/switch_session.h"

#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/gnmi/fake_gnmi_target.h"
#include "tests/gnmi/fixtures.h"
#include "tests/testing/eventually.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_pki.h"

namespace fabricdiag::gnmi {
namespace {

using ::fabricdiag::testing::Eventually;
using testing::FakeGnmiTarget;

constexpr char kCounters[] = "/interfaces/interface/state/counters";
constexpr char kEthernet[] = "/interfaces/interface/ethernet/state/counters";
constexpr char kPassword[] = "pa55-never-logged";

::gnmi::SubscribeResponse Update(const ::gnmi::Notification& n) {
  ::gnmi::SubscribeResponse r;
  *r.mutable_update() = n;
  return r;
}

::gnmi::SubscribeResponse InOctets(const std::string& port, uint64_t v,
                                   int64_t timestamp = 0) {
  return Update(testing::UintNotification(
      absl::StrCat("/interfaces/interface[name=", port,
                   "]/state/counters/in-octets"),
      v, timestamp));
}

void WriteFile(const std::string& path, const std::string& text, int mode) {
  std::ofstream(path) << text;
  ASSERT_EQ(::chmod(path.c_str(), static_cast<mode_t>(mode)), 0);
}

SessionOptions FastOptions() {
  SessionOptions o;
  o.backoff_initial = absl::Milliseconds(50);
  o.backoff_max = absl::Milliseconds(400);
  return o;
}

size_t SampleCount(SwitchSession& s, const SystemClock& clock) {
  agent::Snapshot snap;
  std::vector<agent::SampleRate> rates;
  s.Build(clock.MonotonicNanos(), clock.Now(), absl::Seconds(60), &snap,
          &rates);
  return snap.samples.size();
}

class SwitchSessionTest : public ::testing::Test {
 protected:
  SwitchConfig Config(const FakeGnmiTarget& target,
                      const char* name = "leaf1") {
    SwitchConfig c;
    c.name = name;
    c.address = target.address();
    c.insecure = true;
    return c;
  }
  std::shared_ptr<SwitchSession> Open(SwitchConfig config,
                                      SessionOptions options = FastOptions()) {
    absl::StatusOr<std::shared_ptr<SwitchSession>> s =
        SwitchSession::Create(std::move(config), options, clock_, &scheduler_);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return nullptr;
    (*s)->Start();
    return *s;
  }

  // A certificate authority and a server certificate for 127.0.0.1, made
  // once per test.
  const ::fabricdiag::testing::TestPki& Pki() {
    if (!pki_.ok()) {
      const std::string pki_dir = dir_.path() + "/pki";
      ::mkdir(pki_dir.c_str(), 0700);
      pki_ = ::fabricdiag::testing::MakeTestPki(pki_dir, {});
    }
    EXPECT_TRUE(pki_.ok()) << pki_.status();
    return *pki_;
  }
  absl::Status StartTls(FakeGnmiTarget* target) {
    FakeGnmiTarget::Tls tls{Pki().server.cert, Pki().server.key};
    return target->Start(0, &tls);
  }

  // The credentials file "bridge" / kPassword with `mode`; its path.
  std::string WriteCreds(int mode) {
    std::string creds = dir_.path() + "/creds";
    WriteFile(creds, absl::StrCat("bridge\n", kPassword, "\n"), mode);
    return creds;
  }

  // A TLS session to `target` (started with StartTls) with WriteCreds(0600).
  std::shared_ptr<SwitchSession> OpenWithCredentials(
      const FakeGnmiTarget& target) {
    SwitchConfig config = Config(target);
    config.insecure = false;
    config.tls_ca = Pki().ca_cert;
    config.credentials_file = WriteCreds(0600);
    return Open(config);
  }

  // Why Create() refuses a switch (at an address nothing listens on).
  absl::Status CreateStatus(const std::string& tls_ca, bool insecure,
                            const std::string& credentials_file) {
    SwitchConfig config;
    config.name = "leaf1";
    config.address = "127.0.0.1:1";
    config.tls_ca = tls_ca;
    config.insecure = insecure;
    config.credentials_file = credentials_file;
    auto s = SwitchSession::Create(config, FastOptions(), clock_, &scheduler_);
    EXPECT_FALSE(s.ok());
    return s.status();
  }

  SystemClock clock_;
  ::fabricdiag::testing::TempDir dir_;
  Scheduler scheduler_;
  absl::StatusOr<::fabricdiag::testing::TestPki> pki_ =
      absl::UnavailableError("not made yet");
};

TEST_F(SwitchSessionTest, CredentialsTravelAsMetadataAndValuesArrive) {
  FakeGnmiTarget target;
  target.RequireCredentials("bridge", kPassword);
  target.Script(kCounters, {InOctets("Ethernet1", 100)});
  ASSERT_TRUE(StartTls(&target).ok());
  auto session = OpenWithCredentials(target);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(Eventually([&] { return session->stats().up; }));
  EXPECT_EQ(SampleCount(*session, clock_), 1u);
  EXPECT_EQ(target.unauthenticated(), 0);
}

TEST_F(SwitchSessionTest, WrongPasswordIsCountedAndNeverInTheError) {
  FakeGnmiTarget target;
  target.RequireCredentials("bridge", "the-right-one");
  ASSERT_TRUE(StartTls(&target).ok());
  auto session = OpenWithCredentials(target);
  ASSERT_TRUE(Eventually([&] {
    auto e = session->stats().errors;
    return e.count("unauthenticated") != 0;
  }));
  const SwitchSession::Stats s = session->stats();
  EXPECT_FALSE(s.up);
  EXPECT_FALSE(absl::StrContains(s.last_error, kPassword)) << s.last_error;
  EXPECT_TRUE(absl::StrContains(s.last_error, "unauthenticated"));
}

TEST_F(SwitchSessionTest, CredentialsFileReadableByOthersIsRefused) {
  const absl::Status s = CreateStatus(Pki().ca_cert, false, WriteCreds(0644));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), dir_.path() + "/creds"));
  EXPECT_TRUE(absl::StrContains(s.message(), "0644"));
  EXPECT_FALSE(absl::StrContains(s.message(), kPassword));
}

TEST_F(SwitchSessionTest, CredentialsWithoutTlsAreRefused) {
  const absl::Status s = CreateStatus("", true, WriteCreds(0600));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), "only over TLS"));
}

TEST_F(SwitchSessionTest, WithoutTlsCaOrInsecureTheSwitchIsRefused) {
  const absl::Status s = CreateStatus("", false, "");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), "tls_ca"));
}

TEST_F(SwitchSessionTest, RefusedGroupDoesNotStopTheRequiredOne) {
  FakeGnmiTarget target;
  target.Refuse(kEthernet);
  target.Script(kCounters, {InOctets("Ethernet1", 100)});
  ASSERT_TRUE(target.Start().ok());
  SessionOptions options = FastOptions();
  options.unimplemented_retry = absl::Hours(1);
  auto session = Open(Config(target), options);
  ASSERT_TRUE(Eventually([&] {
    const SwitchSession::Stats s = session->stats();
    return s.up && s.errors.count("unimplemented_group") != 0;
  }));
  // Pushed values still stream on the required group.
  ASSERT_EQ(target.Push(kCounters, InOctets("Ethernet2", 5)), 1);
  ASSERT_TRUE(Eventually([&] { return SampleCount(*session, clock_) == 2; }));
  // Refused once, not retried in a loop.
  EXPECT_EQ(session->stats().errors.at("unimplemented_group"), 1u);
}

TEST_F(SwitchSessionTest, DeadSwitchReconnectsAndDoesNotStallAnother) {
  FakeGnmiTarget a;
  FakeGnmiTarget b;
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(b.Start().ok());
  auto sa = Open(Config(a, "leaf-a"));
  auto sb = Open(Config(b, "leaf-b"));
  ASSERT_TRUE(a.WaitForStreams(kCounters, 1, absl::Seconds(10)));
  ASSERT_TRUE(b.WaitForStreams(kCounters, 1, absl::Seconds(10)));
  a.Push(kCounters, InOctets("Ethernet1", 1));
  ASSERT_TRUE(Eventually([&] { return sa->stats().up; }));
  const int port = a.port();
  a.Stop();
  ASSERT_TRUE(Eventually([&] { return !sa->stats().up; }));
  // b keeps streaming while a is down and being retried.
  for (uint64_t i = 1; i <= 3; ++i) {
    ASSERT_EQ(b.Push(kCounters, InOctets(absl::StrCat("Ethernet", i), i)), 1);
  }
  ASSERT_TRUE(Eventually([&] { return SampleCount(*sb, clock_) == 3; }));
  EXPECT_TRUE(sb->stats().up);
  EXPECT_GE(sa->stats().reconnects, 1u);
  // a comes back on the same port: the session subscribes again.
  FakeGnmiTarget again;
  ASSERT_TRUE(again.Start(port).ok());
  ASSERT_TRUE(again.WaitForStreams(kCounters, 1, absl::Seconds(15)));
  again.Push(kCounters, InOctets("Ethernet9", 1));
  ASSERT_TRUE(Eventually([&] { return sa->stats().up; }));
  EXPECT_EQ(sb->stats().reconnects, 0u);
}

// A switch back from an outage replays, as its new stream's initial sync,
// the sample it took up to an interval earlier, and sends its next sample
// milliseconds later. That sample's rate is its interval's increase over
// its interval, not over those milliseconds (which made every port of a
// leaf read 150x its PFC pause right after a gNMI outage).
TEST_F(SwitchSessionTest, AReconnectsLateInitialSyncIsNoBaselineForABurst) {
  const int64_t second = 1'000'000'000;
  const int64_t t0 = 1795000000 * second;
  FakeGnmiTarget target;
  ASSERT_TRUE(target.Start().ok());
  auto session = Open(Config(target));
  ASSERT_TRUE(target.WaitForStreams(kCounters, 1, absl::Seconds(10)));
  // 1,000 bytes/s, sampled every 0.5 s.
  target.Push(kCounters, InOctets("Ethernet1", 10'000, t0));
  ASSERT_TRUE(Eventually([&] { return SampleCount(*session, clock_) == 1; }));
  const int port = target.port();
  target.Stop();
  ASSERT_TRUE(Eventually([&] { return !session->stats().up; }));
  FakeGnmiTarget again;
  again.Script(kCounters, {InOctets("Ethernet1", 13'000, t0 + 3 * second)});
  ASSERT_TRUE(again.Start(port).ok());
  ASSERT_TRUE(again.WaitForStreams(kCounters, 1, absl::Seconds(15)));
  ASSERT_EQ(again.Push(kCounters, InOctets("Ethernet1", 13'500,
                                           t0 + 3 * second + second / 2)),
            1);
  agent::SampleRate rate;
  ASSERT_TRUE(Eventually([&] {
    agent::Snapshot snap;
    std::vector<agent::SampleRate> rates;
    session->Build(clock_.MonotonicNanos(), clock_.Now(), absl::Seconds(60),
                   &snap, &rates);
    if (snap.samples.size() != 1 || snap.samples[0].raw != 13'500) {
      return false;
    }
    rate = rates[0];
    return true;
  }));
  ASSERT_TRUE(rate.per_second.has_value());
  EXPECT_EQ(rate.delta, 500u);
  // Over at least the 0.5 s the sample covers (more if it was received
  // later than that after the replay).
  EXPECT_LE(*rate.per_second, 1000.0);
  EXPECT_GT(*rate.per_second, 100.0);
}

TEST_F(SwitchSessionTest, SilentSampleGroupIsRestarted) {
  // The target accepts every Subscribe and then sends nothing.
  FakeGnmiTarget target;
  ASSERT_TRUE(target.Start().ok());
  SessionOptions options = FastOptions();
  options.idle_timeout = absl::Milliseconds(300);
  auto session = Open(Config(target), options);
  ASSERT_TRUE(target.WaitForStreams(kCounters, 1, absl::Seconds(10)));
  ASSERT_TRUE(Eventually([&] {
    return session->stats().errors.count("idle") != 0 &&
           target.subscribes(kCounters) >= 3;
  }));
  // ON_CHANGE-only groups (boot-time) are silent by design: never idle.
  EXPECT_EQ(target.subscribes("/system/state/boot-time"), 1);
}

// Sleeps until `offset` past the next point of the grid of `interval` (whole
// multiples since the Unix epoch): the phase a target's sample arrives at.
void SleepUntilPhase(absl::Duration interval, absl::Duration offset) {
  absl::Duration since;
  absl::IDivDuration(absl::Now() - absl::UnixEpoch(), interval, &since);
  absl::Duration wait = offset - since;
  if (wait <= absl::ZeroDuration()) wait += interval;
  absl::SleepFor(wait);
}

TEST_F(SwitchSessionTest, SamplesJustAfterTheGridAreSubscribedAgainBeforeIt) {
  const absl::Duration interval = absl::Milliseconds(200);
  FakeGnmiTarget target;
  target.Script(kCounters, {InOctets("Ethernet1", 0)});
  ASSERT_TRUE(target.Start().ok());
  SessionOptions options = FastOptions();
  options.sample_interval = interval;
  auto session = Open(Config(target), options);
  ASSERT_TRUE(target.WaitForStreams(kCounters, 1, absl::Seconds(10)));
  ASSERT_TRUE(Eventually([&] { return SampleCount(*session, clock_) > 0; }));

  ASSERT_TRUE(Eventually([&] { return session->stats().up; }));
  // A realign is the bridge's own doing, not an outage: the subscription
  // stays up from the cancel until the new stream's first response.
  std::atomic<bool> watching{true};
  std::atomic<int> down_polls{0};
  std::thread watcher([&] {
    while (watching.load()) {
      if (!session->stats().up) down_polls.fetch_add(1);
      absl::SleepFor(absl::Milliseconds(1));
    }
  });
  absl::Cleanup stop_watching = [&] {
    watching.store(false);
    if (watcher.joinable()) watcher.join();
  };

  // Samples 10 ms after each grid point wait 190 ms of 200 to be reported.
  uint64_t octets = 0;
  for (size_t i = 0; i < SamplePhase::kWindow; ++i) {
    SleepUntilPhase(interval, absl::Milliseconds(10));
    target.Push(kCounters, InOctets("Ethernet1", octets += 1000));
  }
  ASSERT_TRUE(Eventually([&] { return target.subscribes(kCounters) == 2; }))
      << "subscribed again";
  ASSERT_TRUE(target.WaitForStreams(kCounters, 1, absl::Seconds(10)));
  ASSERT_TRUE(Eventually([&] { return session->stats().up; }));
  std::move(stop_watching).Invoke();
  EXPECT_EQ(down_polls.load(), 0) << "a realign reads as an outage";
  SwitchSession::Stats stats = session->stats();
  EXPECT_EQ(stats.realigns, 1u);
  EXPECT_TRUE(stats.errors.empty()) << "not an error";
  EXPECT_EQ(stats.sample_wait, absl::ZeroDuration())
      << "the old phase is forgotten";

  // Samples 160 ms after (40 ms before the next point) stay where they are.
  for (size_t i = 0; i < 2 * SamplePhase::kWindow; ++i) {
    SleepUntilPhase(interval, absl::Milliseconds(160));
    target.Push(kCounters, InOctets("Ethernet1", octets += 1000));
  }
  ASSERT_TRUE(Eventually(
      [&] { return session->stats().sample_wait > absl::ZeroDuration(); }));
  stats = session->stats();
  EXPECT_EQ(stats.realigns, 1u);
  EXPECT_EQ(target.subscribes(kCounters), 2);
  EXPECT_LT(stats.sample_wait, interval / 2);
  // ON_CHANGE-only groups have no phase to move.
  EXPECT_EQ(target.subscribes("/system/state/boot-time"), 1);
}

TEST_F(SwitchSessionTest, SixMegabyteResponseIsAccepted) {
  // A SONiC COUNTERS table of 128 ports in one response, larger than a real
  // one (~5.6 MB): 128 ports x 700 statistics.
  std::string json = "{";
  for (int p = 0; p < 128; ++p) {
    if (p > 0) json += ",";
    absl::StrAppend(&json, "\"Ethernet", p, "\":{");
    for (int c = 0; c < 700; ++c) {
      if (c > 0) json += ",";
      absl::StrAppend(&json, "\"SAI_PORT_STAT_VENDOR_SPECIFIC_COUNTER_", c,
                      "_WITH_A_LONG_NAME\":\"", 1000000000000 + c, "\"");
    }
    json += "}";
  }
  json += "}";
  ASSERT_GT(json.size(), 6u << 20);
  FakeGnmiTarget target;
  target.Script(
      "/COUNTERS/Ethernet*",
      {Update(testing::JsonNotification("COUNTERS_DB", "/COUNTERS", json))});
  ASSERT_TRUE(target.Start().ok());
  SwitchConfig config = Config(target);
  config.dialect = Dialect::kSonic;
  auto session = Open(config);
  ASSERT_TRUE(Eventually([&] { return session->stats().up; }));
  EXPECT_EQ(SampleCount(*session, clock_), 128u * 700u);
  EXPECT_EQ(session->stats().errors.count("resource_exhausted"), 0u);
}

TEST_F(SwitchSessionTest, TlsWorksWithTheRightCaAndFailsWithAWrongOne) {
  // Another authority, which did not sign the target's certificate.
  ASSERT_EQ(::mkdir((dir_.path() + "/wrong").c_str(), 0700), 0);
  auto other = ::fabricdiag::testing::MakeTestPki(dir_.path() + "/wrong", {});
  ASSERT_TRUE(other.ok()) << other.status();
  FakeGnmiTarget target;
  target.Script(kCounters, {InOctets("Ethernet1", 100)});
  ASSERT_TRUE(StartTls(&target).ok());

  SwitchConfig good = Config(target, "good");
  good.insecure = false;
  good.tls_ca = Pki().ca_cert;
  auto sg = Open(good);
  SwitchConfig bad = Config(target, "bad");
  bad.insecure = false;
  bad.tls_ca = other->ca_cert;
  auto sbad = Open(bad);
  ASSERT_TRUE(Eventually([&] { return sg->stats().up; }));
  EXPECT_EQ(SampleCount(*sg, clock_), 1u);
  ASSERT_TRUE(Eventually(
      [&] { return sbad->stats().errors.count("unavailable") != 0; }));
  EXPECT_FALSE(sbad->stats().up);
  EXPECT_EQ(SampleCount(*sbad, clock_), 0u);
}

}  // namespace
}  // namespace fabricdiag::gnmi
