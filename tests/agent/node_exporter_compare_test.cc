// Black-box equality with Debian's prometheus-node-exporter: the real
// fabricdiag-agent binary and node_exporter (infiniband collector only) read
// the same sysfs tree, and the RDMA byte and packet counters they export
// must be equal, series for series.
//
// docs/metrics.md promises that fabricdiag_rdma_port_{transmitted,received}_
// bytes_total are "the same values node_exporter exports as
// node_infiniband_port_data_{transmitted,received}_bytes_total"; users who
// move dashboards from one to the other rely on it. Trees: the procfs
// fixture (tests/fixtures/sysfs: mlx5_0, mlx4_0 with two ports, hfi1_0) and
// an 8-NIC RoCE node from BuildRoceNode(). Also checks the `--once` JSON
// against the same numbers, and the small parsers the comparison uses.
//
// Skipped (with a message) when /usr/bin/prometheus-node-exporter is not
// installed (Debian package prometheus-node-exporter).
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/exposition_text.h"
#include "tests/testing/fake_sysfs.h"
#include "tests/testing/http_get.h"
#include "tests/testing/proc_stat.h"
#include "tests/testing/subprocess.h"

namespace fabricdiag::agent {
namespace {

using ::fabricdiag::testing::ExpositionSample;
using ::fabricdiag::testing::ParseExpositionText;
using ::fabricdiag::testing::ParseProcStatCpu;
using ::fabricdiag::testing::ParseProcStatusMemory;
using ::fabricdiag::testing::PickFreeTcpPort;
using ::fabricdiag::testing::ProcessCpu;
using ::fabricdiag::testing::ProcessMemory;
using ::fabricdiag::testing::RunCommand;
using ::fabricdiag::testing::RunResult;
using ::fabricdiag::testing::Subprocess;
using ::fabricdiag::testing::WaitForHttpBody;
using ::testing::ElementsAre;
using ::testing::Pair;

constexpr char kNodeExporter[] = "/usr/bin/prometheus-node-exporter";
constexpr char kAgent[] = FABRICDIAG_AGENT_BINARY;
constexpr absl::Duration kStartupTimeout = absl::Seconds(30);

// Our family -> node_exporter's family for the same kernel counter.
struct FamilyPair {
  const char* ours;
  const char* theirs;
};
constexpr FamilyPair kFamilies[] = {
    {"fabricdiag_rdma_port_transmitted_bytes_total",
     "node_infiniband_port_data_transmitted_bytes_total"},
    {"fabricdiag_rdma_port_received_bytes_total",
     "node_infiniband_port_data_received_bytes_total"},
    {"fabricdiag_rdma_port_transmitted_packets_total",
     "node_infiniband_port_packets_transmitted_total"},
    {"fabricdiag_rdma_port_received_packets_total",
     "node_infiniband_port_packets_received_total"},
};

// (device, port) -> value of one family.
using Series = std::map<std::pair<std::string, std::string>, double>;

Series Select(const std::vector<ExpositionSample>& samples,
              absl::string_view family) {
  Series out;
  for (const ExpositionSample& s : samples) {
    if (s.name != family) continue;
    auto device = s.labels.find("device");
    auto port = s.labels.find("port");
    if (device == s.labels.end() || port == s.labels.end()) {
      ADD_FAILURE() << family << " without device/port labels";
      continue;
    }
    EXPECT_TRUE(
        out.emplace(std::make_pair(device->second, port->second), s.value)
            .second)
        << family << " has a duplicate series for " << device->second << "/"
        << port->second;
  }
  return out;
}

// True once the agent has published a snapshot that every source read
// without error. (A transient error, e.g. openat2's EAGAIN when a rename
// elsewhere races with the path walk, would drop a series from that one
// snapshot; the comparison is about values, so it waits for a clean one.)
bool HasCleanSnapshot(absl::string_view body) {
  absl::StatusOr<std::vector<ExpositionSample>> samples =
      ParseExpositionText(body);
  if (!samples.ok()) return false;
  bool snapshot = false;
  for (const ExpositionSample& s : *samples) {
    if (s.name == "fabricdiag_agent_snapshots_total" && s.value >= 1) {
      snapshot = true;
    }
    if (s.name == "fabricdiag_agent_source_errors" && s.value != 0) {
      return false;
    }
  }
  return snapshot;
}

class NodeExporterCompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kNodeExporter, X_OK) != 0) {
      GTEST_SKIP() << kNodeExporter
                   << " is not installed (apt-get install "
                      "prometheus-node-exporter); nothing to compare with";
    }
  }

  // Starts a server, waits until `ready` accepts its /metrics, returns the
  // parsed body. The process stays owned by the fixture (killed on every
  // exit path by Subprocess's destructor).
  absl::StatusOr<std::vector<ExpositionSample>> StartAndScrape(
      const std::string& what, std::vector<std::string> argv_without_listen,
      absl::string_view listen_flag,
      const std::function<bool(absl::string_view)>& ready) {
    absl::StatusOr<int> port = PickFreeTcpPort();
    if (!port.ok()) return port.status();
    argv_without_listen.push_back(
        absl::StrCat(listen_flag, "127.0.0.1:", *port));
    auto child = std::make_unique<Subprocess>(std::move(argv_without_listen));
    if (absl::Status started = child->Start(); !started.ok()) return started;
    Subprocess* raw = child.get();
    children_.push_back(std::move(child));
    absl::StatusOr<std::string> body =
        WaitForHttpBody(*port, "/metrics", kStartupTimeout, ready,
                        [raw] { return raw->Running(); });
    if (!body.ok()) {
      return absl::Status(body.status().code(),
                          absl::StrCat(what, ": ", body.status().message(),
                                       "\n--- log ---\n", raw->Stderr()));
    }
    return ParseExpositionText(*body);
  }

  absl::StatusOr<std::vector<ExpositionSample>> ScrapeNodeExporter(
      const std::string& sysfs_root) {
    return StartAndScrape(
        "node_exporter",
        {kNodeExporter, "--path.sysfs=" + sysfs_root,
         "--collector.disable-defaults", "--collector.infiniband"},
        "--web.listen-address=", [](absl::string_view body) {
          return absl::StrContains(body, "node_infiniband_");
        });
  }

  // An empty ethtool dir keeps the agent off the host's real netdevs.
  std::vector<std::string> AgentArgs(const std::string& sysfs_root) {
    const std::string ethtool_dir = tmp_.path() + "/ethtool-empty";
    mkdir(ethtool_dir.c_str(), 0755);
    return {kAgent, "--node=compare-test", "--sysfs_root=" + sysfs_root,
            "--ethtool_dir=" + ethtool_dir, "--interval=200ms"};
  }

  absl::StatusOr<std::vector<ExpositionSample>> ScrapeAgent(
      const std::string& sysfs_root) {
    return StartAndScrape("agent", AgentArgs(sysfs_root),
                          "--listen=", HasCleanSnapshot);
  }

  // Runs `fabricdiag-agent --once` and parses its JSON. Retries (3 runs)
  // while a source reports an error, for the reason HasCleanSnapshot gives.
  absl::StatusOr<nlohmann::json> AgentOnce(const std::string& sysfs_root) {
    absl::StatusOr<nlohmann::json> last =
        absl::InternalError("--once never ran");
    for (int attempt = 0; attempt < 3; ++attempt) {
      last = AgentOnceAttempt(sysfs_root);
      if (!last.ok()) return last;
      bool clean = true;
      for (const nlohmann::json& src : (*last)["sources"]) {
        if (src.value("errors", 0) != 0) clean = false;
      }
      if (clean) return last;
    }
    return last;
  }

  absl::StatusOr<nlohmann::json> AgentOnceAttempt(
      const std::string& sysfs_root) {
    std::vector<std::string> argv = AgentArgs(sysfs_root);
    argv.push_back("--once");
    const RunResult run = RunCommand(std::move(argv), kStartupTimeout);
    if (run.exit_code != 0) {
      return absl::InternalError(
          absl::StrCat("--once exited with ", run.exit_code, ": ", run.err));
    }
    nlohmann::json parsed = nlohmann::json::parse(run.out, nullptr,
                                                  /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_object()) {
      return absl::InternalError("--once printed invalid JSON");
    }
    return parsed;
  }

  // Every family pair must hold exactly the same series with the same
  // values, and node_exporter must have `expected_ports` series of each.
  void ExpectSameCounters(const std::vector<ExpositionSample>& ours,
                          const std::vector<ExpositionSample>& theirs,
                          size_t expected_ports) {
    for (const FamilyPair& f : kFamilies) {
      SCOPED_TRACE(f.ours);
      const Series a = Select(ours, f.ours);
      const Series b = Select(theirs, f.theirs);
      EXPECT_EQ(b.size(), expected_ports) << f.theirs;
      EXPECT_EQ(a, b) << "fabricdiag and node_exporter disagree";
      for (const auto& [key, value] : b) {
        EXPECT_GT(value, 0) << key.first << "/" << key.second;
      }
    }
  }

  ScopedTempDir tmp_;
  std::vector<std::unique_ptr<Subprocess>> children_;
};

