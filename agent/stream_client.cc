#include "agent/stream_client.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/reconnect_pacing.h"
#include "client/collector_list.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace fabricdiag::agent {
namespace {

// Reports written per wake-up of the writer; bounds the time the writer
// holds references without rechecking for Stop().
constexpr size_t kWriteBatch = 64;
// Dead connections that never send a RST (a collector host that lost power)
// are detected by HTTP/2 keepalive pings. The collector must allow pings this
// often (GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS).
constexpr int kKeepaliveTimeMs = 30'000;
constexpr int kKeepaliveTimeoutMs = 10'000;
constexpr size_t kMaxReasonBytes = 512;

absl::Status CheckFields(const StreamClient::Options& o) {
  if (o.targets.empty()) {
    return absl::InvalidArgumentError("no collector target");
  }
  for (const std::string& target : o.targets) {
    if (target.empty()) {
      return absl::InvalidArgumentError("collector target is empty");
    }
  }
  if (o.first_target >= o.targets.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("first collector index ", o.first_target,
                     " is out of range for ", o.targets.size(), " targets"));
  }
  if (o.node.empty()) return absl::InvalidArgumentError("node name is empty");
  if (o.backoff_initial <= absl::ZeroDuration() ||
      o.backoff_max < o.backoff_initial) {
    return absl::InvalidArgumentError(
        "reconnect backoff must satisfy 0 < initial <= max");
  }
  if (o.buffer.max_reports == 0 || o.buffer.max_bytes == 0) {
    return absl::InvalidArgumentError("report buffer limits must be >= 1");
  }
  return absl::OkStatus();
}

std::string RandomBootId() {
  absl::BitGen gen;
  return absl::StrFormat("%016x%016x", absl::Uniform<uint64_t>(gen),
                         absl::Uniform<uint64_t>(gen));
}

}  // namespace

absl::Status StreamClient::Validate(const Options& options) {
  RETURN_IF_ERROR(CheckFields(options));
  return client::LoadTls(options.tls).status();
}

absl::StatusOr<std::unique_ptr<StreamClient>> StreamClient::Create(
    Options options, const Clock& clock) {
  RETURN_IF_ERROR(CheckFields(options));
  ASSIGN_OR_RETURN(client::TlsConfig tls, client::LoadTls(options.tls));
  return std::unique_ptr<StreamClient>(
      new StreamClient(std::move(options), clock, std::move(tls)));
}

StreamClient::StreamClient(Options options, const Clock& clock,
                           client::TlsConfig tls)
    : options_(std::move(options)),
      clock_(clock),
      tls_(std::move(tls)),
      credentials_(client::ChannelCredentials(tls_)),
      boot_id_(options_.boot_id.empty() ? RandomBootId() : options_.boot_id),
      buffer_(options_.buffer),
      choice_(options_.node, options_.targets) {
  stats_.target = choice_.current_entry();
}

StreamClient::~StreamClient() { Stop(); }

void StreamClient::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] { Run(); });
}

void StreamClient::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    // Unblocks a Write stuck on flow control, a Read waiting for Acks and a
    // call still connecting to a collector that does not answer.
    if (active_context_ != nullptr) active_context_->TryCancel();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StreamClient::Enqueue(EncodedReport encoded) {
  std::lock_guard<std::mutex> lock(mu_);
  if (encoded.new_schema.has_value()) {
    const uint64_t id = encoded.new_schema->schema_id();
    schemas_[id] =
        std::make_shared<const v1::Schema>(std::move(*encoded.new_schema));
    latest_schema_id_ = id;
  }
  if (encoded.new_inventory.has_value()) {
    inventory_ = std::make_shared<const v1::Inventory>(
        std::move(*encoded.new_inventory));
    ++inventory_version_;
  }
  if (schemas_.count(encoded.report.schema_id()) == 0) {
    ++stats_.invalid;
    return;
  }
  encoded.report.set_seq(next_seq_++);
  const uint64_t dropped_before = buffer_.dropped();
  buffer_.Push(std::make_shared<const v1::Report>(std::move(encoded.report)));
  if (buffer_.dropped() != dropped_before) PruneSchemasLocked();
  cv_.notify_all();
}

StreamClient::Stats StreamClient::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.buffered = buffer_.size();
  s.buffered_bytes = buffer_.bytes();
  s.dropped = buffer_.dropped();
  return s;
}

void StreamClient::PruneSchemasLocked() {
  const std::vector<uint64_t> referenced = buffer_.SchemaIds();
  for (auto it = schemas_.begin(); it != schemas_.end();) {
    if (it->first != latest_schema_id_ &&
        !std::binary_search(referenced.begin(), referenced.end(), it->first)) {
      it = schemas_.erase(it);
    } else {
      ++it;
    }
  }
}

absl::Duration StreamClient::BackoffDelay(int attempt) {
  absl::Duration d = options_.backoff_initial;
  for (int i = 0; i < attempt && d < options_.backoff_max; ++i) d *= 2;
  // +-20% jitter so that 8,000 agents do not reconnect in lockstep after a
  // collector restart.
  static thread_local absl::BitGen gen;
  d *= absl::Uniform<double>(gen, 0.8, 1.2);
  return std::min(d, options_.backoff_max);
}

