#include "gnmi/switch_session.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/files.h"
#include "common/log.h"
#include "gnmi/gnmi_path.h"
#include "google/protobuf/arena.h"

namespace fabricdiag::gnmi {

namespace {

// The errors_total reason of a Subscribe that ended with `code`.
const char* EndReason(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNIMPLEMENTED:
      return "unimplemented_group";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "unauthenticated";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "permission_denied";
    case grpc::StatusCode::UNAVAILABLE:
      return "unavailable";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "resource_exhausted";
    case grpc::StatusCode::OK:
      return "stream_ended";
    default:
      return "stream_error";
  }
}

}  // namespace

// ---- Scheduler -------------------------------------------------------------

Scheduler::Scheduler() : thread_([this] { Run(); }) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Scheduler::After(absl::Duration delay, std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace(absl::Now() + delay, std::move(fn));
  }
  cv_.notify_all();
}

void Scheduler::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (queue_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const absl::Time next = queue_.begin()->first;
    const absl::Time now = absl::Now();
    if (next > now) {
      cv_.wait_for(lock, absl::ToChronoNanoseconds(next - now));
      continue;
    }
    std::function<void()> fn = std::move(queue_.begin()->second);
    queue_.erase(queue_.begin());
    lock.unlock();
    fn();
    lock.lock();
  }
}

// ---- Credentials -----------------------------------------------------------

absl::StatusOr<Credentials> ReadCredentialsFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("credentials_file ", path, ": ", std::strerror(errno)));
  }
  // Stricter than ReadSecretFile: not even a root-owned 0640 file, since the
  // password opens the switch, not only our service.
  if ((st.st_mode & 077) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "credentials_file %s is readable or writable by group or others "
        "(mode %04o); run `chmod 600 %s`",
        path, st.st_mode & 07777, path));
  }
  absl::StatusOr<std::string> text =
      ReadSecretFile("credentials_file", path, 64 << 10);
  if (!text.ok()) return text.status();
  std::vector<absl::string_view> lines = absl::StrSplit(*text, '\n');
  Credentials c;
  if (!lines.empty()) {
    c.username = std::string(absl::StripAsciiWhitespace(lines[0]));
  }
  if (lines.size() > 1) {
    c.password = std::string(absl::StripTrailingAsciiWhitespace(lines[1]));
  }
  if (c.username.empty() || c.password.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "credentials_file ", path,
        ": needs the username on the first line and the password on the "
        "second"));
  }
  return c;
}

// ---- One group's Subscribe RPC ---------------------------------------------

class SwitchSession::GroupCall final
    : public grpc::ClientBidiReactor<::gnmi::SubscribeRequest,
                                     ::gnmi::SubscribeResponse> {
 public:
  GroupCall(SwitchSession* session, size_t group)
      : session_(session), group_(group) {
    const GroupSpec& spec = session->groups_[group];
    ::gnmi::SubscriptionList* list = request_.mutable_subscribe();
    list->set_mode(::gnmi::SubscriptionList::STREAM);
    list->set_encoding(::gnmi::JSON_IETF);
    if (spec.target[0] != '\0') list->mutable_prefix()->set_target(spec.target);
    for (const SubscriptionSpec& s : spec.subscriptions) {
      ::gnmi::Subscription* sub = list->add_subscription();
      // The dialect's paths are constants its tests parse.
      *sub->mutable_path() = *ParsePath(s.path);
      sub->set_mode(s.mode);
      if (s.mode == ::gnmi::SAMPLE) {
        sub->set_sample_interval(static_cast<uint64_t>(
            absl::ToInt64Nanoseconds(session->options_.sample_interval)));
      }
    }
    if (!session->credentials_.username.empty()) {
      context_.AddMetadata("username", session->credentials_.username);
      context_.AddMetadata("password", session->credentials_.password);
    }
  }

  void Begin() {
    session_->stub_->async()->Subscribe(&context_, this);
    StartWrite(&request_);
    StartRead(response_);
    StartCall();
  }

  void Cancel() { context_.TryCancel(); }

  void OnWriteDone(bool /*ok*/) override {}

  void OnReadDone(bool ok) override {
    if (!ok) return;
    session_->OnResponse(group_, *response_);
    // A response is parsed into the arena and dropped with it: a few large
    // blocks per response instead of an allocation per path element.
    arena_.Reset();
    response_ = NewResponse();
    StartRead(response_);
  }

  void OnDone(const grpc::Status& status) override {
    session_->OnGroupDone(group_, status);
    delete this;
  }

 private:
  SwitchSession* const session_;
  const size_t group_;
  grpc::ClientContext context_;
  ::gnmi::SubscribeRequest request_;
  google::protobuf::Arena arena_{ArenaOptionsForResponses()};
  ::gnmi::SubscribeResponse* response_ = NewResponse();

  static google::protobuf::ArenaOptions ArenaOptionsForResponses() {
    google::protobuf::ArenaOptions o;
    o.start_block_size = 4 << 10;
    o.max_block_size = 256 << 10;
    return o;
  }
  ::gnmi::SubscribeResponse* NewResponse() {
    return google::protobuf::Arena::CreateMessage<::gnmi::SubscribeResponse>(
        &arena_);
  }
};

