// LLDP neighbors from a switch's gNMI stream: the path mapping of both
// dialects, the neighbor table's bounds, and SwitchState publishing the
// neighbor set (on the real responses in tests/fixtures/gnmi, see its
// PROVENANCE.md, and on hostile ones).
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gnmi/lldp_table.h"
#include "gnmi/path_map.h"
#include "gnmi/switch_state.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/gnmi/fixtures.h"

namespace fabricdiag::gnmi {
namespace {

using agent::LldpNeighbor;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::JsonNotification;
using testing::ReadFixture;

constexpr int64_t kSecond = 1'000'000'000;
constexpr char kOcNeighbor[] =
    "/lldp/interfaces/interface[name=Ethernet8]/neighbors/neighbor[id=1]";

LeafTarget Map(Dialect d, const char* db, const char* text) {
  static std::string name;  // MapLeaf's scratch
  static ::gnmi::Path parsed;
  parsed = *ParsePath(text);
  PathView path;
  path.Append(parsed);
  return MapLeaf(d, db, path, {}, &name);
}

TEST(LldpPathTest, OpenConfigNeighborStateLeaves) {
  const LeafTarget t = Map(Dialect::kOpenConfig, "",
                           "/openconfig-lldp:lldp/interfaces/"
                           "interface[name=Ethernet8]/neighbors/"
                           "neighbor[id=7]/state/port-id");
  EXPECT_EQ(t.kind, LeafTarget::Kind::kLldp);
  EXPECT_EQ(t.device, "Ethernet8");
  EXPECT_EQ(t.neighbor, "7");
  EXPECT_EQ(t.lldp_field, LldpField::kPortId);
  EXPECT_EQ(Map(Dialect::kOpenConfig, "",
                absl::StrCat(kOcNeighbor, "/state/management-address").c_str())
                .lldp_field,
            LldpField::kManagementAddress);
  // What the bridge does not keep, and paths without their keys.
  EXPECT_EQ(Map(Dialect::kOpenConfig, "",
                absl::StrCat(kOcNeighbor, "/state/ttl").c_str())
                .kind,
            LeafTarget::Kind::kIgnored);
  EXPECT_EQ(Map(Dialect::kOpenConfig, "", "/lldp/state/system-name").kind,
            LeafTarget::Kind::kIgnored);
  EXPECT_EQ(Map(Dialect::kOpenConfig, "",
                "/lldp/interfaces/interface/neighbors/neighbor[id=1]/state/"
                "port-id")
                .kind,
            LeafTarget::Kind::kBadPath);
  EXPECT_EQ(Map(Dialect::kOpenConfig, "",
                "/lldp/interfaces/interface[name=Ethernet8]/neighbors/"
                "neighbor/state/port-id")
                .kind,
            LeafTarget::Kind::kBadPath);
}

TEST(LldpPathTest, SonicLldpEntryTableFields) {
  LeafTarget t = Map(Dialect::kSonic, "APPL_DB",
                     "/LLDP_ENTRY_TABLE/Ethernet0/lldp_rem_sys_name");
  EXPECT_EQ(t.kind, LeafTarget::Kind::kLldp);
  EXPECT_EQ(t.device, "Ethernet0");
  EXPECT_EQ(t.neighbor, "");
  EXPECT_EQ(t.lldp_field, LldpField::kSystemName);
  // Through the subscription's wildcard.
  t = Map(Dialect::kSonic, "APPL_DB",
          "/LLDP_ENTRY_TABLE/Ethernet*/Ethernet4/lldp_rem_port_id_subtype");
  EXPECT_EQ(t.device, "Ethernet4");
  EXPECT_EQ(t.lldp_field, LldpField::kPortIdType);
  EXPECT_EQ(Map(Dialect::kSonic, "APPL_DB",
                "/LLDP_ENTRY_TABLE/Ethernet0/lldp_rem_time_mark")
                .kind,
            LeafTarget::Kind::kIgnored);
  // Another database has no such table.
  EXPECT_EQ(Map(Dialect::kSonic, "COUNTERS_DB",
                "/LLDP_ENTRY_TABLE/Ethernet0/lldp_rem_sys_name")
                .kind,
            LeafTarget::Kind::kIgnored);
}

TEST(LldpIdTypeTest, IdentitiesAndMibNumbersAsLldpdSpellsThem) {
  EXPECT_EQ(LldpIdType("MAC_ADDRESS", true), "mac");
  EXPECT_EQ(LldpIdType("openconfig-lldp-types:INTERFACE_NAME", false),
            "ifname");
  EXPECT_EQ(LldpIdType("LOCAL", false), "local");
  // LLDP-MIB: chassis and port subtypes are numbered differently.
  EXPECT_EQ(LldpIdType("4", true), "mac");
  EXPECT_EQ(LldpIdType("3", false), "mac");
  EXPECT_EQ(LldpIdType("5", false), "ifname");
  EXPECT_EQ(LldpIdType("6", true), "ifname");
  EXPECT_EQ(LldpIdType("7", false), "local");
  EXPECT_EQ(LldpIdType("99", false), "99");
  EXPECT_EQ(LldpIdType("SOMETHING_NEW", false), "something_new");
}

// ---- LldpTable -------------------------------------------------------------

void SetComplete(LldpTable* t, const std::string& port, const std::string& id,
                 const std::string& system) {
  t->Set(port, id, LldpField::kSystemName, system);
  t->Set(port, id, LldpField::kChassisId, "02:00:00:00:00:01");
  t->Set(port, id, LldpField::kPortId, "eth0");
}

TEST(LldpTableTest, OnlyNeighborsWithChassisAndPortIdAreSent) {
  LldpTable t;
  t.Set("Ethernet0", "1", LldpField::kSystemName, "host-1");
  t.Set("Ethernet0", "1", LldpField::kChassisId, "02:00:00:00:00:01");
  EXPECT_THAT(t.Complete(), IsEmpty());
  EXPECT_EQ(t.incomplete(), 1u);
  t.Set("Ethernet0", "1", LldpField::kPortId, "eth0");
  ASSERT_EQ(t.Complete().size(), 1u);
  EXPECT_EQ(t.Complete()[0].netdev, "Ethernet0");
  EXPECT_EQ(t.incomplete(), 0u);
}

TEST(LldpTableTest, HugeTextsAreCutTo255Bytes) {
  LldpTable t;
  const std::string huge(100000, 'x');
  EXPECT_TRUE(t.Set("Ethernet0", "1", LldpField::kSystemName, huge).truncated);
  EXPECT_FALSE(
      t.Set("Ethernet0", "1", LldpField::kChassisId, "02:00:00:00:00:01")
          .truncated);
  EXPECT_TRUE(t.Set("Ethernet0", "1", LldpField::kPortId, huge).truncated);
  const std::vector<LldpNeighbor> n = t.Complete();
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].system_name.size(), 255u);
  EXPECT_EQ(n[0].port_id.size(), 255u);
  // A huge key is cut too: the same neighbor, not a new one per update.
  t.Set(huge, huge, LldpField::kSystemName, "a");
  t.Set(huge + "y", huge + "y", LldpField::kSystemName, "b");
  EXPECT_EQ(t.size(), 2u);
}

