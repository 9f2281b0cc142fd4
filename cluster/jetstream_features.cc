#include "cluster/jetstream_features.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/log.h"

namespace fabricdiag::cluster {
namespace {

// The collector and chunk number of `subject` ("<prefix><id>.<n>").
std::optional<std::pair<std::string, uint32_t>> ChunkOfSubject(
    absl::string_view subject, absl::string_view prefix) {
  if (!absl::ConsumePrefix(&subject, prefix)) return std::nullopt;
  const size_t dot = subject.rfind('.');
  uint32_t index = 0;
  if (dot == absl::string_view::npos || dot == 0 ||
      !absl::SimpleAtoi(subject.substr(dot + 1), &index)) {
    return std::nullopt;
  }
  return std::make_pair(std::string(subject.substr(0, dot)), index);
}

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
  absl::Status stream =
      EnsureStream(*nats, options, absl::StrCat(options.subject, ".>"));
  if (!stream.ok()) return stream;
  std::unique_ptr<JetStreamFeatures> features(
      new JetStreamFeatures(nats, std::move(collector_id), options));
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = absl::ToInt64Milliseconds(nats->request_timeout());
  js_options.PublishAsync.MaxPending = kPublishesInFlight;
  js_options.PublishAsync.StallWait = js_options.Wait;
  js_options.PublishAsync.ErrHandler = &JetStreamFeatures::OnPublishError;
  js_options.PublishAsync.ErrHandlerClosure = features.get();
  const natsStatus js =
      natsConnection_JetStream(&features->publish_js_, nats->nc(), &js_options);
  if (js != NATS_OK) {
    return NatsError(js, "creating the features' JetStream context");
  }
  const std::string liveness = absl::StrCat(options.liveness_subject, ".>");
  absl::MutexLock lock(&features->subs_mu_);
  features->liveness_sub_ =
      features->Subscribe(liveness, &JetStreamFeatures::OnLiveness);
  if (features->liveness_sub_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("subscribing to ", liveness));
  }
  features->liveness_since_nanos_ = MonotonicNanos();
  return features;
}

JetStreamFeatures::JetStreamFeatures(NatsConnection* nats,
                                     std::string collector_id, Options options)
    : nats_(nats),
      id_(collector_id),
      options_(std::move(options)),
      own_prefix_(absl::StrCat(options_.subject, ".", id_, ".")),
      cache_(std::move(collector_id)) {}

JetStreamFeatures::~JetStreamFeatures() {
  {
    absl::MutexLock lock(&subs_mu_);
    StopCatchUp();
    // Ended together: a stalled server costs one wait for the reader, not
    // one per subscription.
    std::vector<std::unique_ptr<NatsSubscription>> subs;
    subs.push_back(std::move(features_sub_));
    subs.push_back(std::move(liveness_sub_));
    NatsSubscription::End(std::move(subs));
  }
  // Nothing left in flight: a reply that still arrives finds no message
  // and calls no handler. (The list exists only after a publish.)
  {
    absl::MutexLock publishing(&publish_mu_);
    natsMsgList pending;
    if (in_flight_.sent > 0 &&
        js_PublishAsyncGetPendingList(&pending, publish_js_) == NATS_OK) {
      natsMsgList_Destroy(&pending);
    }
  }
  if (publish_js_ != nullptr) jsCtx_Destroy(publish_js_);
}

void JetStreamFeatures::OnPublishError(jsCtx* /*js*/, jsPubAckErr* pae,
                                       void* closure) {
  auto* self = static_cast<JetStreamFeatures*>(closure);
  if (self->refused_chunks_.fetch_add(1) != 0) return;
  absl::MutexLock lock(&self->refused_mu_);
  self->first_refusal_ = absl::StrCat(
      natsMsg_GetSubject(pae->Msg), ": ",
      pae->ErrText != nullptr ? pae->ErrText : natsStatus_GetText(pae->Err),
      pae->ErrCode != 0 ? absl::StrCat(" (error code ", pae->ErrCode, ")")
                        : "");
}

std::unique_ptr<NatsSubscription> JetStreamFeatures::Subscribe(
    const std::string& subject, natsMsgHandler handler) {
  // A large fabric's slices arrive in bursts of chunks: let them queue
  // rather than be dropped as a slow consumer. Not drained when it ends:
  // what is still pending would only be dropped (a collector that stops
  // receiving feature chunks frees those it has).
  return NatsSubscription::Open(nats_->nc(), subject, handler, this,
                                {65536, 512 << 20});
}

std::string JetStreamFeatures::Describe() const {
  return absl::StrCat("NATS stream ", options_.stream, " (",
                      absl::StrJoin(nats_->urls(), ","), ")");
}

