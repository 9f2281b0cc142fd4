#include "client/collector_client.h"

#include <chrono>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/failover_client.h"
#include "client/tls.h"
#include "common/grpc_status.h"

namespace fabricdiag::client {
namespace {

// Layouts of 100,000 ranks and long finding lists exceed gRPC's 4 MiB
// default; the collector bounds what it sends anyway.
constexpr int kMaxReceiveBytes = 64 << 20;

// gRPC's UNAVAILABLE messages differ between versions and transports
// ("failed to connect to all addresses; last error: UNKNOWN:
// ipv4:127.0.0.1:1: Failed to connect to remote host: Connection refused");
// users want the reason in a few words.
std::string WhyUnavailable(const std::string& message) {
  const std::string lower = absl::AsciiStrToLower(message);
  if (absl::StrContains(lower, "connection refused")) {
    return "connection refused";
  }
  if (absl::StrContains(lower, "dns") || absl::StrContains(lower, "resolv") ||
      absl::StrContains(lower, "name or service not known")) {
    return absl::StrCat("cannot resolve the host name (", message, ")");
  }
  if (absl::StrContains(lower, "handshake") ||
      absl::StrContains(lower, "ssl") || absl::StrContains(lower, "tls")) {
    return absl::StrCat(
        "TLS handshake failed; check --tls_ca and "
        "--tls_server_name (",
        message, ")");
  }
  if (absl::StrContains(lower, "no route to host")) return "no route to host";
  if (absl::StrContains(lower, "network is unreachable")) {
    return "network is unreachable";
  }
  if (absl::StrContains(lower, "socket closed") ||
      absl::StrContains(lower, "connection reset") ||
      absl::StrContains(lower, "broken pipe") ||
      absl::StrContains(lower, "goaway")) {
    return absl::StrCat("connection lost (", message, ")");
  }
  return message.empty() ? std::string("unavailable") : message;
}

// Whether a failed call never reached the collector (as opposed to a stream
// the collector accepted and then lost).
bool NeverConnected(const grpc::Status& status) {
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
  const std::string lower = absl::AsciiStrToLower(status.error_message());
  for (const char* needle :
       {"failed to connect", "connection refused", "dns", "resolv", "handshake",
        "no route to host", "network is unreachable"}) {
    if (absl::StrContains(lower, needle)) return true;
  }
  return false;
}

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::CANCELLED:
      return "cancelled";
    case grpc::StatusCode::UNKNOWN:
      return "unknown error";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "invalid argument";
    case grpc::StatusCode::NOT_FOUND:
      return "not found";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "already exists";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "permission denied";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "resource exhausted";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "failed precondition";
    case grpc::StatusCode::ABORTED:
      return "aborted";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "out of range";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "not implemented by this collector";
    case grpc::StatusCode::INTERNAL:
      return "internal error";
    case grpc::StatusCode::DATA_LOSS:
      return "data loss";
    default:
      return "error";
  }
}

}  // namespace

absl::Status DescribeRpcError(const grpc::Status& status,
                              const std::string& address,
                              absl::Duration timeout) {
  if (status.ok()) return absl::OkStatus();
  const absl::Status original = FromGrpcStatus(status);
  std::string message;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      // The collector answered, but the NATS cluster behind it did not
      // (collector cluster mode): not a network problem on our side.
      if (absl::StartsWith(status.error_message(), "cluster unavailable: ")) {
        message =
            absl::StrCat("collector ", address, ": ", status.error_message());
        break;
      }
      message = absl::StrCat("cannot reach collector ", address, ": ",
                             WhyUnavailable(status.error_message()));
      break;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      // The collector stopped its write at this request's deadline and
      // says whether the write may still land.
      if (absl::StartsWith(status.error_message(), "cluster unavailable: ")) {
        message =
            absl::StrCat("collector ", address, ": ", status.error_message());
        break;
      }
      message = absl::StrCat("cannot reach collector ", address,
                             ": no answer within ",
                             absl::FormatDuration(timeout), " (--timeout)");
      break;
    case grpc::StatusCode::UNAUTHENTICATED:
      message = absl::StrCat("collector ", address,
                             ": unauthenticated: ", status.error_message(),
                             " (pass the collector's token with --token_file)");
      break;
    default:
      message = absl::StrCat("collector ", address, ": ",
                             CodeName(status.error_code()), ": ",
                             status.error_message());
      break;
  }
  return absl::Status(original.code(), message);
}

