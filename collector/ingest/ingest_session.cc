#include "collector/ingest/ingest_session.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"

namespace fabricdiag::collector {
namespace {

struct Problem {
  RejectReason reason;
  std::string message;
};

// Checks that `indices` ascend strictly and stay below `n`.
std::optional<Problem> CheckIndices(
    const google::protobuf::RepeatedField<uint32_t>& indices, size_t n,
    absl::string_view field) {
  int64_t previous = -1;
  for (uint32_t i : indices) {
    if (i >= n || static_cast<int64_t>(i) <= previous) {
      return Problem{RejectReason::kIndexOutOfRange,
                     absl::StrCat("report.", field, " has index ", i,
                                  i >= n ? " out of range for a schema of "
                                         : " not ascending in a schema of ",
                                  n, " series")};
    }
    previous = i;
  }
  return std::nullopt;
}

// Every rule a Report must satisfy against a schema of `n` series, checked
// before anything is stored.
std::optional<Problem> CheckReport(const v1::Report& r, size_t n) {
  if (r.seq() == 0) {
    return Problem{RejectReason::kTooLarge, "report.seq must start at 1"};
  }
  if (static_cast<size_t>(r.raw_size()) != n) {
    return Problem{RejectReason::kSizeMismatch,
                   absl::StrCat("report ", r.seq(), " has ", r.raw_size(),
                                " raw values for a schema of ", n, " series")};
  }
  const std::pair<const google::protobuf::RepeatedField<uint32_t>*,
                  absl::string_view>
      lists[] = {{&r.no_rate(), "no_rate"},
                 {&r.absent(), "absent"},
                 {&r.reset(), "reset"},
                 {&r.saturated(), "saturated"},
                 {&r.wrapped(), "wrapped"}};
  for (const auto& [list, field] : lists) {
    if (auto p = CheckIndices(*list, n, field)) return p;
  }
  const size_t want_rates = n - static_cast<size_t>(r.no_rate_size());
  if (static_cast<size_t>(r.rate_size()) != want_rates) {
    return Problem{
        RejectReason::kSizeMismatch,
        absl::StrCat("report ", r.seq(), " has ", r.rate_size(),
                     " rates; schema size ", n, " minus ", r.no_rate_size(),
                     " no_rate needs ", want_rates)};
  }
  for (double rate : r.rate()) {
    if (!std::isfinite(rate)) {
      return Problem{RejectReason::kNonFiniteRate,
                     absl::StrCat("report ", r.seq(), " has a rate of ", rate)};
    }
  }
  return std::nullopt;
}

std::optional<Problem> CheckSchema(const v1::Schema& schema) {
  if (static_cast<size_t>(schema.series_size()) > IngestSession::kMaxSeries) {
    return Problem{RejectReason::kTooLarge,
                   absl::StrCat("schema ", schema.schema_id(), " has ",
                                schema.series_size(), " series; the limit is ",
                                IngestSession::kMaxSeries)};
  }
  for (const v1::Series& s : schema.series()) {
    if (s.device().size() > IngestSession::kMaxStringBytes ||
        s.name().size() > IngestSession::kMaxStringBytes ||
        s.unit().size() > IngestSession::kMaxStringBytes) {
      return Problem{RejectReason::kBadSchema,
                     absl::StrCat("schema ", schema.schema_id(),
                                  " has a device, name or unit longer than ",
                                  IngestSession::kMaxStringBytes, " bytes")};
    }
  }
  return std::nullopt;
}

uint64_t NextStreamId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

const char* RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kBeforeHello:
      return "before_hello";
    case RejectReason::kSecondHello:
      return "second_hello";
    case RejectReason::kBadNodeName:
      return "bad_node_name";
    case RejectReason::kBadHello:
      return "bad_hello";
    case RejectReason::kUnknownSchema:
      return "unknown_schema";
    case RejectReason::kBadSchema:
      return "bad_schema";
    case RejectReason::kSizeMismatch:
      return "size_mismatch";
    case RejectReason::kIndexOutOfRange:
      return "index_out_of_range";
    case RejectReason::kNonFiniteRate:
      return "non_finite_rate";
    case RejectReason::kTooLarge:
      return "too_large";
    case RejectReason::kStaleBoot:
      return "stale_boot";
    case RejectReason::kEmptyMessage:
      return "empty_message";
    case RejectReason::kMixedMessage:
      return "mixed_message";
    case RejectReason::kDuplicateNode:
      return "duplicate_node";
    case RejectReason::kUnauthenticated:
      return "unauthenticated";
    case RejectReason::kIdentityMismatch:
      return "identity_mismatch";
    case RejectReason::kCount:
      break;
  }
  return "unknown";
}

