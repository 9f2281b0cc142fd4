// The operator mark RPCs of QueryService (acks, silences, forgetting a
// node): proto <-> Marks (collector/findings/silences.h), which holds the
// logic.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/agent_down.h"
#include "analysis/agent_missing.h"
#include "collector/api/query_service.h"
#include "collector/store/node_series.h"
#include "common/grpc_status.h"
#include "common/names.h"

namespace fabricdiag::collector {
namespace {

// Who made a mark: the name of the caller's token (--auth_token_file),
// else the client certificate's name when the server knows one (mTLS),
// else the user name the client sent, else "unknown". What the server
// authenticated outranks what the client says of itself.
std::string Caller(const grpc::ServerContext& context,
                   const std::string& token_name, const std::string& sent) {
  if (!token_name.empty()) return token_name;
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    for (const char* property :
         {"x509_common_name", "x509_subject_alternative_name"}) {
      std::vector<grpc::string_ref> names = auth->FindPropertyValues(property);
      if (!names.empty()) return std::string(names[0].data(), names[0].size());
    }
  }
  if (!sent.empty()) return sent;
  return "unknown";
}

// Whether the agent of a node of another collector reports now, as
// NodeSeries::Streaming judges a stream here: heard from within
// kLiveIntervals of its interval (at least kMinLive) by the collector's
// latest features. A node whose collector's features stopped arriving is
// judged by its last report they carried: an operator who forgets a node
// means it, and an agent that still reports sends its facts again with its
// next stream.
bool ReportsNow(const NodeFacts& n, absl::Time now) {
  const absl::Duration live = std::max(
      NodeSeries::kMinLive, NodeSeries::kLiveIntervals * n.liveness.interval);
  return n.liveness.ever_reported && now - n.liveness.last_report < live;
}

grpc::Status Invalid(absl::string_view message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(message));
}

}  // namespace

grpc::Status QueryService::CheckMarks() const {
  if (options_.marks == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                        "this collector keeps no operator marks");
  }
  return grpc::Status::OK;
}

grpc::Status QueryService::AckFinding(grpc::ServerContext* context,
                                      const v1::AckFindingRequest* request,
                                      v1::AckFindingResponse* response) {
  std::string token;
  if (grpc::Status s = Authorize(*context, "AckFinding", &token); !s.ok()) {
    return s;
  }
  if (grpc::Status s = CheckMarks(); !s.ok()) return s;
  if (request->id().empty()) return Invalid("id: missing (e.g. f-000123)");
  FindingsFilter filter;
  filter.limit = std::numeric_limits<uint32_t>::max();
  for (const v1::Finding& f : findings_->List(filter)) {
    if (f.id() != request->id()) continue;
    absl::StatusOr<v1::FindingAck> ack = options_.marks->Ack(
        f, request->comment(), Caller(*context, token, request->who()));
    if (!ack.ok()) return ToGrpcStatus(ack.status());
    *response->mutable_finding() = f;
    options_.marks->Mark(response->mutable_finding());
    return grpc::Status::OK;
  }
  return grpc::Status(
      grpc::StatusCode::NOT_FOUND,
      absl::StrCat("no active finding ", QuoteForMessage(request->id()),
                   " (an ack applies to an active finding until it "
                   "resolves)"));
}

grpc::Status QueryService::CreateSilence(
    grpc::ServerContext* context, const v1::CreateSilenceRequest* request,
    v1::Silence* response) {
  std::string token;
  if (grpc::Status s = Authorize(*context, "CreateSilence", &token); !s.ok()) {
    return s;
  }
  if (grpc::Status s = CheckMarks(); !s.ok()) return s;
  absl::StatusOr<v1::Silence> silence = options_.marks->CreateSilence(
      *request, Caller(*context, token, request->who()));
  if (!silence.ok()) return ToGrpcStatus(silence.status());
  *response = *std::move(silence);
  return grpc::Status::OK;
}