TEST(LldpTableTest, TooManyNeighborsAreRefusedAndCountedOnce) {
  LldpTable t;
  for (size_t i = 0; i < LldpTable::kMaxNeighbors; ++i) {
    SetComplete(&t, absl::StrCat("Ethernet", i), "1", "host");
  }
  EXPECT_EQ(t.size(), LldpTable::kMaxNeighbors);
  // Three fields of one neighbor too many: refused, counted once.
  EXPECT_TRUE(t.Set("Ethernet9999", "1", LldpField::kSystemName, "x").refused);
  EXPECT_FALSE(t.Set("Ethernet9999", "1", LldpField::kPortId, "eth0").refused);
  EXPECT_TRUE(t.Set("Ethernet9998", "1", LldpField::kPortId, "eth0").refused);
  EXPECT_EQ(t.size(), LldpTable::kMaxNeighbors);
  // A known neighbor still changes.
  t.Set("Ethernet0", "1", LldpField::kSystemName, "renamed");
  EXPECT_EQ(t.Complete()[0].system_name, "renamed");
  // Room again: a removed neighbor makes space.
  t.Remove("Ethernet1", "");
  EXPECT_FALSE(t.Set("Ethernet9999", "1", LldpField::kPortId, "eth0").refused);
  EXPECT_EQ(t.size(), LldpTable::kMaxNeighbors);
}

