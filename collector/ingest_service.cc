#include "collector/ingest_service.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace fabricdiag::collector {
namespace {

using Reactor = grpc::ServerBidiReactor<v1::AgentMessage, v1::CollectorMessage>;

// One agent stream. Reads are serialised by the callback API (one StartRead
// at a time), so only the reader touches the session; the write state is
// shared with OnWriteDone and guarded by `mu_`.
class StreamReactor final : public Reactor {
 public:
  StreamReactor(SeriesStore* store, IngestCounters* counters)
      : session_(store, counters) {
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The agent half-closed, or the stream broke or was cancelled.
      std::lock_guard<std::mutex> lock(mu_);
      reads_done_ = true;
      MaybeFinishLocked();
      return;
    }
    IngestSession::Reply reply = session_.Handle(in_);
    std::lock_guard<std::mutex> lock(mu_);
    if (reply.reject.has_value()) {
      // No further reads: the stream ends with the Reject.
      reject_ = std::move(*reply.reject);
      reads_done_ = true;
      if (!writing_) WriteRejectLocked();
      return;
    }
    if (reply.ack.has_value()) {
      pending_ack_ =
          has_pending_ack_ ? std::max(pending_ack_, *reply.ack) : *reply.ack;
      has_pending_ack_ = true;
      if (!writing_) WriteAckLocked();
    }
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      // The stream is gone; the pending read fails too and finishes it.
      has_pending_ack_ = false;
      MaybeFinishLocked();
      return;
    }
    if (!reject_.empty()) {
      WriteRejectLocked();
    } else if (has_pending_ack_) {
      WriteAckLocked();
    } else {
      MaybeFinishLocked();
    }
  }

  void OnDone() override { delete this; }

 private:
  void WriteAckLocked() {
    out_.mutable_ack()->set_seq(pending_ack_);
    has_pending_ack_ = false;
    writing_ = true;
    StartWrite(&out_);
  }

  void WriteRejectLocked() {
    if (finished_) return;
    finished_ = true;
    out_.mutable_reject()->set_reason(reject_);
    StartWriteAndFinish(&out_, grpc::WriteOptions(),
                        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                     absl::StrCat("rejected: ", reject_)));
  }

  void MaybeFinishLocked() {
    if (finished_ || writing_ || !reads_done_) return;
    finished_ = true;
    Finish(grpc::Status::OK);
  }

  IngestSession session_;
  v1::AgentMessage in_;

  std::mutex mu_;
  v1::CollectorMessage out_;  // stable until OnWriteDone
  bool writing_ = false;
  bool reads_done_ = false;
  bool finished_ = false;
  bool has_pending_ack_ = false;
  uint64_t pending_ack_ = 0;
  std::string reject_;
};

}  // namespace

grpc::ServerBidiReactor<v1::AgentMessage, v1::CollectorMessage>*
IngestService::Stream(grpc::CallbackServerContext* /*context*/) {
  return new StreamReactor(store_, counters_);
}

}  // namespace fabricdiag::collector
