#include "sim/gnmi_target.h"

#include <grpcpp/grpcpp.h>

#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "proto/gnmi.grpc.pb.h"
#include "sim/gnmi_subscription.h"

namespace fabricdiag::sim {
namespace {

using gnmi::Dialect;

// How often a waiting stream checks whether its client went away (gRPC's
// synchronous API has no wake-up for that).
constexpr absl::Duration kCancelPoll = absl::Milliseconds(100);

::gnmi::ModelData Model(const char* name, const char* organization,
                        const char* version) {
  ::gnmi::ModelData m;
  m.set_name(name);
  m.set_organization(organization);
  m.set_version(version);
  return m;
}

// The counters of a switch as of its last poll, every `period` of the
// states' timestamps (on its multiples since the Unix epoch).
struct Poll {
  int64_t slot = -1;  // timestamp / period of the last poll
  std::vector<PortCounters> values;

  // Polls `state` when it is in a new slot; 0: every state.
  const std::vector<PortCounters>& At(const SwitchState& state,
                                      absl::Duration period) {
    const int64_t nanos = absl::ToInt64Nanoseconds(period);
    const int64_t at = nanos > 0 ? state.timestamp_nanos / nanos : slot + 1;
    if (at != slot || values.size() != state.counters.size()) {
      slot = at;
      values = state.counters;
    }
    return values;
  }
};

// The counters a PFC poll refreshes: the per-priority slots, from pause
// frames to the PFC watchdog's storm events.
bool IsPfcCounter(size_t c) {
  return c >= static_cast<size_t>(kRxPauseFrames) &&
         c <= static_cast<size_t>(kPauseStormError);
}

// Metadata value of `key`, empty when absent.
std::string Metadata(const grpc::ServerContext& ctx, const char* key) {
  auto it = ctx.client_metadata().find(key);
  if (it == ctx.client_metadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

}  // namespace

struct GnmiTarget::Impl final : public ::gnmi::gNMI::Service {
  std::string name;
  GnmiTargetOptions options;
  std::string address;
  int port = 0;
  std::unique_ptr<grpc::Server> server;

  // The counters as of the last poll of options.refresh (port) and
  // options.pfc_refresh (pfc), and the leaves published last (for
  // overlapping subscriptions).
  absl::Mutex publish_mu;
  Poll port_poll ABSL_GUARDED_BY(publish_mu);
  Poll pfc_poll ABSL_GUARDED_BY(publish_mu);
  std::shared_ptr<const Snapshot> published ABSL_GUARDED_BY(publish_mu);

  mutable absl::Mutex mu;
  absl::CondVar changed;
  std::shared_ptr<const Snapshot> snapshot ABSL_GUARDED_BY(mu);
  uint64_t version ABSL_GUARDED_BY(mu) = 0;
  bool available ABSL_GUARDED_BY(mu) = true;
  uint64_t outage_epoch ABSL_GUARDED_BY(mu) = 0;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  // The open Subscribe calls, cancelled at shutdown so that one blocked in
  // Write (a client that stopped reading) does not hold the server up.
  std::set<grpc::ServerContext*> streams ABSL_GUARDED_BY(mu);

  // UNAUTHENTICATED, or UNAVAILABLE during an outage; OK otherwise.
  grpc::Status Admit(const grpc::ServerContext& ctx) const {
    if (!options.username.empty() &&
        (Metadata(ctx, "username") != options.username ||
         Metadata(ctx, "password") != options.password)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "wrong or missing username/password metadata");
    }
    absl::MutexLock lock(&mu);
    if (!available || stopping) return Unavailable();
    return grpc::Status::OK;
  }

  // A simulated outage (gnmi_outage, switch_reload).
  grpc::Status Unavailable() const {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat(name, ": gNMI server unavailable"));
  }

  static grpc::Status ShuttingDown() {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down");
  }

