// The LLDP parser on real lldpcli output and hostile text, the file
// reader's re-read on change, the lldpd reader through a fake lldpctl seam,
// the monitor's cadence, and the neighbors on /metrics and in the JSON.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/agent_app.h"
#include "agent/exposition.h"
#include "agent/lldp_parse.h"
#include "agent/lldp_source.h"
#include "agent/snapshot_json.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

std::string Fixture(const std::string& name) {
  const char* env = std::getenv("FABRICDIAG_FIXTURES");
  const std::string root =
      env != nullptr ? std::string(env)
                     : std::string(FABRICDIAG_SOURCE_DIR) + "/tests/fixtures";
  std::ifstream in(root + "/lldp/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open fixture lldp/" << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

LldpNeighbor Neighbor(std::string netdev, std::string system,
                      std::string port) {
  LldpNeighbor n;
  n.netdev = std::move(netdev);
  n.system_name = std::move(system);
  n.chassis_id = "12:27:29:d0:18:68";
  n.chassis_id_type = "mac";
  n.port_id = std::move(port);
  n.port_id_type = "ifname";
  n.port_description = n.port_id;
  return n;
}

// --- parser on real captures ---------------------------------------------

struct FixtureCase {
  const char* name;
  const char* file;
  std::vector<std::vector<std::string>> want;  // netdev, system, port, type
};

class LldpFixtureTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(LldpFixtureTest, ParsesEveryNeighbor) {
  absl::StatusOr<LldpParsed> parsed =
      ParseLldpcliJson(Fixture(GetParam().file));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::vector<std::vector<std::string>> got;
  for (const LldpNeighbor& n : parsed->neighbors) {
    got.push_back({n.netdev, n.system_name, n.port_id, n.port_id_type});
    EXPECT_FALSE(n.chassis_id.empty());
    EXPECT_EQ(n.chassis_id_type, "mac");
    EXPECT_FALSE(n.management_address.empty());
  }
  EXPECT_EQ(got, GetParam().want);
  EXPECT_EQ(parsed->issues.missing_field, 0u);
  EXPECT_EQ(parsed->issues.truncated, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    RealCaptures, LldpFixtureTest,
    ::testing::Values(
        // One neighbor: "interface" is an object.
        FixtureCase{"HostOneNeighbor",
                    "host-one-neighbor.json",
                    {{"eth0", "leaf01", "swp1", "ifname"}}},
        // Several: a list of one-interface objects.
        FixtureCase{"HostTwoNeighbors",
                    "host-two-neighbors.json",
                    {{"eth0", "leaf01", "swp1", "ifname"},
                     {"eth1", "leaf01", "swp3", "ifname"}}},
        // A switch's view: the hosts' port ids are MAC addresses.
        FixtureCase{"SwitchFourNeighbors",
                    "switch-four-neighbors.json",
                    {{"swp1", "h1", "4e:5c:fa:d2:fe:5d", "mac"},
                     {"swp2", "h2", "ea:d9:ff:f1:a9:ff", "mac"},
                     {"swp3", "h1", "16:8a:28:40:36:aa", "mac"},
                     {"swp4", "h2", "66:af:02:21:56:74", "mac"}}}),
    [](const ::testing::TestParamInfo<FixtureCase>& param_info) {
      return std::string(param_info.param.name);
    });

TEST(LldpParseTest, RealOutputWithoutNeighbors) {
  absl::StatusOr<LldpParsed> parsed =
      ParseLldpcliJson(Fixture("no-neighbors.json"));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(parsed->neighbors, IsEmpty());
}

TEST(LldpParseTest, RealSwitchViewOfAHostWithIfnameAndAddress) {
  absl::StatusOr<LldpParsed> parsed =
      ParseLldpcliJson(Fixture("switch-one-neighbor-ifname-mgmt.json"));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_THAT(parsed->neighbors, SizeIs(1));
  const LldpNeighbor& n = parsed->neighbors[0];
  EXPECT_EQ(n.netdev, "swp1");
  EXPECT_EQ(n.system_name, "host-0");
  EXPECT_EQ(n.chassis_id, "76:80:88:fe:85:5d");
  EXPECT_EQ(n.port_id, "eth0");
  EXPECT_EQ(n.port_id_type, "ifname");
  EXPECT_EQ(n.management_address, "10.250.0.2");
}

TEST(LldpParseTest, KeepsDescriptionAndAddress) {
  absl::StatusOr<LldpParsed> parsed =
      ParseLldpcliJson(Fixture("host-one-neighbor.json"));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_THAT(parsed->neighbors, SizeIs(1));
  const LldpNeighbor& n = parsed->neighbors[0];
  EXPECT_EQ(n.chassis_id, "ba:c6:a6:b7:dc:df");
  EXPECT_EQ(n.port_description, "swp1");
  EXPECT_EQ(n.management_address, "fe80::b8c6:a6ff:feb7:dcdf");
}

// --- hostile input --------------------------------------------------------

TEST(LldpParseTest, RejectsWhatIsNotLldpcliJson) {
  for (const char* text : {"", "garbage", "{\"lldp\": ", "[1, 2]", "{}",
                           "{\"other\": {}}", "{\"lldp\": 3}", "\"lldp\""}) {
    absl::StatusOr<LldpParsed> parsed = ParseLldpcliJson(text);
    EXPECT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(LldpParseTest, NoNeighborsIsEmpty) {
  for (const char* text : {"{\"lldp\": {}}", "{\"lldp\": []}",
                           "{\"lldp\": null}", "{\"lldp\": {\"x\": 1}}"}) {
    absl::StatusOr<LldpParsed> parsed = ParseLldpcliJson(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    EXPECT_THAT(parsed->neighbors, IsEmpty());
  }
}

TEST(LldpParseTest, DropsEntriesWithoutChassisOrPortId) {
  const char* text = R"({"lldp": {"interface": [
    {"eth0": {"chassis": {"leaf": {"descr": "no id"}},
              "port": {"id": {"type": "ifname", "value": "swp1"}}}},
    {"eth1": {"chassis": {"leaf": {"id": {"type": "mac", "value": "aa"}}},
              "port": {"descr": "no id"}}},
    {"eth2": "not an object"},
    7,
    {"eth3": {"chassis": {"leaf": {"id": {"type": "mac", "value": "aa"}}},
              "port": {"id": {"type": "ifname", "value": "swp3"}}}}]}})";
  absl::StatusOr<LldpParsed> parsed = ParseLldpcliJson(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_THAT(parsed->neighbors, SizeIs(1));
  EXPECT_EQ(parsed->neighbors[0].netdev, "eth3");
  EXPECT_EQ(parsed->issues.missing_field, 4u);
  EXPECT_THAT(parsed->issues.last, HasSubstr("\"interface\" entry"));
}

TEST(LldpParseTest, ChassisWithoutSystemNameAndSeveralAddresses) {
  const char* text = R"({"lldp": {"interface": {"eth0": {
      "chassis": {"id": {"type": "local", "value": "c1"},
                  "mgmt-ip": ["10.250.0.1", "fe80::1"]},
      "port": {"id": {"type": "local", "value": "Ethernet4"}}}}}})";
  absl::StatusOr<LldpParsed> parsed = ParseLldpcliJson(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_THAT(parsed->neighbors, SizeIs(1));
  const LldpNeighbor& n = parsed->neighbors[0];
  EXPECT_EQ(n.system_name, "");
  EXPECT_EQ(n.chassis_id, "c1");
  EXPECT_EQ(n.chassis_id_type, "local");
  EXPECT_EQ(n.port_id, "Ethernet4");
  EXPECT_EQ(n.port_id_type, "local");
  EXPECT_EQ(n.management_address, "10.250.0.1");
}

