// fabricdiag-sim: flags -> SimConfig -> RunSim. See sim/sim_app.h.
//
// With --gnmi_listen the switches are gNMI targets (sim/gnmi_fleet.h)
// instead of trees.
//
// With --virtual_agents=N it writes no trees: it streams the ingest protocol
// straight to --collector as N agents (sim/virtual_agents.h), for load tests
// and the collector benchmarks.
#include <signal.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "client/collector_list.h"
#include "common/clock.h"
#include "common/names.h"
#include "common/program.h"
#include "sim/sim_app.h"
#include "sim/virtual_agents.h"

ABSL_FLAG(std::string, layout, "",
          "Layout files (YAML or JSON), comma-separated: every host of every "
          "layout is simulated");
ABSL_FLAG(std::string, topology, "",
          "Topology file: switches, uplinks and host links (optional)");
ABSL_FLAG(std::string, scenario, "",
          "Scenario file: step_seconds and faults with start/end (optional)");
ABSL_FLAG(std::string, out, "",
          "Output directory: OUT/NODE/sys and OUT/NODE/ethtool per node");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(1),
          "Tick: how often every counter file is rewritten (in real time, "
          "half an interval after the wall clock's multiples of it, where "
          "agents at the same interval read)");
ABSL_FLAG(absl::Duration, duration, absl::ZeroDuration(),
          "How long to run; 0 = until SIGINT/SIGTERM");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the traffic skew and noise");
ABSL_FLAG(int64_t, ticks, 0,
          "Run this many ticks of --interval as fast as possible, then exit");

ABSL_FLAG(int, virtual_agents, 0,
          "Write no trees: stream to --collector as this many virtual agents "
          "(each what an agent on an 8-NIC mlx5 node sends: ~1,270 series) "
          "for --duration (default 60s; SIGINT/SIGTERM ends it early), then "
          "print throughput and send->ack latency. With --layout or "
          "--topology they are the first N hosts of the simulated fabric "
          "(and its switches with --virtual_switch_agents), "
          "sending its --scenario's counters (--seed) every --interval; "
          "without, healthy nodes named by --virtual_agent_prefix");
ABSL_FLAG(
    std::string, collector, "127.0.0.1:9811",
    "HOST:PORT of the collector, with --virtual_agents; a comma-separated "
    "list for a collector cluster (each agent ranks the list as "
    "fabricdiag-agent does, starts at its first choice, follows hand-offs "
    "and fails over down its ranking)");
ABSL_FLAG(std::string, virtual_agent_prefix, "vnode-",
          "Node names of the virtual agents: PREFIX00000, PREFIX00001, ... "
          "(several simulators feeding one collector cluster need different "
          "ones)");
ABSL_FLAG(bool, virtual_switch_agents, false,
          "With --virtual_agents and --topology: every switch of the "
          "topology has a virtual agent too, after the hosts' ones, sending "
          "its ports' netdev and `ethtool -S` counters as an agent on a "
          "Linux switch does");
ABSL_FLAG(bool, virtual_agent_lldp, true,
          "With --virtual_agents: each agent's inventory carries the LLDP "
          "neighbors of its NICs (false: none, an ingest without discovery)");

ABSL_FLAG(std::string, gnmi_listen, "",
          "Serve every switch (or those of --gnmi_switches) as a gNMI target "
          "instead of writing its tree: "
          "switch i (topology order) listens on HOST:PORT+i; port 0 gives "
          "each an ephemeral port. One line per switch on stderr: "
          "\"gnmi target <switch> (<dialect>) listening on HOST:PORT\"");
ABSL_FLAG(std::string, gnmi_dialect, "openconfig",
          "What the gNMI targets speak: openconfig (Arista-style paths) or "
          "sonic (COUNTERS_DB / APPL_DB)");
ABSL_FLAG(std::string, gnmi_tls_cert, "",
          "PEM certificate the gNMI targets serve TLS with (with "
          "--gnmi_tls_key); plaintext without it");
ABSL_FLAG(std::string, gnmi_tls_key, "",
          "PEM private key of --gnmi_tls_cert (mode 0600)");
ABSL_FLAG(std::string, gnmi_tls_ca, "",
          "CA that signed --gnmi_tls_cert, written into --gnmi_topology_out "
          "(default: the certificate itself, for a self-signed one)");
ABSL_FLAG(std::string, gnmi_credentials_file, "",
          "File with a user name (line 1) and password (line 2), mode 0600: "
          "every gNMI RPC must carry them as username/password metadata; "
          "needs TLS");