// ---- SwitchSession ---------------------------------------------------------

absl::StatusOr<std::shared_ptr<SwitchSession>> SwitchSession::Create(
    SwitchConfig config, SessionOptions options, const Clock& clock,
    Scheduler* scheduler) {
  // gRPC 1.51 (Debian 12) runs callback-API calls on a completion queue
  // shared by channels and shut down when the last channel using it goes;
  // destroying a channel right after its last call ended can then abort
  // ("assertion failed: prior > 0" in grpc_cq_internal_unref). One channel
  // that made a callback call and is never destroyed keeps that queue for
  // the life of the process.
  // (In static storage that is never destroyed: reachable, so leak checkers
  // do not report it, and not torn down at exit either.)
  struct KeepAlive {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<::gnmi::gNMI::Stub> stub;
    grpc::ClientContext context;
    ::gnmi::CapabilityRequest request;
    ::gnmi::CapabilityResponse response;
  };
  alignas(KeepAlive) static unsigned char storage[sizeof(KeepAlive)];
  static KeepAlive* const cq_kept_alive = [] {
    auto* k = new (storage) KeepAlive;
    k->channel =
        grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials());
    k->stub = ::gnmi::gNMI::NewStub(k->channel);
    k->context.set_deadline(std::chrono::system_clock::now());
    k->stub->async()->Capabilities(&k->context, &k->request, &k->response,
                                   [](const grpc::Status&) {});
    return k;
  }();
  (void)cq_kept_alive;
  const std::string who = absl::StrCat("switch ", config.name, ": ");
  if (!config.credentials_file.empty() && config.tls_ca.empty()) {
    // The password would travel in plaintext.
    return absl::FailedPreconditionError(
        absl::StrCat(who,
                     "credentials_file needs tls_ca (credentials go "
                     "only over TLS)"));
  }
  Credentials credentials;
  if (!config.credentials_file.empty()) {
    absl::StatusOr<Credentials> c =
        ReadCredentialsFile(config.credentials_file);
    if (!c.ok()) {
      return absl::Status(c.status().code(),
                          absl::StrCat(who, c.status().message()));
    }
    credentials = *std::move(c);
  }
  std::shared_ptr<grpc::ChannelCredentials> channel_credentials;
  if (!config.tls_ca.empty()) {
    absl::StatusOr<std::string> ca =
        ReadPemFile("tls_ca", config.tls_ca, false);
    if (!ca.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ca.status().message()));
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *std::move(ca);
    channel_credentials = grpc::SslCredentials(ssl);
  } else if (config.insecure) {
    channel_credentials = grpc::InsecureChannelCredentials();
  } else {
    return absl::FailedPreconditionError(absl::StrCat(
        who, "gnmi needs tls_ca (or insecure: true, plaintext, for tests)"));
  }
  return std::shared_ptr<SwitchSession>(
      new SwitchSession(std::move(config), options, clock, scheduler,
                        std::move(credentials), channel_credentials));
}

