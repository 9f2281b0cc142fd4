#include "gnmi/bridge.h"

#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gnmi/bridge_metrics.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "tests/gnmi/fake_gnmi_target.h"
#include "tests/gnmi/fixtures.h"
#include "tests/testing/eventually.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::gnmi {
namespace {

using ::testing::HasSubstr;

TEST(SwitchesOfTest, OnlySwitchesWithAUsableGnmiBlock) {
  v1::Topology t;
  t.add_switches()->set_name("agent-fed");
  v1::Switch* oc = t.add_switches();
  oc->set_name("leaf-01");
  oc->mutable_gnmi()->set_address("10.0.0.1:6030");
  oc->mutable_gnmi()->set_dialect("openconfig");
  oc->mutable_gnmi()->set_tls_ca("/etc/fabricdiag/switch-ca.pem");
  v1::Switch* bad = t.add_switches();
  bad->set_name("leaf-02");
  bad->mutable_gnmi()->set_address("10.0.0.2:6030");
  bad->mutable_gnmi()->set_dialect("cisco");
  bad->mutable_gnmi()->set_insecure(true);
  std::vector<std::string> errors;
  std::vector<SwitchConfig> s = SwitchesOf(t, &errors);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].name, "leaf-01");
  EXPECT_EQ(s[0].dialect, Dialect::kOpenConfig);
  EXPECT_EQ(s[0].tls_ca, "/etc/fabricdiag/switch-ca.pem");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("leaf-02"));
}

TEST(ShardTest, EverySwitchGoesToExactlyOneOfNBridges) {
  std::vector<Shard> shards;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Shard> s = ParseShard(absl::StrCat(i, "/3"));
    ASSERT_TRUE(s.ok()) << s.status();
    shards.push_back(*s);
  }
  std::vector<int> per_shard(3);
  for (int n = 0; n < 1500; ++n) {
    const std::string name = absl::StrCat("leaf-", n);
    int owners = 0;
    for (int i = 0; i < 3; ++i) {
      if (shards[i].Contains(name)) {
        ++owners;
        ++per_shard[i];
      }
    }
    EXPECT_EQ(owners, 1) << name;
  }
  // FNV-1a spreads names that differ in a digit: no shard idles.
  for (int count : per_shard) EXPECT_GT(count, 400);
  EXPECT_TRUE(ParseShard("0/1")->Contains("anything"));
}