TEST(LldpTableTest, MacIdsAreLowerCasedAndBlanksDropped) {
  LldpTable t;
  t.Set("Ethernet0", "", LldpField::kChassisId, "0C:29:EF:CE:10:00");
  t.Set("Ethernet0", "", LldpField::kChassisIdType, "4");
  t.Set("Ethernet0", "", LldpField::kPortId, "0C:29:EF:CE:10:0A");
  t.Set("Ethernet0", "", LldpField::kPortIdType, "3");
  t.Set("Ethernet0", "", LldpField::kPortDescription, " ");
  const std::vector<LldpNeighbor> n = t.Complete();
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].chassis_id, "0c:29:ef:ce:10:00");
  EXPECT_EQ(n[0].chassis_id_type, "mac");
  EXPECT_EQ(n[0].port_id, "0c:29:ef:ce:10:0a");
  EXPECT_EQ(n[0].port_id_type, "mac");
  EXPECT_EQ(n[0].port_description, "");
}

TEST(LldpTableTest, GenerationMovesOnlyWithAChange) {
  LldpTable t;
  SetComplete(&t, "Ethernet0", "1", "host-1");
  const uint64_t g = t.generation();
  SetComplete(&t, "Ethernet0", "1", "host-1");
  t.Remove("Ethernet4", "");
  EXPECT_EQ(t.generation(), g);
  t.Remove("Ethernet0", "1");
  EXPECT_GT(t.generation(), g);
}

// ---- SwitchState -----------------------------------------------------------

struct Built {
  agent::Snapshot snap;
  std::vector<agent::SampleRate> rates;
};

Built BuildState(SwitchState* state) {
  Built b;
  state->Build(kSecond, absl::FromUnixSeconds(1795000000), absl::Seconds(30),
               &b.snap, &b.rates);
  return b;
}

// Every hash of a fixture holding `LLDP_ENTRY_TABLE:<port>` keys, as
// sonic-gnmi sends them: one update per port under target APPL_DB.
void ApplySonicTable(SwitchState* state, const std::string& fixture) {
  const nlohmann::json table = nlohmann::json::parse(ReadFixture(fixture));
  for (const auto& [key, hash] : table.items()) {
    const std::string port = key.substr(key.find(':') + 1);
    state->Apply(
        JsonNotification("APPL_DB", absl::StrCat("/LLDP_ENTRY_TABLE/", port),
                         hash.dump()),
        "APPL_DB", kSecond);
  }
}

TEST(SwitchStateLldpTest, SonicFixtureBecomesTheNeighborSet) {
  SwitchState state(Dialect::kSonic);
  state.StartLldp();
  ApplySonicTable(&state, "sonic_appl_db_lldp_entry_table.json");
  Built b = BuildState(&state);
  ASSERT_NE(b.snap.lldp, nullptr);
  EXPECT_EQ(b.snap.lldp->source, "gnmi");
  // Not synced yet: the set may be incomplete.
  EXPECT_FALSE(b.snap.lldp->up);
  state.SyncLldp();
  b = BuildState(&state);
  EXPECT_TRUE(b.snap.lldp->up);
  const std::vector<LldpNeighbor>& n = b.snap.lldp->set.neighbors;
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].netdev, "Ethernet0");
  EXPECT_EQ(n[0].system_name, "switch13");
  EXPECT_EQ(n[0].chassis_id, "00:11:22:33:44:55");
  EXPECT_EQ(n[0].chassis_id_type, "mac");
  EXPECT_EQ(n[0].port_id, "Ethernet1");
  EXPECT_EQ(n[0].port_id_type, "ifname");
  EXPECT_EQ(n[0].port_description, "");  // stored as " "
  EXPECT_EQ(n[1].netdev, "Ethernet4");
  EXPECT_EQ(n[1].port_id, "Ethernet2");
  EXPECT_EQ(state.lldp_neighbors(), 2u);
  EXPECT_EQ(state.ErrorCounts().size(), 0u);
}