grpc::Status QueryService::ListSilences(grpc::ServerContext* context,
                                        const v1::ListSilencesRequest*,
                                        v1::ListSilencesResponse* response) {
  if (grpc::Status s = Authorize(*context, "ListSilences"); !s.ok()) return s;
  if (grpc::Status s = CheckMarks(); !s.ok()) return s;
  for (v1::Silence& s : options_.marks->ListSilences()) {
    *response->add_silences() = std::move(s);
  }
  return grpc::Status::OK;
}

grpc::Status QueryService::ExpireSilence(
    grpc::ServerContext* context, const v1::ExpireSilenceRequest* request,
    v1::Silence* response) {
  std::string token;
  if (grpc::Status s = Authorize(*context, "ExpireSilence", &token); !s.ok()) {
    return s;
  }
  if (grpc::Status s = CheckMarks(); !s.ok()) return s;
  absl::StatusOr<v1::Silence> silence = options_.marks->ExpireSilence(
      request->id(), Caller(*context, token, request->who()));
  if (!silence.ok()) return ToGrpcStatus(silence.status());
  *response = *std::move(silence);
  return grpc::Status::OK;
}

grpc::Status QueryService::ForgetNode(grpc::ServerContext* context,
                                      const v1::ForgetNodeRequest* request,
                                      v1::ForgetNodeResponse* response) {
  std::string token;
  if (grpc::Status s = Authorize(*context, "ForgetNode", &token); !s.ok()) {
    return s;
  }
  if (grpc::Status s = CheckMarks(); !s.ok()) return s;
  const std::string& node = request->node();
  if (!IsValidNodeName(node)) {
    return Invalid(
        absl::StrCat("node: not a node name: ", QuoteForMessage(node)));
  }
  // Seen: it reported here, another collector of the cluster knows it, or
  // an active finding still remembers it (agent_down after a restart, or
  // agent_missing: a host of the topology that never reported).
  bool seen = series_->FindNode(node) != nullptr;
  // Its agent streams to another collector of the cluster now.
  bool streams_elsewhere = false;
  // Held while read: the vector may be the only copy (a range-for over
  // *fabric_nodes() would read it after the pointer is gone).
  const std::shared_ptr<const std::vector<NodeFacts>> fabric =
      options_.fabric_nodes ? options_.fabric_nodes() : nullptr;
  if (fabric != nullptr) {
    const absl::Time now = clock_.Now();
    for (const NodeFacts& n : *fabric) {
      if (n.liveness.node != node) continue;
      seen = true;
      if (!n.collector.empty() && n.collector != options_.collector_id) {
        streams_elsewhere = streams_elsewhere || ReportsNow(n, now);
      }
    }
  }
  std::vector<std::string> down;
  for (const v1::Finding& f : findings_->Active()) {
    if (f.node() != node) continue;
    seen = true;
    if (f.kind() == analysis::kAgentDownKind ||
        f.kind() == analysis::kAgentMissingKind) {
      down.push_back(f.id());
    }
  }
  if (!seen) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("no node ", QuoteForMessage(node),
                                     " was ever seen by this collector"));
  }
  absl::StatusOr<v1::NodeForget> forget =
      options_.marks->Forget(node, Caller(*context, token, request->who()));
  if (!forget.ok()) return ToGrpcStatus(forget.status());
  // What the collector keeps of the node goes with it: its series (and so
  // its fabricdiag_agent_* series on /metrics) and its facts (its LLDP
  // neighbors in the discovered topology), on every collector of a cluster.
  // Not while its agent reports: then it is back at once and keeps them.
  const bool streams_here =
      !series_->DropNode(node) && series_->FindNode(node) != nullptr;
  if (!streams_here && !streams_elsewhere && options_.facts_store != nullptr) {
    if (absl::Status s = options_.facts_store->Delete(node); !s.ok()) {
      return ToGrpcStatus(s);
    }
  }
  for (std::string& id : down) response->add_resolved(std::move(id));
  return grpc::Status::OK;
}

}  // namespace fabricdiag::collector
