#include "cluster/jetstream_declared_state.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "collector/object_store.h"
#include "common/gzip.h"
#include "common/log.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace fabricdiag::cluster {
namespace {

using collector::DeclaredChange;
using collector::DeclaredLayout;
using collector::DeclaredTopology;

constexpr char kLayoutPrefix[] = "layout.";
constexpr char kTopologyKey[] = "topology";
constexpr absl::Duration kRetryPause = absl::Milliseconds(250);

// Values are kept for the last writes of a key: enough to see who changed
// a layout recently (`nats kv history`), small enough to never matter.
constexpr uint8_t kHistory = 8;

// Values whose protobuf is larger than this are stored gzip-compressed
// inside their envelope: the names of a 200,000-GPU topology repeat so
// much that its 7.8 MB shrink to about a tenth, well under NATS' default
// max_payload of 1 MiB. Smaller values stay plain, readable by any
// version. A protobuf never starts with gzip's magic bytes (0x1f is field
// 3 with wire type 7, which does not exist), so readers tell them apart.
constexpr size_t kCompressAbove = 64 << 10;
constexpr int kCompressLevel = 6;  // a rare write: the ratio matters more

std::string Payload(const google::protobuf::MessageLite& message) {
  std::string bytes = message.SerializeAsString();
  if (bytes.size() <= kCompressAbove) return bytes;
  absl::StatusOr<std::string> z = GzipCompress(bytes, kCompressLevel);
  return z.ok() && z->size() < bytes.size() ? *std::move(z) : bytes;
}

// Parses `payload` (plain or gzip-compressed protobuf) into `message`.
bool ParsePayload(absl::string_view payload,
                  google::protobuf::MessageLite* message) {
  std::string inflated;
  if (absl::StartsWith(payload, "\x1f\x8b")) {
    absl::StatusOr<std::string> plain =
        GzipDecompress(payload, collector::kMaxStateObjectBytes);
    if (!plain.ok()) return false;
    inflated = *std::move(plain);
    payload = inflated;
  }
  return message->ParseFromArray(payload.data(),
                                 static_cast<int>(payload.size()));
}

// Sleeps `d` in short steps; false when `stopping` was set meanwhile.
bool PauseUnlessStopping(const std::atomic<bool>& stopping, absl::Duration d) {
  const absl::Time until = absl::Now() + d;
  while (absl::Now() < until) {
    if (stopping.load()) return false;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return !stopping.load();
}

// The change one watcher entry stands for; nullopt for keys this version
// does not know (written by a newer collector: left alone).
// One stored version of a key, from a watcher entry or a message fetched
// by sequence.
struct StoredValue {
  std::string key;
  uint64_t revision = 0;
  bool deleted = false;  // a delete or purge marker
  absl::string_view data;
};

StoredValue FromEntry(kvEntry* e) {
  const kvOperation op = kvEntry_Operation(e);
  return StoredValue{
      kvEntry_Key(e), kvEntry_Revision(e),
      op == kvOp_Delete || op == kvOp_Purge,
      absl::string_view(static_cast<const char*>(kvEntry_Value(e)),
                        static_cast<size_t>(kvEntry_ValueLen(e)))};
}

std::optional<DeclaredChange> ToChange(const StoredValue& v,
                                       absl::string_view bucket) {
  DeclaredChange change;
  change.revision = v.revision;
  const std::string& key = v.key;
  const std::string where = absl::StrCat("bucket ", bucket, " key ", key,
                                         " revision ", change.revision);
  const std::optional<std::string> job = JobOfKey(key);
  if (!job.has_value() && key != kTopologyKey) return std::nullopt;
  if (v.deleted) {
    if (!job.has_value()) {
      change.kind = DeclaredChange::Kind::kDamaged;
      change.problem = absl::StrCat(
          where,
          ": the topology was deleted by hand; the one served stays "
          "until `fabricdiag topology apply`");
      return change;
    }
    change.kind = DeclaredChange::Kind::kLayoutRemoved;
    change.job = *job;
    return change;
  }
  const absl::string_view data = v.data;
  absl::string_view payload;
  absl::Time written;
  const absl::Status envelope =
      collector::DecodeObject(data, &payload, &written);
  change.kind = DeclaredChange::Kind::kDamaged;
  if (!envelope.ok()) {
    change.problem = absl::StrCat(where, ": ", envelope.message());
    return change;
  }
  if (job.has_value()) {
    v1::Layout layout;
    if (!ParsePayload(payload, &layout) || layout.job() != *job) {
      change.problem =
          absl::StrCat(where, ": not a layout of job ", QuoteForMessage(*job));
      return change;
    }
    change.kind = DeclaredChange::Kind::kLayout;
    change.job = *job;
    change.layout =
        DeclaredLayout{std::move(layout), written, change.revision, where};
    return change;
  }
  v1::Topology topology;
  if (!ParsePayload(payload, &topology)) {
    change.problem = absl::StrCat(where, ": not a topology");
    return change;
  }
  change.kind = DeclaredChange::Kind::kTopology;
  change.topology =
      DeclaredTopology{std::move(topology), written, change.revision, where};
  return change;
}

// True when `value` at `key` is an intact envelope around the object the
// key names (a layout of that job, the topology).
bool HoldsValidObject(absl::string_view key, absl::string_view value) {
  absl::string_view payload;
  absl::Time written;
  if (!collector::DecodeObject(value, &payload, &written).ok()) return false;
  const std::optional<std::string> job = JobOfKey(key);
  if (job.has_value()) {
    v1::Layout layout;
    return ParsePayload(payload, &layout) && layout.job() == *job;
  }
  v1::Topology topology;
  return ParsePayload(payload, &topology);
}

}  // namespace

std::string LayoutKey(absl::string_view job) {
  return absl::StrCat(kLayoutPrefix, absl::StrReplaceAll(job, {{".", "=2E"}}));
}

std::optional<std::string> JobOfKey(absl::string_view key) {
  if (!absl::ConsumePrefix(&key, kLayoutPrefix)) return std::nullopt;
  std::string job = absl::StrReplaceAll(key, {{"=2E", "."}});
  if (!IsValidJobName(job)) return std::nullopt;
  return job;
}

absl::StatusOr<std::unique_ptr<JetStreamDeclaredState>>
JetStreamDeclaredState::Open(NatsConnection* nats, const Options& options) {
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = options.bucket.c_str();
  config.Description = "fabricdiag declared state: layouts and topology";
  config.History = kHistory;
  config.StorageType = js_FileStorage;
  config.Replicas = options.replicas;
  ASSIGN_OR_RETURN(kvStore * kv, BindOrCreateBucket(*nats, config));
  // Right after the servers restarted, the bucket binds before a watcher
  // finds its stream ("no stream matches subject"): wait until a replay of
  // its keys (headers only) goes through.
  StartupRetry retry(*nats);
  while (true) {
    kvWatchOptions watch_options;
    kvWatchOptions_Init(&watch_options);
    watch_options.MetaOnly = true;
    kvWatcher* watcher = nullptr;
    natsStatus s = kvStore_WatchAll(&watcher, kv, &watch_options);
    while (s == NATS_OK) {
      kvEntry* entry = nullptr;
      s = kvWatcher_Next(&entry, watcher,
                         absl::ToInt64Milliseconds(nats->request_timeout()));
      if (entry == nullptr) break;  // the replay's end (or an error)
      kvEntry_Destroy(entry);
    }
    if (watcher != nullptr) kvWatcher_Destroy(watcher);
    if (s == NATS_OK) break;
    const absl::Status error =
        NatsError(s, absl::StrCat("reading bucket ", options.bucket));
    if (!retry.Pause(error)) {
      kvStore_Destroy(kv);
      return retry.GiveUp(error);
    }
  }
  return std::unique_ptr<JetStreamDeclaredState>(
      new JetStreamDeclaredState(nats, options, kv));
}

JetStreamDeclaredState::JetStreamDeclaredState(NatsConnection* nats,
                                               Options options, kvStore* kv)
    : nats_(nats), options_(std::move(options)), kv_(kv) {}

JetStreamDeclaredState::~JetStreamDeclaredState() {
  StopWatching();
  kvStore_Destroy(kv_);
}

void JetStreamDeclaredState::StopWatching() {
  stopping_.store(true);
  if (watcher_.joinable()) watcher_.join();
}

std::string JetStreamDeclaredState::Describe() const {
  return absl::StrCat("NATS bucket ", options_.bucket, " (",
                      absl::StrJoin(nats_->urls(), ","), ")");
}

absl::Status JetStreamDeclaredState::Record(absl::Status status) {
  if (absl::IsUnavailable(status)) {
    // Said so that a client tells it from a collector it cannot reach: the
    // collector answered, its cluster did not (the CLI keys on the prefix).
    status = absl::UnavailableError(absl::StrCat(
        "cluster unavailable: ", status.message(), " (retried for ",
        absl::FormatDuration(options_.deadline), "; nothing was written)"));
  }
  absl::MutexLock lock(&mu_);
  // A conflict is the bucket working as meant, not a failed write.
  if (!absl::IsAborted(status)) last_write_status_ = status;
  return status;
}

absl::Status JetStreamDeclaredState::last_write_status() const {
  absl::MutexLock lock(&mu_);
  return last_write_status_;
}

void JetStreamDeclaredState::AddProblem(std::string problem) {
  LogWarning(absl::StrCat("declared state: ", problem));
  absl::MutexLock lock(&mu_);
  problems_.push_back(std::move(problem));
}

std::vector<std::string> JetStreamDeclaredState::problems() const {
  absl::MutexLock lock(&mu_);
  return problems_;
}

absl::StatusOr<uint64_t> JetStreamDeclaredState::WriteOnce(
    const std::string& key, const std::string& value,
    uint64_t expected_revision, absl::string_view what) {
  uint64_t revision = 0;
  const int len = static_cast<int>(value.size());
  const natsStatus s =
      expected_revision == 0
          ? kvStore_Create(&revision, kv_, key.c_str(), value.data(), len)
          : kvStore_Update(&revision, kv_, key.c_str(), value.data(), len,
                           expected_revision);
  if (s == NATS_OK) return revision;
  absl::Status error = NatsError(
      s, absl::StrCat("writing ", what, " to bucket ", options_.bucket));
  if (absl::IsResourceExhausted(error)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(error.message(),
                     ": larger than the NATS servers' max_payload (raise it "
                     "in their configuration; see docs/cluster.md)"));
  }
  // What the bucket holds now tells a conflict from a failure, and an
  // earlier attempt of ours that landed after all from both.
  kvEntry* entry = nullptr;
  const natsStatus g = kvStore_Get(&entry, kv_, key.c_str());
  if (g == NATS_OK) {
    const uint64_t current = kvEntry_Revision(entry);
    const absl::string_view held(static_cast<const char*>(kvEntry_Value(entry)),
                                 static_cast<size_t>(kvEntry_ValueLen(entry)));
    const bool ours = held == value;
    const bool damaged = !HoldsValidObject(key, held);
    kvEntry_Destroy(entry);
    if (ours) return current;
    if (damaged && current != expected_revision) {
      // What the key holds is no layout (or topology) at all: nobody serves
      // it, so replacing it loses nothing. Still compare-and-set, against
      // the damaged revision.
      return WriteOnce(key, value, current, what);
    }
    if (current != expected_revision) {
      conflicts_.fetch_add(1);
      return absl::AbortedError(absl::StrCat(
          what, " was changed through another collector meanwhile (revision ",
          current, ", this collector served ", expected_revision,
          "); nothing was written: look at it again and re-apply"));
    }
    return error;
  }
  if (g == NATS_NOT_FOUND && expected_revision != 0) {
    conflicts_.fetch_add(1);
    return absl::AbortedError(absl::StrCat(
        what,
        " was removed through another collector meanwhile; nothing was "
        "written: look again and re-apply"));
  }
  return error;
}

