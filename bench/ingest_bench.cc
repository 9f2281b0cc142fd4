// fabricdiag-ingest-bench: the collector's ingest path without the network.
//
// Parses serialized AgentMessages (as gRPC would hand them over) and feeds
// them to IngestSessions backed by one SeriesStore, on ONE thread, for
// --nodes nodes, each sending what an agent on an mlx5 node with --nics NICs
// sends (sim/virtual_node.h), at 1 report per node per simulated second.
// Prints values/s and the p99 time from "bytes arrived" to "queryable in the
// store" per report. Excludes HTTP/2 framing and gRPC's thread hops, which
// `fabricdiag-sim --virtual_agents` measures end to end.
// Then times what each analysis pass reads from the store: the window view
// and the newest-samples view of every node (FabricViewBuilder), over
// --view_builds passes, in CPU ms per pass.
// Last, the cost of --nodes streams opening at once (a fleet reconnecting):
// each stream's Hello, Inventory, Schema and first Report parsed from the
// wire and handled, every stream kept open, read into a heap AgentMessage
// per stream (as before InboundMessage) and into an InboundMessage,
// alternating --opening_runs times each, in CPU us per stream.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "collector/declared/node_facts_memory.h"
#include "collector/ingest/inbound_message.h"
#include "collector/ingest/ingest_session.h"
#include "collector/ingest/node_facts_intake.h"
#include "collector/runner/fabric_view_builder.h"
#include "collector/store/series_store.h"
#include "common/clock.h"
#include "sim/virtual_node.h"

ABSL_FLAG(int, nodes, 2000, "nodes");
ABSL_FLAG(int, nics, 8, "NICs per node");
ABSL_FLAG(int, rounds, 30, "reports per node");
ABSL_FLAG(bool, management_netdev, false,
          "give each node a management netdev without RDMA (eno1), as most "
          "GPU nodes have: a port the view sorts before the NICs");
ABSL_FLAG(int, view_builds, 10,
          "analysis passes' view builds to time after ingest (0: none)");
ABSL_FLAG(int, opening_runs, 3,
          "runs of --nodes streams opening at once, per way of reading "
          "(0: none)");

namespace {

// Resident set size of this process, from /proc/self/status (0 if unknown).
size_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  size_t kb = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "VmRSS: %zu kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb * 1024;
}

// CPU seconds of this thread.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// What a stream reads into, the way it did before InboundMessage: one heap
// message per stream, reused from read to read.
class HeapMessage {
 public:
  fabricdiag::v1::AgentMessage* get() { return &message_; }
  void Handled() {}
  // Its fields' heap (capacities included), as protobuf counts it.
  size_t held_bytes() const { return message_.SpaceUsedLong(); }

 private:
  fabricdiag::v1::AgentMessage message_;
};

