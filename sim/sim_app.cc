#include "sim/sim_app.h"

#include <signal.h>

#include <cerrno>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"

namespace fabricdiag::sim {
namespace {

// At most `max_bytes` (the parser of that kind of file bounds it again).
absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", strerror(errno)));
  }
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": larger than ", max_bytes, " bytes"));
    }
  }
  return text;
}

// "path: message", keeping the code.
absl::Status InFile(const std::string& path, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(path, ": ", status.message()));
}

// 20 -> "20", 20.25 -> "20.25" (milliseconds at most).
std::string SecondsText(double t) {
  return absl::StrFormat("%g", std::round(t * 1000) / 1000);
}

}  // namespace

absl::Status ValidateSimConfig(const SimConfig& config) {
  if (config.out_dir.empty()) {
    return absl::InvalidArgumentError("--out: required");
  }
  if (config.layout_files.empty() && config.topology_file.empty()) {
    return absl::InvalidArgumentError(
        "--layout: at least one layout (or a --topology) is required");
  }
  if (config.interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--interval: must be greater than 0");
  }
  if (config.duration < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--duration: must not be negative");
  }
  if (config.ticks < 0) {
    return absl::InvalidArgumentError("--ticks: must not be negative");
  }
  return ValidateGnmiFlags(config.gnmi, !config.topology_file.empty());
}

absl::StatusOr<SimInputs> LoadSimInputs(const SimConfig& config) {
  std::vector<analysis::LayoutModel> layouts;
  for (const std::string& path : config.layout_files) {
    absl::StatusOr<std::string> text =
        ReadFile(path, analysis::kMaxDocumentBytes);
    if (!text.ok()) return text.status();
    absl::StatusOr<v1::Layout> proto = analysis::ParseLayout(*text);
    if (!proto.ok()) return InFile(path, proto.status());
    absl::StatusOr<analysis::LayoutModel> model =
        analysis::LayoutModel::Build(*proto);
    if (!model.ok()) return InFile(path, model.status());
    layouts.push_back(*std::move(model));
  }
  v1::Topology topology;
  if (!config.topology_file.empty()) {
    absl::StatusOr<std::string> text =
        ReadFile(config.topology_file, analysis::kMaxTopologyBytes);
    if (!text.ok()) return text.status();
    absl::StatusOr<v1::Topology> parsed = analysis::ParseTopology(*text);
    if (!parsed.ok()) return InFile(config.topology_file, parsed.status());
    topology = *std::move(parsed);
  }
  Scenario scenario;
  if (!config.scenario_file.empty()) {
    absl::StatusOr<std::string> text =
        ReadFile(config.scenario_file, analysis::kMaxDocumentBytes);
    if (!text.ok()) return text.status();
    absl::StatusOr<Scenario> parsed = ParseScenario(*text);
    if (!parsed.ok()) return InFile(config.scenario_file, parsed.status());
    scenario = *std::move(parsed);
  }
  absl::StatusOr<Fabric> fabric = Fabric::Build(std::move(layouts), topology);
  if (!fabric.ok()) return fabric.status();
  SimInputs inputs;
  inputs.fabric = std::make_unique<Fabric>(*std::move(fabric));
  if (absl::Status st = ValidateScenarioNames(scenario, *inputs.fabric);
      !st.ok()) {
    return InFile(config.scenario_file, st);
  }
  inputs.scenario = std::move(scenario);
  return inputs;
}