  grpc::Status Capabilities(grpc::ServerContext* ctx,
                            const ::gnmi::CapabilityRequest* /*request*/,
                            ::gnmi::CapabilityResponse* response) override {
    if (grpc::Status st = Admit(*ctx); !st.ok()) return st;
    if (options.dialect == Dialect::kSonic) {
      *response->add_supported_models() = Model("sonic-db", "SONiC", "0.1.0");
    } else {
      *response->add_supported_models() =
          Model("openconfig-interfaces", "OpenConfig working group", "3.0.0");
      *response->add_supported_models() =
          Model("openconfig-if-ethernet", "OpenConfig working group", "2.13.0");
      *response->add_supported_models() =
          Model("openconfig-system", "OpenConfig working group", "1.0.0");
      *response->add_supported_models() =
          Model("arista-intf-augments", "Arista Networks, Inc.", "1.0.0");
    }
    response->add_supported_encodings(::gnmi::JSON);
    response->add_supported_encodings(::gnmi::JSON_IETF);
    response->add_supported_encodings(::gnmi::PROTO);
    response->set_gnmi_version("0.10.0");
    return grpc::Status::OK;
  }

  // Get and Set: admitted (credentials, outage), then refused.
  grpc::Status Unimplemented(const grpc::ServerContext& ctx,
                             const char* rpc) const {
    if (grpc::Status st = Admit(ctx); !st.ok()) return st;
    return grpc::Status(
        grpc::StatusCode::UNIMPLEMENTED,
        absl::StrCat(rpc, " is not implemented by the simulated target"));
  }

  grpc::Status Get(grpc::ServerContext* ctx,
                   const ::gnmi::GetRequest* /*request*/,
                   ::gnmi::GetResponse* /*response*/) override {
    return Unimplemented(*ctx, "Get");
  }

  grpc::Status Set(grpc::ServerContext* ctx,
                   const ::gnmi::SetRequest* /*request*/,
                   ::gnmi::SetResponse* /*response*/) override {
    return Unimplemented(*ctx, "Set");
  }

  grpc::Status Subscribe(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<::gnmi::SubscribeResponse,
                               ::gnmi::SubscribeRequest>* stream) override {
    if (grpc::Status st = Admit(*ctx); !st.ok()) return st;
    {
      absl::MutexLock lock(&mu);
      streams.insert(ctx);
    }
    grpc::Status st = Serve(ctx, stream);
    absl::MutexLock lock(&mu);
    streams.erase(ctx);
    return st;
  }

  static bool WriteAll(
      const std::vector<::gnmi::SubscribeResponse>& responses,
      grpc::ServerReaderWriter<::gnmi::SubscribeResponse,
                               ::gnmi::SubscribeRequest>* stream) {
    for (const ::gnmi::SubscribeResponse& r : responses) {
      if (!stream->Write(r)) return false;
    }
    return true;
  }