std::string FixtureSysfs() {
  return std::string(FABRICDIAG_SOURCE_DIR) + "/tests/fixtures/sysfs";
}

TEST_F(NodeExporterCompareTest, FixtureTreeCountersEqual) {
  absl::StatusOr<std::vector<ExpositionSample>> theirs =
      ScrapeNodeExporter(FixtureSysfs());
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  absl::StatusOr<std::vector<ExpositionSample>> ours =
      ScrapeAgent(FixtureSysfs());
  ASSERT_TRUE(ours.ok()) << ours.status();
  // mlx5_0/1, mlx4_0/1, mlx4_0/2, hfi1_0/1.
  ExpectSameCounters(*ours, *theirs, 4);
  // One value spelled out, so that a broken comparison cannot pass: the
  // fixture's mlx5_0 port_xmit_data is 2880761508848 words.
  EXPECT_EQ(Select(*ours, "fabricdiag_rdma_port_transmitted_bytes_total")
                .at({"mlx5_0", "1"}),
            2880761508848.0 * 4);
}

TEST_F(NodeExporterCompareTest, OnceJsonRawValuesMatchNodeExporter) {
  absl::StatusOr<std::vector<ExpositionSample>> theirs =
      ScrapeNodeExporter(FixtureSysfs());
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  absl::StatusOr<nlohmann::json> once = AgentOnce(FixtureSysfs());
  ASSERT_TRUE(once.ok()) << once.status();
  // JSON raw values are exact integers; node_exporter multiplies the words
  // by 4 in uint64 and prints a float64.
  const std::map<std::string, std::pair<const char*, uint64_t>> names = {
      {"port_xmit_data",
       {"node_infiniband_port_data_transmitted_bytes_total", 4}},
      {"port_rcv_data", {"node_infiniband_port_data_received_bytes_total", 4}},
      {"port_xmit_packets",
       {"node_infiniband_port_packets_transmitted_total", 1}},
      {"port_rcv_packets", {"node_infiniband_port_packets_received_total", 1}},
  };
  std::map<std::string, Series> from_json;
  ASSERT_TRUE((*once)["samples"].is_array());
  for (const nlohmann::json& s : (*once)["samples"]) {
    if (s.value("subsystem", "") != "rdma_port_counters") continue;
    auto it = names.find(s.value("name", ""));
    if (it == names.end()) continue;
    const uint64_t raw = s["raw"].get<uint64_t>();
    from_json[it->second.first][{s["device"].get<std::string>(),
                                 std::to_string(s["port"].get<uint32_t>())}] =
        static_cast<double>(raw * it->second.second);
  }
  for (const auto& [name, family] : names) {
    SCOPED_TRACE(name);
    const Series b = Select(*theirs, family.first);
    EXPECT_EQ(b.size(), 4u);
    EXPECT_EQ(from_json[family.first], b);
  }
}