absl::StatusOr<uint64_t> JetStreamDeclaredState::Write(
    const std::string& key, const std::string& value,
    uint64_t expected_revision, absl::string_view what) {
  const absl::Time deadline = absl::Now() + options_.deadline;
  while (true) {
    absl::StatusOr<uint64_t> revision =
        WriteOnce(key, value, expected_revision, what);
    if (revision.ok() || !absl::IsUnavailable(revision.status()) ||
        nats_->closed() || absl::Now() + kRetryPause > deadline) {
      RETURN_IF_ERROR(Record(revision.status()));
      return revision;
    }
    absl::SleepFor(kRetryPause);
  }
}

absl::StatusOr<uint64_t> JetStreamDeclaredState::WriteLayout(
    const v1::Layout& layout, absl::Time applied, uint64_t expected_revision) {
  if (!IsValidJobName(layout.job())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job: ", QuoteForMessage(layout.job()), " is not ", kJobNamePattern));
  }
  return Write(LayoutKey(layout.job()),
               collector::EncodeObject(Payload(layout), applied),
               expected_revision,
               absl::StrCat("the layout of job ", layout.job()));
}

absl::StatusOr<uint64_t> JetStreamDeclaredState::WriteTopology(
    const v1::Topology& topology, absl::Time applied,
    uint64_t expected_revision) {
  return Write(kTopologyKey,
               collector::EncodeObject(Payload(topology), applied),
               expected_revision, "the topology");
}