ABSL_FLAG(absl::Duration, gnmi_refresh, absl::ZeroDuration(),
          "The gNMI targets' counters change only every this long (0: every "
          "tick), as a SONiC switch's flex counters poll port statistics "
          "every 1s: samples in between repeat the last poll's values");
ABSL_FLAG(absl::Duration, gnmi_pfc_refresh, absl::ZeroDuration(),
          "The gNMI targets' PFC counters change only every this long (0: as "
          "--gnmi_refresh), as a switch that polls them in a counter group "
          "of their own (SONiC polls its queue counters every 10s)");
ABSL_FLAG(bool, gnmi_overlap, false,
          "The gNMI targets answer overlapping subscriptions: a subscription "
          "below a port also sends the port's other counters, as sampled one "
          "tick earlier");
ABSL_FLAG(std::vector<std::string>, gnmi_switches, {},
          "With --gnmi_listen: only these switches (comma-separated "
          "topology names) are gNMI targets; the others get a tree for an "
          "agent, as without --gnmi_listen. Empty: every switch");
ABSL_FLAG(std::string, gnmi_topology_out, "",
          "Write the --topology with each switch's gnmi block filled in "
          "(address, dialect, insecure or tls_ca and credentials_file) to "
          "this file, before the listening lines are printed");

namespace {

// --layout, --topology and --scenario.
fabricdiag::sim::SimConfig InputFlags() {
  fabricdiag::sim::SimConfig config;
  for (absl::string_view f :
       absl::StrSplit(absl::GetFlag(FLAGS_layout), ',', absl::SkipEmpty())) {
    config.layout_files.emplace_back(f);
  }
  config.topology_file = absl::GetFlag(FLAGS_topology);
  config.scenario_file = absl::GetFlag(FLAGS_scenario);
  return config;
}

int VirtualAgents(int agents) {
  fabricdiag::sim::VirtualAgentsOptions o;
  absl::StatusOr<std::vector<std::string>> targets =
      fabricdiag::client::ParseCollectorList(absl::GetFlag(FLAGS_collector));
  if (!targets.ok()) {
    std::cerr << "fabricdiag-sim: " << targets.status().message() << "\n";
    return 2;
  }
  o.targets = *std::move(targets);
  o.nodes = agents;
  o.node_prefix = absl::GetFlag(FLAGS_virtual_agent_prefix);
  o.lldp = absl::GetFlag(FLAGS_virtual_agent_lldp);
  o.interval = absl::GetFlag(FLAGS_interval);
  const bool switches = absl::GetFlag(FLAGS_virtual_switch_agents);
  if (switches && absl::GetFlag(FLAGS_topology).empty()) {
    std::cerr << "fabricdiag-sim: --virtual_switch_agents: needs --topology "
                 "(the switches)\n";
    return 2;
  }
  if (!absl::GetFlag(FLAGS_layout).empty() ||
      !absl::GetFlag(FLAGS_topology).empty()) {
    for (const char* name : {"virtual_agent_prefix", "virtual_agent_lldp"}) {
      const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
      if (flag->CurrentValue() != flag->DefaultValue()) {
        std::cerr << "fabricdiag-sim: --" << name
                  << ": not with --layout or --topology (the agents are the "
                     "fabric's hosts)\n";
        return 2;
      }
    }
    absl::StatusOr<fabricdiag::sim::SimInputs> inputs =
        fabricdiag::sim::LoadSimInputs(InputFlags());
    if (!inputs.ok()) {
      std::cerr << "fabricdiag-sim: " << inputs.status().message() << "\n";
      return 2;
    }
    const size_t hosts = inputs->fabric->hosts().size();
    if (static_cast<size_t>(agents) > hosts) {
      std::cerr << "fabricdiag-sim: --virtual_agents: " << agents
                << " agents, but the simulated fabric has " << hosts
                << " hosts\n";
      return 2;
    }
    fabricdiag::sim::ScenarioAgents which;
    which.hosts = static_cast<size_t>(agents);
    which.switches = switches;
    absl::StatusOr<std::unique_ptr<fabricdiag::sim::ScenarioTraffic>> traffic =
        fabricdiag::sim::ScenarioTraffic::Create(
            std::move(inputs->fabric), std::move(inputs->scenario),
            absl::GetFlag(FLAGS_seed), which);
    if (!traffic.ok()) {
      std::cerr << "fabricdiag-sim: " << traffic.status().message() << "\n";
      return 2;
    }
    o.scenario = *std::move(traffic);
    o.nodes = static_cast<int>(o.scenario->num_nodes());
  }
  o.duration = absl::GetFlag(FLAGS_duration);
  if (o.duration <= absl::ZeroDuration()) o.duration = absl::Seconds(60);
  o.warmup = std::min(o.warmup, o.duration / 4);
  // main() blocked SIGINT and SIGTERM: one pending ends the run early,
  // summarized as at its end.
  o.stop_requested = [] {
    sigset_t pending;
    sigemptyset(&pending);
    return sigpending(&pending) == 0 && (sigismember(&pending, SIGINT) == 1 ||
                                         sigismember(&pending, SIGTERM) == 1);
  };
  absl::StatusOr<fabricdiag::sim::VirtualAgentsResult> r =
      fabricdiag::sim::RunVirtualAgents(o, &std::cout);
  if (!r.ok()) {
    std::cerr << "fabricdiag-sim: virtual agents: " << r.status() << "\n";
    return 2;
  }
  std::cout << absl::StrFormat(
      "virtual agents: %d for %.1fs; values/s acked %.3gM; reports acked "
      "%d of %d (dropped %d); streams rejected %d failed %d handed off %d "
      "failed over %d; %s\n",
      o.nodes, r->seconds, r->values_acked / r->seconds / 1e6, r->reports_acked,
      r->reports_sent, r->reports_dropped, r->streams_rejected,
      r->streams_failed, r->handoffs, r->failovers,
      fabricdiag::sim::LatencySummary(*r));
  if (r->reports_acked == 0) {
    std::cerr << "fabricdiag-sim: the collector at "
              << absl::GetFlag(FLAGS_collector) << " acknowledged no report\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Block the stop signals first: SignalWaiter takes them with sigtimedwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  fabricdiag::InitProgram(
      "fabricdiag-sim",
      "Simulates a GPU fabric: keeps a sysfs tree and `ethtool -S` files for "
      "every node and switch, which fabricdiag-agent reads with "
      "--sysfs_root=OUT/NODE/sys --ethtool_dir=OUT/NODE/ethtool.");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "fabricdiag-sim: unexpected argument: " << rest[1] << "\n";
    return 2;
  }
  const int virtual_agents = absl::GetFlag(FLAGS_virtual_agents);
  if (virtual_agents < 0 || virtual_agents > 100000) {
    std::cerr << "fabricdiag-sim: --virtual_agents must be 0..100000\n";
    return 2;
  }
  if (virtual_agents > 0 && !absl::GetFlag(FLAGS_gnmi_listen).empty()) {
    std::cerr << "fabricdiag-sim: --gnmi_listen: not with --virtual_agents\n";
    return 2;
  }
  if (virtual_agents > 0 &&
      !fabricdiag::IsValidNodeName(
          absl::StrCat(absl::GetFlag(FLAGS_virtual_agent_prefix), "00000"))) {
    std::cerr << "fabricdiag-sim: --virtual_agent_prefix: does not make "
                 "valid node names ("
              << fabricdiag::kNodeNamePattern << ")\n";
    return 2;
  }
  if (virtual_agents > 0) return VirtualAgents(virtual_agents);

