// The agent's /metrics: the latest Snapshot as Prometheus text (exposition
// format 0.0.4).
//
// Names follow fabricdiag_<subsystem>_<name>_<unit>[_total] (docs/metrics.md
// lists every family). Values are exactly what the kernel counted,
// converted to base units (bytes, seconds); a counter the kernel does not
// expose is absent, never 0. Families are sorted by name, series keep
// snapshot order.
//
// Rendering is cheap because almost nothing changes between snapshots: the
// series lines of a snapshot's counters ("name{labels} ") and the family
// headers are prepared once per device scan (when the sources' descriptions
// change), as one text; so are the device, port and agent families for as
// long as their labels stay the same. A render is one pass over the
// prepared text: copy a series' line, format its value straight after it
// (no allocation), into the caller's buffer, which keeps its capacity from
// render to render. Values are printed with the fewest
// digits that read back as the same double (a byte counter of 2^64 prints
// as 1.8446744073709552e+19, as node_exporter does).
//
//   ExpositionRenderer renderer;
//   std::string text;
//   renderer.Render(snapshot, health, &text);
//
//   MetricsPage page;                 // what the HTTP server serves
//   page.Publish(std::make_shared<Snapshot>(snap), health);
//   HttpResponse r = page.Serve(request);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agent/sample.h"
#include "common/http_server.h"

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

// `value` as Prometheus prints a sample value: the shortest text that reads
// back as the same double, in %g style with 16 significant digits as the
// switch to exponent form ("123456789", "0.94", "1e+16", "1e-07",
// "1.8446744073709552e+19"), "NaN", "+Inf", "-Inf".
std::string FormatValue(double value);

// Room FormatValueTo needs: the longest text is 24 bytes
// ("-1.2345678901234567e-308").
inline constexpr size_t kMaxValueTextBytes = 32;

// FormatValue into `out`, which has room for kMaxValueTextBytes; returns the
// length written (no terminating NUL). No allocation.
size_t FormatValueTo(double value, char* out);

namespace internal {
// FormatValue without its shortcut for integers (for tests that hold the
// two equal).
std::string FormatShortest(double value);
size_t FormatShortestTo(double value, char* out);
}  // namespace internal

// Not thread-safe: one renderer per caller (MetricsPage serializes).
class ExpositionRenderer {
 public:
  ExpositionRenderer();
  ~ExpositionRenderer();
  ExpositionRenderer(const ExpositionRenderer&) = delete;
  ExpositionRenderer& operator=(const ExpositionRenderer&) = delete;

  // Replaces *out with the exposition of `snapshot` and `health`.
  void Render(const Snapshot& snapshot, const AgentHealth& health,
              std::string* out);

  // Times the prepared lines were rebuilt (a new or changed set of series).
  uint64_t plans_built() const { return plans_built_; }

 private:
  struct Plan;
  // (Re)builds the prepared text of the families decided per render.
  void PrepareDynamic(const Snapshot& snapshot, const AgentHealth& health);
  std::unique_ptr<Plan> plan_;
  uint64_t plans_built_ = 0;
};

// The most recently published snapshot, served as /metrics. Each published
// snapshot is rendered (and gzip-compressed) at most once, however many
// scrapers ask for it. Thread-safe: Publish() from the sampling thread,
// Serve() from the HTTP server's workers.
class MetricsPage {
 public:
  void Publish(std::shared_ptr<const Snapshot> snapshot, AgentHealth health);
  // 503 until the first snapshot.
  HttpResponse Serve(const HttpRequest& request);

 private:
  std::mutex mu_;
  std::shared_ptr<const Snapshot> snapshot_;
  AgentHealth health_;
  uint64_t generation_ = 0;  // bumped by Publish
  ExpositionRenderer renderer_;
  uint64_t rendered_generation_ = 0;
  std::string text_;
  std::string gzipped_;  // of text_, when a client asked for gzip
};

}  // namespace fabricdiag::agent