SwitchSession::SwitchSession(
    SwitchConfig config, SessionOptions options, const Clock& clock,
    Scheduler* scheduler, Credentials credentials,
    const std::shared_ptr<grpc::ChannelCredentials>& channel_credentials)
    : config_(std::move(config)),
      options_(options),
      clock_(clock),
      scheduler_(scheduler),
      credentials_(std::move(credentials)),
      groups_(GroupsFor(config_.dialect)),
      calls_(groups_.size(), nullptr),
      attempts_(groups_.size(), 0),
      streaming_(groups_.size(), false),
      last_rx_(groups_.size(), 0),
      idle_(groups_.size(), false),
      sampled_(groups_.size(), false),
      synced_(groups_.size(), false),
      realign_(groups_.size(), false),
      resubscribing_(groups_.size(), false),
      phases_(groups_.size(), SamplePhase(options_.sample_interval)),
      // A series moves to another group when its own has been silent as
      // long as the bridge waits before it reports the series absent.
      state_(config_.dialect,
             std::max(3 * options_.sample_interval, absl::Seconds(3))) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options_.max_receive_bytes);
  if (!config_.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(config_.tls_server_name);
  }
  // gRPC's own reconnect backoff follows ours, so that a switch that comes
  // back is not left waiting for the channel's default of up to 2 minutes.
  const int min_ms =
      static_cast<int>(absl::ToInt64Milliseconds(options_.backoff_initial));
  const int max_ms =
      static_cast<int>(absl::ToInt64Milliseconds(options_.backoff_max));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, min_ms);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, min_ms);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, max_ms);
  channel_ =
      grpc::CreateCustomChannel(config_.address, channel_credentials, args);
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (const SubscriptionSpec& s : groups_[g].subscriptions) {
      if (s.mode == ::gnmi::SAMPLE) sampled_[g] = true;
    }
  }
  stub_ = ::gnmi::gNMI::NewStub(channel_);
}

SwitchSession::~SwitchSession() { Stop(); }

void SwitchSession::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_) return;
    started_ = true;
  }
  for (size_t g = 0; g < groups_.size(); ++g) StartGroup(g);
  ScheduleIdleCheck();
}

void SwitchSession::ScheduleIdleCheck() {
  std::weak_ptr<SwitchSession> weak = weak_from_this();
  scheduler_->After(options_.idle_timeout / 2, [weak] {
    if (std::shared_ptr<SwitchSession> self = weak.lock()) self->CheckIdle();
  });
}

void SwitchSession::CheckIdle() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    const int64_t oldest = clock_.MonotonicNanos() -
                           absl::ToInt64Nanoseconds(options_.idle_timeout);
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (calls_[g] == nullptr || idle_[g] || last_rx_[g] >= oldest) continue;
      // ON_CHANGE-only groups are silent by design.
      if (!sampled_[g]) continue;
      idle_[g] = true;
      calls_[g]->Cancel();
    }
  }
  ScheduleIdleCheck();
}

void SwitchSession::StartGroup(size_t group) {
  auto* call = new GroupCall(this, group);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || calls_[group] != nullptr) {
      delete call;
      return;
    }
    calls_[group] = call;
    streaming_[group] = false;
    synced_[group] = false;
    last_rx_[group] = clock_.MonotonicNanos();
    ++live_calls_;
    // The new stream replays every neighbor; one deleted meanwhile is not.
    if (groups_[group].lldp) state_.StartLldp();
  }
  call->Begin();
}

void SwitchSession::Stop() {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  for (GroupCall* call : calls_) {
    if (call != nullptr) call->Cancel();
  }
  cv_.wait(lock, [this] { return live_calls_ == 0; });
}

void SwitchSession::OnResponse(size_t group,
                               const ::gnmi::SubscribeResponse& response) {
  const int64_t rx = clock_.MonotonicNanos();
  std::lock_guard<std::mutex> lock(mu_);
  streaming_[group] = true;
  resubscribing_[group] = false;
  attempts_[group] = 0;
  last_rx_[group] = rx;
  if (response.has_update()) {
    state_.Apply(response.update(), groups_[group].target, rx, group);
    // The initial values come when the stream starts; the samples after
    // them keep the phase the target chose.
    if (sampled_[group] && synced_[group] && !realign_[group]) {
      SamplePhase& phase = phases_[group];
      phase.Arrived(clock_.Now());
      if (phase.ShouldRealign() && calls_[group] != nullptr) {
        realign_[group] = true;
        calls_[group]->Cancel();
      }
    }
  }
  // sync_response: every value was sent once. The values are already
  // applied; the LLDP neighbor set is now complete.
  if (response.sync_response()) {
    synced_[group] = true;
    if (groups_[group].lldp) state_.SyncLldp();
  }
}

