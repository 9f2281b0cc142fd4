// The /metrics text of a realistic snapshot, byte for byte: two ConnectX
// RoCE NICs (BuildRoceNode) read by the agent's sysfs sources, with the
// captured mlx5 `ethtool -S` text of tests/fixtures/ethtool as each
// netdev's statistics, rendered several times by one renderer while the
// values move (including the values whose text takes the slow path:
// fractions, 2^53 and above, 2^64-1, saturated counters) and compared with
// tests/fixtures/golden/agent_render_roce.prom. Regenerate it with
// FABRICDIAG_UPDATE_GOLDEN=1 only when a change of the text is intended.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/ethtool_source.h"
#include "agent/exposition.h"
#include "agent/netdev_source.h"
#include "agent/rdma_sysfs_source.h"
#include "agent/snapshotter.h"
#include "agent/sysfs_reader.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_sysfs.h"

namespace fabricdiag::agent {
namespace {

const std::string kFixtures = std::getenv("FABRICDIAG_FIXTURES") != nullptr
                                  ? std::getenv("FABRICDIAG_FIXTURES")
                                  : FABRICDIAG_SOURCE_DIR "/tests/fixtures";

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One snapshot of a 2-NIC node, read through the agent's sources.
class RoceSnapshot {
 public:
  RoceSnapshot() {
    const std::string sysfs = tmp_.path() + "/sys";
    const std::string ethtool = tmp_.path() + "/ethtool";
    const std::string text = ReadWholeFile(
        kFixtures + "/ethtool/mlx5/cx6dx_100g_kernel6.5_xdp_nonzero_only.txt");
    if (text.empty()) {
      error_ = "missing mlx5 ethtool fixture";
      return;
    }
    absl::StatusOr<FakeRoceNode> node = BuildRoceNode(sysfs, 2);
    if (!node.ok()) {
      error_ = node.status().ToString();
      return;
    }
    FakeSysfs ethtool_dir(ethtool);
    for (const std::string& netdev : node->netdevs) {
      if (absl::Status s = ethtool_dir.WriteFile(netdev, text); !s.ok()) {
        error_ = s.ToString();
        return;
      }
    }
    reader_ = std::make_unique<SysfsReader>(sysfs);
    std::vector<std::unique_ptr<Source>> sources;
    sources.push_back(std::make_unique<RdmaSysfsSource>(reader_.get()));
    absl::StatusOr<std::unique_ptr<NetdevSource>> netdev =
        NetdevSource::Create(reader_.get());
    if (!netdev.ok()) {
      error_ = netdev.status().ToString();
      return;
    }
    sources.push_back(*std::move(netdev));
    std::vector<std::unique_ptr<NetdevStatsSource>> stats;
    stats.push_back(std::make_unique<EthtoolSource>(EthtoolTextDir{ethtool},
                                                    EthtoolSourceOptions{}));
    Snapshotter snapshotter(std::move(sources), std::move(stats), clock_);
    snapshot_ = snapshotter.Take();
    for (const SourceStatus& s : snapshot_.sources) {
      if (!s.ok) error_ = absl::StrCat(s.source, ": ", s.last_error);
    }
  }

  const std::string& error() const { return error_; }
  const Snapshot& snapshot() const { return snapshot_; }

