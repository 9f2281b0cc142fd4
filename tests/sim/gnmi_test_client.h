// A minimal gNMI client for the tests of the simulator's gNMI target: opens
// a Subscribe stream with one of gnmi::GroupsFor(dialect)'s groups and
// reads what the target sends through the gnmi core library (DecodeValue +
// MapLeaf), exactly as the bridge will, into per-port series.
//
//   GnmiTestClient c(target->address(), grpc::InsecureChannelCredentials());
//   ASSERT_TRUE(c.Subscribe(GroupsFor(Dialect::kOpenConfig)[0]).ok());
//   ASSERT_TRUE(c.ReadUntilSync().ok());
//   c.series["swp1"]["/interfaces/interface/state/counters/in-octets"];
//
// Not thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/grpc_status.h"
#include "gnmi/dialect.h"
#include "gnmi/gnmi_path.h"
#include "gnmi/path_map.h"
#include "gnmi/typed_value.h"
#include "proto/gnmi.grpc.pb.h"

namespace fabricdiag::sim::testing {

inline constexpr char kInOctets[] =
    "/interfaces/interface/state/counters/in-octets";
inline constexpr char kOutOctets[] =
    "/interfaces/interface/state/counters/out-octets";
inline constexpr char kPfc3In[] =
    "/interfaces/interface/ethernet/pfc/priorities/priority[index=3]/state/"
    "in-frames";
inline constexpr char kPfc3Out[] =
    "/interfaces/interface/ethernet/pfc/priorities/priority[index=3]/state/"
    "out-frames";

// The group of `dialect` named `name` (gnmi/dialect.cc).
inline const gnmi::GroupSpec& Group(gnmi::Dialect dialect,
                                    absl::string_view name) {
  for (const gnmi::GroupSpec& g : gnmi::GroupsFor(dialect)) {
    if (name == g.name) return g;
  }
  abort();  // a test names a group that does not exist
}

class GnmiTestClient {
 public:
  GnmiTestClient(const std::string& address,
                 const std::shared_ptr<grpc::ChannelCredentials>& creds,
                 gnmi::Dialect dialect = gnmi::Dialect::kOpenConfig,
                 const grpc::ChannelArguments& args = {})
      : dialect_(dialect),
        stub_(::gnmi::gNMI::NewStub(
            grpc::CreateCustomChannel(address, creds, args))) {}

  // Metadata sent with every RPC.
  void SetCredentials(std::string username, std::string password) {
    username_ = std::move(username);
    password_ = std::move(password);
  }

  absl::Status Capabilities(::gnmi::CapabilityResponse* out = nullptr) {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    ::gnmi::CapabilityResponse response;
    grpc::Status st =
        stub_->Capabilities(&ctx, ::gnmi::CapabilityRequest(), &response);
    if (out != nullptr) *out = response;
    return FromGrpcStatus(st);
  }

  // Opens a stream and sends the group's subscriptions (STREAM mode, the
  // group's modes, `sample_interval` nanoseconds for SAMPLE).
  absl::Status Subscribe(const gnmi::GroupSpec& group,
                         uint64_t sample_interval = 0) {
    absl::StatusOr<::gnmi::SubscribeRequest> request =
        Request(group, sample_interval);
    if (!request.ok()) return request.status();
    db_ = group.target;
    return SubscribeRaw(*request);
  }

  // The STREAM request for `group`, as the bridge builds it.
  static absl::StatusOr<::gnmi::SubscribeRequest> Request(
      const gnmi::GroupSpec& group, uint64_t sample_interval) {
    ::gnmi::SubscribeRequest request;
    ::gnmi::SubscriptionList* list = request.mutable_subscribe();
    list->set_mode(::gnmi::SubscriptionList::STREAM);
    if (group.target[0] != '\0')
      list->mutable_prefix()->set_target(group.target);
    for (const gnmi::SubscriptionSpec& spec : group.subscriptions) {
      ::gnmi::Subscription* s = list->add_subscription();
      absl::StatusOr<::gnmi::Path> path = gnmi::ParsePath(spec.path);
      if (!path.ok()) return path.status();
      *s->mutable_path() = *path;
      s->set_mode(spec.mode);
      if (spec.mode == ::gnmi::SAMPLE) s->set_sample_interval(sample_interval);
    }
    return request;
  }

  absl::Status SubscribeRaw(const ::gnmi::SubscribeRequest& request) {
    ctx_ = std::make_unique<grpc::ClientContext>();
    Prepare(ctx_.get());
    stream_ = stub_->Subscribe(ctx_.get());
    // A target that refuses the RPC (credentials, outage) may end it before
    // the request is written: ReadOne reports its status then.
    stream_->Write(request);
    return absl::OkStatus();
  }

