#include "collector/ingest/ingest_service.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collector/ingest/inbound_message.h"
#include "common/bearer_token.h"

namespace fabricdiag::collector {
namespace {

// One agent stream, or the request for the next one. Every operation of a
// call goes to the queue it was requested on, so every handler runs on that
// queue's thread: no lock. The object deletes itself when no operation is
// outstanding any more (finished, cancelled, or the queue closing).
class StreamCall {
 public:
  StreamCall(v1::Ingest::AsyncService* service, grpc::ServerCompletionQueue* cq,
             CqGate* gate, SeriesStore* store, IngestCounters* counters,
             const IngestAuth* auth, IngestPlacement& placement,
             NodeFactsIntake facts)
      : service_(service),
        cq_(cq),
        gate_(gate),
        store_(store),
        counters_(counters),
        auth_(auth),
        placement_(placement),
        facts_(facts),
        session_(store, counters, placement, facts) {}

  ~StreamCall() {
    counters_->read_buffer_bytes.fetch_sub(kept_, std::memory_order_relaxed);
  }

  // Waits for the next agent on the queue; deletes itself if it cannot.
  void Request() {
    Start([&] {
      service_->RequestStream(&context_, &stream_, cq_, cq_, &accepted_);
    });
    DeleteIfIdle();
  }

 private:
  // A tag that calls back into the call; one per kind of operation, since
  // a read and a write may be outstanding at once.
  template <void (StreamCall::*kHandler)(bool)>
  class Tag final : public CqTag {
   public:
    explicit Tag(StreamCall* call) : call_(call) {}
    void Proceed(bool ok) override {
      --call_->ops_;
      (call_->*kHandler)(ok);
      call_->DeleteIfIdle();
    }

   private:
    StreamCall* const call_;
  };

  template <typename F>
  void Start(F&& start) {
    if (gate_->Start(start)) ++ops_;
  }

  void DeleteIfIdle() {
    if (ops_ == 0) delete this;
  }

  void OnAccepted(bool ok) {
    if (!ok) return;  // the server is shutting down
    // Keep one request pending on this queue for the next agent.
    (new StreamCall(service_, cq_, gate_, store_, counters_, auth_, placement_,
                    facts_))
        ->Request();
    session_.set_peer(context_.peer());
    if (!auth_->token.empty() && !Authorized()) {
      counters_->Reject(RejectReason::kUnauthenticated, context_.peer(),
                        "no or a wrong ingest token");
      finished_ = true;
      Start([&] {
        stream_.Finish(
            grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                         "this collector needs an ingest token (the agent's "
                         "--ingest_token_file); none or a wrong one was sent"),
            &finished_tag_);
      });
      return;
    }
    if (auth_->match_certificate) {
      session_.set_peer_identities(CertificateNames());
    }
    StartRead();
  }

  bool Authorized() const {
    const auto& metadata = context_.client_metadata();
    auto it = metadata.find("authorization");
    return it != metadata.end() &&
           BearerTokenMatches(
               absl::string_view(it->second.data(), it->second.size()),
               auth_->token);
  }

  // The client certificate's CN and DNS subject alternative names.
  std::vector<std::string> CertificateNames() const {
    std::vector<std::string> names;
    std::shared_ptr<const grpc::AuthContext> auth = context_.auth_context();
    if (auth == nullptr) return names;
    for (const char* property :
         {"x509_common_name", "x509_subject_alternative_name"}) {
      for (const grpc::string_ref& v : auth->FindPropertyValues(property)) {
        names.emplace_back(v.data(), v.size());
      }
    }
    return names;
  }

  void StartRead() {
    Start([&] { stream_.Read(in_.get(), &read_); });
  }