TEST(SwitchStateLldpTest, SonicLocalPortIdAndAddressList) {
  SwitchState state(Dialect::kSonic);
  // The subscription's wildcard path, no prefix target: the group's db.
  state.Apply(JsonNotification(
                  "", "/LLDP_ENTRY_TABLE/Ethernet*/Ethernet0",
                  ReadFixture("sonic_appl_db_lldp_entry_local_port_id.json")),
              "APPL_DB", kSecond);
  state.SyncLldp();
  const Built b = BuildState(&state);
  ASSERT_EQ(b.snap.lldp->set.neighbors.size(), 1u);
  const LldpNeighbor& n = b.snap.lldp->set.neighbors[0];
  EXPECT_EQ(n.netdev, "Ethernet0");
  EXPECT_EQ(n.system_name, "sonic1");
  EXPECT_EQ(n.port_id, "Ethernet0");
  EXPECT_EQ(n.port_id_type, "local");
  EXPECT_EQ(n.port_description, "Port 1/1");
  EXPECT_EQ(n.management_address, "172.17.2.1");
}

TEST(SwitchStateLldpTest, OpenConfigFixtureAgreesWithTheSonicHashItCameFrom) {
  SwitchState state(Dialect::kOpenConfig);
  state.Apply(
      JsonNotification("",
                       "/openconfig-lldp:lldp/interfaces/"
                       "interface[name=Ethernet0]/neighbors/"
                       "neighbor[id=Ethernet0]",
                       ReadFixture("openconfig_lldp_neighbor_state.json")),
      "", kSecond);
  state.SyncLldp();
  const Built b = BuildState(&state);
  ASSERT_EQ(b.snap.lldp->set.neighbors.size(), 1u);
  const LldpNeighbor& n = b.snap.lldp->set.neighbors[0];
  EXPECT_EQ(n.netdev, "Ethernet0");
  EXPECT_EQ(n.system_name, "sonic1");
  EXPECT_EQ(n.chassis_id, "00:aa:00:00:00:01");
  EXPECT_EQ(n.chassis_id_type, "mac");
  EXPECT_EQ(n.port_id, "Ethernet0");
  EXPECT_EQ(n.port_id_type, "local");
  EXPECT_EQ(n.port_description, "Port 1/1");
  EXPECT_EQ(n.management_address, "172.17.2.1");
  // The same neighbor read from SONiC's table is the same LldpNeighbor.
  SwitchState sonic(Dialect::kSonic);
  sonic.Apply(JsonNotification(
                  "APPL_DB", "/LLDP_ENTRY_TABLE/Ethernet0",
                  ReadFixture("sonic_appl_db_lldp_entry_local_port_id.json")),
              "APPL_DB", kSecond);
  EXPECT_EQ(BuildState(&sonic).snap.lldp->set.neighbors[0], n);
}

::gnmi::Notification Delete(const char* target, const char* path) {
  ::gnmi::Notification d;
  if (target[0] != '\0') d.mutable_prefix()->set_target(target);
  *d.add_delete_() = *ParsePath(path);
  return d;
}

