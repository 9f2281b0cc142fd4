// The collector stream as a SnapshotSink: encodes each snapshot into the
// compact ingest format and queues it on the StreamClient, which never
// blocks the sampling thread.
//
//   ASSIGN_OR_RETURN(auto client, StreamClient::Create(options, clock));
//   StreamSink sink(std::move(client));
//   sink.Start();
//   AgentRunner runner(&snapshotter, &page, &sink, clock, version);
//
// Consume() is called from the sampling thread; Health() from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "agent/agent_runner.h"
#include "agent/report_encoder.h"
#include "agent/stream_client.h"

namespace fabricdiag::agent {

class StreamSink final : public SnapshotSink {
 public:
  explicit StreamSink(std::unique_ptr<StreamClient> client);
  ~StreamSink() override;

  void Start() { client_->Start(); }
  void Stop() { client_->Stop(); }

  void Consume(const Snapshot& snapshot,
               const std::vector<SampleRate>& rates) override;
  AgentHealth::Stream Health() const override;

  // Snapshots that could not be encoded (logged once each time the error
  // changes).
  uint64_t encode_errors() const { return encode_errors_.load(); }

 private:
  std::unique_ptr<StreamClient> client_;
  ReportEncoder encoder_;
  std::atomic<uint64_t> encode_errors_{0};
  std::string last_error_;
};

}  // namespace fabricdiag::agent