TEST(ShardTest, BadSpellingsNameTheFlag) {
  for (const char* bad :
       {"", "1", "3/3", "-1/2", "0/0", "a/b", "0/5000", "1/2/3", "0/ 2"}) {
    absl::StatusOr<Shard> s = ParseShard(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << bad;
    EXPECT_THAT(s.status().message(), ::testing::HasSubstr("--shard")) << bad;
  }
}

TEST(BridgeMetricsTest, OneSeriesPerSwitchAndErrorsByReason) {
  SwitchStatus up;
  up.name = "leaf-01";
  up.session.up = true;
  up.session.updates = 640;
  up.session.last_update_nanos = 8'500'000'000;
  up.session.reconnects = 2;
  up.session.errors = {{"unavailable", 2}, {"bad_json", 1}};
  up.stream.connected = true;
  SwitchStatus refused;
  refused.name = "leaf-02";
  refused.configured = false;
  const std::string text = prometheus::TextSerializer().Serialize(
      BridgeMetricFamilies({up, refused}, 10'000'000'000));
  EXPECT_THAT(text, HasSubstr("fabricdiag_gnmi_subscription_up{switch=\"leaf-"
                              "01\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_gnmi_subscription_up{switch=\"leaf-"
                              "02\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("fabricdiag_gnmi_updates_total{switch=\"leaf-01\"} "
                        "640\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_gnmi_last_update_age_seconds{switch="
                              "\"leaf-01\"} 1.5\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr(
                        "fabricdiag_gnmi_last_update_age_seconds{switch="
                        "\"leaf-02\"}")));
  EXPECT_THAT(text, HasSubstr("fabricdiag_gnmi_errors_total{switch=\"leaf-01\","
                              "reason=\"unavailable\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_gnmi_switch_configured{switch="
                              "\"leaf-02\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_gnmi_ingest_connected{switch="
                              "\"leaf-01\"} 1\n"));
}

TEST(BridgeTest, RefusedSwitchDoesNotStopAnotherAndTicksNeverBlock) {
  ::fabricdiag::testing::TempDir dir;
  const std::string creds = dir.path() + "/creds";
  std::ofstream(creds) << "bridge\nsecret-password\n";
  ASSERT_EQ(::chmod(creds.c_str(), 0644), 0);
  testing::FakeGnmiTarget target;
  ::gnmi::SubscribeResponse r;
  *r.mutable_update() = testing::UintNotification(
      "/interfaces/interface[name=Ethernet1]/state/counters/in-octets", 7);
  target.Script("/interfaces/interface/state/counters", {r});
  ASSERT_TRUE(target.Start().ok());

  SystemClock clock;
  BridgeOptions options;
  options.interval = absl::Milliseconds(100);
  // No collector listens there: the streams retry in the background.
  options.stream.targets = {"127.0.0.1:1"};
  Bridge bridge(options, clock);
  SwitchConfig refused;
  refused.name = "leaf-02";
  refused.address = "127.0.0.1:1";
  refused.tls_ca = "/nonexistent-ca.pem";
  refused.credentials_file = creds;
  SwitchConfig good;
  good.name = "leaf-01";
  good.address = target.address();
  good.insecure = true;
  bridge.SetSwitches({refused, good});

  ASSERT_TRUE(::fabricdiag::testing::Eventually([&] {
    for (const SwitchStatus& s : bridge.Status()) {
      if (s.name == "leaf-01" && s.session.up) return true;
    }
    return false;
  }));
  const absl::Time start = absl::Now();
  for (int i = 0; i < 5; ++i) bridge.Tick();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  std::vector<SwitchStatus> status = bridge.Status();
  ASSERT_EQ(status.size(), 2u);
  EXPECT_EQ(status[0].name, "leaf-01");
  EXPECT_TRUE(status[0].configured);
  EXPECT_EQ(status[0].reports, 5u);
  EXPECT_EQ(status[1].name, "leaf-02");
  EXPECT_FALSE(status[1].configured);
  EXPECT_THAT(status[1].config_error, HasSubstr(creds));
  EXPECT_THAT(status[1].config_error,
              ::testing::Not(HasSubstr("secret-password")));

  // Removed from the topology: its session stops.
  bridge.SetSwitches({});
  EXPECT_TRUE(bridge.Status().empty());
}

TEST(BridgeTest, SwitchReloadIsCountedAndRestartsItsStream) {
  testing::FakeGnmiTarget target;
  ASSERT_TRUE(target.Start().ok());
  SystemClock clock;
  BridgeOptions options;
  options.stream.targets = {"127.0.0.1:1"};
  Bridge bridge(options, clock);
  SwitchConfig leaf;
  leaf.name = "leaf-01";
  leaf.address = target.address();
  leaf.insecure = true;
  bridge.SetSwitches({leaf});
  const std::string boot = "/system/state/boot-time";
  ASSERT_TRUE(target.WaitForStreams(boot, 1, absl::Seconds(10)));
  auto status = [&] { return bridge.Status().at(0); };
  for (uint64_t t : {1000, 5000}) {
    ::gnmi::SubscribeResponse r;
    *r.mutable_update() = testing::UintNotification(boot, t);
    const uint64_t updates = status().session.updates;
    ASSERT_EQ(target.Push(boot, r), 1);
    ASSERT_TRUE(::fabricdiag::testing::Eventually(
        [&] { return status().session.updates > updates; }));
  }
  EXPECT_EQ(status().reloads, 0u);
  bridge.Tick();
  EXPECT_EQ(status().reloads, 1u);
  EXPECT_EQ(status().session.resets, 1u);
  bridge.Tick();
  EXPECT_EQ(status().reloads, 1u);
}

}  // namespace
}  // namespace fabricdiag::gnmi