absl::Status JetStreamDeclaredState::RemoveLayout(absl::string_view job) {
  const std::string key = LayoutKey(job);
  const absl::Time deadline = absl::Now() + options_.deadline;
  while (true) {
    kvEntry* entry = nullptr;
    natsStatus s = kvStore_Get(&entry, kv_, key.c_str());
    if (s == NATS_OK) {
      kvEntry_Destroy(entry);
      s = kvStore_Delete(kv_, key.c_str());
      if (s == NATS_OK) return Record(absl::OkStatus());
    }
    absl::Status error =
        s == NATS_NOT_FOUND
            ? absl::NotFoundError(
                  absl::StrCat("no layout for job ", QuoteForMessage(job)))
            : NatsError(s, absl::StrCat("removing the layout of job ", job));
    if (!absl::IsUnavailable(error) || nats_->closed() ||
        absl::Now() + kRetryPause > deadline) {
      return absl::IsNotFound(error) ? error : Record(error);
    }
    absl::SleepFor(kRetryPause);
  }
}

absl::StatusOr<std::vector<DeclaredChange>> JetStreamDeclaredState::ReadAll(
    bool with_deletes) {
  // Until the startup deadline passes (the first read, at startup), a
  // cluster that just restarted is waited for as long as for opening.
  const absl::Time deadline =
      std::max(absl::Now() + options_.deadline, nats_->startup_deadline());
  while (true) {
    kvWatchOptions watch_options;
    kvWatchOptions_Init(&watch_options);
    kvWatcher* watcher = nullptr;
    natsStatus s = kvStore_WatchAll(&watcher, kv_, &watch_options);
    std::vector<DeclaredChange> changes;
    uint64_t newest = 0;  // deletions included
    while (s == NATS_OK) {
      kvEntry* entry = nullptr;
      s = kvWatcher_Next(&entry, watcher,
                         absl::ToInt64Milliseconds(nats_->request_timeout()));
      if (s != NATS_OK) break;
      if (entry == nullptr) break;  // the initial values are all there
      const StoredValue value = FromEntry(entry);
      newest = std::max(newest, value.revision);
      std::optional<DeclaredChange> change;
      if (with_deletes || !value.deleted) {
        change = ToChange(value, options_.bucket);
      }
      kvEntry_Destroy(entry);
      if (change.has_value()) changes.push_back(*std::move(change));
    }
    kvWatcher_Destroy(watcher);
    absl::Status error;
    if (s == NATS_OK) {
      // The newest revision of the bucket is the last value of its key, so
      // a complete replay ends on it. Right after the NATS servers
      // restarted, a replay can end short of it (seen once with
      // nats-server 2.9): a collector must not start serving an older
      // subset of the declared state, so it reads again.
      absl::StatusOr<uint64_t> last = LastRevision();
      if (!last.ok() || *last <= newest) return changes;
      error = absl::UnavailableError(absl::StrCat(
          "reading bucket ", options_.bucket, ": the replay ended at revision ",
          newest, " of ", *last, " (the NATS servers are still recovering)"));
    } else {
      error = NatsError(s, absl::StrCat("reading bucket ", options_.bucket));
    }
    if (nats_->closed() || absl::Now() + kRetryPause > deadline) return error;
    absl::SleepFor(kRetryPause);
  }
}