TEST(LldpParseTest, CutsHugeNamesAndDropsImpossibleNetdevs) {
  const std::string huge(100000, 'x');
  const std::string text = absl::StrCat(
      R"({"lldp": {"interface": [{"eth0": {"chassis": {")", huge,
      R"(": {"id": {"type": "mac", "value": "aa"}}}, "port": {"id": )",
      R"({"type": "ifname", "value": ")", huge, R"("}, "descr": "é)", huge,
      R"("}}}, {")", huge, R"(": {"chassis": {"s": {"id": )",
      R"({"type": "mac", "value": "aa"}}}, "port": {"id": {"type": "ifname",)",
      R"( "value": "p"}}}}, {"a/b": {"chassis": {"s": {"id": )",
      R"({"type": "mac", "value": "aa"}}}, "port": {"id": {"type": "ifname",)",
      R"( "value": "p"}}}}]}})");
  absl::StatusOr<LldpParsed> parsed = ParseLldpcliJson(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_THAT(parsed->neighbors, SizeIs(1));
  const LldpNeighbor& n = parsed->neighbors[0];
  EXPECT_EQ(n.system_name.size(), kLldpMaxFieldBytes);
  EXPECT_EQ(n.port_id.size(), kLldpMaxFieldBytes);
  // Not cut inside the two-byte "é": 1 + 2 + 252 'x' would be 255, so the
  // cut falls on a character boundary.
  EXPECT_LE(n.port_description.size(), kLldpMaxFieldBytes);
  EXPECT_EQ(n.port_description.rfind("\xc3\xa9", 0), 0u);
  EXPECT_EQ(parsed->issues.truncated, 3u);
  EXPECT_EQ(parsed->issues.invalid_netdev, 2u);
  EXPECT_LT(parsed->issues.last.size(), 200u);
}

TEST(LldpParseTest, CapsTheNumberOfNeighbors) {
  std::string text = R"({"lldp": {"interface": [)";
  for (size_t i = 0; i < kLldpMaxNeighbors + 10; ++i) {
    absl::StrAppend(&text, i == 0 ? "" : ",", R"({"e)", i,
                    R"(": {"chassis": {"s": {"id": {"type": "mac", )",
                    R"("value": "aa"}}}, "port": {"id": {"type": "ifname", )",
                    R"("value": "p"}}}})");
  }
  text += "]}}";
  absl::StatusOr<LldpParsed> parsed = ParseLldpcliJson(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(parsed->neighbors, SizeIs(kLldpMaxNeighbors));
  EXPECT_EQ(parsed->issues.too_many, 10u);
}

TEST(LldpParseTest, RefusesHugeText) {
  const std::string text(kLldpMaxTextBytes + 1, ' ');
  EXPECT_EQ(ParseLldpcliJson(text).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// --- the file reader ------------------------------------------------------

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

TEST(LldpFileReaderTest, RereadsOnlyWhenTheFileChanges) {
  fabricdiag::testing::TempDir dir;
  const std::string path = dir.path() + "/lldp.json";
  WriteFile(path, Fixture("host-one-neighbor.json"));
  LldpFileReader reader(path);
  absl::StatusOr<std::optional<LldpParsed>> first = reader.Read();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->has_value());
  EXPECT_THAT((*first)->neighbors, SizeIs(1));

  absl::StatusOr<std::optional<LldpParsed>> same = reader.Read();
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->has_value()) << "unchanged file read again";

  // Another size: read again.
  WriteFile(path, Fixture("host-two-neighbors.json"));
  absl::StatusOr<std::optional<LldpParsed>> second = reader.Read();
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(second->has_value());
  EXPECT_THAT((*second)->neighbors, SizeIs(2));

  // Garbage: an error once, not again until the file changes.
  WriteFile(path, "{\"lldp\": [ truncated");
  absl::StatusOr<std::optional<LldpParsed>> bad = reader.Read();
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr(path));
  ASSERT_TRUE(reader.Read().ok());

  ASSERT_EQ(::unlink(path.c_str()), 0);
  EXPECT_EQ(reader.Read().status().code(), absl::StatusCode::kNotFound);
}

// --- the lldpd reader through the seam -----------------------------------

class FakeLldpctl final : public LldpctlApi {
 public:
  absl::StatusOr<std::vector<LldpNeighbor>> Neighbors() override {
    ++calls;
    return answer;
  }
  absl::StatusOr<std::vector<LldpNeighbor>> answer;
  int calls = 0;
};

std::vector<NetdevInfo> Netdevs(std::vector<std::string> names) {
  std::vector<NetdevInfo> out;
  out.reserve(names.size());
  for (std::string& n : names) out.push_back({std::move(n), "up", "", 0, 0});
  return out;
}

TEST(LldpMonitorTest, AsksLldpdOncePerPeriodAndKeepsKnownNetdevs) {
  auto fake = std::make_unique<FakeLldpctl>();
  FakeLldpctl* api = fake.get();
  LldpNeighbor stranger = Neighbor("docker0", "leaf-0", "swp9");
  api->answer =
      std::vector<LldpNeighbor>{Neighbor("eth1", "leaf-0", "swp3"),
                                Neighbor("eth0", "leaf-0", "swp1"), stranger};
  FakeClock clock;
  LldpMonitor monitor(std::make_unique<LldpdReader>(std::move(fake)),
                      absl::Seconds(10), clock);
  const std::vector<NetdevInfo> netdevs = Netdevs({"eth0", "eth1"});

  std::shared_ptr<const LldpState> s = monitor.Update(netdevs);
  EXPECT_EQ(api->calls, 1);
  EXPECT_EQ(s->source, "lldpd");
  EXPECT_TRUE(s->up);
  EXPECT_THAT(s->set.neighbors,
              ElementsAre(Neighbor("eth0", "leaf-0", "swp1"),
                          Neighbor("eth1", "leaf-0", "swp3")));
  EXPECT_EQ(s->issues.unknown_netdev, 1u);
  const uint64_t version = s->set.version;

  // Ticks within the period cost nothing and count nothing again.
  for (int i = 0; i < 9; ++i) {
    clock.Advance(absl::Seconds(1));
    s = monitor.Update(netdevs);
  }
  EXPECT_EQ(api->calls, 1);
  EXPECT_EQ(s->issues.unknown_netdev, 1u);
  EXPECT_EQ(s->set.version, version);

  // The same answer: asked again, same version.
  clock.Advance(absl::Seconds(1));
  s = monitor.Update(netdevs);
  EXPECT_EQ(api->calls, 2);
  EXPECT_EQ(s->set.version, version);
  EXPECT_EQ(s->reads_ok, 2u);

  // The cable moved: a new version.
  api->answer = std::vector<LldpNeighbor>{Neighbor("eth0", "leaf-0", "swp1"),
                                          Neighbor("eth1", "leaf-0", "swp2")};
  clock.Advance(absl::Seconds(10));
  s = monitor.Update(netdevs);
  EXPECT_EQ(s->set.version, version + 1);
  EXPECT_EQ(s->set.neighbors[1].port_id, "swp2");
}

TEST(LldpMonitorTest, AbsentLldpdMeansNoNeighborsNotAnError) {
  auto fake = std::make_unique<FakeLldpctl>();
  FakeLldpctl* api = fake.get();
  api->answer = std::vector<LldpNeighbor>{Neighbor("eth0", "leaf-0", "swp1")};
  FakeClock clock;
  LldpMonitor monitor(std::make_unique<LldpdReader>(std::move(fake)),
                      absl::Seconds(10), clock);
  const std::vector<NetdevInfo> netdevs = Netdevs({"eth0"});
  EXPECT_THAT(monitor.Update(netdevs)->set.neighbors, SizeIs(1));

  api->answer = absl::UnavailableError("/run/lldpd.socket: cannot connect");
  clock.Advance(absl::Seconds(10));
  std::shared_ptr<const LldpState> s = monitor.Update(netdevs);
  EXPECT_THAT(s->set.neighbors, IsEmpty());
  EXPECT_FALSE(s->up);
  EXPECT_EQ(s->reads_unavailable, 1u);
  EXPECT_EQ(s->reads_failed, 0u);
  EXPECT_EQ(s->last_error, "");

  // lldpd broken (not absent): an error, the last neighbors stay.
  api->answer = std::vector<LldpNeighbor>{Neighbor("eth0", "leaf-0", "swp1")};
  clock.Advance(absl::Seconds(10));
  EXPECT_THAT(monitor.Update(netdevs)->set.neighbors, SizeIs(1));
  api->answer = absl::InternalError("lldpd: protocol error");
  clock.Advance(absl::Seconds(10));
  s = monitor.Update(netdevs);
  EXPECT_THAT(s->set.neighbors, SizeIs(1));
  EXPECT_EQ(s->reads_failed, 1u);
  EXPECT_THAT(s->last_error, HasSubstr("protocol error"));
}

TEST(LldpMonitorTest, HostileLldpdAnswerIsSanitized) {
  auto fake = std::make_unique<FakeLldpctl>();
  FakeLldpctl* api = fake.get();
  LldpNeighbor huge = Neighbor("eth0", std::string(5000, 'n'), "swp1");
  LldpNeighbor no_port = Neighbor("eth1", "leaf-0", "");
  LldpNeighbor mac = Neighbor("eth2", "h1", "4e:5c:fa:d2:fe:5d");
  mac.port_id_type = "mac";
  api->answer = std::vector<LldpNeighbor>{huge, no_port, mac};
  FakeClock clock;
  LldpMonitor monitor(std::make_unique<LldpdReader>(std::move(fake)),
                      absl::Seconds(10), clock);
  std::shared_ptr<const LldpState> s =
      monitor.Update(Netdevs({"eth0", "eth1", "eth2"}));
  ASSERT_THAT(s->set.neighbors, SizeIs(2));
  EXPECT_EQ(s->set.neighbors[0].system_name.size(), kLldpMaxFieldBytes);
  EXPECT_EQ(s->set.neighbors[1].port_id_type, "mac");
  EXPECT_EQ(s->issues.truncated, 1u);
  EXPECT_EQ(s->issues.missing_field, 1u);
}

TEST(LldpMonitorTest, FileChangesAreFollowed) {
  fabricdiag::testing::TempDir dir;
  const std::string path = dir.path() + "/lldp.json";
  WriteFile(path, Fixture("host-two-neighbors.json"));
  FakeClock clock;
  LldpMonitor monitor(std::make_unique<LldpFileReader>(path), absl::Seconds(1),
                      clock);
  const std::vector<NetdevInfo> netdevs = Netdevs({"eth0", "eth1"});
  std::shared_ptr<const LldpState> s = monitor.Update(netdevs);
  EXPECT_EQ(s->source, "file");
  ASSERT_THAT(s->set.neighbors, SizeIs(2));

  // A torn write: the error is counted, the neighbors stay.
  WriteFile(path, "{\"lldp\": {\"interface\": [");
  clock.Advance(absl::Seconds(1));
  s = monitor.Update(netdevs);
  EXPECT_EQ(s->reads_failed, 1u);
  EXPECT_FALSE(s->up);
  EXPECT_THAT(s->set.neighbors, SizeIs(2));

  WriteFile(path, Fixture("host-one-neighbor.json"));
  clock.Advance(absl::Seconds(1));
  s = monitor.Update(netdevs);
  EXPECT_TRUE(s->up);
  ASSERT_THAT(s->set.neighbors, SizeIs(1));
  EXPECT_EQ(s->reads_ok, 2u);
}

TEST(LldpMonitorTest, MissingOrHugeFileIsAnErrorNotACrash) {
  fabricdiag::testing::TempDir dir;
  const std::string path = dir.path() + "/lldp.json";
  WriteFile(path, Fixture("host-one-neighbor.json"));
  FakeClock clock;
  LldpMonitor monitor(std::make_unique<LldpFileReader>(path), absl::Seconds(1),
                      clock);
  const std::vector<NetdevInfo> netdevs = Netdevs({"eth0"});
  ASSERT_THAT(monitor.Update(netdevs)->set.neighbors, SizeIs(1));

  // Removed: no neighbors, an error naming the file.
  ASSERT_EQ(::unlink(path.c_str()), 0);
  clock.Advance(absl::Seconds(1));
  std::shared_ptr<const LldpState> s = monitor.Update(netdevs);
  EXPECT_THAT(s->set.neighbors, IsEmpty());
  EXPECT_EQ(s->reads_failed, 1u);
  EXPECT_THAT(s->last_error, HasSubstr(path));

  // Larger than any lldpcli output (sparse, so the test stays cheap).
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kLldpMaxTextBytes) + 1), 0);
  ::close(fd);
  clock.Advance(absl::Seconds(1));
  s = monitor.Update(netdevs);
  EXPECT_EQ(s->reads_failed, 2u);
  EXPECT_THAT(s->last_error, HasSubstr("bytes, more than"));

  // A directory where the file should be.
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  clock.Advance(absl::Seconds(1));
  s = monitor.Update(netdevs);
  EXPECT_EQ(s->reads_failed, 3u);
  EXPECT_THAT(s->last_error, HasSubstr("not a regular file"));
  EXPECT_FALSE(s->up);
}

// --- /metrics and JSON ----------------------------------------------------

std::shared_ptr<const LldpState> StateOf(std::vector<LldpNeighbor> n) {
  auto s = std::make_shared<LldpState>();
  s->source = "lldpd";
  s->up = true;
  s->reads_ok = 3;
  s->issues.unknown_netdev = 2;
  s->set.neighbors = std::move(n);
  s->set.version = 1;
  return s;
}

TEST(LldpExpositionTest, NeighborInfoPerNetdev) {
  Snapshot snap;
  LldpNeighbor odd = Neighbor("eth1", "le\"af\n", "swp2");
  snap.lldp = StateOf({Neighbor("eth0", "leaf-0", "swp1"), odd});
  ExpositionRenderer renderer;
  std::string text;
  renderer.Render(snap, AgentHealth{}, &text);
  EXPECT_THAT(text, HasSubstr("# TYPE fabricdiag_lldp_neighbor_info gauge\n"));
  EXPECT_THAT(text,
              HasSubstr("fabricdiag_lldp_neighbor_info{netdev=\"eth0\","
                        "chassis=\"12:27:29:d0:18:68\",port=\"swp1\","
                        "system_name=\"leaf-0\",port_description=\"swp1\","
                        "port_id_type=\"ifname\",chassis_id_type=\"mac\","
                        "management_address=\"\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("system_name=\"le\\\"af\\n\""));
  EXPECT_THAT(text, HasSubstr("fabricdiag_lldp_neighbors{source=\"lldpd\"} 2"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_lldp_reads_total{source=\"lldpd\","
                              "result=\"ok\"} 3"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_lldp_neighbors_dropped_total{source="
                              "\"lldpd\",reason=\"unknown_netdev\"} 2"));

  // The neighbor moved: the prepared text follows.
  snap.lldp = StateOf({Neighbor("eth0", "leaf-0", "swp3")});
  renderer.Render(snap, AgentHealth{}, &text);
  EXPECT_THAT(text, HasSubstr("port=\"swp3\""));
  EXPECT_THAT(text, Not(HasSubstr("port=\"swp1\"")));

  // No LLDP state: no LLDP families.
  snap.lldp = nullptr;
  renderer.Render(snap, AgentHealth{}, &text);
  EXPECT_THAT(text, Not(HasSubstr("fabricdiag_lldp")));
}

TEST(LldpJsonTest, NeighborsInTheSnapshotJson) {
  Snapshot snap;
  snap.lldp = StateOf({Neighbor("eth0", "leaf-0", "swp1")});
  const nlohmann::json j = nlohmann::json::parse(SnapshotToJson(snap, "h1"));
  ASSERT_TRUE(j.contains("lldp"));
  EXPECT_EQ(j["lldp"]["source"], "lldpd");
  EXPECT_EQ(j["lldp"]["up"], true);
  ASSERT_EQ(j["lldp"]["neighbors"].size(), 1u);
  EXPECT_EQ(j["lldp"]["neighbors"][0]["system_name"], "leaf-0");
  EXPECT_EQ(j["lldp"]["neighbors"][0]["port_id"], "swp1");
  EXPECT_EQ(j["lldp"]["neighbors"][0]["port_id_type"], "ifname");
}

TEST(LldpFlagsTest, IntervalOutOfRangeNamesTheFlag) {
  AgentConfig config;
  config.node = "h1";
  config.sysfs_root = "/";
  config.once = true;
  ASSERT_TRUE(ValidateAgentConfig(config).ok());
  for (absl::Duration d : {absl::Milliseconds(100), absl::Hours(2)}) {
    config.lldp_interval = d;
    absl::Status s = ValidateAgentConfig(config);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("--lldp_interval="));
  }
}

}  // namespace
}  // namespace fabricdiag::agent