void JetStreamFeatures::OnFeatures(natsConnection* /*nc*/,
                                   natsSubscription* /*sub*/, natsMsg* msg,
                                   void* closure) {
  auto* self = static_cast<JetStreamFeatures*>(closure);
  // fabricdiag.features.> brings this collector's own chunks back too:
  // known by their subject, dropped unread.
  if (absl::StartsWith(natsMsg_GetSubject(msg), self->own_prefix_)) {
    self->own_chunks_skipped_.fetch_add(1, std::memory_order_relaxed);
  } else {
    self->cache_.Received(
        absl::string_view(natsMsg_GetData(msg),
                          static_cast<size_t>(natsMsg_GetDataLength(msg))),
        absl::Now());
  }
  natsMsg_Destroy(msg);
}

void JetStreamFeatures::OnLiveness(natsConnection* /*nc*/,
                                   natsSubscription* /*sub*/, natsMsg* msg,
                                   void* closure) {
  auto* self = static_cast<JetStreamFeatures*>(closure);
  self->cache_.ReceivedLiveness(
      absl::string_view(natsMsg_GetData(msg),
                        static_cast<size_t>(natsMsg_GetDataLength(msg))),
      absl::Now());
  natsMsg_Destroy(msg);
}

void JetStreamFeatures::ReceiveFeatures() {
  features_needed_nanos_ = MonotonicNanos();
  if (features_sub_ != nullptr) return;
  features_sub_ = Subscribe(absl::StrCat(options_.subject, ".>"),
                            &JetStreamFeatures::OnFeatures);
  if (features_sub_ == nullptr) return;  // tried again next merge
  receiving_features_.store(true);
  StopCatchUp();  // one that ended, reaped
  catch_up_stop_.store(false);
  catch_up_ = std::thread(&JetStreamFeatures::CatchUp, this);
}

void JetStreamFeatures::StopCatchUp() {
  catch_up_stop_.store(true);
  if (catch_up_.joinable()) catch_up_.join();
}

void JetStreamFeatures::StopReceivingFeatures() {
  receiving_features_.store(false);
  // Before the chunks are freed: it would keep some again.
  StopCatchUp();
  features_sub_.reset();
  cache_.DropFeatures();
}

void JetStreamFeatures::CatchUp() {
  const int64_t start = MonotonicNanos();
  catch_up_nanos_.store(0);
  catch_up_subjects_.store(0);
  catch_up_skipped_.store(0);
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
    catch_up_nanos_.store(std::max<int64_t>(1, MonotonicNanos() - start));
    return;
  }
  std::vector<std::string> subjects;
  if (info->State.Subjects != nullptr) {
    for (int i = 0; i < info->State.Subjects->Count; ++i) {
      const char* subject = info->State.Subjects->List[i].Subject;
      if (!absl::StartsWith(subject, own_prefix_)) {
        subjects.emplace_back(subject);
      }
    }
  }
  jsStreamInfo_Destroy(info);
  const absl::Time now = absl::Now();
  const std::string prefix = absl::StrCat(options_.subject, ".");
  uint64_t read = 0;
  uint64_t skipped = 0;
  for (const std::string& subject : subjects) {
    if (catch_up_stop_.load() || nats_->closed()) break;
    // The others publish every pass: once the subscription brought a
    // subject's next chunk, the stream's older one is not asked for. So a
    // catch-up costs about one interval's requests, however large the
    // fabric.
    if (const std::optional<std::pair<std::string, uint32_t>> chunk =
            ChunkOfSubject(subject, prefix);
        chunk.has_value() &&
        cache_.HasFeatureChunk(chunk->first, chunk->second, now)) {
      ++skipped;
      continue;
    }
    natsMsg* msg = nullptr;
    s = js_GetLastMsg(&msg, nats_->js(), options_.stream.c_str(),
                      subject.c_str(), nullptr, &code);
    if (s != NATS_OK) continue;
    ++read;
    // Counted from when the server stored it, not from now.
    const absl::Time stored =
        std::min(now, absl::FromUnixNanos(natsMsg_GetTime(msg)));
    cache_.Received(
        absl::string_view(natsMsg_GetData(msg),
                          static_cast<size_t>(natsMsg_GetDataLength(msg))),
        stored);
    natsMsg_Destroy(msg);
  }
  catch_up_subjects_.store(read);
  catch_up_skipped_.store(skipped);
  const int64_t took = std::max<int64_t>(1, MonotonicNanos() - start);
  catch_up_nanos_.store(took);
  LogInfo(absl::StrCat("features: read the stream's latest chunk of ", read,
                       " of ", subjects.size(), " subjects in ",
                       absl::FormatDuration(absl::Trunc(absl::Nanoseconds(took),
                                                        absl::Milliseconds(1))),
                       " (", skipped, " arrived first)",
                       catch_up_stop_.load() ? " (stopped)" : ""));
}