void IngestCounters::Reject(RejectReason reason, absl::string_view peer,
                            absl::string_view message) {
  const size_t i = static_cast<size_t>(reason);
  rejects_[i].fetch_add(1, std::memory_order_relaxed);
  const absl::Time now = absl::Now();
  uint64_t unlogged = 0;
  {
    absl::MutexLock lock(&log_mu_);
    if (logged_[i] != absl::Time() && now - logged_[i] < kLogEvery) {
      ++unlogged_[i];
      return;
    }
    logged_[i] = now;
    unlogged = std::exchange(unlogged_[i], 0);
  }
  std::string line = absl::StrCat("ingest: refused the stream from ",
                                  peer.empty() ? "an agent" : peer, ": ",
                                  RejectReasonName(reason));
  // The message may quote what a hostile peer sent: escape it, one line.
  if (!message.empty()) absl::StrAppend(&line, ": ", absl::CHexEscape(message));
  if (unlogged > 0) {
    absl::StrAppend(&line, " (and ", unlogged, " more refused for ",
                    RejectReasonName(reason), " since the last such line)");
  }
  LogWarning(line);
}

IngestSession::IngestSession(SeriesStore* store, IngestCounters* counters,
                             IngestPlacement& placement, NodeFactsIntake facts)
    : store_(store),
      counters_(counters),
      placement_(placement),
      facts_(facts),
      stream_id_(NextStreamId()) {}

IngestSession::~IngestSession() {
  if (node_ != nullptr) node_->EndStream(stream_id_);
  Close();
}

void IngestSession::Close() {
  if (!open_) return;
  open_ = false;
  counters_->open_streams.fetch_sub(1, std::memory_order_relaxed);
}

IngestSession::Reply IngestSession::Reject(RejectReason reason,
                                           absl::string_view message) {
  rejected_ = true;
  counters_->Reject(reason, peer_, message);
  Reply reply;
  reply.reject = absl::StrCat(RejectReasonName(reason), ": ", message);
  return reply;
}

std::optional<IngestSession::Reply> IngestSession::MaybeHandOff(
    absl::string_view node, bool hello) {
  const uint64_t epoch = placement_.Epoch();
  if (!hello && epoch == placement_epoch_) return std::nullopt;
  placement_epoch_ = epoch;
  if (epoch == 0) return std::nullopt;
  const int64_t open = counters_->open_streams.load(std::memory_order_relaxed);
  const uint64_t streams = static_cast<uint64_t>(std::max<int64_t>(open, 0));
  std::optional<HandoffOrder> go =
      hello ? placement_.HandOffNew(node, collectors_, streams)
            : placement_.HandOff(node, collectors_, streams);
  if (!go.has_value()) {
    if (collectors_.empty()) return std::nullopt;
    CollectorWeights weights = placement_.Weights(collectors_);
    if (hello || weights != sent_weights_) {
      sent_weights_ = weights;
      pending_weights_ = std::move(weights);
    }
    return std::nullopt;
  }
  handed_off_ = true;
  counters_->handoffs.fetch_add(1, std::memory_order_relaxed);
  if (!go->target.empty()) {
    counters_->handbacks.fetch_add(1, std::memory_order_relaxed);
  }
  if (go->refusal == Refusal::kNatsDisconnected) {
    counters_->refused_nats_disconnected.fetch_add(1,
                                                   std::memory_order_relaxed);
  }
  // The agent streams elsewhere from now on: the node's stream here ends
  // now, not when the call is torn down, and the analysis knows its agent
  // is on its way rather than silent.
  if (node_ != nullptr) node_->HandOff(stream_id_, store_->clock().Now());
  node_ = nullptr;
  Close();
  Reply reply;
  reply.handoff = std::move(go->reason);
  reply.handoff_target = std::move(go->target);
  return reply;
}