  fabricdiag::sim::SimConfig config = InputFlags();
  config.out_dir = absl::GetFlag(FLAGS_out);
  config.interval = absl::GetFlag(FLAGS_interval);
  config.duration = absl::GetFlag(FLAGS_duration);
  config.seed = absl::GetFlag(FLAGS_seed);
  config.ticks = absl::GetFlag(FLAGS_ticks);
  config.gnmi.listen = absl::GetFlag(FLAGS_gnmi_listen);
  config.gnmi.dialect = absl::GetFlag(FLAGS_gnmi_dialect);
  config.gnmi.tls_cert = absl::GetFlag(FLAGS_gnmi_tls_cert);
  config.gnmi.tls_key = absl::GetFlag(FLAGS_gnmi_tls_key);
  config.gnmi.tls_ca = absl::GetFlag(FLAGS_gnmi_tls_ca);
  config.gnmi.credentials_file = absl::GetFlag(FLAGS_gnmi_credentials_file);
  config.gnmi.topology_out = absl::GetFlag(FLAGS_gnmi_topology_out);
  config.gnmi.refresh = absl::GetFlag(FLAGS_gnmi_refresh);
  config.gnmi.pfc_refresh = absl::GetFlag(FLAGS_gnmi_pfc_refresh);
  config.gnmi.overlap = absl::GetFlag(FLAGS_gnmi_overlap);
  for (const std::string& name : absl::GetFlag(FLAGS_gnmi_switches)) {
    if (!name.empty()) config.gnmi.switches.push_back(name);
  }
  fabricdiag::SystemClock clock;
  fabricdiag::sim::SignalWaiter waiter(&clock);
  return fabricdiag::sim::RunSim(config, clock, &waiter, std::cout, std::cerr);
}