absl::StatusOr<std::unique_ptr<Simulation>> Simulation::Create(
    const SimConfig& config) {
  absl::StatusOr<SimInputs> inputs = LoadSimInputs(config);
  if (!inputs.ok()) return inputs.status();
  std::unique_ptr<Simulation> sim(new Simulation());
  sim->fabric_ = std::move(inputs->fabric);
  Scenario scenario = std::move(inputs->scenario);
  sim->fault_active_.assign(scenario.faults.size(), false);
  absl::StatusOr<CounterModel> model = CounterModel::Create(
      sim->fabric_.get(), std::move(scenario), config.seed);
  if (!model.ok()) return model.status();
  sim->model_ = std::make_unique<CounterModel>(*std::move(model));
  std::vector<bool> switch_trees;
  for (const SimNode& sw : sim->fabric_->switches()) {
    switch_trees.push_back(!config.gnmi.Serves(sw.name));
  }
  absl::StatusOr<std::unique_ptr<TreeWriter>> writer = TreeWriter::Create(
      config.out_dir, sim->fabric_.get(), std::move(switch_trees));
  if (!writer.ok()) return writer.status();
  sim->writer_ = *std::move(writer);
  sim->nics_.resize(sim->fabric_->nics().size());
  sim->ports_.resize(sim->fabric_->ports().size());
  absl::Status st = sim->writer_->Write(sim->nics_, sim->ports_);
  if (st.ok()) {
    st = sim->writer_->WriteLldp(
        CablingAt(*sim->fabric_, sim->model_->scenario().faults, 0));
  }
  if (!st.ok()) return st;
  const absl::Time start = config.start_time == absl::InfinitePast()
                               ? absl::Now()
                               : config.start_time;
  sim->start_nanos_ = absl::ToUnixNanos(start);
  sim->boot_nanos_.assign(sim->fabric_->switches().size(), sim->start_nanos_);
  if (config.gnmi.enabled()) {
    absl::StatusOr<std::unique_ptr<GnmiFleet>> fleet =
        GnmiFleet::Start(config.gnmi, sim->fabric_.get());
    if (!fleet.ok()) return fleet.status();
    sim->gnmi_ = *std::move(fleet);
    sim->PublishGnmi();
    if (!config.gnmi.topology_out.empty()) {
      st = sim->gnmi_->WriteTopology(config.gnmi.topology_out);
      if (!st.ok()) return st;
    }
  }
  return sim;
}

absl::Status Simulation::Tick(double dt, std::ostream* phases) {
  const std::vector<Fault>& faults = model_->scenario().faults;
  for (size_t i = 0; i < faults.size(); ++i) {
    const bool active = faults[i].ActiveAt(now_);
    if (active != fault_active_[i] && phases != nullptr) {
      *phases << "t=" << SecondsText(now_) << "s " << faults[i].Describe()
              << (active ? " starts" : " ends") << std::endl;
    }
    if (active && !fault_active_[i] &&
        faults[i].kind == FaultKind::kSwitchReload) {
      Reload(faults[i]);
    }
    fault_active_[i] = active;
  }
  // The cables as the phase lines above say, before time moves on.
  const Cabling cabling = CablingAt(*fabric_, faults, now_);
  FabricRates rates = model_->RatesAt(now_, dt);
  for (size_t i = 0; i < nics_.size(); ++i) {
    Accumulate(rates.nics[i], dt, &nics_[i]);
  }
  for (size_t p = 0; p < ports_.size(); ++p) {
    Accumulate(rates.ports[p], dt, &ports_[p]);
  }
  now_ += dt;
  PublishGnmi();
  absl::Status st = writer_->Write(nics_, ports_);
  if (!st.ok()) return st;
  return writer_->WriteLldp(cabling);
}

void Simulation::Reload(const Fault& fault) {
  const std::optional<size_t> s = fabric_->FindSwitch(fault.switch_name);
  if (!s) return;  // ValidateScenarioNames checked it
  for (size_t p : fabric_->switches()[*s].members) {
    const PortCounters before = ports_[p];
    ports_[p] = PortCounters();
    ports_[p].link_up = before.link_up;
    ports_[p].present = before.present;
    ports_[p].speed_gbps = before.speed_gbps;
  }
  boot_nanos_[*s] = start_nanos_ + static_cast<int64_t>(now_ * 1e9);
}

void Simulation::PublishGnmi() {
  if (gnmi_ == nullptr) return;
  std::vector<bool> available(fabric_->switches().size(), true);
  const std::vector<Fault>& faults = model_->scenario().faults;
  for (size_t i = 0; i < faults.size(); ++i) {
    if (!fault_active_[i] || (faults[i].kind != FaultKind::kGnmiOutage &&
                              faults[i].kind != FaultKind::kSwitchReload)) {
      continue;
    }
    if (std::optional<size_t> s = fabric_->FindSwitch(faults[i].switch_name)) {
      available[*s] = false;
    }
  }
  gnmi_->Publish(ports_, start_nanos_ + static_cast<int64_t>(now_ * 1e9),
                 boot_nanos_, available);
}