absl::Status JetStreamFeatures::PublishLivenessChunks(
    const collector::FeatureSlice& local, absl::Time now) {
  // While disconnected, libnats would buffer what no one should read
  // late, and fill its reconnect buffer with it. (link_up(): connected()
  // would wait for the client's lock, held by its reconnect attempts.)
  if (!nats_->link_up()) {
    liveness_publish_errors_.fetch_add(1);
    return absl::UnavailableError("publishing liveness: NATS not connected");
  }
  uint64_t bytes = 0;
  absl::Status status;
  for (const v1::FeatureChunkFacts& chunk :
       SliceToLivenessChunks(local, id_, now, options_.max_chunk_bytes)) {
    const std::string data = chunk.SerializeAsString();
    bytes += data.size();
    const std::string subject =
        absl::StrCat(options_.liveness_subject, ".", id_, ".", chunk.chunk());
    // Core NATS: buffered by libnats and sent by its flusher, no round
    // trip; lost only with the connection (sent again next pass).
    const natsStatus s =
        natsConnection_Publish(nats_->nc(), subject.c_str(), data.data(),
                               static_cast<int>(data.size()));
    if (s != NATS_OK) {
      liveness_publish_errors_.fetch_add(1);
      status = NatsError(s, absl::StrCat("publishing liveness to ", subject));
      break;
    }
  }
  last_published_liveness_bytes_.store(bytes);
  return status;
}

absl::Status JetStreamFeatures::PublishLiveness(
    const collector::FeatureSlice& local, absl::Time now) {
  absl::Status liveness = PublishLivenessChunks(local, now);
  if (liveness.ok() == liveness_failing_.load()) {
    liveness_failing_.store(!liveness.ok());
    if (!liveness.ok()) {
      LogWarning(absl::StrCat(liveness.message(), " (tried again each pass)"));
    } else {
      LogInfo("publishing this collector's liveness again");
    }
  }
  return liveness;
}

absl::Status JetStreamFeatures::Publish(const collector::FeatureSlice& local,
                                        absl::Time now) {
  // First, and whatever becomes of the stream's publishes: the other
  // collectors' node lists depend on it alone.
  PublishLiveness(local, now).IgnoreError();  // counted and logged
  absl::MutexLock publishing(&publish_mu_);
  // The previous pass's chunks, acknowledged meanwhile (or not).
  const absl::Status previous = Settle();
  uint64_t bytes = 0;
  absl::Status status;  // the first failure
  // Not connected: handed to libnats, the chunks would wait in its
  // reconnect buffer and the pass for their acknowledgements.
  if (!nats_->link_up()) {
    status = absl::UnavailableError(absl::StrCat("publishing features to ",
                                                 options_.subject, ".", id_,
                                                 ": NATS not connected"));
  }
  std::vector<v1::FeatureChunk> chunks;
  if (status.ok()) {
    chunks = SliceToChunks(local, id_, now, options_.max_chunk_bytes);
  }
  refused_chunks_.store(0);
  uint64_t sent = 0;
  for (const v1::FeatureChunk& chunk : chunks) {
    const std::string data = chunk.SerializeAsString();
    bytes += data.size();
    const std::string subject =
        absl::StrCat(options_.subject, ".", id_, ".", chunk.chunk());
    // Acknowledged asynchronously: many chunks in flight, not one round
    // trip after the other. Waits (up to the request timeout) only while
    // kPublishesInFlight are unacknowledged.
    const natsStatus s =
        js_PublishAsync(publish_js_, subject.c_str(), data.data(),
                        static_cast<int>(data.size()), nullptr);
    if (s != NATS_OK) {
      // The rest of the slice is not tried: each attempt could wait the
      // whole request timeout, and the analysis pass waits for this one.
      status = NatsError(s, absl::StrCat("publishing features to ", subject));
      break;
    }
    ++sent;
  }
  last_published_bytes_.store(bytes);
  // Acknowledged while the pass goes on: the next Publish() (or
  // WaitForAcknowledgements()) collects them. Sending nothing is known now.
  in_flight_ = InFlight{
      true, sent,
      MonotonicNanos() + absl::ToInt64Nanoseconds(nats_->request_timeout()),
      status};
  if (sent == 0) Settle().IgnoreError();  // returned below
  return status.ok() ? previous : status;
}

