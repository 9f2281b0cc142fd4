#include "agent/agent_runner.h"

#include <utility>

namespace fabricdiag::agent {

AgentRunner::AgentRunner(Snapshotter* snapshotter, MetricsPage* page,
                         SnapshotSink* sink, const Clock& clock,
                         std::string version)
    : snapshotter_(snapshotter),
      page_(page),
      sink_(sink),
      clock_(clock),
      version_(std::move(version)) {}

std::shared_ptr<const Snapshot> AgentRunner::Tick() {
  const int64_t start = clock_.MonotonicNanos();
  Snapshot taken = snapshotter_->Take();
  if (lldp_) taken.lldp = lldp_(taken.netdevs);
  auto snapshot = std::make_shared<const Snapshot>(std::move(taken));
  const std::vector<SampleRate> rates = rates_.Update(*snapshot);
  ++snapshots_;
  if (sink_ != nullptr) sink_->Consume(*snapshot, rates);
  if (page_ != nullptr) {
    AgentHealth health;
    health.version = version_;
    health.snapshots = snapshots_;
    health.snapshot_duration =
        absl::Nanoseconds(clock_.MonotonicNanos() - start);
    health.counter_resets = rates_.resets();
    health.counter_wraps = rates_.wraps();
    health.rates_above_line_rate = rates_.above_line_rate();
    if (sink_ != nullptr) health.stream = sink_->Health();
    if (http_stats_) health.http = http_stats_();
    page_->Publish(snapshot, std::move(health));
  }
  return snapshot;
}

}  // namespace fabricdiag::agent