bool SignalWaiter::WaitUntil(int64_t monotonic_nanos) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  while (true) {
    const int64_t left = monotonic_nanos - clock_->MonotonicNanos();
    if (left <= 0) {
      // Late (a tick took longer than the interval): still notice a stop
      // signal, or a simulation that never catches up never stops.
      timespec now{0, 0};
      const int signo = sigtimedwait(&signals, nullptr, &now);
      return signo == SIGINT || signo == SIGTERM;
    }
    timespec ts;
    ts.tv_sec = static_cast<time_t>(left / 1000000000);
    ts.tv_nsec = static_cast<long>(left % 1000000000);
    const int signo = sigtimedwait(&signals, nullptr, &ts);
    if (signo == SIGINT || signo == SIGTERM) return true;
    // EAGAIN: the deadline passed; EINTR: another signal; loop re-checks.
  }
}

int RunSim(const SimConfig& config, const Clock& clock, Waiter* waiter,
           std::ostream& out, std::ostream& err) {
  if (absl::Status st = ValidateSimConfig(config); !st.ok()) {
    err << "fabricdiag-sim: " << st.message() << "\n";
    return 2;
  }
  absl::StatusOr<std::unique_ptr<Simulation>> sim = Simulation::Create(config);
  if (!sim.ok()) {
    err << "fabricdiag-sim: " << sim.status().message() << "\n";
    const bool io = sim.status().code() == absl::StatusCode::kInternal ||
                    sim.status().code() == absl::StatusCode::kPermissionDenied;
    return io ? 1 : 2;
  }
  Simulation& s = **sim;
  const double step = absl::ToDoubleSeconds(config.interval);
  err << "fabricdiag-sim: " << s.fabric().hosts().size() << " hosts ("
      << s.fabric().nics().size() << " NICs), " << s.fabric().switches().size()
      << " switches (" << s.fabric().ports().size() << " ports) under "
      << config.out_dir << "\n";
  if (const GnmiFleet* fleet = s.gnmi(); fleet != nullptr) {
    for (const std::unique_ptr<GnmiTarget>& t : fleet->targets()) {
      err << "fabricdiag-sim: gnmi target " << t->switch_name() << " ("
          << gnmi::DialectName(t->dialect()) << ") listening on "
          << t->address() << std::endl;
    }
  }
  auto fail = [&err](const absl::Status& st) {
    err << "fabricdiag-sim: " << st.message() << "\n";
    return 1;
  };
  if (config.ticks > 0) {
    for (int64_t i = 0; i < config.ticks; ++i) {
      if (absl::Status st = s.Tick(step, &out); !st.ok()) return fail(st);
    }
    return 0;
  }
  const double limit = absl::ToDoubleSeconds(config.duration);
  const int64_t start = clock.MonotonicNanos();
  // Where t=0 of the phase lines is on the wall clock: with it, a test or a
  // user places every "t=...s" line (and so every fault) on other logs.
  err << "fabricdiag-sim: t=0 at "
      << absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", clock.Now(),
                          absl::UTCTimeZone())
      << absl::StrFormat(" (unix %.3f)",
                         absl::ToDoubleSeconds(clock.Now() - absl::UnixEpoch()))
      << std::endl;
  // Ticks half an interval past the wall clock's grid (NextGridTick),
  // where agents with the same interval read: a tick written at the
  // instant they read would be seen by some of them and missed by others,
  // whose rates for that read would be 0 and twice the truth.
  const absl::Duration tick_offset = config.interval / 2;
  while (true) {
    const int64_t next = NextGridTick(clock.MonotonicNanos(), clock.Now(),
                                      config.interval, tick_offset);
    if (waiter->WaitUntil(next)) break;
    // Counters advance by the time that really passed (a late tick carries
    // more), so their rates stay right whatever the scheduling.
    double now = static_cast<double>(clock.MonotonicNanos() - start) / 1e9;
    if (limit > 0) now = std::min(now, limit);
    if (absl::Status st = s.Tick(now - s.now_seconds(), &out); !st.ok()) {
      return fail(st);
    }
    if (limit > 0 && s.now_seconds() >= limit) break;
  }
  return 0;
}

}  // namespace fabricdiag::sim
