#include "cluster/jetstream_declared_state.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "cluster/kv_payload.h"
#include "cluster/kv_watch.h"
#include "cluster/nats_subscription.h"
#include "collector/state/object_store.h"
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

// Parses a value's payload (cluster/kv_payload.h) into `message`.
bool ParsePayload(absl::string_view payload,
                  google::protobuf::MessageLite* message) {
  return ParseKvPayload(payload, collector::kMaxStateObjectBytes, message);
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

// The change one stored version stands for; nullopt for keys this version
// does not know (written by a newer collector: left alone).
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

// The subject a key's values are published on.
std::string KeySubject(absl::string_view bucket, absl::string_view key) {
  return absl::StrCat("$KV.", bucket, ".", key);
}

// A request's wait in the client's unit; 0 would mean the client's
// default, so never less than 1 ms.
int64_t WaitMillis(absl::Duration wait) {
  return std::max<int64_t>(1, absl::ToInt64Milliseconds(wait));
}

// True when a request failed without an answer after it may have reached a
// server (timed out, or the connection broke under it): the servers may
// have applied it. No responders, a refused request or a server's error
// answer mean it was not.
bool Unanswered(natsStatus s) {
  return s == NATS_TIMEOUT || s == NATS_CONNECTION_DISCONNECTED ||
         s == NATS_STALE_CONNECTION || s == NATS_IO_ERROR;
}

// Not sent: the client is reconnecting (NatsConnection::link_up()).
absl::Status NotConnected(absl::string_view what) {
  return absl::UnavailableError(absl::StrCat(
      what, ": not connected to any NATS server (the client is reconnecting)"));
}

// A removal that found a newer version of the layout than the one meant.
absl::Status ChangedMeanwhile(absl::string_view job, uint64_t current,
                              uint64_t meant) {
  return absl::AbortedError(absl::StrCat(
      "the layout of job ", QuoteForMessage(job),
      " was changed through another collector meanwhile (revision ", current,
      ", this collector served ", meant,
      "); nothing was removed: look at it again and remove it again"));
}

bool IsDeleteMarker(natsMsg* msg) {
  const char* op = nullptr;
  return natsMsgHeader_Get(msg, "KV-Operation", &op) == NATS_OK &&
         op != nullptr &&
         (absl::string_view(op) == "DEL" || absl::string_view(op) == "PURGE");
}

// The latest version of a key.
struct Held {
  uint64_t revision = 0;
  bool deleted = false;
  std::string value;
};

// The latest version of `key`, waiting at most `wait` for the answer;
// NotFound when the key never had one.
absl::StatusOr<Held> GetLatest(jsCtx* js, absl::string_view bucket,
                               absl::string_view key, absl::Duration wait) {
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = WaitMillis(wait);
  natsMsg* msg = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s =
      js_GetLastMsg(&msg, js, absl::StrCat("KV_", bucket).c_str(),
                    KeySubject(bucket, key).c_str(), &options, &code);
  if (s != NATS_OK) {
    return NatsError(s,
                     absl::StrCat("reading key ", key, " of bucket ", bucket));
  }
  Held held;
  held.revision = natsMsg_GetSequence(msg);
  held.deleted = IsDeleteMarker(msg);
  held.value.assign(natsMsg_GetData(msg),
                    static_cast<size_t>(natsMsg_GetDataLength(msg)));
  natsMsg_Destroy(msg);
  return held;
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
    EndKvWatcher(nats->nc(), watcher);
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

JetStreamDeclaredState::Attempts JetStreamDeclaredState::StartAttempts(
    absl::Time caller_deadline) const {
  Attempts attempts;
  attempts.start = absl::Now();
  attempts.deadline = collector::ChooseWriteDeadline(
      attempts.start, options_.deadline, caller_deadline);
  return attempts;
}

absl::Duration JetStreamDeclaredState::TimeLeft(
    const Attempts& attempts) const {
  return std::min(nats_->request_timeout(), attempts.deadline.at - absl::Now());
}

absl::Status JetStreamDeclaredState::GaveUp(const Attempts& attempts,
                                            const absl::Status& last) const {
  const bool caller = attempts.deadline.caller && !nats_->closed();
  // Said so that a client tells it from a collector it cannot reach: the
  // collector answered, its cluster did not (the CLI keys on the prefix).
  const std::string outcome =
      attempts.maybe_written
          ? "a request went unanswered, so the write may still land: see "
            "`fabricdiag layout show` or `topology show` before applying it "
            "again"
          : "nothing was written";
  const std::string tried = absl::StrCat(
      attempts.sent, attempts.sent == 1 ? " request" : " requests", " in ",
      absl::FormatDuration(
          absl::Trunc(absl::Now() - attempts.start, absl::Milliseconds(10))));
  const std::string error =
      last.ok() ? std::string("no request could be sent in time")
                : std::string(last.message());
  if (caller) {
    return absl::DeadlineExceededError(
        absl::StrCat("cluster unavailable: ", error,
                     " (stopped at the request's deadline after ", tried, "; ",
                     outcome, ")"));
  }
  return absl::UnavailableError(absl::StrCat("cluster unavailable: ", error,
                                             " (", tried, "; ", outcome, ")"));
}

absl::Status JetStreamDeclaredState::Record(absl::Status status) {
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
    uint64_t expected_revision, absl::string_view what, Attempts* attempts) {
  // Published here rather than through kvStore_Create/Update: those wait
  // the connection's whole request timeout, and no request may outlive the
  // write's deadline.
  jsPubOptions publish;
  jsPubOptions_Init(&publish);
  publish.MaxWait = WaitMillis(TimeLeft(*attempts));
  if (expected_revision == 0) {
    publish.ExpectNoMessage = true;
  } else {
    publish.ExpectLastSubjectSeq = expected_revision;
  }
  jsPubAck* ack = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  ++attempts->sent;
  const natsStatus s =
      js_Publish(&ack, nats_->js(), KeySubject(options_.bucket, key).c_str(),
                 value.data(), static_cast<int>(value.size()), &publish, &code);
  if (s == NATS_OK) {
    const uint64_t revision = ack->Sequence;
    jsPubAck_Destroy(ack);
    return revision;
  }
  if (ack != nullptr) jsPubAck_Destroy(ack);
  if (Unanswered(s)) attempts->maybe_written = true;
  absl::Status error = NatsError(
      s, absl::StrCat("writing ", what, " to bucket ", options_.bucket));
  if (absl::IsResourceExhausted(error)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(error.message(),
                     ": larger than the NATS servers' max_payload (raise it "
                     "in their configuration; see docs/cluster.md)"));
  }
  const absl::Duration left = TimeLeft(*attempts);
  if (left <= absl::ZeroDuration()) return error;
  // What the bucket holds now tells a conflict from a failure, and an
  // earlier attempt of ours that landed after all from both.
  absl::StatusOr<Held> held =
      GetLatest(nats_->js(), options_.bucket, key, left);
  if (held.ok() && held->deleted) {
    // A removed key keeps a delete marker: creating the key replaces it.
    if (expected_revision == 0) {
      return WriteOnce(key, value, held->revision, what, attempts);
    }
    conflicts_.fetch_add(1);
    return absl::AbortedError(absl::StrCat(
        what,
        " was removed through another collector meanwhile; nothing was "
        "written: look again and re-apply"));
  }
  if (held.ok()) {
    const uint64_t current = held->revision;
    if (held->value == value) return current;
    if (!HoldsValidObject(key, held->value) && current != expected_revision) {
      // What the key holds is no layout (or topology) at all: nobody serves
      // it, so replacing it loses nothing. Still compare-and-set, against
      // the damaged revision.
      return WriteOnce(key, value, current, what, attempts);
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
  if (absl::IsNotFound(held.status()) && expected_revision != 0) {
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
    uint64_t expected_revision, absl::string_view what, absl::Time deadline) {
  Attempts attempts = StartAttempts(deadline);
  absl::Status last;
  while (TimeLeft(attempts) > absl::ZeroDuration()) {
    absl::StatusOr<uint64_t> revision =
        nats_->link_up()
            ? WriteOnce(key, value, expected_revision, what, &attempts)
            : NotConnected(absl::StrCat("writing ", what));
    if (revision.ok() || !absl::IsUnavailable(revision.status())) {
      RETURN_IF_ERROR(Record(revision.status()));
      return revision;
    }
    last = revision.status();
    if (!PauseBeforeRetry(*nats_, kRetryPause, attempts.deadline.at)) break;
  }
  return Record(GaveUp(attempts, last));
}

absl::StatusOr<uint64_t> JetStreamDeclaredState::WriteLayout(
    const v1::Layout& layout, absl::Time applied, uint64_t expected_revision,
    absl::Time deadline) {
  if (!IsValidJobName(layout.job())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job: ", QuoteForMessage(layout.job()), " is not ", kJobNamePattern));
  }
  return Write(LayoutKey(layout.job()),
               collector::EncodeObject(KvPayload(layout), applied),
               expected_revision,
               absl::StrCat("the layout of job ", layout.job()), deadline);
}

absl::StatusOr<uint64_t> JetStreamDeclaredState::WriteTopology(
    const v1::Topology& topology, absl::Time applied,
    uint64_t expected_revision, absl::Time deadline) {
  return Write(kTopologyKey,
               collector::EncodeObject(KvPayload(topology), applied),
               expected_revision, "the topology", deadline);
}

absl::Status JetStreamDeclaredState::RemoveOnce(const std::string& key,
                                                absl::string_view job,
                                                uint64_t expected_revision,
                                                Attempts* attempts) {
  absl::StatusOr<Held> held =
      GetLatest(nats_->js(), options_.bucket, key, TimeLeft(*attempts));
  if (absl::IsNotFound(held.status()) || (held.ok() && held->deleted)) {
    return absl::NotFoundError(
        absl::StrCat("no layout for job ", QuoteForMessage(job)));
  }
  if (!held.ok()) return held.status();
  if (expected_revision != 0 && held->revision != expected_revision) {
    conflicts_.fetch_add(1);
    return ChangedMeanwhile(job, held->revision, expected_revision);
  }
  const absl::Duration left = TimeLeft(*attempts);
  if (left <= absl::ZeroDuration()) {
    return absl::UnavailableError(absl::StrCat(
        "removing the layout of job ", job, ": no time left to send it"));
  }
  // The delete marker kvStore_Delete writes, with a bounded wait.
  natsMsg* msg = nullptr;
  natsStatus s = natsMsg_Create(&msg, KeySubject(options_.bucket, key).c_str(),
                                nullptr, nullptr, 0);
  if (s == NATS_OK) s = natsMsgHeader_Set(msg, "KV-Operation", "DEL");
  if (s == NATS_OK) {
    jsPubOptions publish;
    jsPubOptions_Init(&publish);
    publish.MaxWait = WaitMillis(left);
    // Only the version just read: one written since is not removed blind.
    publish.ExpectLastSubjectSeq = held->revision;
    ++attempts->sent;
    jsErrCode code = static_cast<jsErrCode>(0);
    s = js_PublishMsg(nullptr, nats_->js(), msg, &publish, &code);
    if (Unanswered(s)) attempts->maybe_written = true;
  }
  natsMsg_Destroy(msg);
  if (s == NATS_OK) return absl::OkStatus();
  absl::Status error =
      NatsError(s, absl::StrCat("removing the layout of job ", job));
  const absl::Duration after = TimeLeft(*attempts);
  if (after <= absl::ZeroDuration()) return error;
  // What the bucket holds now tells a conflict (or our own delete that
  // landed after all) from a failure.
  absl::StatusOr<Held> now =
      GetLatest(nats_->js(), options_.bucket, key, after);
  if (absl::IsNotFound(now.status()) || (now.ok() && now->deleted)) {
    return absl::OkStatus();  // removed: by this attempt or another
  }
  if (now.ok() && now->revision != held->revision) {
    conflicts_.fetch_add(1);
    return ChangedMeanwhile(job, now->revision, held->revision);
  }
  return error;
}

absl::Status JetStreamDeclaredState::RemoveLayout(absl::string_view job,
                                                  uint64_t expected_revision,
                                                  absl::Time deadline) {
  const std::string key = LayoutKey(job);
  Attempts attempts = StartAttempts(deadline);
  absl::Status last;
  while (TimeLeft(attempts) > absl::ZeroDuration()) {
    absl::Status removed =
        nats_->link_up()
            ? RemoveOnce(key, job, expected_revision, &attempts)
            : NotConnected(absl::StrCat("removing the layout of job ", job));
    if (removed.ok()) return Record(removed);
    // Gone after an attempt that may have landed: ours, or another's; the
    // layout is removed either way.
    if (absl::IsNotFound(removed) && attempts.maybe_written) {
      return Record(absl::OkStatus());
    }
    if (absl::IsNotFound(removed)) return removed;
    if (!absl::IsUnavailable(removed)) return Record(removed);
    last = removed;
    if (!PauseBeforeRetry(*nats_, kRetryPause, attempts.deadline.at)) break;
  }
  return Record(GaveUp(attempts, last));
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
    EndKvWatcher(nats_->nc(), watcher);
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
    if (!PauseBeforeRetry(*nats_, kRetryPause, deadline)) return error;
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
    const bool deleted = IsDeleteMarker(msg);
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
    RevisionGaps gaps(BucketLastSequence(nats_->js(), options_.bucket));
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
      if (s != NATS_OK) continue;
      if (entry == nullptr) {
        gaps.Replayed();
        continue;
      }
      const StoredValue value = FromEntry(entry);
      // Revisions the watcher passed over may have been missed, not
      // superseded (cluster/kv_watch.h): what the stream still holds of
      // them is handed over first, in order, fetched by sequence.
      if (const RevisionGaps::Range passed = gaps.Before(value.revision);
          !passed.empty() && passed.end > delivered + 1) {
        delivered = std::max(delivered, passed.first - 1);
        const absl::Status caught_up =
            CatchUp(passed.end - 1, &delivered, on_change);
        if (!caught_up.ok()) {
          kvEntry_Destroy(entry);
          LogWarning(std::string(caught_up.message()));
          s = NATS_TIMEOUT;
          break;
        }
      }
      std::optional<DeclaredChange> change;
      if (value.revision > delivered) {
        delivered = value.revision;
        change = ToChange(value, options_.bucket);
      }
      kvEntry_Destroy(entry);
      if (change.has_value()) on_change(*change);
    }
    EndKvWatcher(nats_->nc(), watcher);
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