  // Reads one response into `series` and friends; the stream's status
  // when it ended (OK when it ended OK), FailedPrecondition for a leaf the
  // core library cannot place.
  absl::Status ReadOne(bool* sync = nullptr) {
    ::gnmi::SubscribeResponse r;
    if (!stream_->Read(&r)) {
      absl::Status st = Finish();
      return st.ok() ? absl::OutOfRangeError("stream ended OK") : st;
    }
    if (sync != nullptr) *sync = r.sync_response();
    if (r.sync_response()) {
      ++syncs;
      return absl::OkStatus();
    }
    ++notifications;
    last_updates.clear();
    last_notification = r.update();
    return Absorb(r.update());
  }

  // Reads until sync_response.
  absl::Status ReadUntilSync() {
    bool sync = false;
    while (!sync) {
      absl::Status st = ReadOne(&sync);
      if (!st.ok()) return st;
    }
    return absl::OkStatus();
  }

  // The stream's final status (after the target ended it).
  absl::Status Finish() {
    grpc::Status st = stream_->Finish();
    return FromGrpcStatus(st);
  }

  void Cancel() { ctx_->TryCancel(); }

  // port -> series name -> last value.
  std::map<std::string, std::map<std::string, uint64_t>> series;
  std::map<std::string, std::string> oper_status;  // port -> text
  std::map<std::string, std::string> speed;        // port -> text
  gnmi::OidNames oids;
  // port -> LLDP field -> text, as sent (the neighbor key is not kept: the
  // simulator's ports hear one neighbor each).
  std::map<std::string, std::map<gnmi::LldpField, std::string>> lldp;
  uint64_t boot_time = 0;
  int64_t last_timestamp = 0;
  int notifications = 0;
  int syncs = 0;
  // "<port>|<series or attribute>" of the leaves of the last notification.
  std::vector<std::string> last_updates;
  ::gnmi::Notification last_notification;

 private:
  void Prepare(grpc::ClientContext* ctx) const {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(20));
    if (!username_.empty()) {
      ctx->AddMetadata("username", username_);
      ctx->AddMetadata("password", password_);
    }
  }

  absl::Status Absorb(const ::gnmi::Notification& n) {
    last_timestamp = n.timestamp();
    const std::string db =
        n.prefix().target().empty() ? db_ : n.prefix().target();
    absl::Status result;
    for (const ::gnmi::Update& u : n.update()) {
      gnmi::PathView path;
      path.Append(n.prefix());
      path.Append(u.path());
      const gnmi::DecodeStatus ds = gnmi::DecodeValue(
          u.val(), &path,
          [&](const gnmi::PathView& leaf, const gnmi::Scalar& value) {
            std::string name;
            const gnmi::LeafTarget t =
                gnmi::MapLeaf(dialect_, db, leaf, oids, &name);
            const std::string dev(t.device);
            using Kind = gnmi::LeafTarget::Kind;
            switch (t.kind) {
              case Kind::kSeries:
                if (value.type != gnmi::Scalar::Type::kUnsigned) {
                  result = absl::FailedPreconditionError(
                      absl::StrCat(leaf.ToString(), ": not a number"));
                }
                series[dev][name] = value.number;
                last_updates.push_back(absl::StrCat(dev, "|", name));
                break;
              case Kind::kOperStatus:
                oper_status[dev] = std::string(value.text);
                last_updates.push_back(absl::StrCat(dev, "|oper-status"));
                break;
              case Kind::kPortSpeed:
              case Kind::kNegotiatedSpeed:
                speed[dev] = value.type == gnmi::Scalar::Type::kText
                                 ? std::string(value.text)
                                 : absl::StrCat(value.number);
                last_updates.push_back(absl::StrCat(dev, "|speed"));
                break;
              case Kind::kBootTime:
                boot_time = value.number;
                last_updates.push_back("|boot-time");
                break;
              case Kind::kPortOid:
                oids[std::string(value.text)] = dev;
                last_updates.push_back(absl::StrCat(dev, "|oid"));
                break;
              case Kind::kLldp:
                lldp[dev][t.lldp_field] =
                    value.type == gnmi::Scalar::Type::kUnsigned &&
                            value.text.empty()
                        ? absl::StrCat(value.number)
                        : std::string(value.text);
                last_updates.push_back(absl::StrCat(dev, "|lldp"));
                break;
              case Kind::kIgnored:
                // APPL_DB PORT_TABLE carries admin_status and mtu too.
                last_updates.push_back(
                    absl::StrCat("|ignored ", leaf.ToString()));
                break;
              case Kind::kBadPath:
                result = absl::FailedPreconditionError(
                    absl::StrCat(leaf.ToString(), ": bad path"));
                break;
            }
          });
      if (ds != gnmi::DecodeStatus::kOk) {
        return absl::FailedPreconditionError(
            absl::StrCat("cannot decode: ", gnmi::DecodeStatusName(ds)));
      }
    }
    return result;
  }

  gnmi::Dialect dialect_;
  std::unique_ptr<::gnmi::gNMI::Stub> stub_;
  std::string username_;
  std::string password_;
  std::string db_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<::gnmi::SubscribeRequest,
                                           ::gnmi::SubscribeResponse>>
      stream_;
};

}  // namespace fabricdiag::sim::testing