absl::Status JetStreamFeatures::WaitForAcknowledgements() {
  absl::MutexLock publishing(&publish_mu_);
  return Settle();
}

absl::Status JetStreamFeatures::Settle() {
  InFlight f = std::exchange(in_flight_, InFlight{});
  if (!f.pending) return absl::OkStatus();
  absl::Status status = std::move(f.status);
  uint64_t sent = f.sent;
  if (sent > 0) {
    jsPubOptions wait;
    jsPubOptions_Init(&wait);
    // The rest of the request timeout since the last chunk was sent (at
    // least a millisecond: 0 would be libnats' default).
    wait.MaxWait =
        std::max<int64_t>(1, (f.deadline_nanos - MonotonicNanos()) / 1000000);
    if (js_PublishAsyncComplete(publish_js_, &wait) != NATS_OK) {
      // Unacknowledged: dropped from the pending list (a late reply is
      // ignored), so that the next pass starts afresh. (Only after a
      // publish: libnats 3.4 has no list before the first.)
      natsMsgList pending;
      int unacknowledged = 0;
      if (js_PublishAsyncGetPendingList(&pending, publish_js_) == NATS_OK) {
        unacknowledged = pending.Count;
        natsMsgList_Destroy(&pending);
      }
      if (status.ok()) {
        status = absl::DeadlineExceededError(absl::StrCat(
            "publishing features to ", options_.subject, ".", id_, ": ",
            unacknowledged, " of ", sent, " chunks not acknowledged within ",
            absl::FormatDuration(nats_->request_timeout())));
      }
      sent -= std::min<uint64_t>(sent, unacknowledged);
    }
  }
  const uint64_t refused = refused_chunks_.load();
  if (refused > 0 && status.ok()) {
    absl::MutexLock lock(&refused_mu_);
    status = absl::UnavailableError(
        absl::StrCat("publishing features: ", refused, " of ", sent,
                     " chunks refused, the first ", first_refusal_));
  }
  published_chunks_.fetch_add(sent - std::min(sent, refused));
  if (!status.ok()) publish_errors_.fetch_add(1);
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
  // Freshness is judged by this collector's clock, as receipt was.
  const absl::Time now = absl::Now();
  FeatureCache::Presence presence;
  presence.now = now;
  if (options_.live_members) presence.live = options_.live_members();
  // The next pass most likely merges what this one does: decode the
  // chunks that arrive until then (and those read now) only if it merges
  // ports.
  cache_.DecodeOnReceipt(scope == collector::MergeScope::kFabric);
  {
    absl::MutexLock lock(&subs_mu_);
    const int64_t mono = MonotonicNanos();
    // A live collector whose liveness does not arrive: its nodes are read
    // from its feature chunks.
    const bool liveness_missing =
        mono - liveness_since_nanos_ >=
            absl::ToInt64Nanoseconds(options_.freshness) &&
        !cache_.WithoutLiveness(now - options_.freshness, presence.live)
             .empty();
    if (scope == collector::MergeScope::kFabric || liveness_missing) {
      ReceiveFeatures();
    } else if (features_sub_ != nullptr &&
               mono - features_needed_nanos_ >=
                   absl::ToInt64Nanoseconds(options_.features_linger)) {
      StopReceivingFeatures();
    }
  }
  return cache_.Merged(std::move(local), now - options_.freshness, scope,
                       presence);
}

std::map<std::string, absl::Time> JetStreamFeatures::LastReceived() const {
  return cache_.LastReceived(receiving_features_.load()
                                 ? FeatureCache::Feed::kFeatures
                                 : FeatureCache::Feed::kLiveness);
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
  s.received_bytes = cache.received_bytes;
  s.received_liveness_bytes = cache.received_liveness_bytes;
  s.last_published_liveness_bytes = last_published_liveness_bytes_.load();
  s.liveness_publish_errors = liveness_publish_errors_.load();
  s.receiving_features = receiving_features_.load();
  s.undecodable_chunks = cache.undecodable_chunks;
  s.merged_members = cache.merged_members;
  s.merged_remote_ports = cache.merged_remote_ports;
  s.merge_decoded_chunks = cache.merge_decoded_chunks;
  s.unobserved_nodes = cache.unobserved_nodes;
  s.moving_nodes = cache.moving_nodes;
  s.own_chunks_skipped = own_chunks_skipped_.load();
  s.catch_up_subjects = catch_up_subjects_.load();
  s.catch_up_skipped = catch_up_skipped_.load();
  s.catch_up_took = absl::Nanoseconds(catch_up_nanos_.load());
  return s;
}

}  // namespace fabricdiag::cluster
