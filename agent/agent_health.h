// What the agent knows about itself (snapshots, counter resets, the stream
// to the collector, its HTTP server), exported on /metrics next to the
// counters (agent/dynamic_families.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "common/http_server.h"

namespace fabricdiag::agent {

// The agent's view of itself, exported next to the counters.
struct AgentHealth {
  std::string version;
  uint64_t snapshots = 0;            // snapshots taken since start
  absl::Duration snapshot_duration;  // wall time of the last snapshot
  uint64_t counter_resets = 0;       // counters that went backwards (not wraps)
  uint64_t counter_wraps = 0;
  uint64_t rates_above_line_rate = 0;  // byte rates the port cannot carry
  struct Stream {
    bool connected = false;
    uint64_t buffered = 0;        // reports waiting for the collector's ack
    uint64_t buffered_bytes = 0;  // their memory
    uint64_t dropped = 0;         // reports lost to buffer overflow
    uint64_t sent = 0;
    uint64_t reconnects = 0;
    std::string collector;   // HOST:PORT streamed to (or being tried)
    uint64_t failovers = 0;  // moves to another collector of the list
    uint64_t handoffs = 0;   // moves a collector asked for (Handoff)
  };
  std::optional<Stream> stream;  // absent when no collector is configured
  // The /metrics server's own counters; absent in --once and in tests.
  std::optional<HttpServer::Stats> http;
};

}  // namespace fabricdiag::agent
