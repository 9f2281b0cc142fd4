// fabricdiag-sim: flags -> SimConfig -> RunSim. See sim/sim_app.h.
#include <signal.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "sim/sim_app.h"

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
          "Tick: how often every counter file is rewritten");
ABSL_FLAG(absl::Duration, duration, absl::ZeroDuration(),
          "How long to run; 0 = until SIGINT/SIGTERM");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the traffic skew and noise");
ABSL_FLAG(int64_t, ticks, 0,
          "Run this many ticks of --interval as fast as possible, then exit");

int main(int argc, char** argv) {
  // Block the stop signals first: SignalWaiter takes them with sigtimedwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::SetProgramUsageMessage(
      "Simulates a GPU fabric: keeps a sysfs tree and `ethtool -S` files for "
      "every node and switch, which fabricdiag-agent reads with "
      "--sysfs_root=OUT/NODE/sys --ethtool_dir=OUT/NODE/ethtool.");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "fabricdiag-sim: unexpected argument: " << rest[1] << "\n";
    return 2;
  }
  fabricdiag::sim::SimConfig config;
  for (absl::string_view f :
       absl::StrSplit(absl::GetFlag(FLAGS_layout), ',', absl::SkipEmpty())) {
    config.layout_files.emplace_back(f);
  }
  config.topology_file = absl::GetFlag(FLAGS_topology);
  config.scenario_file = absl::GetFlag(FLAGS_scenario);
  config.out_dir = absl::GetFlag(FLAGS_out);
  config.interval = absl::GetFlag(FLAGS_interval);
  config.duration = absl::GetFlag(FLAGS_duration);
  config.seed = absl::GetFlag(FLAGS_seed);
  config.ticks = absl::GetFlag(FLAGS_ticks);
  fabricdiag::SystemClock clock;
  fabricdiag::sim::SignalWaiter waiter(&clock);
  return fabricdiag::sim::RunSim(config, clock, &waiter, std::cout, std::cerr);
}
