// fabricdiag-cluster-bench: the collector cluster's figures on a 3-server
// NATS JetStream cluster on loopback (tests/testing/nats_cluster.h: Debian's
// nats-server, own ports and store directories, every process stopped at
// the end).
//
// 1. The feature stream. Three collectors' own backend
//    (cluster::JetStreamFeatures, replicas 3, one NATS connection each, each
//    to another server) publish a third each of a scenario fabric of --nodes
//    GPU nodes x 8 NICs plus its leaves (tests/testing/scenario_builder.h:
//    the signals a healthy RoCE fabric reports, window and recent views),
//    once per --interval for --passes passes, their passes a third of an
//    interval apart. Prints the latency of Publish() (every chunk of the
//    slice acknowledged by the stream: what the collector's analysis pass
//    waits for) p50/p99/max, chunks and bytes per collector per interval,
//    bytes/s per 1,000 nodes, and the merge of the two others' slices on
//    one collector (time, and that every port is in it).
// 2. The declared state. Three fabricdiag-collector processes joined to the
//    same servers; --layouts times: `fabricdiag layout apply` of a layout of
//    --layout_hosts hosts x 8 GPUs through col-a (the CLI process's wall
//    time, until the write is acknowledged), and from the same start until
//    col-b and col-c serve it (their /metrics `fabricdiag_layouts`, polled
//    every 5 ms). Prints p50/max of each.
//
//   build/bench/fabricdiag-cluster-bench [--nodes=3000] [--passes=60]
//       [--interval=1s] [--layouts=20] [--layout_hosts=512]
//
// Exit status 0 when it ran (figures printed), 2 on errors. Needs
// /usr/sbin/nats-server (scripts/install-deps.sh).
//
// Measured with the defaults on a 2-core machine shared with other builds
// (docs/cluster.md#measured): 15.5 MB in 30 chunks per collector and
// interval, 951 bytes per port, 15.5 MB/s per 1,000 GPU nodes with their
// leaves' ports; publish p50 271 ms, p99 910 ms; a layout served by col-b
// and col-c p50 60 ms, max 104 ms after `layout apply` began.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "analysis/fabric_view.h"
#include "bench/feature_slices.h"
#include "cluster/jetstream_features.h"
#include "cluster/nats_connection.h"
#include "collector/feature_exchange.h"
#include "tests/testing/http_get.h"
#include "tests/testing/nats_cluster.h"
#include "tests/testing/scenario_builder.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

ABSL_FLAG(int, nodes, 3000,
          "GPU nodes of the fabric the 3 collectors share (multiple of 8)");
ABSL_FLAG(int, passes, 60, "analysis passes each collector publishes");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(1), "analysis interval");
ABSL_FLAG(int, layouts, 20, "layout writes timed");
ABSL_FLAG(int, layout_hosts, 512, "hosts of each layout (8 GPUs each)");

