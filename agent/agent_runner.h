// One sampling step of the agent: snapshot, rates, publish, stream.
//
// The main loop calls Tick() once per interval. The runner owns nothing that
// touches the network: the exporter serves what Tick() published, and the
// optional sink (the collector stream) receives each snapshot with its rates
// and must not block.
//
//   AgentRunner runner(&snapshotter, &page, sink.get(), clock, kVersion);
//   for (;;) { runner.Tick(); WaitForNextTick(); }
//
// Not thread-safe: Tick() is called from one thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_health.h"
#include "agent/metrics_page.h"
#include "agent/rate.h"
#include "agent/sample.h"
#include "agent/snapshotter.h"
#include "common/clock.h"
#include "common/http_server.h"

namespace fabricdiag::agent {

// Where snapshots go after the exporter (the collector stream).
class SnapshotSink {
 public:
  virtual ~SnapshotSink() = default;
  // Must return promptly: called on the sampling thread.
  virtual void Consume(const Snapshot& snapshot,
                       const std::vector<SampleRate>& rates) = 0;
  virtual AgentHealth::Stream Health() const = 0;
};

class AgentRunner {
 public:
  // `page` and `sink` may be null; both must outlive the runner.
  AgentRunner(Snapshotter* snapshotter, MetricsPage* page, SnapshotSink* sink,
              const Clock& clock, std::string version);

  // Where the health of the /metrics server comes from (null: none).
  void set_http_stats(std::function<HttpServer::Stats()> stats) {
    http_stats_ = std::move(stats);
  }

  // Where each snapshot's LLDP state comes from, given its netdevs (an
  // LldpMonitor's Update; none: the snapshot has no LLDP state).
  using LldpFn = std::function<std::shared_ptr<const LldpState>(
      const std::vector<NetdevInfo>&)>;
  void set_lldp(LldpFn lldp) { lldp_ = std::move(lldp); }

  // Takes and publishes one snapshot; returns it.
  std::shared_ptr<const Snapshot> Tick();

  const RateCalculator& rates() const { return rates_; }

 private:
  Snapshotter* snapshotter_;
  MetricsPage* page_;
  SnapshotSink* sink_;
  const Clock& clock_;
  std::string version_;
  RateCalculator rates_;
  std::function<HttpServer::Stats()> http_stats_;
  LldpFn lldp_;
  uint64_t snapshots_ = 0;
};

}  // namespace fabricdiag::agent