absl::StatusOr<uint64_t> JetStreamDeclaredState::LastRevision() const {
  return BucketLastRevision(nats_->js(), options_.bucket);
}

absl::StatusOr<std::vector<DeclaredLayout>>
JetStreamDeclaredState::ReadLayouts() {
  ASSIGN_OR_RETURN(std::vector<DeclaredChange> all, ReadAll(false));
  std::vector<DeclaredLayout> layouts;
  for (DeclaredChange& change : all) {
    if (change.kind == DeclaredChange::Kind::kDamaged) {
      AddProblem(change.problem);
    } else if (change.kind == DeclaredChange::Kind::kLayout) {
      layouts.push_back(std::move(change.layout));
    }
  }
  std::sort(layouts.begin(), layouts.end(),
            [](const DeclaredLayout& a, const DeclaredLayout& b) {
              return a.layout.job() < b.layout.job();
            });
  return layouts;
}

absl::StatusOr<std::optional<DeclaredTopology>>
JetStreamDeclaredState::ReadTopology() {
  ASSIGN_OR_RETURN(std::vector<DeclaredChange> all, ReadAll(false));
  for (DeclaredChange& change : all) {
    if (change.kind == DeclaredChange::Kind::kTopology) {
      return std::move(change.topology);
    }
  }
  return std::nullopt;
}

