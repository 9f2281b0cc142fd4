// The simulator's gNMI target (sim/gnmi_target.h) as a gNMI client sees
// it: every group gnmi::GroupsFor() subscribes to, read through the gnmi
// core library exactly as the bridge reads it. Hand-made switch states;
// tests/sim/gnmi_sim_test.cc runs whole simulations.
#include "sim/gnmi_target.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "common/files.h"
#include "counters/counter_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/gnmi_subscription.h"
#include "tests/sim/gnmi_test_client.h"
#include "tests/sim/sim_test_util.h"
#include "tests/testing/eventually.h"
#include "tests/testing/test_pki.h"

namespace fabricdiag::sim {
namespace {

using gnmi::Dialect;
using gnmi::GroupsFor;
using gnmi::GroupSpec;
using testing::GnmiTestClient;
using testing::Group;
using ::testing::HasSubstr;
using testing::kInOctets;
using testing::kOutOctets;
using testing::kPfc3In;
using testing::kPfc3Out;

counters::Family FamilyOf(Dialect d) {
  return d == Dialect::kSonic ? counters::Family::kGnmiSonic
                              : counters::Family::kGnmiOpenConfig;
}

SwitchState TwoPorts(int64_t t_seconds, uint64_t bytes, bool swp1_up = true) {
  SwitchState s;
  s.name = "leaf-0";
  s.timestamp_nanos = 1700000000'000000000 + t_seconds * 1000000000;
  s.boot_time_nanos = 1700000000'000000000;
  s.ports = {"swp1", "swp49"};
  s.counters.resize(2);
  for (PortCounters& c : s.counters) {
    c.value[kRxBytes] = bytes;
    c.value[kTxBytes] = 2 * bytes;
    c.value[kRxPauseFrames + 3] = bytes / 1000;
  }
  s.counters[0].link_up = swp1_up;
  // swp1 hears a host's NIC, swp49 a spine.
  s.lldp = {
      {"swp1", "gpu-000", "02:00:00:00:00:00", "eth0", "eth0", ""},
      {"swp49", "spine-0", "02:01:00:00:00:02", "swp3", "swp3", "10.0.0.2"}};
  return s;
}

std::unique_ptr<GnmiTarget> StartTarget(Dialect d, GnmiTargetOptions o = {}) {
  o.dialect = d;
  absl::StatusOr<std::unique_ptr<GnmiTarget>> t =
      GnmiTarget::Start("leaf-0", o);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

// ---- Every group of every dialect, through the core library -------------

class GroupsTest : public ::testing::TestWithParam<Dialect> {};

TEST_P(GroupsTest, EveryLeafMapsToAPortOrIsRefusedWholeAsUnimplemented) {
  const Dialect d = GetParam();
  std::unique_ptr<GnmiTarget> target = StartTarget(d);
  ASSERT_NE(target, nullptr);
  target->Publish(TwoPorts(0, 5000));
  // Queues are not simulated; Cumulus's augment is not Arista's.
  const std::vector<std::string> refused = {"queues", "cumulus_pfc"};
  for (const GroupSpec& g : GroupsFor(d)) {
    SCOPED_TRACE(g.name);
    GnmiTestClient c(target->address(), grpc::InsecureChannelCredentials(), d);
    ASSERT_TRUE(c.Subscribe(g).ok());
    absl::Status st = c.ReadUntilSync();
    if (std::find(refused.begin(), refused.end(), g.name) != refused.end()) {
      EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented) << st;
      EXPECT_EQ(c.notifications, 0);
      continue;
    }
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_GT(c.notifications, 0);
    for (const auto& [port, series] : c.series) {
      EXPECT_THAT(port, ::testing::AnyOf("swp1", "swp49"));
      for (const auto& [name, value] : series) {
        const counters::CounterInfo info =
            counters::Classify(FamilyOf(d), counters::Driver::kUnknown, name);
        EXPECT_NE(info.row, nullptr) << name << " is not in the counter table";
      }
    }
    if (g.required) {
      // Counters, as they were published.
      const std::string in =
          d == Dialect::kSonic ? "SAI_PORT_STAT_IF_IN_OCTETS" : kInOctets;
      const std::string out =
          d == Dialect::kSonic ? "SAI_PORT_STAT_IF_OUT_OCTETS" : kOutOctets;
      EXPECT_EQ(c.series["swp1"][in], 5000u);
      EXPECT_EQ(c.series["swp49"][out], 10000u);
      if (d == Dialect::kSonic) {
        EXPECT_EQ(c.series["swp1"]["SAI_PORT_STAT_PFC_3_RX_PKTS"], 5u);
      }
      for (const std::string& leaf : c.last_updates) {
        EXPECT_FALSE(absl::StartsWith(leaf, "|ignored")) << leaf;
      }
    }
    if (absl::string_view(g.name) == "interfaces") {
      EXPECT_EQ(c.oper_status["swp1"], "UP");
      EXPECT_EQ(gnmi::OperState(c.oper_status["swp49"]), "up");
    }
    if (absl::string_view(g.name) == "ethernet") {
      EXPECT_EQ(gnmi::SpeedIdentityBytesPerSecond(c.speed["swp1"]), 50e9);
    }
    if (absl::string_view(g.name) == "arista_pfc") {
      EXPECT_EQ(c.series["swp1"][kPfc3In], 5u);
      EXPECT_EQ(c.series["swp1"][kPfc3Out], 0u);
    }
    if (absl::string_view(g.name) == "system") {
      EXPECT_EQ(c.boot_time, 1700000000'000000000u);
    }
    if (absl::string_view(g.name) == "port_names") {
      EXPECT_EQ(c.oids[SonicPortOid(0)], "swp1");
      EXPECT_EQ(c.oids[SonicPortOid(1)], "swp49");
    }
    if (absl::string_view(g.name) == "ports") {
      EXPECT_EQ(c.oper_status["swp1"], "up");
      EXPECT_EQ(c.speed["swp1"], "400000");
    }
    if (absl::string_view(g.name) == "lldp") {
      // Both dialects read back as the same neighbor, types as lldpd
      // spells them.
      std::map<gnmi::LldpField, std::string>& host = c.lldp["swp1"];
      EXPECT_EQ(host[gnmi::LldpField::kSystemName], "gpu-000");
      EXPECT_EQ(host[gnmi::LldpField::kChassisId], "02:00:00:00:00:00");
      EXPECT_EQ(host[gnmi::LldpField::kPortId], "eth0");
      EXPECT_EQ(gnmi::LldpIdType(host[gnmi::LldpField::kPortIdType], false),
                "ifname");
      EXPECT_EQ(gnmi::LldpIdType(host[gnmi::LldpField::kChassisIdType], true),
                "mac");
      EXPECT_EQ(c.lldp["swp49"][gnmi::LldpField::kSystemName], "spine-0");
      EXPECT_EQ(c.lldp["swp49"][gnmi::LldpField::kManagementAddress],
                "10.0.0.2");
      EXPECT_EQ(c.lldp.size(), 2u);
    }
  }
}

// Counters that change only every 1 s (SONiC's port statistics poll),
// sampled every 0.5 s: the samples between two polls repeat the last poll's
// values; oper status still changes at once.
TEST_P(GroupsTest, RefreshHoldsTheCountersBetweenPolls) {
  const Dialect d = GetParam();
  const bool sonic = d == Dialect::kSonic;
  GnmiTargetOptions o;
  o.refresh = absl::Seconds(1);
  std::unique_ptr<GnmiTarget> target = StartTarget(d, o);
  ASSERT_NE(target, nullptr);
  // TwoPorts(t) is at t seconds past a whole second; half seconds between.
  auto at = [](int64_t half_seconds, uint64_t bytes, bool up = true) {
    SwitchState s = TwoPorts(0, bytes, up);
    s.timestamp_nanos += half_seconds * 500'000'000;
    return s;
  };
  target->Publish(at(0, 100));
  GnmiTestClient c(target->address(), grpc::InsecureChannelCredentials(), d);
  ASSERT_TRUE(c.Subscribe(Group(d, sonic ? "counters" : "interfaces")).ok());
  ASSERT_TRUE(c.ReadUntilSync().ok());
  const std::string in = sonic ? "SAI_PORT_STAT_IF_IN_OCTETS" : kInOctets;
  EXPECT_EQ(c.series["swp1"][in], 100u);
  // Every Publish is a sample (interval 0); the values move once a second.
  const std::vector<std::pair<uint64_t, uint64_t>> published_seen = {
      {150, 100}, {200, 200}, {250, 200}, {300, 300}, {350, 300}};
  for (size_t i = 0; i < published_seen.size(); ++i) {
    target->Publish(at(static_cast<int64_t>(i) + 1, published_seen[i].first));
    // OpenConfig: one notification per interface; SONiC: one for COUNTERS.
    for (int n = 0; n < (sonic ? 1 : 2); ++n) ASSERT_TRUE(c.ReadOne().ok());
    EXPECT_EQ(c.series["swp1"][in], published_seen[i].second)
        << "publish " << i + 1 << " of " << published_seen[i].first;
  }
  if (!sonic) {
    // Oper status is no polled counter: it changes at once, between polls.
    GnmiTestClient s(target->address(), grpc::InsecureChannelCredentials(), d);
    ASSERT_TRUE(s.Subscribe(Group(d, "interfaces"), 0).ok());
    ASSERT_TRUE(s.ReadUntilSync().ok());
    // 2.75 s: still the poll of 2 s.
    SwitchState down = at(5, 400, /*up=*/false);
    down.timestamp_nanos += 250'000'000;
    target->Publish(down);
    ASSERT_TRUE(s.ReadOne().ok());
    EXPECT_EQ(s.oper_status["swp1"], "DOWN");
    EXPECT_EQ(s.series["swp1"][in], 300u);
  }
}

// PFC counters polled every 10 s, the others at every Publish: samples
// between two PFC polls repeat the PFC values of the last one while the
// octets move.
TEST_P(GroupsTest, PfcRefreshHoldsOnlyThePfcCounters) {
  const Dialect d = GetParam();
  const bool sonic = d == Dialect::kSonic;
  GnmiTargetOptions o;
  o.pfc_refresh = absl::Seconds(10);
  std::unique_ptr<GnmiTarget> target = StartTarget(d, o);
  ASSERT_NE(target, nullptr);
  target->Publish(TwoPorts(8, 100'000));
  GnmiTestClient c(target->address(), grpc::InsecureChannelCredentials(), d);
  ASSERT_TRUE(c.Subscribe(Group(d, sonic ? "counters" : "arista_pfc")).ok());
  ASSERT_TRUE(c.ReadUntilSync().ok());
  GnmiTestClient octets(target->address(), grpc::InsecureChannelCredentials(),
                        d);
  ASSERT_TRUE(
      octets.Subscribe(Group(d, sonic ? "counters" : "interfaces")).ok());
  ASSERT_TRUE(octets.ReadUntilSync().ok());
  const std::string in = sonic ? "SAI_PORT_STAT_IF_IN_OCTETS" : kInOctets;
  const std::string pfc = sonic ? "SAI_PORT_STAT_PFC_3_RX_PKTS" : kPfc3In;
  EXPECT_EQ(c.series["swp1"][pfc], 100u);
  // 9 s: the same PFC poll (of 0 s); 10 s: a new one.
  const std::vector<std::pair<int64_t, uint64_t>> at_seen = {{9, 100},
                                                             {10, 300}};
  for (const auto& [t, seen] : at_seen) {
    target->Publish(TwoPorts(t, static_cast<uint64_t>(t) * 30'000));
    // OpenConfig: one notification per interface; SONiC: one for COUNTERS.
    for (int n = 0; n < (sonic ? 1 : 2); ++n) {
      ASSERT_TRUE(c.ReadOne().ok());
      ASSERT_TRUE(octets.ReadOne().ok());
    }
    EXPECT_EQ(c.series["swp1"][pfc], seen) << "at " << t << " s";
    EXPECT_EQ(octets.series["swp1"][in], static_cast<uint64_t>(t) * 30'000)
        << "at " << t << " s";
  }
}

// A target answering overlapping subscriptions: a subscription below a
// port sends the port's other counters too, as published one state
// earlier and stamped so; SONiC's queue path, which selects nothing here,
// gets the ports' COUNTERS hashes. Without the option neither.
TEST_P(GroupsTest, OverlapSendsOtherCountersOneStateLate) {
  const Dialect d = GetParam();
  const bool sonic = d == Dialect::kSonic;
  const GroupSpec& group = Group(d, sonic ? "queues" : "ethernet");
  const std::string in = sonic ? "SAI_PORT_STAT_IF_IN_OCTETS" : kInOctets;
  for (const bool overlap : {false, true}) {
    SCOPED_TRACE(overlap ? "overlap" : "no overlap");
    GnmiTargetOptions o;
    o.overlap = overlap;
    std::unique_ptr<GnmiTarget> target = StartTarget(d, o);
    ASSERT_NE(target, nullptr);
    target->Publish(TwoPorts(0, 100));
    target->Publish(TwoPorts(1, 200));
    GnmiTestClient c(target->address(), grpc::InsecureChannelCredentials(), d);
    ASSERT_TRUE(c.Subscribe(group).ok());
    absl::Status st = c.ReadUntilSync();
    if (!overlap) {
      if (sonic) {
        EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented) << st;
      } else {
        ASSERT_TRUE(st.ok()) << st;
        EXPECT_EQ(c.series["swp1"].count(in), 0u);
      }
      continue;
    }
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(c.series["swp1"][in], 100u);  // as of the state before
    target->Publish(TwoPorts(2, 300));
    std::map<int64_t, int> stamps;
    while (c.series["swp1"][in] != 200u) {
      ASSERT_TRUE(c.ReadOne().ok());
      ++stamps[c.last_timestamp];
    }
    EXPECT_EQ(stamps.count(1700000001'000000000), 1u);
    EXPECT_EQ(stamps.count(1700000002'000000000), sonic ? 0u : 1u)
        << "OpenConfig: the group's own leaves are sampled now";
  }
}

INSTANTIATE_TEST_SUITE_P(Dialects, GroupsTest,
                         ::testing::Values(Dialect::kOpenConfig,
                                           Dialect::kSonic));

TEST_P(GroupsTest, AChangedLldpNeighborIsSentOnChangeAlone) {
  const Dialect d = GetParam();
  std::unique_ptr<GnmiTarget> target = StartTarget(d);
  ASSERT_NE(target, nullptr);
  target->Publish(TwoPorts(0, 100));
  GnmiTestClient c(target->address(), grpc::InsecureChannelCredentials(), d);
  ASSERT_TRUE(c.Subscribe(Group(d, "lldp")).ok());
  ASSERT_TRUE(c.ReadUntilSync().ok());
  ASSERT_EQ(c.lldp["swp1"][gnmi::LldpField::kPortId], "eth0");
  // The cable of swp1 moved to another NIC of the host.
  SwitchState moved = TwoPorts(1, 200);
  moved.lldp[0].port_id = "eth1";
  target->Publish(moved);
  ASSERT_TRUE(c.ReadOne().ok());
  EXPECT_EQ(c.lldp["swp1"][gnmi::LldpField::kPortId], "eth1");
  // Only swp1's neighbor changed: nothing of swp49 was sent again.
  EXPECT_THAT(c.last_updates, ::testing::Contains("swp1|lldp"));
  EXPECT_THAT(c.last_updates,
              ::testing::Not(::testing::Contains("swp49|lldp")));
}

TEST(GnmiTargetTest, SonicOidMapMatchesTheFixtureShape) {
  EXPECT_EQ(SonicPortOid(0), "oid:0x1000000000001");
  EXPECT_EQ(SonicPortOid(56), "oid:0x1000000000039");
}

// ---- Stream behaviour --------------------------------------------------

TEST(GnmiTargetTest, SamplesAtTheIntervalAndOperStatusOnChange) {
  std::unique_ptr<GnmiTarget> target = StartTarget(Dialect::kOpenConfig);
  ASSERT_NE(target, nullptr);
  target->Publish(TwoPorts(0, 100));
  GnmiTestClient c(target->address(), grpc::InsecureChannelCredentials());
  // Counters every 2 s of the published timestamps, oper-status on change.
  ASSERT_TRUE(
      c.Subscribe(Group(Dialect::kOpenConfig, "interfaces"), 2'000'000'000)
          .ok());
  ASSERT_TRUE(c.ReadUntilSync().ok());
  EXPECT_EQ(c.syncs, 1);
  EXPECT_EQ(c.series["swp1"][kInOctets], 100u);

  // t=1: not yet a sample; swp1 went down: that alone is sent.
  target->Publish(TwoPorts(1, 200, /*swp1_up=*/false));
  ASSERT_TRUE(c.ReadOne().ok());
  EXPECT_THAT(c.last_updates, ::testing::ElementsAre("swp1|oper-status"));
  EXPECT_EQ(c.oper_status["swp1"], "DOWN");
  EXPECT_EQ(c.series["swp1"][kInOctets], 100u);

  // t=2: a sample, with every counter of swp1 and no unchanged status.
  target->Publish(TwoPorts(2, 300, /*swp1_up=*/false));
  ASSERT_TRUE(c.ReadOne().ok());
  EXPECT_THAT(c.last_updates,
              ::testing::Contains("swp1|" + std::string(kInOctets)));
  EXPECT_THAT(c.last_updates,
              ::testing::Not(::testing::Contains("swp1|oper-status")));
  EXPECT_EQ(c.series["swp1"][kInOctets], 300u);
  EXPECT_EQ(c.last_timestamp, 1700000002'000000000);

  // A client that goes away frees its stream.
  EXPECT_EQ(target->open_streams(), 1);
  c.Cancel();
  EXPECT_TRUE(fabricdiag::testing::Eventually(
      [&] { return target->open_streams() == 0; }));
}

TEST(SubscriptionSetTest, UpdatesOnlyAndSuppressRedundant) {
  ::gnmi::SubscriptionList list;
  list.set_updates_only(true);
  ::gnmi::Subscription* sub = list.add_subscription();
  *sub->mutable_path() = *gnmi::ParsePath(
      "/interfaces/interface[name=swp1]/state/counters/in-octets");
  sub->set_mode(::gnmi::SAMPLE);
  sub->set_suppress_redundant(true);
  absl::StatusOr<SubscriptionSet> set =
      SubscriptionSet::Create(Dialect::kOpenConfig, list);
  ASSERT_TRUE(set.ok()) << set.status();
  auto snapshot = [](int64_t t, uint64_t bytes) {
    const SwitchState s = TwoPorts(t, bytes);
    return Snapshot{s.timestamp_nanos, SwitchLeaves(Dialect::kOpenConfig, s)};
  };
  const Snapshot first = snapshot(0, 100);
  ASSERT_TRUE(set->Bind(first.leaves).ok());
  // updates_only: nothing before sync_response.
  std::vector<::gnmi::SubscribeResponse> r = set->Initial(first);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].sync_response());
  // suppress_redundant: an unchanged sample is not sent...
  EXPECT_TRUE(set->Next(snapshot(1, 100)).empty());
  // ...a changed one is, alone.
  r = set->Next(snapshot(2, 150));
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].update().update_size(), 1);
  EXPECT_EQ(r[0].update().update(0).val().uint_val(), 150u);
  EXPECT_EQ(gnmi::PathToString(r[0].update().prefix()),
            "/interfaces/interface[name=swp1]");
}

TEST(GnmiTargetTest, UnknownPathIsUnimplementedForTheWholeRpc) {
  std::unique_ptr<GnmiTarget> target = StartTarget(Dialect::kOpenConfig);
  ASSERT_NE(target, nullptr);
  target->Publish(TwoPorts(0, 1));
  ::gnmi::SubscribeRequest r;
  r.mutable_subscribe()->add_subscription()->mutable_path()->CopyFrom(
      *gnmi::ParsePath("/interfaces/interface/state/counters"));
  r.mutable_subscribe()->add_subscription()->mutable_path()->CopyFrom(
      *gnmi::ParsePath("/network-instances/network-instance"));
  GnmiTestClient c(target->address(), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(c.SubscribeRaw(r).ok());
  absl::Status st = c.ReadUntilSync();
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("/network-instances"));
  EXPECT_EQ(c.notifications, 0);
}

TEST(GnmiTargetTest, SonicUnknownTargetIsUnimplemented) {
  std::unique_ptr<GnmiTarget> target = StartTarget(Dialect::kSonic);
  ASSERT_NE(target, nullptr);
  target->Publish(TwoPorts(0, 1));
  GnmiTestClient c(target->address(), grpc::InsecureChannelCredentials(),
                   Dialect::kSonic);
  GroupSpec g = Group(Dialect::kSonic, "counters");
  g.target = "FLEX_COUNTER_DB";
  ASSERT_TRUE(c.Subscribe(g).ok());
  absl::Status st = c.ReadUntilSync();
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented) << st;
}

TEST(GnmiTargetTest, PollIsUnimplementedAndOnceEndsAfterSync) {
  std::unique_ptr<GnmiTarget> target = StartTarget(Dialect::kOpenConfig);
  ASSERT_NE(target, nullptr);
  target->Publish(TwoPorts(0, 7));
  ::gnmi::SubscribeRequest r;
  r.mutable_subscribe()->add_subscription()->mutable_path()->CopyFrom(
      *gnmi::ParsePath("/interfaces/interface[name=swp49]/state/counters"));
  r.mutable_subscribe()->set_mode(::gnmi::SubscriptionList::POLL);
  GnmiTestClient poll(target->address(), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(poll.SubscribeRaw(r).ok());
  EXPECT_EQ(poll.ReadUntilSync().code(), absl::StatusCode::kUnimplemented);

  r.mutable_subscribe()->set_mode(::gnmi::SubscriptionList::ONCE);
  GnmiTestClient once(target->address(), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(once.SubscribeRaw(r).ok());
  ASSERT_TRUE(once.ReadUntilSync().ok());
  // The key selected one interface.
  EXPECT_EQ(once.series.count("swp1"), 0u);
  EXPECT_EQ(once.series["swp49"][kInOctets], 7u);
  EXPECT_EQ(once.ReadOne().code(), absl::StatusCode::kOutOfRange);
}

// ---- Credentials and TLS ----------------------------------------------

TEST(GnmiTargetTest, CredentialsAreRequiredOnEveryRpc) {
  GnmiTargetOptions o;
  o.username = "fabricdiag";
  o.password = "s3cret-pw";
  std::unique_ptr<GnmiTarget> target = StartTarget(Dialect::kOpenConfig, o);
  ASSERT_NE(target, nullptr);
  target->Publish(TwoPorts(0, 1));

  GnmiTestClient none(target->address(), grpc::InsecureChannelCredentials());
  absl::Status st = none.Capabilities();
  EXPECT_EQ(st.code(), absl::StatusCode::kUnauthenticated) << st;
  ASSERT_TRUE(none.Subscribe(Group(Dialect::kOpenConfig, "interfaces")).ok());
  EXPECT_EQ(none.ReadUntilSync().code(), absl::StatusCode::kUnauthenticated);

  GnmiTestClient wrong(target->address(), grpc::InsecureChannelCredentials());
  wrong.SetCredentials("fabricdiag", "guess");
  st = wrong.Capabilities();
  EXPECT_EQ(st.code(), absl::StatusCode::kUnauthenticated) << st;
  EXPECT_THAT(std::string(st.message()),
              ::testing::Not(HasSubstr("s3cret-pw")));

  GnmiTestClient right(target->address(), grpc::InsecureChannelCredentials());
  right.SetCredentials("fabricdiag", "s3cret-pw");
  ::gnmi::CapabilityResponse caps;
  ASSERT_TRUE(right.Capabilities(&caps).ok());
  EXPECT_GT(caps.supported_models_size(), 0);
  ASSERT_TRUE(right.Subscribe(Group(Dialect::kOpenConfig, "interfaces")).ok());
  EXPECT_TRUE(right.ReadUntilSync().ok());
}

TEST(GnmiTargetTest, TlsWorksWithTheRightCaOnly) {
  sim::testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/a");
  std::filesystem::create_directories(dir.path() + "/b");
  absl::StatusOr<fabricdiag::testing::TestPki> pki =
      fabricdiag::testing::MakeTestPki(dir.path() + "/a", {});
  ASSERT_TRUE(pki.ok()) << pki.status();
  absl::StatusOr<fabricdiag::testing::TestPki> other =
      fabricdiag::testing::MakeTestPki(dir.path() + "/b", {});
  ASSERT_TRUE(other.ok()) << other.status();
  GnmiTargetOptions o;
  o.tls_cert_pem = *ReadFileCapped(pki->server.cert, 1 << 20);
  o.tls_key_pem = *ReadFileCapped(pki->server.key, 1 << 20);
  std::unique_ptr<GnmiTarget> target = StartTarget(Dialect::kSonic, o);
  ASSERT_NE(target, nullptr);
  target->Publish(TwoPorts(0, 1));

  grpc::SslCredentialsOptions good;
  good.pem_root_certs = *ReadFileCapped(pki->ca_cert, 1 << 20);
  GnmiTestClient ok(target->address(), grpc::SslCredentials(good),
                    Dialect::kSonic);
  ASSERT_TRUE(ok.Subscribe(Group(Dialect::kSonic, "counters")).ok());
  EXPECT_TRUE(ok.ReadUntilSync().ok());

  grpc::SslCredentialsOptions bad;
  bad.pem_root_certs = *ReadFileCapped(other->ca_cert, 1 << 20);
  GnmiTestClient refused(target->address(), grpc::SslCredentials(bad),
                         Dialect::kSonic);
  EXPECT_EQ(refused.Capabilities().code(), absl::StatusCode::kUnavailable);

  GnmiTestClient plaintext(target->address(),
                           grpc::InsecureChannelCredentials());
  EXPECT_EQ(plaintext.Capabilities().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace fabricdiag::sim