void StreamClient::Run() {
  // Per target, so that collectors failing in turn (each error names its
  // target) log once each rather than on every attempt.
  std::vector<std::string> last_errors(options_.targets.size());
  ReconnectPacing pacing;
  while (true) {
    size_t current;
    {
      std::lock_guard<std::mutex> lock(mu_);
      current = choice_.current();
    }
    bool got_response = false;
    absl::Status status = RunStream(options_.targets[current], &got_response);
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_) return;
    const bool new_error = last_errors[current] != status.ToString();
    last_errors[current] = status.ToString();
    stats_.last_error = status.ToString();
    ++stats_.reconnects;
    const bool handed_off =
        !handoff_reason_.empty() && options_.targets.size() > 1;
    const absl::Duration delay = BackoffDelay(
        pacing.Next(got_response, handed_off, clock_.MonotonicNanos()));
    if (handed_off) {
      // Asked to go: the collector works, so this is no error. Its target
      // when it named an entry of our list (the collector ranked the list
      // as we do), else the next of our ranking.
      const std::string& from = options_.targets[current];
      choice_.HandedOff(handoff_target_);
      stats_.target = choice_.current_entry();
      ++stats_.handoffs;
      LogInfo(absl::StrCat("collector ", from, " handed this agent to ",
                           stats_.target, " (", handoff_reason_,
                           "); moving in ", absl::FormatDuration(delay)));
      cv_.wait_for(lock, absl::ToChronoNanoseconds(delay),
                   [this] { return stopping_; });
      if (stopping_) return;
      continue;
    }
    // Any end of a stream moves on from the top of the (weighted) ranking,
    // skipping what failed since a stream last worked
    // (client::CollectorChoice): a collector that just failed is the least
    // likely to answer next, and one that is merely restarting is tried
    // again after the others. The backoff still grows per failed attempt,
    // so a cluster whose collectors are all down is not hammered.
    std::string next_note;
    if (options_.targets.size() > 1) {
      choice_.Failed(got_response);
      stats_.target = choice_.current_entry();
      ++stats_.failovers;
      next_note = absl::StrCat(" on ", stats_.target);
    }
    if (new_error || got_response) {
      LogWarning(absl::StrCat("collector stream: ", status.ToString(),
                              "; retrying", next_note, " in ",
                              absl::FormatDuration(delay)));
    }
    cv_.wait_for(lock, absl::ToChronoNanoseconds(delay),
                 [this] { return stopping_; });
    if (stopping_) return;
  }
}

void StreamClient::ReadLoop(IngestStream* stream, uint64_t stream_id) {
  v1::CollectorMessage msg;
  while (stream->Read(&msg)) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.connected = true;
    if (msg.has_ack()) {
      if (msg.ack().has_weights()) {
        std::vector<std::pair<std::string, double>> weights;
        for (const v1::CollectorWeight& w : msg.ack().weights().entries()) {
          weights.emplace_back(w.entry(), w.weight());
        }
        // A bad weight is the collector's bug: the others still apply.
        if (absl::Status s = choice_.SetWeights(weights); !s.ok()) {
          LogWarning(
              absl::StrCat("collector placement weights: ", s.message()));
        }
      }
      const uint64_t seq = msg.ack().seq();
      const size_t n = buffer_.Ack(seq);
      stats_.acked += n;
      stats_.last_acked_seq = std::max(stats_.last_acked_seq, seq);
      stats_.last_ack_monotonic_nanos = clock_.MonotonicNanos();
      if (n > 0) PruneSchemasLocked();
    } else if (msg.has_reject()) {
      reject_reason_ = msg.reject().reason().substr(0, kMaxReasonBytes);
      if (reject_reason_.empty()) reject_reason_ = "(no reason given)";
      cv_.notify_all();
    } else if (msg.has_handoff()) {
      // The collector ends the stream next; the reader sees that end.
      handoff_reason_ = msg.handoff().reason().substr(0, kMaxReasonBytes);
      if (handoff_reason_.empty()) handoff_reason_ = "(no reason given)";
      handoff_target_ = msg.handoff().target().substr(0, kMaxReasonBytes);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stream_id == stream_id_) stream_ended_ = true;
  cv_.notify_all();
}

absl::Status StreamClient::RunStream(const std::string& target,
                                     bool* got_response) {
  std::unique_ptr<v1::Ingest::Stub> stub = NewStub(target);
  grpc::ClientContext context;
  if (!options_.token.empty()) {
    context.AddMetadata("authorization",
                        absl::StrCat("Bearer ", options_.token));
  }
  ASSIGN_OR_RETURN(const uint64_t stream_id, BeginStream(&context));
  std::unique_ptr<IngestStream> stream = stub->Stream(&context);
  std::thread reader([&] { ReadLoop(stream.get(), stream_id); });
  WriteUntilEnd(stream.get());
  return EndStream(target, &context, &reader, stream.get(), got_response);
}

