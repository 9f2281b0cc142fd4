#include "tests/agent/fake_ingest_server.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace fabricdiag::agent::testing {

class FakeIngestServer::Service final : public v1::Ingest::Service {
 public:
  explicit Service(FakeIngestServer* owner) : owner_(owner) {}

  grpc::Status Stream(
      grpc::ServerContext* /*context*/,
      grpc::ServerReaderWriter<v1::CollectorMessage, v1::AgentMessage>* stream)
      override {
    FakeIngestServer& o = *owner_;
    v1::AgentMessage msg;
    std::string node;
    std::string boot_id;
    std::set<uint64_t> schemas_on_stream;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(o.mu_);
        o.cv_.wait(lock, [&] { return !o.stall_ || o.stopping_; });
        if (o.stopping_) break;
      }
      if (!stream->Read(&msg)) break;
      v1::CollectorMessage reply;
      bool send = false;
      bool hand_off = false;
      {
        std::lock_guard<std::mutex> lock(o.mu_);
        if (node.empty()) {
          if (!msg.has_hello() || msg.hello().node().empty()) {
            return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                "first message must be a Hello");
          }
          node = msg.hello().node();
          boot_id = msg.hello().boot_id();
        }
        Node& n = o.nodes_[node];
        n.messages.push_back(msg);
        if (o.hand_off_ && (msg.has_hello() || msg.has_report())) {
          if (msg.has_report()) n.report_seqs.push_back(msg.report().seq());
          o.cv_.notify_all();
          reply.mutable_handoff()->set_reason("test hand-off");
          reply.mutable_handoff()->set_target(o.hand_off_target_);
          hand_off = true;
        }
        uint64_t& highest = o.highest_[{node, boot_id}];
        if (hand_off) {
          // Answered with the Handoff alone.
        } else if (msg.has_hello()) {
          ++n.streams;
          n.hellos.push_back(msg.hello());
          reply.mutable_ack()->set_seq(o.withhold_acks_ ? 0 : highest);
          if (o.hello_weights_.has_value()) {
            *reply.mutable_ack()->mutable_weights() = *o.hello_weights_;
          }
          send = true;
        } else if (msg.has_schema()) {
          n.schemas[msg.schema().schema_id()] = msg.schema();
          schemas_on_stream.insert(msg.schema().schema_id());
        } else if (msg.has_inventory()) {
          ++n.inventories;
        } else if (msg.has_report()) {
          n.report_seqs.push_back(msg.report().seq());
          if (schemas_on_stream.count(msg.report().schema_id()) == 0) {
            ++n.reports_without_schema;
          }
          highest = std::max(highest, msg.report().seq());
          if (!o.withhold_acks_) {
            reply.mutable_ack()->set_seq(highest);
            send = true;
          }
        }
        o.cv_.notify_all();
      }
      if (hand_off) {
        stream->Write(reply);
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "handed off");
      }
      if (send && !stream->Write(reply)) break;
    }
    return grpc::Status::OK;
  }

 private:
  FakeIngestServer* owner_;
};

FakeIngestServer::FakeIngestServer() = default;

FakeIngestServer::~FakeIngestServer() { Stop(); }

absl::Status FakeIngestServer::Start(int port, std::optional<Tls> tls) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
  }
  tls_ = std::move(tls);
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (tls_.has_value()) {
    grpc::SslServerCredentialsOptions ssl(
        tls_->require_client_cert
            ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
            : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    ssl.pem_root_certs = tls_->client_ca_pem;
    ssl.pem_key_cert_pairs.push_back({tls_->key_pem, tls_->cert_pem});
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  // A fresh service per server: a Service object belongs to one server.
  service_ = std::make_unique<Service>(this);
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), creds, &bound);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || bound == 0) {
    server_.reset();
    return absl::UnavailableError(
        absl::StrCat("cannot listen on 127.0.0.1:", port));
  }
  port_ = bound;
  return absl::OkStatus();
}

void FakeIngestServer::Stop() {
  if (server_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  // A deadline of now cancels every stream in flight instead of waiting for
  // the agents to hang up.
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
  server_.reset();
}

absl::Status FakeIngestServer::Restart() { return Start(port_, tls_); }

std::string FakeIngestServer::target() const {
  return absl::StrCat("127.0.0.1:", port_);
}

void FakeIngestServer::set_hand_off(bool hand_off) {
  std::lock_guard<std::mutex> lock(mu_);
  hand_off_ = hand_off;
}

void FakeIngestServer::set_hello_weights(v1::CollectorWeights weights) {
  std::lock_guard<std::mutex> lock(mu_);
  hello_weights_ = std::move(weights);
}

void FakeIngestServer::set_hand_off_target(std::string target) {
  std::lock_guard<std::mutex> lock(mu_);
  hand_off_target_ = std::move(target);
}

void FakeIngestServer::set_withhold_acks(bool withhold) {
  std::lock_guard<std::mutex> lock(mu_);
  withhold_acks_ = withhold;
}

void FakeIngestServer::set_stall(bool stall) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stall_ = stall;
  }
  cv_.notify_all();
}

FakeIngestServer::Node FakeIngestServer::node(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? Node{} : it->second;
}

bool FakeIngestServer::WaitFor(const std::string& name,
                               std::function<bool(const Node&)> pred,
                               absl::Duration timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] {
    auto it = nodes_.find(name);
    return pred(it == nodes_.end() ? Node{} : it->second);
  });
}

}  // namespace fabricdiag::agent::testing
