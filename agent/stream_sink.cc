#include "agent/stream_sink.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace fabricdiag::agent {

StreamSink::StreamSink(std::unique_ptr<StreamClient> client)
    : client_(std::move(client)) {}

StreamSink::~StreamSink() { client_->Stop(); }

void StreamSink::Consume(const Snapshot& snapshot,
                         const std::vector<SampleRate>& rates) {
  absl::StatusOr<EncodedReport> encoded = encoder_.Encode(snapshot, rates);
  if (!encoded.ok()) {
    ++encode_errors_;
    std::string error = encoded.status().ToString();
    if (error != last_error_) {
      LogError(
          absl::StrCat("cannot encode snapshot for the collector: ", error));
      last_error_ = std::move(error);
    }
    return;
  }
  last_error_.clear();
  client_->Enqueue(*std::move(encoded));
}

AgentHealth::Stream StreamSink::Health() const {
  StreamClient::Stats stats = client_->stats();
  AgentHealth::Stream health;
  health.connected = stats.connected;
  health.buffered = stats.buffered;
  health.buffered_bytes = stats.buffered_bytes;
  health.dropped = stats.dropped;
  health.sent = stats.sent;
  health.reconnects = stats.reconnects;
  health.collector = std::move(stats.target);
  health.failovers = stats.failovers;
  health.handoffs = stats.handoffs;
  return health;
}

}  // namespace fabricdiag::agent