  grpc::Status Serve(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<::gnmi::SubscribeResponse,
                               ::gnmi::SubscribeRequest>* stream) {
    ::gnmi::SubscribeRequest request;
    if (!stream->Read(&request) || !request.has_subscribe()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the first request must be a SubscriptionList");
    }
    absl::StatusOr<SubscriptionSet> subs = SubscriptionSet::Create(
        options.dialect, request.subscribe(), options.overlap);
    if (!subs.ok()) return ToGrpcStatus(subs.status());
    std::shared_ptr<const Snapshot> snap;
    uint64_t seen = 0;
    uint64_t epoch = 0;
    {
      absl::MutexLock lock(&mu);
      epoch = outage_epoch;
      while (snapshot == nullptr && !stopping && !ctx->IsCancelled()) {
        changed.WaitWithTimeout(&mu, kCancelPoll);
      }
      if (stopping || ctx->IsCancelled()) return ShuttingDown();
      if (!available) return Unavailable();  // the outage began after Admit
      snap = snapshot;
      seen = version;
    }
    if (absl::Status st = subs->Bind(snap->leaves); !st.ok()) {
      return ToGrpcStatus(st);
    }
    if (!WriteAll(subs->Initial(*snap), stream)) {
      return grpc::Status::OK;  // the client went away
    }
    if (subs->once()) return grpc::Status::OK;
    while (true) {
      {
        absl::MutexLock lock(&mu);
        while (version == seen && !stopping && outage_epoch == epoch &&
               !ctx->IsCancelled()) {
          changed.WaitWithTimeout(&mu, kCancelPoll);
        }
        if (stopping) return ShuttingDown();
        if (outage_epoch != epoch) return Unavailable();
        if (ctx->IsCancelled()) return grpc::Status::CANCELLED;
        snap = snapshot;
        seen = version;
      }
      if (!WriteAll(subs->Next(*snap), stream)) return grpc::Status::OK;
    }
  }
};

absl::StatusOr<std::unique_ptr<GnmiTarget>> GnmiTarget::Start(
    std::string switch_name, const GnmiTargetOptions& options) {
  if (options.tls_cert_pem.empty() != options.tls_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "a TLS certificate and its key must be given together");
  }
  const size_t colon = options.listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", options.listen, "\" is not HOST:PORT"));
  }
  auto impl = std::make_unique<Impl>();
  impl->name = std::move(switch_name);
  impl->options = options;
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (options.tls_cert_pem.empty()) {
    creds = grpc::InsecureServerCredentials();
  } else {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back(
        {options.tls_key_pem, options.tls_cert_pem});
    creds = grpc::SslServerCredentials(ssl);
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, creds, &impl->port);
  // Two targets must never share a port silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(impl.get());
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    return absl::UnavailableError(absl::StrCat(
        impl->name, ": cannot listen on ", options.listen, " for gNMI"));
  }
  impl->address =
      absl::StrCat(options.listen.substr(0, colon), ":", impl->port);
  return std::unique_ptr<GnmiTarget>(new GnmiTarget(std::move(impl)));
}

GnmiTarget::GnmiTarget(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GnmiTarget::~GnmiTarget() {
  {
    absl::MutexLock lock(&impl_->mu);
    impl_->stopping = true;
    impl_->changed.SignalAll();
    for (grpc::ServerContext* ctx : impl_->streams) ctx->TryCancel();
  }
  impl_->server->Shutdown(std::chrono::system_clock::now() +
                          std::chrono::seconds(1));
  impl_->server->Wait();
}

const std::string& GnmiTarget::switch_name() const { return impl_->name; }
gnmi::Dialect GnmiTarget::dialect() const { return impl_->options.dialect; }
int GnmiTarget::port() const { return impl_->port; }
const std::string& GnmiTarget::address() const { return impl_->address; }

void GnmiTarget::Publish(const SwitchState& state) {
  auto snap = std::make_shared<Snapshot>();
  snap->timestamp_nanos = state.timestamp_nanos;
  const GnmiTargetOptions& o = impl_->options;
  {
    absl::MutexLock publishing(&impl_->publish_mu);
    const std::vector<PortCounters>& port =
        impl_->port_poll.At(state, o.refresh);
    const std::vector<PortCounters>& pfc = impl_->pfc_poll.At(
        state,
        o.pfc_refresh > absl::ZeroDuration() ? o.pfc_refresh : o.refresh);
    SwitchState held = state;
    for (size_t p = 0; p < held.counters.size(); ++p) {
      for (size_t c = 0; c < kNumCounters; ++c) {
        held.counters[p].value[c] = (IsPfcCounter(c) ? pfc : port)[p].value[c];
      }
    }
    snap->leaves = SwitchLeaves(o.dialect, held);
    if (o.overlap && impl_->published != nullptr) {
      snap->earlier_timestamp_nanos = impl_->published->timestamp_nanos;
      snap->earlier = impl_->published->leaves;
    }
    impl_->published = snap;
  }
  absl::MutexLock lock(&impl_->mu);
  impl_->snapshot = std::move(snap);
  ++impl_->version;
  impl_->changed.SignalAll();
}

void GnmiTarget::SetAvailable(bool available) {
  absl::MutexLock lock(&impl_->mu);
  if (available == impl_->available) return;
  impl_->available = available;
  if (!available) ++impl_->outage_epoch;
  impl_->changed.SignalAll();
}

bool GnmiTarget::available() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->available;
}

int GnmiTarget::open_streams() const {
  absl::MutexLock lock(&impl_->mu);
  return static_cast<int>(impl_->streams.size());
}

}  // namespace fabricdiag::sim