std::unique_ptr<v1::Ingest::Stub> StreamClient::NewStub(
    const std::string& target) const {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  // A fresh channel per stream with its own subchannel, so that our backoff
  // (not a shared subchannel's) decides when to try again.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  client::SetTlsChannelArguments(tls_, &args);
  // The stub keeps the channel alive.
  return v1::Ingest::NewStub(
      grpc::CreateCustomChannel(target, credentials_, args));
}

absl::StatusOr<uint64_t> StreamClient::BeginStream(
    grpc::ClientContext* context) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return absl::CancelledError("stopping");
  active_context_ = context;
  stream_ended_ = false;
  reject_reason_.clear();
  handoff_reason_.clear();
  handoff_target_.clear();
  stats_.connected = false;
  return ++stream_id_;
}

void StreamClient::WriteUntilEnd(IngestStream* stream) {
  // One message object for every write: a report sits outside the oneof
  // (ingest.proto), so each kind clears the others.
  v1::AgentMessage msg;
  v1::Hello* hello = msg.mutable_hello();
  hello->set_node(options_.node);
  hello->set_agent_version(options_.agent_version);
  hello->set_boot_id(boot_id_);
  hello->set_interval_ms(static_cast<uint32_t>(std::clamp<int64_t>(
      absl::ToInt64Milliseconds(options_.interval), 0, UINT32_MAX)));
  // The list lets a cluster's collectors rank it as we do and hand us back
  // to our first choice; with one collector there is nowhere to go.
  if (options_.targets.size() > 1) {
    for (const std::string& target : options_.targets) {
      hello->add_collectors(target);
    }
  }
  {
    // What another collector acknowledged is not resent, and not lost.
    std::lock_guard<std::mutex> lock(mu_);
    hello->set_acked_seq(stats_.last_acked_seq);
  }
  if (!stream->Write(msg)) return;
  StreamCursor cursor;
  PendingWrites pending;
  while (NextWrites(&cursor, &pending)) {
    // The network writes happen without the lock: Enqueue never waits for
    // them.
    if (!WritePending(stream, pending, &msg, &cursor)) return;
  }
}

bool StreamClient::NextWrites(StreamCursor* cursor, PendingWrites* out) {
  *out = PendingWrites();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] {
    return stopping_ || stream_ended_ || !reject_reason_.empty() ||
           inventory_version_ != cursor->sent_inventory ||
           buffer_.HasAfter(cursor->seq);
  });
  if (stopping_ || stream_ended_ || !reject_reason_.empty()) return false;
  if (inventory_version_ != cursor->sent_inventory) {
    out->inventory = inventory_;
    cursor->sent_inventory = inventory_version_;
  }
  out->batch = buffer_.After(cursor->seq, kWriteBatch);
  for (const ReportBuffer::ReportPtr& r : out->batch) {
    std::shared_ptr<const v1::Schema> schema;
    if (cursor->sent_schemas.insert(r->schema_id()).second) {
      auto it = schemas_.find(r->schema_id());
      // Enqueue refuses reports of unknown schemas and pruning keeps every
      // referenced one, so this cannot miss.
      if (it != schemas_.end()) schema = it->second;
    }
    out->schema_first.push_back(std::move(schema));
  }
  return true;
}

bool StreamClient::WritePending(IngestStream* stream,
                                const PendingWrites& pending,
                                v1::AgentMessage* msg, StreamCursor* cursor) {
  if (pending.inventory != nullptr) {
    msg->clear_report();
    *msg->mutable_inventory() = *pending.inventory;
    if (!stream->Write(*msg)) return false;
  }
  for (size_t i = 0; i < pending.batch.size(); ++i) {
    if (pending.schema_first[i] != nullptr) {
      msg->clear_report();
      *msg->mutable_schema() = *pending.schema_first[i];
      if (!stream->Write(*msg)) return false;
    }
    msg->clear_msg();
    *msg->mutable_report() = *pending.batch[i];
    if (!stream->Write(*msg)) return false;
    cursor->seq = pending.batch[i]->seq();
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.sent;
  }
  return true;
}

absl::Status StreamClient::EndStream(const std::string& target,
                                     grpc::ClientContext* context,
                                     std::thread* reader, IngestStream* stream,
                                     bool* got_response) {
  std::string reject;
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping = stopping_;
    reject = reject_reason_;
  }
  // When the stream failed on its own, Finish() reports why; otherwise we end
  // it ourselves.
  if (stopping || !reject.empty()) context->TryCancel();
  reader->join();
  grpc::Status finish = stream->Finish();
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_context_ = nullptr;
    *got_response = stats_.connected;
    stats_.connected = false;
  }
  if (stopping) return absl::CancelledError("stopping");
  if (!reject.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("collector ", target, " rejected the stream: ", reject));
  }
  if (finish.ok()) {
    return absl::UnavailableError(
        absl::StrCat("collector ", target, " closed the stream"));
  }
  absl::Status s = FromGrpcStatus(finish);
  return absl::Status(s.code(),
                      absl::StrCat("collector ", target, ": ", s.message()));
}

}  // namespace fabricdiag::agent