TEST(SwitchStateLldpTest, DeletesRemoveNeighborsNotCounters) {
  SwitchState state(Dialect::kOpenConfig);
  for (const char* port : {"Ethernet8", "Ethernet9"}) {
    for (const char* id : {"1", "2"}) {
      state.Apply(JsonNotification(
                      "",
                      absl::StrCat("/lldp/interfaces/interface[name=", port,
                                   "]/neighbors/neighbor[id=", id, "]/state"),
                      absl::StrCat(R"({"system-name":"h)", id,
                                   R"(","chassis-id":"02:00:00:00:00:0)", id,
                                   R"(","port-id":"eth0"})")),
                  "", kSecond);
    }
  }
  state.Apply(
      testing::UintNotification(
          "/interfaces/interface[name=Ethernet8]/state/counters/in-octets", 5),
      "", kSecond);
  state.SyncLldp();
  EXPECT_EQ(BuildState(&state).snap.lldp->set.neighbors.size(), 4u);
  const uint64_t version = BuildState(&state).snap.lldp->set.version;

  // One neighbor goes.
  state.Apply(Delete("",
                     "/lldp/interfaces/interface[name=Ethernet8]/"
                     "neighbors/neighbor[id=1]"),
              "", kSecond);
  Built b = BuildState(&state);
  EXPECT_EQ(b.snap.lldp->set.neighbors.size(), 3u);
  EXPECT_GT(b.snap.lldp->set.version, version);
  // The port's counters stay.
  EXPECT_EQ(b.snap.samples.size(), 1u);
  // A neighbor's capabilities going leaves the neighbor.
  state.Apply(Delete("",
                     "/lldp/interfaces/interface[name=Ethernet8]/"
                     "neighbors/neighbor[id=2]/capabilities"),
              "", kSecond);
  EXPECT_EQ(BuildState(&state).snap.lldp->set.neighbors.size(), 3u);
  // A whole interface.
  state.Apply(Delete("", "/lldp/interfaces/interface[name=Ethernet9]"), "",
              kSecond);
  b = BuildState(&state);
  ASSERT_EQ(b.snap.lldp->set.neighbors.size(), 1u);
  EXPECT_EQ(b.snap.lldp->set.neighbors[0].netdev, "Ethernet8");
  EXPECT_EQ(b.snap.samples.size(), 1u);
}

TEST(SwitchStateLldpTest, SonicDeleteOfAPortsHashRemovesItsNeighbor) {
  SwitchState state(Dialect::kSonic);
  ApplySonicTable(&state, "sonic_appl_db_lldp_entry_table.json");
  state.SyncLldp();
  ASSERT_EQ(BuildState(&state).snap.lldp->set.neighbors.size(), 2u);
  state.Apply(Delete("APPL_DB", "/LLDP_ENTRY_TABLE/Ethernet0"), "APPL_DB",
              kSecond);
  const Built b = BuildState(&state);
  ASSERT_EQ(b.snap.lldp->set.neighbors.size(), 1u);
  EXPECT_EQ(b.snap.lldp->set.neighbors[0].netdev, "Ethernet4");
}

TEST(SwitchStateLldpTest, VersionMovesOnlyWhenTheNeighborsDo) {
  SwitchState state(Dialect::kSonic);
  ApplySonicTable(&state, "sonic_appl_db_lldp_entry_table.json");
  state.SyncLldp();
  const Built first = BuildState(&state);
  // The same values again (a resync), and a field the bridge does not keep.
  ApplySonicTable(&state, "sonic_appl_db_lldp_entry_table.json");
  const Built same = BuildState(&state);
  EXPECT_EQ(same.snap.lldp->set.version, first.snap.lldp->set.version);
  EXPECT_EQ(same.snap.lldp, first.snap.lldp);  // not even rebuilt
  // The cable moved: Ethernet0 now hears another port.
  state.Apply(JsonNotification("APPL_DB", "/LLDP_ENTRY_TABLE/Ethernet0",
                               R"({"lldp_rem_port_id":"Ethernet9"})"),
              "APPL_DB", kSecond);
  const Built moved = BuildState(&state);
  EXPECT_EQ(moved.snap.lldp->set.version, first.snap.lldp->set.version + 1);
  EXPECT_EQ(moved.snap.lldp->set.neighbors[0].port_id, "Ethernet9");
}