  void OnRead(bool ok) {
    if (!ok) {
      // The agent half-closed, or the stream broke or was cancelled.
      reads_done_ = true;
      MaybeFinish();
      return;
    }
    IngestSession::Reply reply = session_.Handle(*in_.get());
    in_.Handled();
    const auto kept = static_cast<int64_t>(in_.held_bytes());
    counters_->read_buffer_bytes.fetch_add(kept - kept_,
                                           std::memory_order_relaxed);
    kept_ = kept;
    if (reply.reject.has_value() || reply.handoff.has_value()) {
      // No further reads: the stream ends with the Reject or Handoff.
      if (reply.reject.has_value()) {
        final_.mutable_reject()->set_reason(*reply.reject);
        final_status_ = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                     absl::StrCat("rejected: ", *reply.reject));
      } else {
        final_.mutable_handoff()->set_reason(*reply.handoff);
        final_.mutable_handoff()->set_target(reply.handoff_target);
        final_status_ =
            grpc::Status(grpc::StatusCode::UNAVAILABLE,
                         absl::StrCat("handed off: ", *reply.handoff));
      }
      has_final_ = true;
      reads_done_ = true;
      if (!writing_) WriteFinal();
      return;
    }
    if (reply.ack.has_value()) {
      pending_ack_ =
          has_pending_ack_ ? std::max(pending_ack_, *reply.ack) : *reply.ack;
      has_pending_ack_ = true;
      if (reply.weights.has_value())
        pending_weights_ = std::move(reply.weights);
      if (!writing_) WriteAck();
    }
    StartRead();
  }

  void OnWritten(bool ok) {
    writing_ = false;
    if (!ok) {
      // The stream is gone; the pending read fails too and finishes it.
      has_pending_ack_ = false;
      MaybeFinish();
      return;
    }
    if (has_final_) {
      WriteFinal();
    } else if (has_pending_ack_) {
      WriteAck();
    } else {
      MaybeFinish();
    }
  }

  void OnFinished(bool /*ok*/) {}

  void WriteAck() {
    out_.mutable_ack()->set_seq(pending_ack_);
    out_.mutable_ack()->clear_weights();
    if (pending_weights_.has_value()) {
      v1::CollectorWeights* weights = out_.mutable_ack()->mutable_weights();
      for (const auto& [entry, weight] : *pending_weights_) {
        v1::CollectorWeight* w = weights->add_entries();
        w->set_entry(entry);
        w->set_weight(weight);
      }
      pending_weights_.reset();
    }
    has_pending_ack_ = false;
    writing_ = true;
    Start([&] { stream_.Write(out_, &written_); });
  }

  // The Reject or Handoff, with the stream's final status.
  void WriteFinal() {
    if (finished_) return;
    finished_ = true;
    Start([&] {
      stream_.WriteAndFinish(final_, grpc::WriteOptions(), final_status_,
                             &finished_tag_);
    });
  }

  void MaybeFinish() {
    if (finished_ || writing_ || !reads_done_) return;
    finished_ = true;
    Start([&] { stream_.Finish(grpc::Status::OK, &finished_tag_); });
  }

  v1::Ingest::AsyncService* const service_;
  grpc::ServerCompletionQueue* const cq_;
  CqGate* const gate_;
  SeriesStore* const store_;
  IngestCounters* const counters_;
  const IngestAuth* const auth_;
  IngestPlacement& placement_;
  NodeFactsIntake facts_;

  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<v1::CollectorMessage, v1::AgentMessage> stream_{
      &context_};
  Tag<&StreamCall::OnAccepted> accepted_{this};
  Tag<&StreamCall::OnRead> read_{this};
  Tag<&StreamCall::OnWritten> written_{this};
  Tag<&StreamCall::OnFinished> finished_tag_{this};
  int ops_ = 0;  // operations started and not yet completed

  IngestSession session_;
  InboundMessage in_;
  int64_t kept_ = 0;          // in_'s bytes counted in read_buffer_bytes
  v1::CollectorMessage out_;  // stable until the write completes
  bool writing_ = false;
  bool reads_done_ = false;
  bool finished_ = false;
  bool has_pending_ack_ = false;
  uint64_t pending_ack_ = 0;
  // Sent with the next Ack (IngestSession::Reply::weights).
  std::optional<CollectorWeights> pending_weights_;
  // The stream's last message (a Reject or a Handoff) and status, once due.
  bool has_final_ = false;
  v1::CollectorMessage final_;
  grpc::Status final_status_;
};

}  // namespace

void IngestService::Serve(grpc::ServerCompletionQueue* cq, CqGate* gate) {
  (new StreamCall(this, cq, gate, store_, counters_, &auth_, placement_,
                  facts_))
      ->Request();
}

}  // namespace fabricdiag::collector