TEST_F(NodeExporterCompareTest, RoceNodeCountersEqual) {
  const std::string root = tmp_.path() + "/sys";
  ASSERT_EQ(mkdir(root.c_str(), 0755), 0);
  absl::StatusOr<FakeRoceNode> node = BuildRoceNode(root, 8);
  ASSERT_TRUE(node.ok()) << node.status();
  absl::StatusOr<std::vector<ExpositionSample>> theirs =
      ScrapeNodeExporter(root);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  absl::StatusOr<std::vector<ExpositionSample>> ours = ScrapeAgent(root);
  ASSERT_TRUE(ours.ok()) << ours.status();
  ExpectSameCounters(*ours, *theirs, 8);
  // Distinct per NIC in BuildRoceNode: a device mix-up would show here.
  const Series tx =
      Select(*ours, "fabricdiag_rdma_port_transmitted_bytes_total");
  std::set<double> distinct;
  for (const auto& [key, value] : tx) distinct.insert(value);
  EXPECT_EQ(distinct.size(), 8u);
}

// Large values: above 2^53 a double cannot hold every integer, and both
// exporters must still print the same float (Go's shortest round-trip
// formatting against prometheus-cpp's). 2.3 days of a 400 Gb/s port at line
// rate is 1e16 bytes.
TEST_F(NodeExporterCompareTest, LargeCounterValuesEqual) {
  const std::string root = tmp_.path() + "/sys";
  ASSERT_EQ(mkdir(root.c_str(), 0755), 0);
  ASSERT_TRUE(BuildRoceNode(root, 2).ok());
  FakeSysfs fs(root);
  // x 4 = 9999999999999996 bytes, just below 1e16.
  ASSERT_TRUE(
      fs.SetPortCounter("mlx5_1", 1, "port_xmit_data", 2499999999999999ull)
          .ok());
  // Not exactly representable as a double.
  ASSERT_TRUE(
      fs.SetPortCounter("mlx5_0", 1, "port_rcv_packets", (1ull << 53) + 1)
          .ok());
  absl::StatusOr<std::vector<ExpositionSample>> theirs =
      ScrapeNodeExporter(root);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  absl::StatusOr<std::vector<ExpositionSample>> ours = ScrapeAgent(root);
  ASSERT_TRUE(ours.ok()) << ours.status();
  ExpectSameCounters(*ours, *theirs, 2);
  EXPECT_EQ(Select(*ours, "fabricdiag_rdma_port_transmitted_bytes_total")
                .at({"mlx5_1", "1"}),
            9999999999999996.0);
}

