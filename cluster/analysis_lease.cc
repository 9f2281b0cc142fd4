#include "cluster/analysis_lease.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace fabricdiag::cluster {
namespace {

constexpr char kKey[] = "analysis";

std::chrono::steady_clock::duration ToSteady(absl::Duration d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      absl::ToChronoNanoseconds(d));
}

// The key's holder and revision; NotFound when nobody holds it.
struct Holder {
  natsStatus status = NATS_OK;
  std::string id;
  uint64_t revision = 0;
};

Holder ReadHolder(kvStore* kv) {
  Holder h;
  kvEntry* entry = nullptr;
  h.status = kvStore_Get(&entry, kv, kKey);
  if (h.status == NATS_OK) {
    const char* value = kvEntry_ValueString(entry);
    h.id = value == nullptr ? "" : value;
    h.revision = kvEntry_Revision(entry);
    kvEntry_Destroy(entry);
  }
  return h;
}

}  // namespace

absl::StatusOr<std::unique_ptr<AnalysisLease>> AnalysisLease::Start(
    NatsConnection* nats, std::string id, const Options& options) {
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = options.bucket.c_str();
  config.Description = "fabricdiag analysis lease";
  config.History = 1;
  // On disk: the revisions, which are the terms, must keep growing when
  // every server restarts (see the header comment).
  config.StorageType = js_FileStorage;
  config.Replicas = options.replicas;
  config.TTL = absl::ToInt64Nanoseconds(options.ttl);
  ASSIGN_OR_RETURN(kvStore * kv, BindOrCreateBucket(*nats, config));
  std::unique_ptr<AnalysisLease> lease(
      new AnalysisLease(nats, std::move(id), options, kv));
  lease->thread_ = std::thread(&AnalysisLease::Run, lease.get());
  return lease;
}

AnalysisLease::AnalysisLease(NatsConnection* nats, std::string id,
                             Options options, kvStore* kv)
    : id_(std::move(id)), options_(std::move(options)), kv_(kv), nats_(nats) {}

AnalysisLease::~AnalysisLease() {
  Stop();
  kvStore_Destroy(kv_);
}

void AnalysisLease::Stop() {
  stopping_.store(true);
  if (stopped_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  uint64_t held = 0;
  {
    absl::MutexLock lock(&mu_);
    held = held_revision_;
    StepDown();
  }
  // Only while the key is still ours: a successor's key stays. Not tried
  // without a server (each request would wait its whole timeout): the key
  // then expires after the TTL.
  if (held != 0 && nats_->connected() && ReadHolder(kv_).revision == held) {
    kvStore_Delete(kv_, kKey);
  }
}

bool AnalysisLease::HeldLocked() const {
  return held_revision_ != 0 && Clock::now() < lease_until_;
}

bool AnalysisLease::Leading() const {
  absl::MutexLock lock(&mu_);
  return HeldLocked();
}

uint64_t AnalysisLease::Term() const {
  absl::MutexLock lock(&mu_);
  return HeldLocked() ? term_ : 0;
}

std::string AnalysisLease::leader() const {
  absl::MutexLock lock(&mu_);
  return leader_;
}

absl::Duration AnalysisLease::WithoutLeaderFor() const {
  absl::MutexLock lock(&mu_);
  if (HeldLocked()) return absl::ZeroDuration();
  return std::max(absl::ZeroDuration(),
                  absl::FromChrono(Clock::now() - leader_seen_));
}

void AnalysisLease::StepDown() {
  if (held_revision_ != 0) {
    LogInfo(absl::StrCat("analysis lease: ", id_,
                         " no longer leads the analysis (term ", term_, ")"));
  }
  held_revision_ = 0;
  term_ = 0;
  lease_until_ = Clock::time_point::min();
  if (leader_ == id_) leader_.clear();
}

void AnalysisLease::TryAcquire() {
  const Clock::time_point start = Clock::now();
  uint64_t revision = 0;
  const natsStatus s = kvStore_CreateString(&revision, kv_, kKey, id_.c_str());
  if (s == NATS_OK) {
    absl::MutexLock lock(&mu_);
    held_revision_ = revision;
    term_ = revision;
    lease_until_ = start + ToSteady(options_.ttl - options_.margin);
    leader_ = id_;
    leader_seen_ = Clock::now();
    acquisitions_.fetch_add(1);
    LogInfo(absl::StrCat("analysis lease: ", id_, " leads the analysis (term ",
                         term_, ")"));
    return;
  }
  // Held by someone: who, for /healthz.
  const Holder holder = ReadHolder(kv_);
  absl::MutexLock lock(&mu_);
  if (holder.status == NATS_OK) {
    leader_ = holder.id;
    if (!holder.id.empty()) leader_seen_ = Clock::now();
  } else if (holder.status == NATS_NOT_FOUND) {
    leader_.clear();
  }
}

void AnalysisLease::Renew() {
  uint64_t held = 0;
  {
    absl::MutexLock lock(&mu_);
    held = held_revision_;
  }
  const Clock::time_point start = Clock::now();
  uint64_t revision = 0;
  const natsStatus s =
      kvStore_UpdateString(&revision, kv_, kKey, id_.c_str(), held);
  if (s == NATS_OK) {
    absl::MutexLock lock(&mu_);
    held_revision_ = revision;
    lease_until_ = start + ToSteady(options_.ttl - options_.margin);
    leader_seen_ = Clock::now();
    return;
  }
  // A conflict (someone else's revision, or the key expired) ends the
  // lease now; a failure to reach the servers only when it runs out.
  const Holder holder = ReadHolder(kv_);
  absl::MutexLock lock(&mu_);
  if (holder.status == NATS_OK && !holder.id.empty()) {
    leader_seen_ = Clock::now();
  }
  if (held_revision_ != held) return;  // stepped down meanwhile
  if (holder.status == NATS_OK && holder.id == id_ && holder.revision != held) {
    // An earlier renewal that timed out landed after all: still ours, and
    // the next renewal extends the lease.
    held_revision_ = holder.revision;
    return;
  }
  const bool lost = holder.status == NATS_NOT_FOUND ||
                    (holder.status == NATS_OK && holder.revision != held);
  if (lost) leader_ = holder.id;
  if (lost || Clock::now() >= lease_until_) {
    LogWarning(absl::StrCat(
        "analysis lease: ",
        lost ? "another collector holds the lease, or it expired"
             : NatsError(s, "renewing the analysis lease").message()));
    StepDown();
  }
}

void AnalysisLease::Run() {
  while (!stopping_.load()) {
    bool held = false;
    {
      absl::MutexLock lock(&mu_);
      if (held_revision_ != 0 && Clock::now() >= lease_until_) StepDown();
      held = held_revision_ != 0;
    }
    if (held) {
      Renew();
    } else {
      TryAcquire();
    }
    const Clock::time_point next =
        Clock::now() +
        ToSteady(held ? options_.renew_period : options_.acquire_period);
    while (!stopping_.load() && Clock::now() < next) {
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
}

}  // namespace fabricdiag::cluster