GrpcCollectorClient::GrpcCollectorClient(const ClientConfig& config)
    : config_(config) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxReceiveBytes);
  SetTlsChannelArguments(config_.tls, &args);
  channel_ = grpc::CreateCustomChannel(config_.address,
                                       ChannelCredentials(config_.tls), args);
  stub_ = v1::Collector::NewStub(channel_);
}

void GrpcCollectorClient::Prepare(grpc::ClientContext* context,
                                  bool unary) const {
  if (!config_.token.empty()) {
    context->AddMetadata("authorization",
                         absl::StrCat("Bearer ", config_.token));
  }
  if (unary) {
    context->set_deadline(std::chrono::system_clock::now() +
                          absl::ToChronoNanoseconds(config_.timeout));
  }
}

absl::Status GrpcCollectorClient::Fail(const grpc::Status& status) const {
  return DescribeRpcError(status, config_.address, config_.timeout);
}

absl::StatusOr<v1::ApplyLayoutResponse> GrpcCollectorClient::ApplyLayout(
    const v1::ApplyLayoutRequest& request) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::ApplyLayoutResponse response;
  grpc::Status status = stub_->ApplyLayout(&context, request, &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::Status GrpcCollectorClient::DeleteLayout(const std::string& job) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::DeleteLayoutRequest request;
  request.set_job(job);
  v1::DeleteLayoutResponse response;
  return Fail(stub_->DeleteLayout(&context, request, &response));
}

absl::Status GrpcCollectorClient::ApplyTopology(const v1::Topology& topology) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::ApplyTopologyRequest request;
  *request.mutable_topology() = topology;
  v1::ApplyTopologyResponse response;
  return Fail(stub_->ApplyTopology(&context, request, &response));
}

absl::StatusOr<v1::Layout> GrpcCollectorClient::GetLayout(
    const std::string& job) {
  return GetLayout(job, /*resolved=*/false);
}

absl::StatusOr<v1::Layout> GrpcCollectorClient::GetResolvedLayout(
    const std::string& job) {
  return GetLayout(job, /*resolved=*/true);
}