void JetStreamDeclaredState::Reject(absl::string_view where,
                                    absl::string_view why) {
  // The bucket is shared: another collector (a newer one) may accept what
  // this one rejects, so the value stays where it is.
  AddProblem(absl::StrCat(where, ": ", why,
                          " (left in the bucket; not served by this "
                          "collector until a valid version is applied)"));
}

void JetStreamDeclaredState::Watch(
    std::function<void(const DeclaredChange&)> on_change) {
  watcher_ = std::thread(&JetStreamDeclaredState::WatchLoop, this,
                         std::move(on_change));
}

absl::Status JetStreamDeclaredState::CatchUp(
    uint64_t last, uint64_t* delivered,
    const std::function<void(const DeclaredChange&)>& on_change) {
  const std::string stream = absl::StrCat("KV_", options_.bucket);
  const std::string prefix = absl::StrCat("$KV.", options_.bucket, ".");
  for (uint64_t seq = *delivered + 1; seq <= last && !stopping_.load(); ++seq) {
    natsMsg* msg = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    const natsStatus s =
        js_GetMsg(&msg, nats_->js(), stream.c_str(), seq, nullptr, &code);
    if (s == NATS_NOT_FOUND) {  // superseded (history) or purged
      *delivered = seq;
      continue;
    }
    if (s != NATS_OK) return NatsError(s, "catching up on the declared state");
    absl::string_view subject = natsMsg_GetSubject(msg);
    const char* op = nullptr;
    const bool deleted =
        natsMsgHeader_Get(msg, "KV-Operation", &op) == NATS_OK &&
        op != nullptr &&
        (absl::string_view(op) == "DEL" || absl::string_view(op) == "PURGE");
    std::optional<DeclaredChange> change;
    if (absl::ConsumePrefix(&subject, prefix)) {
      change = ToChange(
          StoredValue{std::string(subject), seq, deleted,
                      absl::string_view(
                          natsMsg_GetData(msg),
                          static_cast<size_t>(natsMsg_GetDataLength(msg)))},
          options_.bucket);
    }
    natsMsg_Destroy(msg);
    *delivered = seq;
    if (change.has_value()) on_change(*change);
  }
  return absl::OkStatus();
}

void JetStreamDeclaredState::WatchLoop(
    const std::function<void(const DeclaredChange&)>& on_change) {
  // The newest revision handed to on_change, across watchers: what a new
  // watcher replays up to it is skipped.
  uint64_t delivered = 0;
  while (!stopping_.load()) {
    kvWatchOptions watch_options;
    kvWatchOptions_Init(&watch_options);
    kvWatcher* watcher = nullptr;
    natsStatus s = kvStore_WatchAll(&watcher, kv_, &watch_options);
    int behind = 0;  // consecutive quiet half-seconds behind the bucket
    while (s == NATS_OK && !stopping_.load()) {
      kvEntry* entry = nullptr;
      s = kvWatcher_Next(&entry, watcher, 500);
      if (s == NATS_TIMEOUT) {
        s = NATS_OK;
        // A quiet watcher that is behind the bucket for a second is not
        // waited for: the missing revisions are fetched by sequence from
        // the stream (no consumer needed), and the watcher is recreated.
        const std::optional<uint64_t> last =
            WatcherFellBehind(nats_->js(), options_.bucket, delivered, &behind);
        if (!last.has_value()) continue;
        absl::Status caught_up = CatchUp(*last, &delivered, on_change);
        if (!caught_up.ok()) LogWarning(std::string(caught_up.message()));
        s = NATS_TIMEOUT;
        break;
      }
      if (s != NATS_OK || entry == nullptr) continue;
      const StoredValue value = FromEntry(entry);
      std::optional<DeclaredChange> change;
      if (value.revision > delivered) {
        delivered = value.revision;
        change = ToChange(value, options_.bucket);
      }
      kvEntry_Destroy(entry);
      if (change.has_value()) on_change(*change);
    }
    if (watcher != nullptr) kvWatcher_Destroy(watcher);
    if (stopping_.load() || nats_->closed()) return;
    LogWarning(absl::StrCat(
        s == NATS_TIMEOUT
            ? std::string("watching the declared state: the watcher fell "
                          "behind the bucket")
            : NatsError(s, "watching the declared state").message(),
        "; caught up by sequence, watching again"));
    watcher_restarts_.fetch_add(1);
    if (!PauseUnlessStopping(stopping_, absl::Milliseconds(200))) return;
  }
}

}  // namespace fabricdiag::cluster
