#include "agent/metrics_page.h"

#include <utility>

#include "absl/status/statusor.h"
#include "common/gzip.h"

namespace fabricdiag::agent {

void MetricsPage::Publish(std::shared_ptr<const Snapshot> snapshot,
                          AgentHealth health) {
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_ = std::move(snapshot);
  health_ = std::move(health);
  ++generation_;
}

HttpResponse MetricsPage::Serve(const HttpRequest& request) {
  HttpResponse r;
  std::lock_guard<std::mutex> lock(mu_);
  if (snapshot_ == nullptr) {
    r.status = 503;
    r.body = "no snapshot yet: the agent is starting\n";
    r.compressible = false;
    return r;
  }
  if (rendered_generation_ != generation_) {
    renderer_.Render(*snapshot_, health_, &text_);
    gzipped_.clear();
    rendered_generation_ = generation_;
  }
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  if (request.accepts_gzip) {
    if (gzipped_.empty()) {
      absl::StatusOr<std::string> z = GzipCompress(text_);
      if (z.ok()) gzipped_ = *std::move(z);
    }
    r.gzip_body = gzipped_;
  }
  r.body = text_;
  return r;
}

}  // namespace fabricdiag::agent