namespace fabricdiag::bench {
namespace {

constexpr int kCollectors = 3;
const char* const kNames[kCollectors] = {"col-a", "col-b", "col-c"};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(
      v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

void PrintDistribution(const char* what, const std::vector<double>& ms) {
  std::printf("%s: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%zu samples)\n", what,
              Percentile(ms, 0.5), Percentile(ms, 0.99), Percentile(ms, 1.0),
              ms.size());
}

int FeatureStream(const testing::NatsCluster& nats) {
  const int nodes = absl::GetFlag(FLAGS_nodes);
  const absl::Duration interval = absl::GetFlag(FLAGS_interval);
  const int passes = absl::GetFlag(FLAGS_passes);
  absl::StatusOr<analysis::scenario::Cluster> fabric =
      analysis::scenario::Cluster::Build(
          analysis::scenario::ManyJobCluster(nodes, 100));
  if (!fabric.ok()) {
    std::fprintf(stderr, "scenario: %s\n", fabric.status().ToString().c_str());
    return 2;
  }
  analysis::FabricView window =
      fabric->View({}, analysis::scenario::TrafficOptions{}, 1);
  analysis::FabricView recent =
      fabric->View({}, analysis::scenario::TrafficOptions{}, 2);
  recent.window_seconds = 1;
  const std::vector<collector::FeatureSlice> slices =
      DealSlices(window, recent, kCollectors, absl::Now());

  std::vector<std::unique_ptr<cluster::NatsConnection>> connections;
  std::vector<std::unique_ptr<cluster::JetStreamFeatures>> features;
  for (int k = 0; k < kCollectors; ++k) {
    cluster::NatsConnection::Options options;
    options.urls = {nats.url(k)};
    options.name = kNames[k];
    absl::StatusOr<std::unique_ptr<cluster::NatsConnection>> c =
        cluster::NatsConnection::Connect(options);
    if (!c.ok()) {
      std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
      return 2;
    }
    cluster::JetStreamFeatures::Options fo;
    fo.replicas = 3;
    fo.freshness = std::max(absl::Seconds(3), 3 * interval);
    absl::StatusOr<std::unique_ptr<cluster::JetStreamFeatures>> f =
        cluster::JetStreamFeatures::Open(c->get(), kNames[k], fo);
    if (!f.ok()) {
      std::fprintf(stderr, "%s\n", f.status().ToString().c_str());
      return 2;
    }
    connections.push_back(*std::move(c));
    features.push_back(*std::move(f));
  }

  // Each collector publishes once per interval, a third of an interval
  // after the previous one, as independent collectors' passes fall.
  std::vector<std::vector<double>> latency_ms(kCollectors);
  std::vector<int> errors(kCollectors, 0);
  const absl::Time start = absl::Now() + absl::Milliseconds(100);
  std::vector<std::thread> threads;
  threads.reserve(kCollectors);
  for (int k = 0; k < kCollectors; ++k) {
    threads.emplace_back([&, k] {
      for (int p = 0; p < passes; ++p) {
        absl::SleepFor(start + p * interval + k * interval / kCollectors -
                       absl::Now());
        const absl::Time t0 = absl::Now();
        if (!features[k]->Publish(slices[k], t0).ok()) ++errors[k];
        latency_ms[k].push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
      }
    });
  }
  for (std::thread& t : threads) t.join();

  std::vector<double> all;
  uint64_t bytes = 0, ports = 0;
  std::printf(
      "=== feature stream: %d nodes x 8 NICs + %d leaves over %d "
      "collectors, replicas 3, %d passes every %s ===\n",
      nodes, fabric->num_leaves(), kCollectors, passes,
      absl::FormatDuration(interval).c_str());
  for (int k = 0; k < kCollectors; ++k) {
    const cluster::JetStreamFeatures::Stats s = features[k]->stats();
    bytes += s.last_published_bytes;
    ports += slices[k].window.ports().size();
    std::printf(
        "%s: %zu nodes, %zu ports; %llu bytes in %llu chunks per "
        "interval; %d failed publishes\n",
        kNames[k], slices[k].nodes.size(), slices[k].window.ports().size(),
        static_cast<unsigned long long>(s.last_published_bytes),
        static_cast<unsigned long long>(s.published_chunks / passes),
        errors[k]);
    all.insert(all.end(), latency_ms[k].begin(), latency_ms[k].end());
  }
  PrintDistribution("publish latency (whole slice, acknowledged)", all);
  const double per_second =
      static_cast<double>(bytes) / absl::ToDoubleSeconds(interval);
  std::printf(
      "feature stream: %.2f MB per interval (all collectors), "
      "%.2f MB/s per 1,000 nodes (%.0f bytes per port)\n",
      static_cast<double>(bytes) / 1e6, per_second / 1e6 / (nodes / 1000.0),
      static_cast<double>(bytes) / static_cast<double>(ports));

  // The merge on col-a of the two others' latest slices, once their last
  // chunks arrived (at most 10 s after the last publish).
  const absl::Time published = absl::Now();
  size_t merged_ports = 0;
  while (true) {
    merged_ports =
        features[0]->Merged(slices[0], absl::Now()).window.ports().size();
    if (merged_ports == window.ports().size() ||
        absl::Now() - published > absl::Seconds(10)) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  const absl::Duration waited = absl::Now() - published;
  std::vector<double> merge_ms;
  for (int i = 0; i < 5; ++i) {
    collector::FeatureSlice local = slices[0];
    const absl::Time t0 = absl::Now();
    const collector::FeatureSlice merged =
        features[0]->Merged(std::move(local), absl::Now());
    merge_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
  }
  const cluster::JetStreamFeatures::Stats a = features[0]->stats();
  uint64_t sent = 0;
  for (const auto& f : features) sent += f->stats().published_chunks;
  std::printf(
      "col-a received %llu of the %llu chunks published, its own "
      "included (%llu undecodable)\n",
      static_cast<unsigned long long>(a.received_chunks),
      static_cast<unsigned long long>(sent),
      static_cast<unsigned long long>(a.undecodable_chunks));
  PrintDistribution("merge of the 2 other slices on col-a", merge_ms);
  std::printf("merged ports: %zu of %zu%s, %.2f s after the last publish\n",
              merged_ports, window.ports().size(),
              merged_ports == window.ports().size() ? "" : " (MISSING PORTS)",
              absl::ToDoubleSeconds(waited));
  return merged_ports == window.ports().size() ? 0 : 2;
}

struct Collector {
  std::unique_ptr<testing::Subprocess> process;
  int grpc = 0;
  int http = 0;
};

// How many layouts collector `c` serves now; -1 when it does not answer.
int ServedLayouts(const Collector& c) {
  absl::StatusOr<std::string> m =
      testing::HttpGet(c.http, "/metrics", absl::Seconds(2));
  if (!m.ok()) return -1;
  const size_t at = m->find("\nfabricdiag_layouts ");
  if (at == std::string::npos) return -1;
  return std::atoi(m->c_str() + at + 20);
}

int DeclaredState(const testing::NatsCluster& nats, const std::string& dir) {
  std::vector<Collector> c(kCollectors);
  for (int k = 0; k < kCollectors; ++k) {
    c[k].process =
        std::make_unique<testing::Subprocess>(std::vector<std::string>{
            FABRICDIAG_COLLECTOR_BINARY, "--listen=127.0.0.1:0",
            "--http_listen=127.0.0.1:0",
            absl::StrCat("--state_dir=", dir, "/", kNames[k]),
            "--nats=" + nats.urls(),
            absl::StrCat("--collector_id=", kNames[k])});
    std::string line;
    if (!c[k].process->Start().ok() ||
        !c[k].process->WaitForStderr("gRPC on port", &line,
                                     absl::Seconds(40))) {
      std::fprintf(stderr, "%s did not start:\n%s\n", kNames[k],
                   c[k].process->Stderr().c_str());
      return 2;
    }
    c[k].grpc = testing::PortFromLog(line, "gRPC");
    c[k].http = testing::PortFromLog(line, "HTTP");
  }
  const int layouts = absl::GetFlag(FLAGS_layouts);
  const int hosts = absl::GetFlag(FLAGS_layout_hosts);
  std::vector<double> ack_ms, served_ms;
  for (int i = 0; i < layouts; ++i) {
    const std::string job = absl::StrCat("bench-", i);
    const std::string path = absl::StrCat(dir, "/", job, ".yaml");
    {
      std::ofstream out(path);
      out << "job: " << job << "\ngpus_per_node: 8\nparallelism: {tp: 8, pp: 1,"
          << " dp: " << hosts << "}\nhosts: [";
      for (int h = 0; h < hosts; ++h) {
        out << (h ? ", " : "") << absl::StrFormat("%s-h%05d", job, h);
      }
      out << "]\n";
    }
    testing::Subprocess cli({FABRICDIAG_CLI_BINARY,
                             absl::StrCat("--collector=127.0.0.1:", c[0].grpc),
                             "layout", "apply", path});
    const absl::Time t0 = absl::Now();
    if (!cli.Start().ok()) return 2;
    absl::Time acked = absl::InfinitePast();
    absl::Time served[kCollectors] = {
        absl::InfinitePast(), absl::InfinitePast(), absl::InfinitePast()};
    served[0] = t0;  // only col-b and col-c are polled
    const absl::Time deadline = t0 + absl::Seconds(30);
    while (absl::Now() < deadline) {
      if (acked == absl::InfinitePast() && !cli.Running()) {
        acked = absl::Now();
        if (cli.Wait(absl::ZeroDuration()) != 0) {
          std::fprintf(stderr, "layout apply failed: %s\n",
                       cli.Stderr().c_str());
          return 2;
        }
      }
      bool all = acked != absl::InfinitePast();
      for (int k = 1; k < kCollectors; ++k) {
        if (served[k] == absl::InfinitePast() && ServedLayouts(c[k]) == i + 1) {
          served[k] = absl::Now();
        }
        all = all && served[k] != absl::InfinitePast();
      }
      if (all) break;
      absl::SleepFor(absl::Milliseconds(5));
    }
    if (acked == absl::InfinitePast() || served[1] == absl::InfinitePast() ||
        served[2] == absl::InfinitePast()) {
      std::fprintf(stderr, "layout %s: not served by every collector in 30 s\n",
                   job.c_str());
      return 2;
    }
    ack_ms.push_back(absl::ToDoubleMilliseconds(acked - t0));
    served_ms.push_back(
        absl::ToDoubleMilliseconds(std::max(served[1], served[2]) - t0));
  }
  std::printf(
      "=== declared state: %d layouts of %d hosts x 8 GPUs through "
      "col-a, 3 collectors, replicas 3 ===\n",
      layouts, hosts);
  PrintDistribution("`layout apply` through col-a until acknowledged", ack_ms);
  PrintDistribution("until col-b and col-c both serve it (same start)",
                    served_ms);
  for (Collector& k : c) {
    k.process->Signal(SIGTERM);
    (void)k.process->Wait(absl::Seconds(10));
  }
  return 0;
}

int Main() {
  if (!testing::HaveNatsServer()) {
    std::fprintf(stderr, "fabricdiag-cluster-bench: nats-server missing\n");
    return 2;
  }
  testing::NatsCluster nats(kCollectors);
  const absl::Status started = nats.Start();
  if (!started.ok()) {
    std::fprintf(stderr, "NATS cluster: %s\n", started.ToString().c_str());
    return 2;
  }
  testing::TempDir dir;
  const int features = FeatureStream(nats);
  if (features != 0) return features;
  return DeclaredState(nats, dir.path());
}

}  // namespace
}  // namespace fabricdiag::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "The collector cluster on 3 loopback nats-servers: feature-stream "
      "publish latency and bytes per interval, and the time from `fabricdiag "
      "layout apply` through col-a until col-b and col-c serve the layout.\n"
      "  fabricdiag-cluster-bench [--nodes=3000] [--passes=60] [--interval=1s]"
      " [--layouts=20] [--layout_hosts=512]");
  absl::ParseCommandLine(argc, argv);
  return fabricdiag::bench::Main();
}