TEST(SwitchStateLldpTest, RestartedStreamStartsEmptyAndIsNotUpUntilSynced) {
  SwitchState state(Dialect::kSonic);
  ApplySonicTable(&state, "sonic_appl_db_lldp_entry_table.json");
  state.SyncLldp();
  ASSERT_TRUE(BuildState(&state).snap.lldp->up);
  state.EndLldp();
  Built b = BuildState(&state);
  EXPECT_FALSE(b.snap.lldp->up);
  state.StartLldp();
  b = BuildState(&state);
  EXPECT_FALSE(b.snap.lldp->up);
  EXPECT_THAT(b.snap.lldp->set.neighbors, IsEmpty());
  state.SyncLldp();  // a switch that now hears nobody
  b = BuildState(&state);
  EXPECT_TRUE(b.snap.lldp->up);
  EXPECT_THAT(b.snap.lldp->set.neighbors, IsEmpty());
}

TEST(SwitchStateLldpTest, HostileValuesAreBoundedAndCounted) {
  SwitchState state(Dialect::kSonic);
  nlohmann::json hash = {
      {"lldp_rem_sys_name", std::string(70000, 'n')},
      {"lldp_rem_chassis_id", "00:11:22:33:44:55"},
      // A port id of type mac, upper case; no port description at all.
      {"lldp_rem_port_id", "0C:42:A1:00:00:01"},
      {"lldp_rem_port_id_subtype", "3"},
  };
  state.Apply(
      JsonNotification("APPL_DB", "/LLDP_ENTRY_TABLE/Ethernet0", hash.dump()),
      "APPL_DB", kSecond);
  // Missing fields: no port id, so held but not sent.
  state.Apply(JsonNotification("APPL_DB", "/LLDP_ENTRY_TABLE/Ethernet4",
                               R"({"lldp_rem_sys_name":"half"})"),
              "APPL_DB", kSecond);
  // Not a hash at all, and a number where text belongs.
  state.Apply(JsonNotification("APPL_DB", "/LLDP_ENTRY_TABLE/Ethernet8",
                               R"({"lldp_rem_port_id": 17,
                                   "lldp_rem_chassis_id": [1, 2]})"),
              "APPL_DB", kSecond);
  state.SyncLldp();
  const Built b = BuildState(&state);
  ASSERT_EQ(b.snap.lldp->set.neighbors.size(), 1u);
  const LldpNeighbor& n = b.snap.lldp->set.neighbors[0];
  EXPECT_EQ(n.system_name.size(), 255u);
  EXPECT_EQ(n.port_id, "0c:42:a1:00:00:01");
  EXPECT_EQ(n.port_id_type, "mac");
  EXPECT_EQ(n.port_description, "");
  EXPECT_EQ(state.lldp_incomplete(), 2u);
  EXPECT_EQ(b.snap.lldp->issues.missing_field, 2u);
  EXPECT_EQ(state.ErrorCounts().at("lldp_truncated"), 1u);
}

TEST(SwitchStateLldpTest, TooManyNeighborsAreCappedAndCounted) {
  SwitchState state(Dialect::kOpenConfig);
  // One notification with 5,000 neighbors on one port.
  nlohmann::json list = nlohmann::json::array();
  for (int i = 0; i < 5000; ++i) {
    list.push_back({{"id", std::to_string(i)},
                    {"state",
                     {{"chassis-id", absl::StrCat("c", i)},
                      {"port-id", "eth0"},
                      {"system-name", "h"}}}});
  }
  state.Apply(JsonNotification("",
                               "/lldp/interfaces/interface[name=Ethernet0]/"
                               "neighbors",
                               nlohmann::json{{"neighbor", list}}.dump()),
              "", kSecond);
  state.SyncLldp();
  const Built b = BuildState(&state);
  EXPECT_EQ(b.snap.lldp->set.neighbors.size(), LldpTable::kMaxNeighbors);
  EXPECT_EQ(state.ErrorCounts().at("lldp_too_many"),
            5000 - LldpTable::kMaxNeighbors);
}

}  // namespace
}  // namespace fabricdiag::gnmi
