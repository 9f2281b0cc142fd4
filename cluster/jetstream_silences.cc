#include "cluster/jetstream_silences.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/kv_payload.h"
#include "cluster/kv_watch.h"
#include "common/log.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace fabricdiag::cluster {
namespace {

// A mark is a few hundred bytes; anything larger is not one.
constexpr uint64_t kMaxValueBytes = 64 << 10;
// How long a write keeps retrying while the cluster elects a leader.
constexpr absl::Duration kWriteDeadline = absl::Seconds(10);
constexpr absl::Duration kRetryPause = absl::Milliseconds(300);

}  // namespace

absl::StatusOr<std::unique_ptr<JetStreamMarks>> JetStreamMarks::Open(
    NatsConnection* nats, const Options& options) {
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = options.bucket.c_str();
  config.Description =
      "fabricdiag operator marks: acks, silences, forgotten nodes";
  config.History = 1;
  // Marks are an operator's decisions: a NATS restart must not drop them.
  config.StorageType = js_FileStorage;
  config.Replicas = options.replicas;
  config.TTL = absl::ToInt64Nanoseconds(kMarksMaxAge);
  ASSIGN_OR_RETURN(kvStore * kv, BindOrCreateBucket(*nats, config));
  std::unique_ptr<JetStreamMarks> marks(new JetStreamMarks(nats, options, kv));
  marks->watcher_ = std::thread(&JetStreamMarks::WatchLoop, marks.get());
  RETURN_IF_ERROR(WaitForReplay(marks->replayed_, *nats, options.bucket));
  return marks;
}

JetStreamMarks::JetStreamMarks(NatsConnection* nats, Options options,
                               kvStore* kv)
    : nats_(nats), options_(std::move(options)), kv_(kv) {}

JetStreamMarks::~JetStreamMarks() {
  StopWatching();
  kvStore_Destroy(kv_);
}

void JetStreamMarks::StopWatching() {
  stopping_ = true;
  if (watcher_.joinable()) watcher_.join();
  absl::MutexLock lock(&mu_);
  on_mark_ = nullptr;
}

std::string JetStreamMarks::Describe() const {
  return absl::StrCat("NATS bucket ", options_.bucket, " (",
                      absl::StrJoin(nats_->urls(), ","), ")");
}

absl::Status JetStreamMarks::Put(const v1::OperatorMark& mark) {
  const std::string key = collector::MarkKey(mark);
  if (key.empty()) return absl::InvalidArgumentError("an empty mark");
  const std::string value = KvPayload(mark);
  const absl::Time deadline = absl::Now() + kWriteDeadline;
  while (true) {
    uint64_t revision = 0;
    const natsStatus s = kvStore_Put(&revision, kv_, key.c_str(), value.data(),
                                     static_cast<int>(value.size()));
    if (s == NATS_OK) return absl::OkStatus();
    absl::Status error = NatsError(
        s, absl::StrCat("writing key ", key, " of bucket ", options_.bucket));
    if (!absl::IsUnavailable(error) ||
        !PauseBeforeRetry(*nats_, kRetryPause, deadline)) {
      return error;
    }
  }
}

absl::StatusOr<std::vector<v1::OperatorMark>> JetStreamMarks::ReadAll() {
  absl::MutexLock lock(&mu_);
  std::vector<v1::OperatorMark> out;
  out.reserve(marks_.size());
  for (const auto& [key, mark] : marks_) out.push_back(mark);
  return out;
}

void JetStreamMarks::Watch(
    std::function<void(const v1::OperatorMark&)> on_mark) {
  absl::MutexLock lock(&mu_);
  on_mark_ = std::move(on_mark);
  // Whatever arrived since the caller's ReadAll: applying a mark twice is
  // harmless, missing one is not.
  for (const auto& [key, mark] : marks_) on_mark_(mark);
}

void JetStreamMarks::ApplyEntry(kvEntry* entry) {
  // A key deleted or purged by hand (or aged out): the mark stays until the
  // collector restarts.
  if (kvEntry_Operation(entry) != kvOp_Put) return;
  const absl::string_view key = kvEntry_Key(entry);
  v1::OperatorMark mark;
  if (!ParseKvPayload(
          absl::string_view(static_cast<const char*>(kvEntry_Value(entry)),
                            static_cast<size_t>(kvEntry_ValueLen(entry))),
          kMaxValueBytes, &mark) ||
      collector::MarkKey(mark) != key) {
    LogWarning(absl::StrCat("operator marks: bucket ", options_.bucket, " key ",
                            QuoteForMessage(key),
                            ": not a mark of that key; skipped"));
    return;
  }
  absl::MutexLock lock(&mu_);
  marks_[std::string(key)] = mark;
  if (on_mark_) on_mark_(mark);
}

void JetStreamMarks::WatchLoop() {
  BucketWatch watch;
  watch.what = "the operator marks";
  watch.stopping = [this] { return stopping_.load(); };
  watch.pause = [this](absl::Duration d) {
    absl::SleepFor(d);
    return !stopping_.load();
  };
  watch.apply = [this](kvEntry* entry) { ApplyEntry(entry); };
  watch.replayed = [this] {
    if (!replayed_.HasBeenNotified()) replayed_.Notify();
  };
  RunBucketWatch(*nats_, kv_, options_.bucket, watch);
}

}  // namespace fabricdiag::cluster
