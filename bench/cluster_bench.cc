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
// 3. The CPU split (--split_agents > 0). `fabricdiag-sim --virtual_agents`
//    streams --split_agents agents for --split_duration into one standalone
//    collector, then the same agents into three fresh collectors of the
//    cluster, given all three addresses as real agents are (each starts at
//    the collector its node name picks and follows the leader's
//    hand-offs); collectors pinned to --collector_cpus, the simulator to
//    --sim_cpus (taskset). Prints each collector's CPU seconds
//    (/proc/PID/stat) against the lone one's, the agents streaming to it
//    (reports stored per interval), the streams it handed off, and its
//    fabricdiag_cluster_features_published_bytes (one analysis interval, 1 s
//    by default) per 1,000 nodes. With --split_analysis_shards the three
//    shard their analysis (--analysis_shards): each prints the shards it
//    owns and the shard chunks it sent and received per interval instead.
//
//   build/bench/fabricdiag-cluster-bench [--nodes=3000] [--passes=60]
//       [--interval=1s] [--layouts=20] [--layout_hosts=512]
//       [--split_agents=8500] [--split_duration=60s]
//       [--split_analysis_shards] [--collector_cpus=1] [--sim_cpus=0]
//
// Exit status 0 when it ran (figures printed), 2 on errors. Needs
// /usr/sbin/nats-server (scripts/install-deps.sh).
//
// Measured on a 2-core machine (docs/cluster.md#measured), --passes=15,
// split 45 s: 8.75 MB in 18 chunks per collector and interval, 537 bytes
// per port, 8.7 MB/s per 1,000 GPU nodes with their leaves' ports; publish
// p50 105 ms, p99 221 ms; with the defaults, a layout served by col-b and
// col-c p50 60 ms, max 104 ms after `layout apply` began; with 8,500
// agents, the followers used 0.31-0.33 of the lone collector's CPU seconds
// and the leader 0.41-0.42 (a third is the target), publishing 5.3 MB/s
// per 1,000 nodes. With 5,000 agents, since the leader hands a quarter of
// its agents to the others (2026-11-27, three runs): the leader 0.34-0.37,
// the followers 0.33-0.35 (0.39-0.40 and 0.32-0.33 before).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
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
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "analysis/fabric_view.h"
#include "bench/feature_slices.h"
#include "cluster/jetstream_features.h"
#include "cluster/nats_connection.h"
#include "collector/runner/feature_exchange.h"
#include "tests/testing/http_get.h"
#include "tests/testing/nats_cluster.h"
#include "tests/testing/proc_stat.h"
#include "tests/testing/scenario_builder.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

ABSL_FLAG(int, nodes, 3000,
          "GPU nodes of the fabric the 3 collectors share (multiple of 8)");
ABSL_FLAG(int, passes, 60, "analysis passes each collector publishes");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(1), "analysis interval");
ABSL_FLAG(int, layouts, 20, "layout writes timed");
ABSL_FLAG(int, layout_hosts, 512, "hosts of each layout (8 GPUs each)");
ABSL_FLAG(int, split_agents, 8500,
          "virtual agents of the CPU split (3.: one collector, then 3); 0 "
          "skips it");
ABSL_FLAG(absl::Duration, split_duration, absl::Seconds(60),
          "how long the agents stream in each half of the CPU split");
ABSL_FLAG(bool, split_analysis_shards, false,
          "the cluster's collectors of the CPU split shard their analysis "
          "(--analysis_shards); the lone collector does not");
ABSL_FLAG(std::string, collector_cpus, "1",
          "CPUs the collectors of the CPU split are pinned to (taskset -c)");
