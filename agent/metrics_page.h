// The agent's /metrics page: the most recently published snapshot, rendered
// by agent/exposition.h, served plain or gzip-compressed.
//
//   MetricsPage page;                 // what the HTTP server serves
//   page.Publish(std::make_shared<Snapshot>(snap), health);
//   HttpResponse r = page.Serve(request);
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "agent/agent_health.h"
#include "agent/exposition.h"
#include "agent/sample.h"
#include "common/http_server.h"

namespace fabricdiag::agent {

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
