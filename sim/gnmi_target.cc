#include "sim/gnmi_target.h"

#include <grpcpp/grpcpp.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/gnmi.grpc.pb.h"

namespace fabricdiag::sim {
namespace {

using gnmi::Dialect;

// How often a waiting stream checks whether its client went away (gRPC's
// synchronous API has no wake-up for that).
constexpr absl::Duration kCancelPoll = absl::Milliseconds(100);

// One published state with its leaves, shared by every stream.
struct Snapshot {
  int64_t timestamp_nanos = 0;
  std::vector<Leaf> leaves;
};

// One subscription of a stream and what it last sent.
struct Sub {
  explicit Sub(Selector s) : selector(std::move(s)) {}

  Selector selector;
  ::gnmi::SubscriptionMode mode = ::gnmi::SAMPLE;
  int64_t interval_nanos = 0;
  bool suppress_redundant = false;
  int64_t last_sample_nanos = 0;
  std::vector<size_t> leaves;               // indices into Snapshot::leaves
  std::map<std::string, std::string> sent;  // leaf key -> serialized value
};

::gnmi::ModelData Model(const char* name, const char* organization,
                        const char* version) {
  ::gnmi::ModelData m;
  m.set_name(name);
  m.set_organization(organization);
  m.set_version(version);
  return m;
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
    if (!available || stopping) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat(name, ": gNMI server unavailable"));
    }
    return grpc::Status::OK;
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

  // Parses the SubscriptionList into `subs`.
  static grpc::Status Plan(Dialect dialect,
                           const ::gnmi::SubscriptionList& list,
                           std::vector<Sub>* subs) {
    if (list.mode() == ::gnmi::SubscriptionList::POLL) {
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                          "POLL subscriptions are not implemented");
    }
    if (list.subscription_size() == 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the SubscriptionList has no subscription");
    }
    for (const ::gnmi::Subscription& s : list.subscription()) {
      absl::StatusOr<Selector> sel =
          Selector::Create(dialect, list.prefix(), s.path());
      if (!sel.ok()) {
        return grpc::Status(static_cast<grpc::StatusCode>(sel.status().code()),
                            std::string(sel.status().message()));
      }
      Sub sub(*std::move(sel));
      sub.mode = s.mode();
      sub.interval_nanos = static_cast<int64_t>(s.sample_interval());
      sub.suppress_redundant = s.suppress_redundant();
      subs->push_back(std::move(sub));
    }
    return grpc::Status::OK;
  }

  // Appends the leaves of `sub` due in `snap` (all of them with `all`).
  static void Due(const Snapshot& snap, bool all, Sub* sub,
                  std::vector<const Leaf*>* out) {
    const bool sample = sub->mode != ::gnmi::ON_CHANGE;
    if (!all && sample && sub->interval_nanos > 0 &&
        (snap.timestamp_nanos - sub->last_sample_nanos) * 10 <
            sub->interval_nanos * 9) {
      return;
    }
    if (sample) sub->last_sample_nanos = snap.timestamp_nanos;
    const bool only_changed = !all && (!sample || sub->suppress_redundant);
    for (size_t i : sub->leaves) {
      const Leaf& leaf = snap.leaves[i];
      std::string value = leaf.value.SerializeAsString();
      std::string& last = sub->sent[leaf.key];
      if (only_changed && last == value) continue;
      last = std::move(value);
      out->push_back(&leaf);
    }
  }

  // One Notification per prefix, in the order the prefixes first appear.
  static std::vector<::gnmi::SubscribeResponse> Notifications(
      int64_t timestamp, const std::vector<const Leaf*>& leaves) {
    std::vector<::gnmi::SubscribeResponse> out;
    std::map<std::string, size_t> by_prefix;
    for (const Leaf* leaf : leaves) {
      auto [it, added] = by_prefix.emplace(leaf->prefix_text, out.size());
      if (added) {
        ::gnmi::Notification* n = out.emplace_back().mutable_update();
        n->set_timestamp(timestamp);
        *n->mutable_prefix() = leaf->prefix;
      }
      ::gnmi::Update* u = out[it->second].mutable_update()->add_update();
      *u->mutable_path() = leaf->path;
      *u->mutable_val() = leaf->value;
    }
    return out;
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
    const ::gnmi::SubscriptionList& list = request.subscribe();
    std::vector<Sub> subs;
    if (grpc::Status st = Plan(options.dialect, list, &subs); !st.ok()) {
      return st;
    }
    std::shared_ptr<const Snapshot> snap;
    uint64_t seen = 0;
    uint64_t epoch = 0;
    {
      absl::MutexLock lock(&mu);
      epoch = outage_epoch;
      while (snapshot == nullptr && !stopping && !ctx->IsCancelled()) {
        changed.WaitWithTimeout(&mu, kCancelPoll);
      }
      if (stopping || ctx->IsCancelled()) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down");
      }
      snap = snapshot;
      seen = version;
    }
    // Leaf order is the same in every snapshot of a switch: the indices
    // found now hold for later ones.
    for (Sub& sub : subs) {
      for (size_t i = 0; i < snap->leaves.size(); ++i) {
        if (sub.selector.Matches(snap->leaves[i])) sub.leaves.push_back(i);
      }
      if (sub.leaves.empty()) {
        return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                            absl::StrCat("path ", sub.selector.text(),
                                         " is not implemented by this target"));
      }
    }
    std::vector<const Leaf*> due;
    for (Sub& sub : subs) Due(*snap, /*all=*/true, &sub, &due);
    if (list.updates_only()) due.clear();
    ::gnmi::SubscribeResponse sync;
    sync.set_sync_response(true);
    if (!WriteAll(Notifications(snap->timestamp_nanos, due), stream) ||
        !stream->Write(sync)) {
      return grpc::Status::OK;  // the client went away
    }
    if (list.mode() == ::gnmi::SubscriptionList::ONCE) return grpc::Status::OK;
    while (true) {
      {
        absl::MutexLock lock(&mu);
        while (version == seen && !stopping && outage_epoch == epoch &&
               !ctx->IsCancelled()) {
          changed.WaitWithTimeout(&mu, kCancelPoll);
        }
        if (stopping) {
          return grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down");
        }
        if (outage_epoch != epoch) {
          return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                              absl::StrCat(name, ": gNMI server went away"));
        }
        if (ctx->IsCancelled()) return grpc::Status::CANCELLED;
        snap = snapshot;
        seen = version;
      }
      due.clear();
      for (Sub& sub : subs) Due(*snap, /*all=*/false, &sub, &due);
      if (!WriteAll(Notifications(snap->timestamp_nanos, due), stream)) {
        return grpc::Status::OK;
      }
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
  snap->leaves = SwitchLeaves(impl_->options.dialect, state);
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
