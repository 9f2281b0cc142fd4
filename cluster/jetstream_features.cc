#include "cluster/jetstream_features.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"

namespace fabricdiag::cluster {
namespace {

constexpr absl::Duration kRetryPause = absl::Milliseconds(250);

// Creates the stream unless it exists, retrying until `deadline` (another
// collector may be creating it, the cluster may be electing its leaders).
absl::Status EnsureStream(jsCtx* js, const JetStreamFeatures::Options& options,
                          const std::string& subjects) {
  const absl::Time give_up = absl::Now() + options.deadline;
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
    if (absl::Now() + kRetryPause > give_up) return error;
    absl::SleepFor(kRetryPause);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<JetStreamFeatures>> JetStreamFeatures::Open(
    NatsConnection* nats, std::string collector_id, const Options& options) {
  const std::string subjects = absl::StrCat(options.subject, ".>");
  absl::Status stream = EnsureStream(nats->js(), options, subjects);
  if (!stream.ok()) return stream;
  std::unique_ptr<JetStreamFeatures> features(
      new JetStreamFeatures(nats, std::move(collector_id), options));
  const natsStatus s =
      natsConnection_Subscribe(&features->sub_, nats->nc(), subjects.c_str(),
                               &JetStreamFeatures::OnMessage, features.get());
  if (s != NATS_OK) {
    return NatsError(s, absl::StrCat("subscribing to ", subjects));
  }
  // A large fabric's slices arrive in bursts of chunks: let them queue
  // rather than be dropped as a slow consumer.
  natsSubscription_SetPendingLimits(features->sub_, 65536, 512 << 20);
  features->CatchUp();
  return features;
}

JetStreamFeatures::JetStreamFeatures(NatsConnection* nats,
                                     std::string collector_id, Options options)
    : nats_(nats), id_(std::move(collector_id)), options_(std::move(options)) {}

JetStreamFeatures::~JetStreamFeatures() {
  if (sub_ == nullptr) return;
  // Unsubscribe alone does not wait for a callback that is running; a
  // drain does (when the connection is gone, no callback runs any more).
  if (natsSubscription_Drain(sub_) == NATS_OK) {
    natsSubscription_WaitForDrainCompletion(sub_, 5000);
  } else {
    natsSubscription_Unsubscribe(sub_);
  }
  natsSubscription_Destroy(sub_);
}

std::string JetStreamFeatures::Describe() const {
  return absl::StrCat("NATS stream ", options_.stream, " (",
                      absl::StrJoin(nats_->urls(), ","), ")");
}

void JetStreamFeatures::OnMessage(natsConnection* /*nc*/,
                                  natsSubscription* /*sub*/, natsMsg* msg,
                                  void* closure) {
  auto* self = static_cast<JetStreamFeatures*>(closure);
  self->Received(
      absl::string_view(natsMsg_GetData(msg),
                        static_cast<size_t>(natsMsg_GetDataLength(msg))),
      absl::Now());
  natsMsg_Destroy(msg);
}

void JetStreamFeatures::Received(absl::string_view data, absl::Time received) {
  Chunk c;
  const bool parsed =
      c.chunk.ParseFromArray(data.data(), static_cast<int>(data.size()));
  c.received = received;
  absl::MutexLock lock(&mu_);
  ++received_chunks_;
  if (!parsed || c.chunk.chunks() == 0 || c.chunk.chunk() >= c.chunk.chunks()) {
    ++undecodable_chunks_;
    return;
  }
  if (c.chunk.collector_id() == id_) return;  // our own: merged locally
  auto key = std::make_pair(c.chunk.collector_id(), c.chunk.chunk());
  auto it = chunks_.find(key);
  if (it != chunks_.end() && it->second.chunk.published_unix_nanos() >
                                 c.chunk.published_unix_nanos()) {
    return;  // a late copy (catch-up racing the subscription)
  }
  chunks_[std::move(key)] = std::move(c);
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
    Received(absl::string_view(natsMsg_GetData(msg),
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
  absl::MutexLock lock(&mu_);
  last_publish_status_ = status;
  return status;
}

collector::FeatureSlice JetStreamFeatures::Merged(collector::FeatureSlice local,
                                                  absl::Time /*now*/) {
  // Freshness is judged by this collector's clock, as receipt was.
  const absl::Time cutoff = absl::Now() - options_.freshness;
  absl::MutexLock lock(&mu_);
  // Per other collector: its fresh chunks, the count its newest one names.
  std::map<std::string, collector::FeatureSlice> remote;
  std::map<std::string, const Chunk*> newest;
  for (const auto& [key, c] : chunks_) {
    if (c.received < cutoff) continue;
    const Chunk*& n = newest[key.first];
    if (n == nullptr ||
        c.chunk.published_unix_nanos() > n->chunk.published_unix_nanos()) {
      n = &c;
    }
  }
  for (const auto& [key, c] : chunks_) {
    auto n = newest.find(key.first);
    // A chunk index beyond what the collector now publishes is left over
    // from a larger slice.
    if (c.received < cutoff || n == newest.end() ||
        key.second >= n->second->chunk.chunks()) {
      continue;
    }
    AddChunkToSlice(c.chunk, &remote[key.first]);
  }
  for (collector::NodeFacts& n : local.nodes) n.collector = id_;
  std::vector<collector::FeatureSlice*> slices = {&local};
  uint64_t remote_ports = 0;
  for (auto& [id, slice] : remote) {
    FinishSlice(&slice);
    for (collector::NodeFacts& n : slice.nodes) n.collector = id;
    remote_ports += slice.window.ports().size();
    slices.push_back(&slice);
  }
  merged_members_ = remote.size();
  merged_remote_ports_ = remote_ports;
  collector::FeatureSlice merged = collector::MergeFeatureSlices(slices);
  for (const collector::NodeFacts& n : merged.nodes) {
    remembered_[n.liveness.node] = n;
  }
  if (remembered_.size() > merged.nodes.size()) {
    absl::flat_hash_set<absl::string_view> listed;
    for (const collector::NodeFacts& n : merged.nodes) {
      listed.insert(n.liveness.node);
    }
    std::vector<collector::NodeFacts> gone;
    for (const auto& [node, facts] : remembered_) {
      if (!listed.contains(node)) gone.push_back(facts);
    }
    std::sort(gone.begin(), gone.end(), [](const auto& a, const auto& b) {
      return a.liveness.node < b.liveness.node;
    });
    for (collector::NodeFacts& f : gone) merged.nodes.push_back(std::move(f));
  }
  return merged;
}

std::map<std::string, absl::Time> JetStreamFeatures::LastReceived() const {
  std::map<std::string, absl::Time> last;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, c] : chunks_) {
    auto [it, inserted] = last.try_emplace(key.first, c.received);
    if (!inserted) it->second = std::max(it->second, c.received);
  }
  return last;
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
  absl::MutexLock lock(&mu_);
  s.received_chunks = received_chunks_;
  s.undecodable_chunks = undecodable_chunks_;
  s.merged_members = merged_members_;
  s.merged_remote_ports = merged_remote_ports_;
  return s;
}

}  // namespace fabricdiag::cluster