ABSL_FLAG(std::string, sim_cpus, "0",
          "CPUs the simulators of the CPU split are pinned to (taskset -c)");

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

  // col-a leads: it receives the others' feature chunks from its first
  // merge of the fabric on; col-b and col-c, followers, their liveness.
  features[0]->Merged(collector::FeatureSlice(), absl::Now(),
                      collector::MergeScope::kFabric);
  for (int k = 1; k < kCollectors; ++k) {
    features[k]->Merged(collector::FeatureSlice(), absl::Now(),
                        collector::MergeScope::kNodes);
  }
  // Each collector publishes once per interval, a third of an interval
  // after the previous one, as independent collectors' passes fall.
  std::vector<std::vector<double>> latency_ms(kCollectors);
  std::vector<std::vector<double>> send_ms(kCollectors);
  std::vector<int> errors(kCollectors, 0);
  const absl::Time start = absl::Now() + absl::Milliseconds(100);
  std::vector<std::thread> threads;
  threads.reserve(kCollectors);
  for (int k = 0; k < kCollectors; ++k) {
    threads.emplace_back([&, k] {
      for (int p = 0; p < passes; ++p) {
        absl::SleepFor(start + p * interval + k * interval / kCollectors -
                       absl::Now());
        // What the pass waits for, then (the pass would go on meanwhile)
        // until the stream acknowledged every chunk.
        const absl::Time t0 = absl::Now();
        features[k]->Publish(slices[k], t0).IgnoreError();
        send_ms[k].push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
        if (!features[k]->WaitForAcknowledgements().ok()) ++errors[k];
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
  std::vector<double> sends;
  for (const std::vector<double>& ms : send_ms) {
    sends.insert(sends.end(), ms.begin(), ms.end());
  }
  PrintDistribution(
      "of which the analysis pass waits (sent, up to 64 in flight)", sends);
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
        features[0]
            ->Merged(slices[0], absl::Now(), collector::MergeScope::kFabric)
            .window.ports()
            .size();
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
    const collector::FeatureSlice merged = features[0]->Merged(
        std::move(local), absl::Now(), collector::MergeScope::kFabric);
    merge_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
  }
  const cluster::JetStreamFeatures::Stats a = features[0]->stats();
  uint64_t sent = 0;
  for (const auto& f : features) sent += f->stats().published_chunks;
  std::printf(
      "col-a received %llu of the %llu chunks published, and %llu of its "
      "own, dropped unread (%llu undecodable)\n",
      static_cast<unsigned long long>(a.received_chunks),
      static_cast<unsigned long long>(sent),
      static_cast<unsigned long long>(a.own_chunks_skipped),
      static_cast<unsigned long long>(a.undecodable_chunks));
  PrintDistribution("merge of the 2 other slices on col-a", merge_ms);
  const cluster::JetStreamFeatures::Stats b = features[1]->stats();
  {
    // col-b takes over the analysis while col-a and col-c go on publishing
    // every interval: its first merge of the fabric starts reading the
    // stream's last chunk of every subject, on a thread of its own, and the
    // subscription brings the next publishes; the merges after it have the
    // whole fabric once either did.
    std::atomic<bool> taken_over{false};
    std::thread others([&] {
      while (!taken_over.load()) {
        const absl::Time at = absl::Now();
        for (int k : {0, 2}) {
          features[k]->Publish(slices[k], absl::Now()).IgnoreError();
        }
        absl::SleepFor(interval - (absl::Now() - at));
      }
    });
    collector::FeatureSlice local = slices[1];
    const absl::Time t0 = absl::Now();
    const size_t first_ports = features[1]
                                   ->Merged(std::move(local), absl::Now(),
                                            collector::MergeScope::kFabric)
                                   .window.ports()
                                   .size();
    const absl::Duration first = absl::Now() - t0;
    size_t now_ports = first_ports;
    while (now_ports < window.ports().size() &&
           absl::Now() - t0 < absl::Seconds(60)) {
      absl::SleepFor(absl::Milliseconds(50));
      local = slices[1];
      now_ports = features[1]
                      ->Merged(std::move(local), absl::Now(),
                               collector::MergeScope::kFabric)
                      .window.ports()
                      .size();
    }
    const absl::Duration whole = absl::Now() - t0;
    taken_over.store(true);
    others.join();
    // The catch-up may still run: its figures once it ended.
    cluster::JetStreamFeatures::Stats taken = features[1]->stats();
    while (taken.catch_up_took == absl::ZeroDuration() &&
           absl::Now() - t0 < absl::Seconds(120)) {
      absl::SleepFor(absl::Milliseconds(50));
      taken = features[1]->stats();
    }
    std::printf(
        "col-b taking over (col-a, col-c publishing every interval): first "
        "merge of the fabric %.1f ms (%zu of %zu ports); whole fabric "
        "merged %.1f ms after it began%s; the catch-up read %llu subjects "
        "in %.1f ms, %llu arrived first by the subscription\n",
        absl::ToDoubleMilliseconds(first), first_ports, window.ports().size(),
        absl::ToDoubleMilliseconds(whole),
        now_ports == window.ports().size() ? "" : " (NEVER WHOLE)",
        static_cast<unsigned long long>(taken.catch_up_subjects),
        absl::ToDoubleMilliseconds(taken.catch_up_took),
        static_cast<unsigned long long>(taken.catch_up_skipped));
  }
  std::printf(
      "per interval: col-a (leading) received %.2f MB of features; col-b "
      "(following) %.2f MB of liveness, %.2f MB of features\n",
      static_cast<double>(a.received_bytes) / 1e6 / passes,
      static_cast<double>(b.received_liveness_bytes) / 1e6 / passes,
      static_cast<double>(b.received_bytes) / 1e6 / passes);
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

// A collector process pinned with taskset; `nats` empty: standalone.
Collector StartPinned(const std::string& name, const std::string& nats,
                      const std::string& dir) {
  std::vector<std::string> argv = {
      "/usr/bin/taskset",
      "-c",
      absl::GetFlag(FLAGS_collector_cpus),
      FABRICDIAG_COLLECTOR_BINARY,
      "--listen=127.0.0.1:0",
      "--http_listen=127.0.0.1:0",
      absl::StrCat("--state_dir=", dir, "/split-", name)};
  if (!nats.empty()) {
    argv.push_back("--nats=" + nats);
    argv.push_back("--collector_id=" + name);
    if (absl::GetFlag(FLAGS_split_analysis_shards)) {
      argv.push_back("--analysis_shards");
    }
  }
  Collector c;
  c.process = std::make_unique<testing::Subprocess>(argv);
  std::string line;
  if (c.process->Start().ok() &&
      c.process->WaitForStderr("gRPC on port", &line, absl::Seconds(40))) {
    c.grpc = testing::PortFromLog(line, "gRPC");
    c.http = testing::PortFromLog(line, "HTTP");
  } else {
    std::fprintf(stderr, "%s did not start:\n%s\n", name.c_str(),
                 c.process->Stderr().c_str());
  }
  return c;
}

// The value of the first sample of metric `name` (labels or not) on
// collector `c`; -1 if none.
double MetricValue(const Collector& c, const std::string& name) {
  absl::StatusOr<std::string> m =
      testing::HttpGet(c.http, "/metrics", absl::Seconds(10));
  if (!m.ok()) return -1;
  for (const char* after : {" ", "{"}) {
    const size_t at = m->find("\n" + name + after);
    if (at == std::string::npos) continue;
    const size_t end = m->find('\n', at + 1);
    const size_t space = m->rfind(' ', end);
    return std::atof(m->c_str() + space + 1);
  }
  return -1;
}

// Streams `agents` virtual agents for --split_duration into the collectors
// `c`, all at once, from one simulator given every collector's address: each
// agent starts at the collector its node name picks and follows hand-offs,
// as fabricdiag-agent does. Returns each collector's CPU seconds over that
// time, empty on errors.
std::vector<double> StreamAndMeasure(const std::vector<Collector>& c,
                                     int agents) {
  const absl::Duration duration = absl::GetFlag(FLAGS_split_duration);
  std::vector<absl::Duration> before;
  std::vector<std::string> targets;
  for (const Collector& k : c) {
    absl::StatusOr<testing::ProcessCpu> cpu =
        testing::ReadProcessCpu(k.process->pid());
    if (!cpu.ok()) return {};
    before.push_back(cpu->total());
    targets.push_back(absl::StrCat("127.0.0.1:", k.grpc));
  }
  testing::Subprocess sim(std::vector<std::string>{
      "/usr/bin/taskset", "-c", absl::GetFlag(FLAGS_sim_cpus),
      FABRICDIAG_SIM_BINARY, absl::StrCat("--virtual_agents=", agents),
      "--collector=" + absl::StrJoin(targets, ","),
      absl::StrCat("--duration=", absl::FormatDuration(duration))});
  if (!sim.Start().ok()) return {};
  const std::optional<int> code = sim.Wait(duration + absl::Minutes(2));
  const std::string out = sim.Stdout();
  const size_t at = out.find("virtual agents:");
  std::printf("  %s\n", at == std::string::npos
                            ? ("sim failed: " + sim.Stderr()).c_str()
                            : out.substr(at, out.find('\n', at) - at).c_str());
  if (code != 0) return {};
  std::vector<double> used;
  for (size_t i = 0; i < c.size(); ++i) {
    absl::StatusOr<testing::ProcessCpu> cpu =
        testing::ReadProcessCpu(c[i].process->pid());
    if (!cpu.ok()) return {};
    used.push_back(absl::ToDoubleSeconds(cpu->total() - before[i]));
  }
  return used;
}

int CpuSplit(const testing::NatsCluster& nats, const std::string& dir) {
  const int agents = absl::GetFlag(FLAGS_split_agents);
  if (agents <= 0) return 0;
  const double seconds =
      absl::ToDoubleSeconds(absl::GetFlag(FLAGS_split_duration));
  std::printf(
      "=== CPU split: %d virtual agents for %.0f s, collectors on "
      "CPUs %s, simulators on CPUs %s ===\n",
      agents, seconds, absl::GetFlag(FLAGS_collector_cpus).c_str(),
      absl::GetFlag(FLAGS_sim_cpus).c_str());
  double alone = 0;
  {
    std::vector<Collector> one;
    one.push_back(StartPinned("alone", "", dir));
    if (one[0].grpc == 0) return 2;
    std::printf("one collector, no cluster:\n");
    const std::vector<double> used = StreamAndMeasure(one, agents);
    if (used.empty()) return 2;
    alone = used[0];
    std::printf("  collector: %.1f CPU seconds (%.0f%% of a core)\n", alone,
                100 * alone / seconds);
    one[0].process->Signal(SIGTERM);
    (void)one[0].process->Wait(absl::Seconds(10));
  }
  std::vector<Collector> c;
  for (const char* name : kNames) {
    c.push_back(StartPinned(name, nats.urls(), dir));
    if (c.back().grpc == 0) return 2;
  }
  const bool sharded = absl::GetFlag(FLAGS_split_analysis_shards);
  std::printf(
      "3 collectors of a cluster%s, each agent at the collector its node "
      "picks:\n",
      sharded ? " sharding their analysis" : "");
  const std::vector<double> used = StreamAndMeasure(c, agents);
  if (used.empty()) return 2;
  // The simulator's agents report once a second.
  const double intervals = seconds;
  for (int k = 0; k < kCollectors; ++k) {
    const double bytes =
        MetricValue(c[k], "fabricdiag_cluster_features_published_bytes");
    const double leader =
        MetricValue(c[k], "fabricdiag_cluster_analysis_leader");
    // Reports stored per interval: about the agents streaming here.
    const double streaming =
        MetricValue(c[k], "fabricdiag_ingest_reports_total") / intervals;
    const double handed =
        MetricValue(c[k], "fabricdiag_ingest_handed_off_streams_total");
    std::printf(
        "  %s%s: ~%.0f agents (reports stored per interval), %.0f streams "
        "handed off, %.1f CPU seconds (%.2f of the lone collector's); ",
        kNames[k], leader == 1 ? " (analysis leader)" : "", streaming, handed,
        used[k], used[k] / alone);
    if (sharded) {
      std::printf(
          "%.0f analysis shards owned, shard chunks per interval %.1f sent "
          "and %.1f received\n",
          MetricValue(c[k], "fabricdiag_cluster_analysis_shards_owned"),
          MetricValue(c[k], "fabricdiag_cluster_shard_chunks_published_total") /
              intervals,
          MetricValue(c[k], "fabricdiag_cluster_shard_chunks_received_total") /
              intervals);
    } else {
      std::printf(
          "feature stream %.2f MB per interval, %.2f MB/s per 1,000 "
          "nodes\n",
          bytes / 1e6,
          streaming > 0 ? bytes / 1e6 / (streaming / 1000.0) : 0.0);
    }
  }
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
  const int declared = DeclaredState(nats, dir.path());
  if (declared != 0) return declared;
  return CpuSplit(nats, dir.path());
}

}  // namespace
}  // namespace fabricdiag::bench

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // As fabricdiag-collector runs (server/collector_main.cc).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::SetProgramUsageMessage(
      "The collector cluster on 3 loopback nats-servers: feature-stream "
      "publish latency and bytes per interval, and the time from `fabricdiag "
      "layout apply` through col-a until col-b and col-c serve the layout, "
      "and each of 3 pinned collectors' CPU seconds for a third of the "
      "virtual agents against one collector's for all.\n"
      "  fabricdiag-cluster-bench [--nodes=3000] [--passes=60] [--interval=1s]"
      " [--layouts=20] [--layout_hosts=512] [--split_agents=8500]"
      " [--split_duration=60s] [--split_analysis_shards] [--collector_cpus=1]"
      " [--sim_cpus=0]");
  absl::ParseCommandLine(argc, argv);
  return fabricdiag::bench::Main();
}