 private:
  ScopedTempDir tmp_;
  FakeClock clock_;
  std::unique_ptr<SysfsReader> reader_;
  Snapshot snapshot_;
  std::string error_;
};

AgentHealth Health() {
  AgentHealth h;
  h.version = "golden";
  h.snapshots = 12;
  h.snapshot_duration = absl::Microseconds(737);
  h.counter_resets = 1;
  h.counter_wraps = 2;
  AgentHealth::Stream stream;
  stream.connected = true;
  stream.buffered = 3;
  stream.buffered_bytes = 4096;
  stream.sent = 99;
  stream.collector = "collector-a:7070";
  h.stream = stream;
  h.http = HttpServer::Stats{};
  h.http->requests = 5;
  return h;
}

// The values of round `round` for the samples of `base`.
Snapshot Round(const Snapshot& base, int round) {
  Snapshot snap = base;
  snap.wall_time += absl::Seconds(round);
  for (size_t i = 0; i < snap.samples.size(); ++i) {
    Sample& s = snap.samples[i];
    switch (round) {
      case 0:  // as read
        break;
      case 1:  // every value moved a little
        s.raw += 1 + i;
        break;
      case 2:  // the slow paths of the number text
        switch (i % 6) {
          case 0:
            s.raw = std::numeric_limits<uint64_t>::max();
            break;
          case 1:
            s.raw = (uint64_t{1} << 53) + 1;
            break;
          case 2:
            s.raw = 0;
            break;
          case 3:
            s.raw = s.raw * 1000003 + 123456789;
            break;
          case 4:
            s.raw = uint64_t{1} << 53;
            break;
          default:  // unchanged since round 1
            s.raw += 1 + i;
            break;
        }
        if (s.desc->subsystem == Subsystem::kRdmaPortCounters) {
          s.saturated = i % 3 == 0;
        }
        break;
      default:  // back to the values read
        break;
    }
  }
  return snap;
}

TEST(ExpositionGoldenTest, RenderOfARealisticSnapshotIsUnchanged) {
  RoceSnapshot roce;
  ASSERT_EQ(roce.error(), "");
  ASSERT_GT(roce.snapshot().samples.size(), 300u);
  const AgentHealth health = Health();

  ExpositionRenderer renderer;
  std::string all;
  std::string text;
  for (int round = 0; round < 4; ++round) {
    const Snapshot snap = Round(roce.snapshot(), round);
    renderer.Render(snap, health, &text);
    // A renderer that never saw the earlier rounds prints the same text.
    ExpositionRenderer fresh;
    std::string fresh_text;
    fresh.Render(snap, health, &fresh_text);
    ASSERT_EQ(text, fresh_text) << "round " << round;
    absl::StrAppend(&all, "# round ", round, "\n", text);
  }
  EXPECT_EQ(renderer.plans_built(), 1u);

  const std::string golden_path = kFixtures + "/golden/agent_render_roce.prom";
  if (std::getenv("FABRICDIAG_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden_path) << all;
  }
  const std::string golden = ReadWholeFile(golden_path);
  ASSERT_FALSE(golden.empty())
      << "missing " << golden_path
      << "; run with FABRICDIAG_UPDATE_GOLDEN=1 to create it";
  EXPECT_EQ(all, golden) << "the /metrics text changed; if intended, "
                            "regenerate with FABRICDIAG_UPDATE_GOLDEN=1";
}

// Rendering into a buffer that holds something else (a longer or shorter
// text) leaves only the exposition in it.
TEST(ExpositionGoldenTest, RenderReplacesWhatTheBufferHeld) {
  RoceSnapshot roce;
  ASSERT_EQ(roce.error(), "");
  const AgentHealth health = Health();
  ExpositionRenderer reference;
  std::string expected;
  reference.Render(roce.snapshot(), health, &expected);

  ExpositionRenderer renderer;
  std::string longer(expected.size() * 2, 'x');
  renderer.Render(roce.snapshot(), health, &longer);
  EXPECT_EQ(longer, expected);
  std::string shorter = "garbage";
  renderer.Render(roce.snapshot(), health, &shorter);
  EXPECT_EQ(shorter, expected);
}

// The families decided per render (device and port info, the agent's own
// series, saturation) are prepared once and reused while their series stay
// the same: every change of what they print shows at once, as a renderer
// that never saw the earlier snapshots prints it.
TEST(ExpositionGoldenTest, PreparedInfoAndHealthFollowEveryChange) {
  RoceSnapshot roce;
  ASSERT_EQ(roce.error(), "");
  ASSERT_FALSE(roce.snapshot().rdma_devices.empty());
  ASSERT_FALSE(roce.snapshot().rdma_ports.empty());
  ASSERT_FALSE(roce.snapshot().netdevs.empty());
  struct Change {
    const char* what;
    std::function<void(Snapshot*, AgentHealth*)> apply;
  };
  const std::vector<Change> changes = {
      {"fw_ver",
       [](Snapshot* s, AgentHealth*) {
         s->rdma_devices[0].fw_ver = "22.39.1002";
       }},
      {"board_id",
       [](Snapshot* s, AgentHealth*) { s->rdma_devices[1].board_id = "b"; }},
      {"hca_type",
       [](Snapshot* s, AgentHealth*) { s->rdma_devices[0].hca_type = "h"; }},
      {"node_guid",
       [](Snapshot* s, AgentHealth*) { s->rdma_devices[0].node_guid = "g"; }},
      {"device gone",
       [](Snapshot* s, AgentHealth*) { s->rdma_devices.pop_back(); }},
      {"port state",
       [](Snapshot* s, AgentHealth*) { s->rdma_ports[0].state = "DOWN"; }},
      {"phys_state",
       [](Snapshot* s, AgentHealth*) {
         s->rdma_ports[0].phys_state = "Polling";
       }},
      {"link_layer",
       [](Snapshot* s, AgentHealth*) {
         s->rdma_ports[1].link_layer = "InfiniBand";
       }},
      {"port number",
       [](Snapshot* s, AgentHealth*) { s->rdma_ports[0].port = 2; }},
      {"port netdevs",
       [](Snapshot* s, AgentHealth*) {
         s->rdma_ports[0].netdevs.push_back("bond0");
       }},
      {"operstate",
       [](Snapshot* s, AgentHealth*) { s->netdevs[0].operstate = "down"; }},
      {"netdev rdma_device",
       [](Snapshot* s, AgentHealth*) { s->netdevs[0].rdma_device = ""; }},
      {"netdev rdma_port",
       [](Snapshot* s, AgentHealth*) { s->netdevs[1].rdma_port = 7; }},
      {"netdev gone", [](Snapshot* s, AgentHealth*) { s->netdevs.pop_back(); }},
      {"source renamed",
       [](Snapshot* s, AgentHealth*) { s->sources[0].source = "verbs"; }},
      {"source gone", [](Snapshot* s, AgentHealth*) { s->sources.pop_back(); }},
      {"source failing",
       [](Snapshot* s, AgentHealth*) {
         s->sources[0].ok = false;
         s->sources[0].errors = 3;
       }},
      {"version", [](Snapshot*, AgentHealth* h) { h->version = "v2"; }},
      {"collector",
       [](Snapshot*, AgentHealth* h) {
         h->stream->collector = "collector-b:7070";
       }},
      {"no stream", [](Snapshot*, AgentHealth* h) { h->stream.reset(); }},
      {"no http", [](Snapshot*, AgentHealth* h) { h->http.reset(); }},
      {"counters", [](Snapshot*, AgentHealth* h) { h->counter_wraps = 9; }},
      {"saturated",
       [](Snapshot* s, AgentHealth*) {
         for (Sample& sample : s->samples) {
           if (sample.desc->subsystem == Subsystem::kRdmaPortCounters) {
             sample.saturated = true;
             break;
           }
         }
       }},
  };
  for (const Change& change : changes) {
    ExpositionRenderer renderer;
    std::string before;
    renderer.Render(roce.snapshot(), Health(), &before);
    Snapshot snap = roce.snapshot();
    AgentHealth health = Health();
    change.apply(&snap, &health);
    std::string after;
    renderer.Render(snap, health, &after);
    ExpositionRenderer fresh;
    std::string expected;
    fresh.Render(snap, health, &expected);
    EXPECT_EQ(after, expected) << change.what;
    EXPECT_NE(after, before) << change.what;
    // And back.
    renderer.Render(roce.snapshot(), Health(), &after);
    EXPECT_EQ(after, before) << change.what;
  }
}

}  // namespace
}  // namespace fabricdiag::agent