void SwitchSession::OnGroupDone(size_t group, const grpc::Status& status) {
  std::unique_lock<std::mutex> lock(mu_);
  calls_[group] = nullptr;
  streaming_[group] = false;
  if (groups_[group].lldp) state_.EndLldp();
  // Stop() may destroy the session once live_calls_ is 0: that is the last
  // thing this call does.
  auto finish = [this](std::unique_lock<std::mutex>* held) {
    if (!held->owns_lock()) held->lock();
    --live_calls_;
    cv_.notify_all();
  };
  if (stopping_) {
    finish(&lock);
    return;
  }
  const bool idle = idle_[group];
  idle_[group] = false;
  const bool realign = realign_[group];
  realign_[group] = false;
  // A group the bridge ended to move its phase is not down: it is
  // subscribed again after the delay, and only a fault ends that.
  resubscribing_[group] = realign;
  absl::Duration delay;
  if (realign) {
    // Ended by us, not a fault: no error, no backoff.
    delay = phases_[group].Realign(clock_.Now());
    ++realigns_;
    LogInfo(absl::StrCat(
        "switch ", config_.name, ": group ", groups_[group].name,
        ": samples arrived just after the report grid's points; subscribing "
        "again in ",
        absl::FormatDuration(delay), " to have them before (try ",
        phases_[group].realigns(), " of ", SamplePhase::kMaxRealigns, ")"));
  } else {
    phases_[group].Restarted();
    const std::string reason = idle ? "idle" : EndReason(status.error_code());
    ++errors_[reason];
    // The status comes from the target; the credentials only travel out.
    last_error_ = absl::StrCat("group ", groups_[group].name, ": ", reason,
                               ": ", status.error_message());
    if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED &&
        !groups_[group].required) {
      delay = options_.unimplemented_retry;
    } else {
      delay = Backoff(attempts_[group]++);
    }
  }
  ++reconnects_;
  lock.unlock();
  std::weak_ptr<SwitchSession> weak = weak_from_this();
  scheduler_->After(delay, [weak, group] {
    if (std::shared_ptr<SwitchSession> self = weak.lock()) {
      self->StartGroup(group);
    }
  });
  finish(&lock);
}

absl::Duration SwitchSession::Backoff(int attempt) {
  const double base = absl::ToDoubleSeconds(options_.backoff_initial) *
                      std::pow(2.0, std::min(attempt, 20));
  const double capped =
      std::min(base, absl::ToDoubleSeconds(options_.backoff_max));
  // Jitter in [0.5, 1): switches that failed together do not retry in step.
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  return absl::Seconds(capped * jitter(rng));
}

void SwitchSession::Build(int64_t now_nanos, absl::Time wall,
                          absl::Duration stale_after, agent::Snapshot* snapshot,
                          std::vector<agent::SampleRate>* rates) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.Build(now_nanos, wall, stale_after, snapshot, rates);
}

bool SwitchSession::TakeReload() {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.TakeReload();
}

SwitchSession::Stats SwitchSession::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].required && (streaming_[g] || resubscribing_[g])) {
      s.up = true;
    }
  }
  s.updates = state_.updates();
  s.last_update_nanos = state_.last_update_nanos();
  s.reconnects = reconnects_;
  s.realigns = realigns_;
  for (size_t g = 0; g < groups_.size(); ++g) {
    s.sample_wait = std::max(s.sample_wait, phases_[g].MedianWait());
  }
  s.resets = state_.resets();
  s.lldp_up = state_.lldp_synced();
  s.lldp_neighbors = state_.lldp_neighbors();
  s.lldp_incomplete = state_.lldp_incomplete();
  s.errors = errors_;
  for (const auto& [reason, n] : state_.ErrorCounts()) s.errors[reason] += n;
  s.last_error = last_error_;
  return s;
}

}  // namespace fabricdiag::gnmi