absl::StatusOr<v1::Layout> GrpcCollectorClient::GetLayout(
    const std::string& job, bool resolved) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::GetLayoutRequest request;
  request.set_job(job);
  request.set_resolved(resolved);
  v1::Layout response;
  grpc::Status status = stub_->GetLayout(&context, request, &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::StatusOr<v1::ListLayoutsResponse> GrpcCollectorClient::ListLayouts() {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::ListLayoutsResponse response;
  grpc::Status status =
      stub_->ListLayouts(&context, v1::ListLayoutsRequest(), &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::StatusOr<v1::Topology> GrpcCollectorClient::GetTopology() {
  return GetTopologyView(v1::TOPOLOGY_VIEW_DECLARED);
}

absl::StatusOr<v1::Topology> GrpcCollectorClient::GetTopologyView(
    v1::TopologyView view) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::GetTopologyRequest request;
  request.set_view(view);
  v1::Topology response;
  grpc::Status status = stub_->GetTopology(&context, request, &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::StatusOr<v1::AdoptTopologyResponse> GrpcCollectorClient::AdoptTopology(
    const v1::AdoptTopologyRequest& request) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::AdoptTopologyResponse response;
  grpc::Status status = stub_->AdoptTopology(&context, request, &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::StatusOr<v1::ListFindingsResponse> GrpcCollectorClient::ListFindings(
    const v1::ListFindingsRequest& request) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::ListFindingsResponse response;
  grpc::Status status = stub_->ListFindings(&context, request, &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::StatusOr<v1::ListNodesResponse> GrpcCollectorClient::ListNodes() {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::ListNodesResponse response;
  grpc::Status status =
      stub_->ListNodes(&context, v1::ListNodesRequest(), &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::StatusOr<v1::AckFindingResponse> GrpcCollectorClient::AckFinding(
    const v1::AckFindingRequest& request) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::AckFindingResponse response;
  grpc::Status status = stub_->AckFinding(&context, request, &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::StatusOr<v1::Silence> GrpcCollectorClient::CreateSilence(
    const v1::CreateSilenceRequest& request) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::Silence response;
  grpc::Status status = stub_->CreateSilence(&context, request, &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::StatusOr<v1::ListSilencesResponse> GrpcCollectorClient::ListSilences() {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::ListSilencesResponse response;
  grpc::Status status =
      stub_->ListSilences(&context, v1::ListSilencesRequest(), &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::StatusOr<v1::Silence> GrpcCollectorClient::ExpireSilence(
    const v1::ExpireSilenceRequest& request) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::Silence response;
  grpc::Status status = stub_->ExpireSilence(&context, request, &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::StatusOr<v1::ForgetNodeResponse> GrpcCollectorClient::ForgetNode(
    const v1::ForgetNodeRequest& request) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::ForgetNodeResponse response;
  grpc::Status status = stub_->ForgetNode(&context, request, &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::StatusOr<v1::GetSeriesResponse> GrpcCollectorClient::GetSeries(
    const v1::GetSeriesRequest& request) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/true);
  v1::GetSeriesResponse response;
  grpc::Status status = stub_->GetSeries(&context, request, &response);
  if (!status.ok()) return Fail(status);
  return response;
}

absl::Status GrpcCollectorClient::WatchFindings(
    const std::string& job, const WatchCallbacks& callbacks) {
  grpc::ClientContext context;
  Prepare(&context, /*unary=*/false);
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return absl::CancelledError("watch cancelled");
    watch_context_ = &context;
  }
  v1::WatchFindingsRequest request;
  request.set_job(job);
  // Callers are told when the findings turn stale (the CLI prints it).
  request.set_staleness_events(true);
  std::unique_ptr<grpc::ClientReader<v1::FindingEvent>> reader =
      stub_->WatchFindings(&context, request);
  // Initial metadata arrives when the collector has accepted the call (a
  // refused connection completes the call without it), and the channel is
  // READY then, unless the collector already went away again: that case is
  // told apart by the call's final status below.
  reader->WaitForInitialMetadata();
  bool connected = channel_->GetState(false) == GRPC_CHANNEL_READY;
  if (connected && callbacks.on_connected) callbacks.on_connected();
  v1::FindingEvent event;
  while (reader->Read(&event)) {
    if (!connected) {
      connected = true;
      if (callbacks.on_connected) callbacks.on_connected();
    }
    if (callbacks.on_event) callbacks.on_event(event);
  }
  grpc::Status status = reader->Finish();
  bool cancelled = false;
  {
    absl::MutexLock lock(&mu_);
    watch_context_ = nullptr;
    cancelled = cancelled_;
  }
  if (cancelled) return absl::CancelledError("watch cancelled");
  if (!connected && !status.ok() && !NeverConnected(status) &&
      status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED &&
      callbacks.on_connected) {
    callbacks.on_connected();
  }
  return Fail(status);
}

std::shared_ptr<CollectorClient> MakeCollectorClient(
    const ClientConfig& config) {
  if (config.addresses.size() <= 1) {
    return std::make_shared<GrpcCollectorClient>(config);
  }
  std::vector<std::shared_ptr<CollectorClient>> members;
  members.reserve(config.addresses.size());
  for (const std::string& address : config.addresses) {
    ClientConfig one = config;
    one.address = address;
    one.addresses = {address};
    members.push_back(std::make_shared<GrpcCollectorClient>(one));
  }
  return std::make_shared<FailoverCollectorClient>(std::move(members));
}

void GrpcCollectorClient::CancelWatch() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (watch_context_ != nullptr) watch_context_->TryCancel();
}

}  // namespace fabricdiag::client