// From 1e16 on a double needs 17 significant digits to round-trip: the
// agent prints the shortest exact form, as node_exporter does (2^64 bytes as
// 1.8446744073709552e+19), not 16 digits (1.844674407370955e+19 = 2^64 -
// 2048 after parsing).
TEST_F(NodeExporterCompareTest, CountersAbove1e16KeepFullPrecision) {
  const std::string root = tmp_.path() + "/sys";
  ASSERT_EQ(mkdir(root.c_str(), 0755), 0);
  ASSERT_TRUE(BuildRoceNode(root, 2).ok());
  FakeSysfs fs(root);
  // (2^64 - 1) / 4: the largest word count whose byte count fits 64 bits.
  ASSERT_TRUE(
      fs.SetPortCounter("mlx5_1", 1, "port_xmit_data", 0x3FFFFFFFFFFFFFFFull)
          .ok());
  // 12345678901234567 words: 17 significant digits.
  ASSERT_TRUE(
      fs.SetPortCounter("mlx5_0", 1, "port_xmit_packets", 12345678901234567ull)
          .ok());
  absl::StatusOr<std::vector<ExpositionSample>> theirs =
      ScrapeNodeExporter(root);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  absl::StatusOr<std::vector<ExpositionSample>> ours = ScrapeAgent(root);
  ASSERT_TRUE(ours.ok()) << ours.status();
  ExpectSameCounters(*ours, *theirs, 2);
  EXPECT_EQ(Select(*ours, "fabricdiag_rdma_port_transmitted_bytes_total")
                .at({"mlx5_1", "1"}),
            std::ldexp(1.0, 64));
}

// The parsers the comparison relies on.

TEST(ExpositionTextTest, ParsesLabelsEscapesAndGoFloats) {
  absl::StatusOr<std::vector<ExpositionSample>> s = ParseExpositionText(
      "# HELP m help\n# TYPE m counter\n"
      "m{device=\"mlx5_0\",port=\"1\"} 1.1523046035392e+13\n"
      "n{a=\"x\\\"y\\\\z\\n\",} 7 1700000000000\n"
      "\n"
      "plain +Inf\n");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 3u);
  EXPECT_EQ((*s)[0].name, "m");
  EXPECT_THAT((*s)[0].labels,
              ElementsAre(Pair("device", "mlx5_0"), Pair("port", "1")));
  EXPECT_EQ((*s)[0].value, 11523046035392.0);
  EXPECT_THAT((*s)[1].labels, ElementsAre(Pair("a", "x\"y\\z\n")));
  EXPECT_EQ((*s)[1].value, 7);
  EXPECT_TRUE(std::isinf((*s)[2].value));
}

TEST(ExpositionTextTest, RejectsMalformedLines) {
  for (const char* bad :
       {"m{device=\"x} 1\n", "m{device=x} 1\n", "m 1 2 3\n",
        "m{a=\"1\",a=\"2\"} 1\n", "m abc\n", "{a=\"1\"} 1\n", "m{a=\"1\"\n"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ParseExpositionText(bad).ok());
  }
}

TEST(ProcStatTest, CountsFieldsFromTheLastParenthesis) {
  // A command name with spaces and ')' must not shift the fields.
  absl::StatusOr<ProcessCpu> cpu = ParseProcStatCpu(
      "42 (evil) name) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 4\n",
      100);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->user, absl::Milliseconds(2500));
  EXPECT_EQ(cpu->system, absl::Milliseconds(750));
  EXPECT_FALSE(ParseProcStatCpu("42 (x S 1", 100).ok());
  EXPECT_FALSE(ParseProcStatCpu("42 (x) S 1 2", 100).ok());
}

TEST(ProcStatTest, ParsesResidentMemory) {
  absl::StatusOr<ProcessMemory> mem = ParseProcStatusMemory(
      "Name:\tagent\nVmRSS:\t   19876 kB\nRssAnon:\t    5000 kB\n"
      "RssFile:\t   14876 kB\nRssShmem:\t       0 kB\n");
  ASSERT_TRUE(mem.ok()) << mem.status();
  EXPECT_EQ(mem->rss, 19876u * 1024);
  EXPECT_EQ(mem->anon, 5000u * 1024);
  EXPECT_EQ(mem->file, 14876u * 1024);
  EXPECT_TRUE(
      absl::IsNotFound(ParseProcStatusMemory("Name:\tkthreadd\n").status()));
  EXPECT_FALSE(ParseProcStatusMemory("VmRSS:\t12 MB\n").ok());
}

}  // namespace
}  // namespace fabricdiag::agent
