#include "cluster/jetstream_features.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"

namespace fabricdiag::cluster {
namespace {

int64_t MonotonicNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Creates the stream unless it exists, retrying until the connection's
// startup deadline (another collector may be creating it, the cluster may
// be electing its leaders).
absl::Status EnsureStream(const NatsConnection& nats,
                          const JetStreamFeatures::Options& options,
                          const std::string& subjects) {
  jsCtx* js = nats.js();
  StartupRetry retry(nats);
  while (true) {
    jsStreamInfo* info = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    natsStatus s =
        js_GetStreamInfo(&info, js, options.stream.c_str(), nullptr, &code);
    if (s == NATS_NOT_FOUND) {
      jsStreamConfig config;
      jsStreamConfig_Init(&config);
      config.Name = options.stream.c_str();
      const char* subject_list[] = {subjects.c_str()};
      config.Subjects = subject_list;
      config.SubjectsLen = 1;
      config.Storage = js_MemoryStorage;  // features, not state
      config.Replicas = options.replicas;
      config.MaxMsgsPerSubject = 1;
      config.MaxAge = absl::ToInt64Nanoseconds(options.max_age);
      config.Discard = js_DiscardOld;
      s = js_AddStream(&info, js, &config, nullptr, &code);
    }
    if (info != nullptr) jsStreamInfo_Destroy(info);
    if (s == NATS_OK) return absl::OkStatus();
    absl::Status error =
        NatsError(s, absl::StrCat("opening stream ", options.stream));
    if (absl::StrContains(error.message(), "not supported in non-clustered")) {
      return absl::FailedPreconditionError(absl::StrCat(
          error.message(),
          ": the NATS server is not a cluster; run with --nats_replicas=1"));
    }
    if (!retry.Pause(error)) return retry.GiveUp(error);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<JetStreamFeatures>> JetStreamFeatures::Open(
    NatsConnection* nats, std::string collector_id, const Options& options) {
  const std::string subjects = absl::StrCat(options.subject, ".>");
  absl::Status stream = EnsureStream(*nats, options, subjects);
  if (!stream.ok()) return stream;
  std::unique_ptr<JetStreamFeatures> features(
      new JetStreamFeatures(nats, std::move(collector_id), options));
  const natsStatus s =
      natsConnection_Subscribe(&features->sub_, nats->nc(), subjects.c_str(),
                               &JetStreamFeatures::OnMessage, features.get());
  if (s != NATS_OK) {
    return NatsError(s, absl::StrCat("subscribing to ", subjects));
  }
  natsSubscription_SetOnCompleteCB(
      features->sub_, &JetStreamFeatures::OnComplete, features.get());
  // A large fabric's slices arrive in bursts of chunks: let them queue
  // rather than be dropped as a slow consumer.
  natsSubscription_SetPendingLimits(features->sub_, 65536, 512 << 20);
  features->CatchUp();
  return features;
}

JetStreamFeatures::JetStreamFeatures(NatsConnection* nats,
                                     std::string collector_id, Options options)
    : nats_(nats),
      id_(collector_id),
      options_(std::move(options)),
      cache_(std::move(collector_id)) {}

JetStreamFeatures::~JetStreamFeatures() {
  if (sub_ == nullptr) return;
  // Without a server a drain cannot complete (it would wait its whole
  // timeout): the subscription is closed here at once. Either way the
  // handler may still run one last time, so this waits for OnComplete.
  if (!nats_->connected() || natsSubscription_Drain(sub_) != NATS_OK) {
    natsSubscription_Unsubscribe(sub_);
  }
  if (!sub_done_.WaitForNotificationWithTimeout(absl::Seconds(5))) {
    // Never seen; the handler could still run.
    LogWarning("features subscription: its handler did not finish in 5s");
  }
  natsSubscription_Destroy(sub_);
}

void JetStreamFeatures::OnComplete(void* closure) {
  static_cast<JetStreamFeatures*>(closure)->sub_done_.Notify();
}

std::string JetStreamFeatures::Describe() const {
  return absl::StrCat("NATS stream ", options_.stream, " (",
                      absl::StrJoin(nats_->urls(), ","), ")");
}

void JetStreamFeatures::OnMessage(natsConnection* /*nc*/,
                                  natsSubscription* /*sub*/, natsMsg* msg,
                                  void* closure) {
  auto* self = static_cast<JetStreamFeatures*>(closure);
  self->cache_.Received(
      absl::string_view(natsMsg_GetData(msg),
                        static_cast<size_t>(natsMsg_GetDataLength(msg))),
      absl::Now());
  natsMsg_Destroy(msg);
}

void JetStreamFeatures::CatchUp() {
  jsOptions o;
  jsOptions_Init(&o);
  const std::string filter = absl::StrCat(options_.subject, ".>");
  o.Stream.Info.SubjectsFilter = filter.c_str();
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus s =
      js_GetStreamInfo(&info, nats_->js(), options_.stream.c_str(), &o, &code);
  if (s != NATS_OK) {
    // The subscription fills the cache within a pass anyway.
    LogWarning(
        NatsError(s, "reading the features stream's subjects").message());
    return;
  }
  std::vector<std::string> subjects;
  if (info->State.Subjects != nullptr) {
    for (int i = 0; i < info->State.Subjects->Count; ++i) {
      subjects.emplace_back(info->State.Subjects->List[i].Subject);
    }
  }
  jsStreamInfo_Destroy(info);
  const absl::Time now = absl::Now();
  for (const std::string& subject : subjects) {
    natsMsg* msg = nullptr;
    s = js_GetLastMsg(&msg, nats_->js(), options_.stream.c_str(),
                      subject.c_str(), nullptr, &code);
    if (s != NATS_OK) continue;
    // Counted from when the server stored it, not from now.
    const absl::Time stored =
        std::min(now, absl::FromUnixNanos(natsMsg_GetTime(msg)));
    cache_.Received(
        absl::string_view(natsMsg_GetData(msg),
                          static_cast<size_t>(natsMsg_GetDataLength(msg))),
        stored);
    natsMsg_Destroy(msg);
  }
}

absl::Status JetStreamFeatures::Publish(const collector::FeatureSlice& local,
                                        absl::Time now) {
  uint64_t bytes = 0;
  absl::Status status;  // the first failure
  for (const v1::FeatureChunk& chunk :
       SliceToChunks(local, id_, now, options_.max_chunk_bytes)) {
    const std::string data = chunk.SerializeAsString();
    bytes += data.size();
    const std::string subject =
        absl::StrCat(options_.subject, ".", id_, ".", chunk.chunk());
    jsErrCode code = static_cast<jsErrCode>(0);
    const natsStatus s =
        js_Publish(nullptr, nats_->js(), subject.c_str(), data.data(),
                   static_cast<int>(data.size()), nullptr, &code);
    if (s != NATS_OK) {
      // The rest of the slice is not tried: each attempt could wait the
      // whole request timeout, and the analysis pass waits for this one.
      publish_errors_.fetch_add(1);
      status = NatsError(s, absl::StrCat("publishing features to ", subject));
      break;
    }
    published_chunks_.fetch_add(1);
  }
  last_published_bytes_.store(bytes);
  if (status.ok()) {
    failing_since_nanos_.store(0);
  } else {
    int64_t none = 0;
    failing_since_nanos_.compare_exchange_strong(none, MonotonicNanos());
  }
  absl::MutexLock lock(&mu_);
  last_publish_status_ = status;
  return status;
}

absl::Duration JetStreamFeatures::publish_failing_for() const {
  const int64_t since = failing_since_nanos_.load();
  if (since == 0) return absl::ZeroDuration();
  return absl::Nanoseconds(MonotonicNanos() - since);
}

collector::FeatureSlice JetStreamFeatures::Merged(collector::FeatureSlice local,
                                                  absl::Time /*now*/,
                                                  collector::MergeScope scope) {
  // The next pass most likely merges what this one does: decode the
  // chunks that arrive until then only if it merges ports.
  cache_.DecodeOnReceipt(scope == collector::MergeScope::kFabric);
  // Freshness is judged by this collector's clock, as receipt was.
  const absl::Time now = absl::Now();
  FeatureCache::Presence presence;
  presence.now = now;
  if (options_.live_members) presence.live = options_.live_members();
  return cache_.Merged(std::move(local), now - options_.freshness, scope,
                       presence);
}

std::map<std::string, absl::Time> JetStreamFeatures::LastReceived() const {
  return cache_.LastReceived();
}

absl::Status JetStreamFeatures::last_publish_status() const {
  absl::MutexLock lock(&mu_);
  return last_publish_status_;
}

JetStreamFeatures::Stats JetStreamFeatures::stats() const {
  Stats s;
  s.published_chunks = published_chunks_.load();
  s.publish_errors = publish_errors_.load();
  s.last_published_bytes = last_published_bytes_.load();
  const FeatureCache::Stats cache = cache_.stats();
  s.received_chunks = cache.received_chunks;
  s.undecodable_chunks = cache.undecodable_chunks;
  s.merged_members = cache.merged_members;
  s.merged_remote_ports = cache.merged_remote_ports;
  s.merge_decoded_chunks = cache.merge_decoded_chunks;
  s.unobserved_nodes = cache.unobserved_nodes;
  return s;
}

}  // namespace fabricdiag::cluster
