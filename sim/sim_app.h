// fabricdiag-sim: configuration, loading of the layout/topology/scenario
// files, the simulation (model + counters + tree) and the run loop, kept
// out of sim_main.cc so that tests drive them with a fake clock.
//
//   SimConfig config;                        // from flags
//   RETURN_IF_ERROR(ValidateSimConfig(config));           // exit 2
//   ASSIGN_OR_RETURN(auto sim, Simulation::Create(config)); // exit 2
//   for (int i = 0; i < 10; ++i) RETURN_IF_ERROR(sim->Tick(1.0, &std::cout));
//
//   // or the whole process: until --duration, --ticks or SIGINT/SIGTERM
//   int code = RunSim(config, SystemClock(), &signal_waiter, std::cout,
//                     std::cerr);
//
// Phase changes of the scenario are printed on the phase stream, one line
// each: "t=20s hot_expert gpu-003 mlx5_2 starts".
//
// With config.gnmi.listen, every switch is a gNMI target instead of a tree
// (sim/gnmi_fleet.h): RunSim prints one line per switch on `err`,
// "fabricdiag-sim: gnmi target leaf-0 (openconfig) listening on
// 127.0.0.1:40123", after writing --gnmi_topology_out.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "sim/counter_model.h"
#include "sim/fabric.h"
#include "sim/gnmi_fleet.h"
#include "sim/lldp.h"
#include "sim/port_counters.h"
#include "sim/scenario.h"
#include "sim/tree_writer.h"

namespace fabricdiag::sim {

struct SimConfig {
  std::vector<std::string> layout_files;  // --layout
  std::string topology_file;              // --topology; optional
  std::string scenario_file;              // --scenario; optional
  std::string out_dir;                    // --out
  absl::Duration interval = absl::Seconds(1);
  absl::Duration duration = absl::ZeroDuration();  // 0: until a signal
  uint64_t seed = 1;
  int64_t ticks = 0;  // > 0: that many ticks of `interval`, at full speed
  GnmiFlags gnmi;     // --gnmi_*; gnmi.listen empty: no gNMI targets
  // Wall-clock time of simulated time 0 (gNMI timestamps and boot times);
  // InfinitePast: absl::Now() when the simulation is created.
  absl::Time start_time = absl::InfinitePast();
};

// Flags alone (no file access): the message names the flag.
absl::Status ValidateSimConfig(const SimConfig& config);

// What the layout, topology and scenario files describe, every file read
// and checked (errors name the file and the field, as Simulation::Create's).
struct SimInputs {
  std::unique_ptr<Fabric> fabric;
  Scenario scenario;
};
absl::StatusOr<SimInputs> LoadSimInputs(const SimConfig& config);

class Simulation {
 public:
  // Reads and checks every file (errors name the file and the field:
  // "bad.yaml: faults[0].kind: unknown kind ..."), builds the fabric and
  // writes the initial tree (every counter 0).
  static absl::StatusOr<std::unique_ptr<Simulation>> Create(
      const SimConfig& config);

  // Advances simulated time by `dt` seconds with the rates of the faults
  // active now, and rewrites the tree. Prints phase changes to `phases`
  // (may be null).
  absl::Status Tick(double dt, std::ostream* phases);

  double now_seconds() const { return now_; }
  const Fabric& fabric() const { return *fabric_; }
  const CounterModel& model() const { return *model_; }
  const TreeWriter& writer() const { return *writer_; }
  const std::vector<PortCounters>& nic_counters() const { return nics_; }
  const std::vector<PortCounters>& port_counters() const { return ports_; }
  // The switches' gNMI targets; null without config.gnmi.listen.
  const GnmiFleet* gnmi() const { return gnmi_.get(); }

 private:
  Simulation() = default;

  // switch_reload: the switch's ports restart from 0, its boot time is now.
  void Reload(const Fault& fault);
  // Every switch's state to its gNMI target (no-op without targets).
  void PublishGnmi();

  std::unique_ptr<Fabric> fabric_;
  std::unique_ptr<CounterModel> model_;
  std::unique_ptr<TreeWriter> writer_;
  std::vector<PortCounters> nics_;
  std::vector<PortCounters> ports_;
  std::unique_ptr<GnmiFleet> gnmi_;
  std::vector<bool> fault_active_;
  std::vector<int64_t> boot_nanos_;  // per switch
  int64_t start_nanos_ = 0;
  double now_ = 0;
};

// Blocks until a monotonic deadline; the real one also returns early, with
// true, on SIGINT/SIGTERM.
class Waiter {
 public:
  virtual ~Waiter() = default;
  // True when the run should stop.
  virtual bool WaitUntil(int64_t monotonic_nanos) = 0;
};

// Waits with sigtimedwait(2) for SIGINT/SIGTERM, which the caller must have
// blocked in every thread (sim_main.cc blocks them first thing).
class SignalWaiter final : public Waiter {
 public:
  explicit SignalWaiter(const Clock* clock) : clock_(clock) {}
  bool WaitUntil(int64_t monotonic_nanos) override;

 private:
  const Clock* clock_;
};

// The process: 0 after --ticks, --duration or a signal; 2 on invalid
// flags or files (message on `err`); 1 when the tree cannot be written.
int RunSim(const SimConfig& config, const Clock& clock, Waiter* waiter,
           std::ostream& out, std::ostream& err);

}  // namespace fabricdiag::sim