IngestSession::Reply IngestSession::WithWeights(Reply reply) {
  if (reply.ack.has_value() && pending_weights_.has_value()) {
    reply.weights = std::move(pending_weights_);
    pending_weights_.reset();
  }
  return reply;
}

IngestSession::Reply IngestSession::Handle(const v1::AgentMessage& message) {
  if (rejected_ || handed_off_) return Reply{};
  const bool other = message.msg_case() != v1::AgentMessage::MSG_NOT_SET;
  if (message.has_report() && other) {
    return Reject(RejectReason::kMixedMessage,
                  "message carries a report and another message");
  }
  if (!message.has_report() && !other) {
    return Reject(RejectReason::kEmptyMessage, "message has no content");
  }
  if (message.has_hello()) return WithWeights(OnHello(message.hello()));
  if (node_ == nullptr) {
    return Reject(RejectReason::kBeforeHello,
                  "the first message of a stream must be a Hello");
  }
  if (message.has_report()) {
    // Not stored: unacknowledged, the agent replays it where it goes.
    if (std::optional<Reply> go = MaybeHandOff(node_name_, false)) return *go;
    return WithWeights(OnReport(message.report()));
  }
  if (message.has_schema()) return OnSchema(message.schema());
  return OnInventory(message.inventory());
}

IngestSession::Reply IngestSession::OnHello(const v1::Hello& hello) {
  if (node_ != nullptr) {
    return Reject(
        RejectReason::kSecondHello,
        absl::StrCat("stream of node ", node_name_, " sent a second Hello"));
  }
  if (!IsValidNodeName(hello.node())) {
    // The name is hostile input: quote only a bounded prefix.
    return Reject(RejectReason::kBadNodeName,
                  absl::StrCat("node name '", hello.node().substr(0, 64),
                               "' is not [A-Za-z0-9][A-Za-z0-9._-]{0,252}"));
  }
  if (hello.boot_id().empty() || hello.boot_id().size() > kMaxBootIdBytes) {
    return Reject(
        RejectReason::kBadHello,
        absl::StrCat("boot_id must be 1..", kMaxBootIdBytes, " bytes"));
  }
  if (check_identity_ && std::find(identities_.begin(), identities_.end(),
                                   hello.node()) == identities_.end()) {
    return Reject(
        RejectReason::kIdentityMismatch,
        absl::StrCat("node ", hello.node(),
                     " is not a name of the client certificate (",
                     identities_.empty() ? std::string("none")
                                         : absl::StrJoin(identities_, ", "),
                     "); an agent may only report as itself"));
  }
  if (static_cast<size_t>(hello.collectors_size()) > kMaxCollectors ||
      std::any_of(hello.collectors().begin(), hello.collectors().end(),
                  [](const std::string& c) {
                    return c.empty() || c.size() > kMaxCollectorBytes;
                  })) {
    return Reject(
        RejectReason::kBadHello,
        absl::StrCat("collectors must be at most ", kMaxCollectors,
                     " entries of 1..", kMaxCollectorBytes, " bytes"));
  }
  collectors_.assign(hello.collectors().begin(), hello.collectors().end());
  if (std::optional<Reply> go = MaybeHandOff(hello.node(), true)) return *go;
  std::shared_ptr<NodeSeries> node = store_->OpenNode(hello.node());
  absl::StatusOr<uint64_t> held =
      node->BeginStream(hello.boot_id(), hello.interval_ms(), stream_id_, peer_,
                        store_->clock().Now());
  if (!held.ok()) {
    return Reject(
        RejectReason::kDuplicateNode,
        absl::StrCat("node ", hello.node(), ": ", held.status().message()));
  }
  if (hello.acked_seq() > 0) {
    node->AckedElsewhere(hello.boot_id(), hello.acked_seq());
  }
  node_name_ = hello.node();
  boot_id_ = hello.boot_id();
  from_bridge_ =
      absl::StartsWith(hello.agent_version(), kBridgeAgentVersionPrefix);
  node_ = std::move(node);
  counters_->streams.fetch_add(1, std::memory_order_relaxed);
  open_ = true;
  counters_->open_streams.fetch_add(1, std::memory_order_relaxed);
  Reply reply;
  reply.ack = *held;
  return reply;
}

