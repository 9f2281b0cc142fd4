// Turns the latest Snapshot into Prometheus metric families.
//
// Names follow fabricdiag_<subsystem>_<name>_<unit>[_total] (INTERFACES.md
// fixes the RDMA byte counters and the PFC families). Values are exactly
// what the kernel counted, converted to base units (bytes, seconds); a
// counter the kernel does not expose is absent, never 0. Absolute hardware
// counters are exported as-is through a Collectable rather than through
// prometheus::Counter, which can only be incremented.
//
//   auto collectable = std::make_shared<SnapshotCollectable>();
//   exposer.RegisterCollectable(collectable);
//   collectable->Publish(std::make_shared<Snapshot>(snap), health);
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agent/sample.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace fabricdiag::agent {

// The agent's view of itself, exported next to the counters.
struct AgentHealth {
  std::string version;
  uint64_t snapshots = 0;            // snapshots taken since start
  absl::Duration snapshot_duration;  // wall time of the last snapshot
  uint64_t counter_resets = 0;       // counters that went backwards (not wraps)
  uint64_t counter_wraps = 0;
  struct Stream {
    bool connected = false;
    uint64_t buffered = 0;  // reports waiting for the collector's ack
    uint64_t dropped = 0;   // reports lost to buffer overflow
    uint64_t sent = 0;
    uint64_t reconnects = 0;
  };
  std::optional<Stream> stream;  // absent when no collector is configured
};

// Pure conversion; families are sorted by name, metrics keep snapshot order.
std::vector<prometheus::MetricFamily> SnapshotToFamilies(
    const Snapshot& snapshot, const AgentHealth& health);

// Serves the most recently published snapshot. Thread-safe: Publish() from
// the sampling thread, Collect() from the HTTP server's threads.
class SnapshotCollectable final : public prometheus::Collectable {
 public:
  void Publish(std::shared_ptr<const Snapshot> snapshot, AgentHealth health);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Snapshot> snapshot_;
  AgentHealth health_;
};

}  // namespace fabricdiag::agent