// --nodes streams open, each kept open with what it reads into: the CPU
// seconds of this thread to parse and handle their first messages; in
// *held, what the streams keep to read their next message into.
template <typename Message>
double OpenStreams(const std::vector<std::string>& opening, int nodes,
                   size_t* held) {
  using namespace fabricdiag::collector;  // NOLINT
  fabricdiag::SystemClock clock;
  SeriesStore store(SeriesStore::Options{}, clock);
  IngestCounters counters;
  KeepEveryAgent placement;
  MemoryNodeFacts facts;
  NoDeclaredSwitches no_switches;
  struct Stream {
    std::unique_ptr<IngestSession> session;
    std::unique_ptr<Message> in;
  };
  std::vector<Stream> streams(static_cast<size_t>(nodes));
  const double t0 = ThreadCpuSeconds();
  for (int node = 0; node < nodes; ++node) {
    Stream& stream = streams[static_cast<size_t>(node)];
    stream.session = std::make_unique<IngestSession>(
        &store, &counters, placement, NodeFactsIntake{facts, no_switches});
    stream.in = std::make_unique<Message>();
    fabricdiag::v1::AgentMessage hello;
    hello.mutable_hello()->set_node(absl::StrFormat("node-%05d", node));
    hello.mutable_hello()->set_boot_id("b");
    hello.mutable_hello()->set_interval_ms(1000);
    const std::string hello_wire = hello.SerializeAsString();
    for (const std::string* wire :
         {&hello_wire, &opening[0], &opening[1], &opening[2]}) {
      if (!stream.in->get()->ParseFromString(*wire) ||
          stream.session->Handle(*stream.in->get()).reject.has_value()) {
        std::fprintf(stderr, "a stream's opening was refused\n");
        std::exit(1);
      }
      stream.in->Handled();
    }
  }
  const double cpu = ThreadCpuSeconds() - t0;
  *held = 0;
  for (const Stream& stream : streams) *held += stream.in->held_bytes();
  return cpu;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fabricdiag;             // NOLINT
  using namespace fabricdiag::collector;  // NOLINT
  // As fabricdiag-collector runs (server/collector_main.cc).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::ParseCommandLine(argc, argv);
  const int nodes = absl::GetFlag(FLAGS_nodes);
  absl::StatusOr<sim::VirtualNode> agent =
      sim::BuildVirtualNode(absl::GetFlag(FLAGS_nics));
  if (!agent.ok()) {
    std::fprintf(stderr, "--nics: %s\n", agent.status().ToString().c_str());
    return 2;
  }
  if (absl::GetFlag(FLAGS_management_netdev)) {
    v1::Netdev* eno1 = agent->inventory.mutable_inventory()->add_netdevs();
    eno1->set_name("eno1");
    eno1->set_operstate("up");
    eno1->set_speed_bytes_per_second(3.125e9);
  }
  const int n = static_cast<int>(agent->series);
  const int rounds = absl::GetFlag(FLAGS_rounds);
  const size_t rss_start = ResidentBytes();
  SystemClock clock;
  SeriesStore store(SeriesStore::Options{}, clock);
  IngestCounters counters;
  KeepEveryAgent placement;  // one collector
  MemoryNodeFacts facts;
  NoDeclaredSwitches no_switches;
  std::vector<std::unique_ptr<IngestSession>> sessions;

  absl::BitGen gen;
  const absl::Time setup_start = absl::Now();
  for (int node = 0; node < nodes; ++node) {
    sessions.push_back(std::make_unique<IngestSession>(
        &store, &counters, placement, NodeFactsIntake{facts, no_switches}));
    v1::AgentMessage hello;
    hello.mutable_hello()->set_node(absl::StrFormat("node-%05d", node));
    hello.mutable_hello()->set_boot_id("b");
    hello.mutable_hello()->set_interval_ms(1000);
    sessions.back()->Handle(hello);
    sessions.back()->Handle(agent->inventory);
    sessions.back()->Handle(agent->schema);
  }
  const absl::Duration setup = absl::Now() - setup_start;

  // Pre-serialize a few distinct reports per round shape; parse each time.
  constexpr int kVariants = 16;
  std::vector<std::string> wire[kVariants];
  for (int v = 0; v < kVariants; ++v) {
    for (int round = 1; round <= rounds; ++round) {
      v1::AgentMessage m = agent->report;
      v1::Report* r = m.mutable_report();
      r->set_seq(static_cast<uint64_t>(round));
      for (int i = 0; i < r->raw_size(); ++i) {
        r->set_raw(i, static_cast<uint64_t>(round) * static_cast<uint64_t>(i));
      }
      for (uint32_t i : agent->moving) {
        const int k = static_cast<int>(i);
        r->set_rate(k, r->rate(k) * (1 + absl::Uniform<double>(gen, 0, 0.06)));
      }
      wire[v].push_back(m.SerializeAsString());
    }
  }
  size_t wire_bytes = 0;
  for (const auto& variant : wire) {
    for (const std::string& w : variant) wire_bytes += w.capacity() + 32;
  }
  std::vector<double> latency_us;
  latency_us.reserve(static_cast<size_t>(nodes) * static_cast<size_t>(rounds));
  v1::AgentMessage msg;
  const absl::Time start = absl::Now();
  for (int round = 0; round < rounds; ++round) {
    for (int node = 0; node < nodes; ++node) {
      const absl::Time t0 = absl::Now();
      msg.ParseFromString(wire[node % kVariants][static_cast<size_t>(round)]);
      IngestSession::Reply reply =
          sessions[static_cast<size_t>(node)]->Handle(msg);
      if (reply.reject.has_value()) {
        std::fprintf(stderr, "rejected: %s\n", reply.reject->c_str());
        return 1;
      }
      latency_us.push_back(absl::ToDoubleMicroseconds(absl::Now() - t0));
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::sort(latency_us.begin(), latency_us.end());
  const StoreMemory mem = store.Memory();
  // What the process holds beyond its start, minus the bench's own
  // pre-serialized reports and latency samples: the store, as the kernel
  // counts it (includes allocator overhead the estimate leaves out).
  const size_t rss_store = ResidentBytes() - rss_start - wire_bytes -
                           latency_us.capacity() * sizeof(double);
  std::printf(
      "nodes %d series/node %d rounds %d: schema setup %.2f s; %.2fM values/s "
      "on one thread (%.1f ns/value); per-report parse+validate+store p50 "
      "%.0f us p99 %.0f us; memory %.0f bytes/series estimated, %.0f by RSS "
      "(%zu series, %zu layouts)\n",
      nodes, n, rounds, absl::ToDoubleSeconds(setup),
      counters.values.load() / seconds / 1e6,
      seconds * 1e9 / static_cast<double>(counters.values.load()),
      latency_us[latency_us.size() / 2],
      latency_us[latency_us.size() * 99 / 100], mem.bytes_per_series(),
      static_cast<double>(rss_store) / static_cast<double>(mem.series),
      mem.series, mem.layouts);

  // The two views of one analysis pass (AnalysisRunner::ExchangeFeatures:
  // a 5 s window and the newest sample), as the runner builds them.
  const int builds = absl::GetFlag(FLAGS_view_builds);
  if (builds > 0) {
    FabricViewBuilder builder(&store);
    size_t ports = 0;
    double cpu = 0;
    double first = 0;
    // Every pass at the same instant: the nodes stay fresh however long
    // the passes take.
    const absl::Time now = clock.Now();
    for (int b = 0; b <= builds; ++b) {
      const double t0 = ThreadCpuSeconds();
      const std::vector<analysis::FabricView> views =
          builder.Build(nullptr, {5.0, 1.0}, now);
      // The first build fills the builder's per-node caches (as the first
      // pass after every node connected does): timed apart.
      if (b > 0) {
        cpu += ThreadCpuSeconds() - t0;
      } else {
        first = ThreadCpuSeconds() - t0;
      }
      ports = views.front().ports().size();
    }
    std::printf(
        "analysis views (5 s window + newest sample): %.1f ms of CPU "
        "per pass over %zu ports (%d passes); the first, which maps every "
        "node's series: %.1f ms\n",
        cpu * 1e3 / builds, ports, builds, first * 1e3);
  }

  // A fleet reconnecting: its streams' openings, read both ways.
  const int opening_runs = absl::GetFlag(FLAGS_opening_runs);
  if (opening_runs > 0) {
    v1::AgentMessage first_report = agent->report;
    first_report.mutable_report()->set_seq(1);
    const std::vector<std::string> opening = {
        agent->inventory.SerializeAsString(), agent->schema.SerializeAsString(),
        first_report.SerializeAsString()};
    std::vector<double> heap_us;
    std::vector<double> arena_us;
    size_t heap_held = 0;
    size_t arena_held = 0;
    for (int run = 0; run < opening_runs; ++run) {
      heap_us.push_back(OpenStreams<HeapMessage>(opening, nodes, &heap_held) *
                        1e6 / nodes);
      arena_us.push_back(
          OpenStreams<InboundMessage>(opening, nodes, &arena_held) * 1e6 /
          nodes);
    }
    std::sort(heap_us.begin(), heap_us.end());
    std::sort(arena_us.begin(), arena_us.end());
    std::printf(
        "%d streams opening at once (Hello, Inventory, Schema of %d series, "
        "a Report), CPU per stream, median of %d runs: read into a heap "
        "message %.0f us, into the stream's arena %.0f us\n",
        nodes, n, opening_runs, heap_us[heap_us.size() / 2],
        arena_us[arena_us.size() / 2]);
    std::printf(
        "what each stream keeps to read its next message into: the heap "
        "message %.1f KiB, the arena %.1f KiB\n",
        static_cast<double>(heap_held) / nodes / 1024,
        static_cast<double>(arena_held) / nodes / 1024);
  }
  return 0;
}