IngestSession::Reply IngestSession::OnSchema(const v1::Schema& schema) {
  if (auto p = CheckSchema(schema)) return Reject(p->reason, p->message);
  if (schemas_.size() >= kMaxSchemasPerStream &&
      schemas_.count(schema.schema_id()) == 0) {
    return Reject(RejectReason::kTooLarge,
                  absl::StrCat("more than ", kMaxSchemasPerStream,
                               " schemas on one stream"));
  }
  absl::StatusOr<std::vector<uint32_t>> slots = node_->MapSchema(schema);
  if (!slots.ok()) {
    return Reject(slots.status().code() == absl::StatusCode::kResourceExhausted
                      ? RejectReason::kTooLarge
                      : RejectReason::kBadSchema,
                  std::string(slots.status().message()));
  }
  schemas_[schema.schema_id()] = *std::move(slots);
  counters_->schemas.fetch_add(1, std::memory_order_relaxed);
  return Reply{};
}

IngestSession::Reply IngestSession::OnReport(const v1::Report& report) {
  auto it = schemas_.find(report.schema_id());
  if (it == schemas_.end()) {
    return Reject(
        RejectReason::kUnknownSchema,
        absl::StrCat("report ", report.seq(), " references schema ",
                     report.schema_id(), " which this stream did not send"));
  }
  const std::vector<uint32_t>& slots = it->second;
  if (auto p = CheckReport(report, slots.size())) {
    return Reject(p->reason, p->message);
  }
  ReportView view;
  view.seq = report.seq();
  view.wall_time_unix_nanos = report.wall_time_unix_nanos();
  view.rates = absl::MakeConstSpan(report.rate().data(),
                                   static_cast<size_t>(report.rate_size()));
  view.no_rate = absl::MakeConstSpan(
      report.no_rate().data(), static_cast<size_t>(report.no_rate_size()));
  uint64_t held = 0;
  switch (node_->Ingest(boot_id_, view, slots, store_->clock().Now(), &held)) {
    case NodeSeries::Outcome::kStored:
      counters_->reports.fetch_add(1, std::memory_order_relaxed);
      counters_->values.fetch_add(slots.size(), std::memory_order_relaxed);
      break;
    case NodeSeries::Outcome::kDuplicate:
      counters_->duplicates.fetch_add(1, std::memory_order_relaxed);
      break;
    case NodeSeries::Outcome::kStaleBoot:
      return Reject(RejectReason::kStaleBoot,
                    absl::StrCat("another agent process now reports as node ",
                                 node_name_, "; is --node set twice?"));
  }
  Reply reply;
  reply.ack = held;
  return reply;
}

IngestSession::Reply IngestSession::OnInventory(
    const v1::Inventory& inventory) {
  node_->SetInventory(inventory);
  counters_->inventories.fetch_add(1, std::memory_order_relaxed);
  // A refused Put (the store counts it) does not end the stream: the
  // node's counters still matter, and the node name was checked at the
  // Hello already.
  const bool is_switch = from_bridge_ || facts_.switches.IsSwitch(node_name_);
  facts_.store
      .Put(FactsOfInventory(node_name_, is_switch, inventory,
                            store_->clock().Now()))
      .IgnoreError();
  return Reply{};
}

}  // namespace fabricdiag::collector
