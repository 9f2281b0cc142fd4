#include "cluster/key_lease.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/names.h"

namespace fabricdiag::cluster {
namespace {

std::chrono::steady_clock::duration ToSteady(absl::Duration d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      absl::ToChronoNanoseconds(d));
}

}  // namespace

absl::StatusOr<kvStore*> BindLeaseBucket(const NatsConnection& nats,
                                         const std::string& bucket,
                                         int replicas, absl::Duration ttl) {
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = bucket.c_str();
  config.Description = "fabricdiag analysis leases";
  config.History = 1;
  config.StorageType = js_FileStorage;
  config.Replicas = replicas;
  config.TTL = absl::ToInt64Nanoseconds(ttl);
  return BindOrCreateBucket(nats, config);
}

KeyLease::KeyLease(kvStore* kv, std::string key, std::string holder_id,
                   Naming naming, Timing timing)
    : kv_(kv),
      key_(std::move(key)),
      id_(std::move(holder_id)),
      naming_(std::move(naming)),
      timing_(timing) {}

KeyLease::Read KeyLease::ReadKey() const {
  Read r;
  kvEntry* entry = nullptr;
  r.status = kvStore_Get(&entry, kv_, key_.c_str());
  if (r.status == NATS_OK) {
    const char* value = kvEntry_ValueString(entry);
    r.id = value == nullptr ? "" : value;
    // Holders write their --collector_id: anything else (a hostile writer
    // to the bucket) names nobody, not a string to show as a leader.
    if (!IsValidNodeName(r.id)) r.id.clear();
    r.revision = kvEntry_Revision(entry);
    kvEntry_Destroy(entry);
  }
  return r;
}

bool KeyLease::HeldLocked() const {
  return held_revision_ != 0 && Clock::now() < until_;
}

bool KeyLease::Held() const {
  absl::MutexLock lock(&mu_);
  return HeldLocked();
}

uint64_t KeyLease::Term() const {
  absl::MutexLock lock(&mu_);
  return HeldLocked() ? term_ : 0;
}

std::string KeyLease::holder() const {
  absl::MutexLock lock(&mu_);
  return holder_;
}

absl::Duration KeyLease::WithoutHolderFor() const {
  absl::MutexLock lock(&mu_);
  if (HeldLocked()) return absl::ZeroDuration();
  return std::max(absl::ZeroDuration(),
                  absl::FromChrono(Clock::now() - holder_seen_));
}

void KeyLease::EndLocked(absl::string_view why) {
  if (held_revision_ != 0 && naming_.logged) {
    const std::string line =
        absl::StrCat(naming_.prefix, ": ", id_, " no longer ", naming_.holding,
                     " (term ", term_, ")", why.empty() ? "" : ": ", why);
    // Let go on purpose (a stop, a hand-over) is news; lost is a warning.
    if (why.empty()) {
      LogInfo(line);
    } else {
      LogWarning(line);
    }
  }
  held_revision_ = 0;
  term_ = 0;
  until_ = Clock::time_point::min();
  if (holder_ == id_) holder_.clear();
}

bool KeyLease::CheckHeld() {
  absl::MutexLock lock(&mu_);
  if (held_revision_ != 0 && Clock::now() >= until_) {
    EndLocked("not renewed in time");
  }
  return held_revision_ != 0;
}

bool KeyLease::TryAcquire() {
  const Clock::time_point start = Clock::now();
  uint64_t revision = 0;
  const natsStatus s =
      kvStore_CreateString(&revision, kv_, key_.c_str(), id_.c_str());
  if (s == NATS_OK) {
    absl::MutexLock lock(&mu_);
    held_revision_ = revision;
    term_ = revision;
    until_ = start + ToSteady(timing_.ttl - timing_.margin);
    holder_ = id_;
    holder_seen_ = Clock::now();
    if (naming_.logged) {
      LogInfo(absl::StrCat(naming_.prefix, ": ", id_, " ", naming_.holding,
                           " (term ", term_, ")"));
    }
    return true;
  }
  // Held by someone: who (for /healthz, and for whoever weighs taking it).
  const Read read = ReadKey();
  absl::MutexLock lock(&mu_);
  if (read.status == NATS_OK) {
    holder_ = read.id;
    if (!read.id.empty()) holder_seen_ = Clock::now();
  } else if (read.status == NATS_NOT_FOUND) {
    holder_.clear();
  }
  return false;
}

void KeyLease::Renew() {
  uint64_t held = 0;
  {
    absl::MutexLock lock(&mu_);
    held = held_revision_;
  }
  if (held == 0) return;
  const Clock::time_point start = Clock::now();
  uint64_t revision = 0;
  const natsStatus s =
      kvStore_UpdateString(&revision, kv_, key_.c_str(), id_.c_str(), held);
  if (s == NATS_OK) {
    absl::MutexLock lock(&mu_);
    if (held_revision_ != held) return;  // let go meanwhile
    held_revision_ = revision;
    until_ = start + ToSteady(timing_.ttl - timing_.margin);
    holder_seen_ = Clock::now();
    return;
  }
  // A conflict (someone else's revision, or the key expired) ends the lease
  // now; a failure to reach the servers only when it runs out.
  const Read read = ReadKey();
  absl::MutexLock lock(&mu_);
  if (read.status == NATS_OK && !read.id.empty()) holder_seen_ = Clock::now();
  if (held_revision_ != held) return;  // let go meanwhile
  if (read.status == NATS_OK && read.id == id_ && read.revision != held) {
    // An earlier renewal that timed out landed after all: still ours, and
    // the next renewal extends the lease.
    held_revision_ = read.revision;
    return;
  }
  const bool lost = read.status == NATS_NOT_FOUND ||
                    (read.status == NATS_OK && read.revision != held);
  if (lost) holder_ = read.id;
  if (lost) {
    EndLocked("another collector holds it, or it expired");
  } else if (Clock::now() >= until_) {
    EndLocked(NatsError(s, "renewing").message());
  }
}

void KeyLease::Release(bool delete_key) {
  uint64_t held = 0;
  {
    absl::MutexLock lock(&mu_);
    held = held_revision_;
    EndLocked("");
  }
  // Only while the key is still this tenure's: a successor's key stays.
  if (held != 0 && delete_key && ReadKey().revision == held) {
    kvStore_Delete(kv_, key_.c_str());
  }
}

}  // namespace fabricdiag::cluster
