#include "cluster/cluster_members.h"

#include <algorithm>
#include <random>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cluster/kv_watch.h"
#include "cluster/nats_subscription.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/version.h"

namespace fabricdiag::cluster {
namespace {

// Announcements missed before a member counts as gone.
constexpr int kMissedPeriods = 3;

std::string RandomInstance() {
  std::random_device device;
  std::mt19937_64 rng((static_cast<uint64_t>(device()) << 32) ^ device());
  return absl::StrFormat("%016x", rng());
}

}  // namespace

absl::StatusOr<std::unique_ptr<ClusterMembers>> ClusterMembers::Start(
    NatsConnection* nats, std::string id, const Options& options) {
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = options.bucket.c_str();
  config.Description = "fabricdiag collectors of this cluster";
  config.History = 1;
  config.StorageType = js_MemoryStorage;  // liveness, not state
  config.Replicas = options.replicas;
  // Announcements of collectors gone without a word age out.
  config.TTL = absl::ToInt64Nanoseconds(absl::Minutes(1));
  ASSIGN_OR_RETURN(kvStore * kv, BindOrCreateBucket(*nats, config));
  std::unique_ptr<ClusterMembers> members(
      new ClusterMembers(nats, std::move(id), options, kv));
  members->Announce();
  members->thread_ = std::thread(&ClusterMembers::Run, members.get());
  return members;
}

ClusterMembers::ClusterMembers(NatsConnection* nats, std::string id,
                               Options options, kvStore* kv)
    : nats_(nats),
      id_(std::move(id)),
      instance_(RandomInstance()),
      options_(std::move(options)),
      kv_(kv) {}

ClusterMembers::~ClusterMembers() {
  Stop();
  kvStore_Destroy(kv_);
}

void ClusterMembers::Stop() {
  stopping_.store(true);
  if (stopped_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  // Leaving: the others drop this member at once instead of after 3
  // periods. Best effort, and not tried without a server (each request
  // would wait its whole timeout): a collector that cannot reach NATS just
  // ages out.
  if (!nats_->connected()) return;
  kvEntry* entry = nullptr;
  if (kvStore_Get(&entry, kv_, id_.c_str()) == NATS_OK) {
    const bool ours = absl::StartsWith(kvEntry_ValueString(entry), instance_);
    kvEntry_Destroy(entry);
    if (ours) kvStore_Delete(kv_, id_.c_str());
  }
}

void ClusterMembers::Advertise(const std::string& address) {
  {
    absl::MutexLock lock(&mu_);
    address_ = address;
  }
  Announce();
}

void ClusterMembers::Announce() {
  std::string value = absl::StrCat(instance_, " ", kVersion);
  {
    absl::MutexLock lock(&mu_);
    if (!address_.empty()) absl::StrAppend(&value, " ", address_);
  }
  uint64_t revision = 0;
  // A failure is what /healthz reports through the connection state; the
  // next period tries again.
  kvStore_PutString(&revision, kv_, id_.c_str(), value.c_str());
}

void ClusterMembers::Seen(kvEntry* entry, bool replayed) {
  const std::string key = kvEntry_Key(entry);
  const kvOperation op = kvEntry_Operation(entry);
  const std::string value =
      kvEntry_ValueString(entry) == nullptr ? "" : kvEntry_ValueString(entry);
  absl::MutexLock lock(&mu_);
  if (op == kvOp_Delete || op == kvOp_Purge) {
    last_seen_.erase(key);
    live_since_.erase(key);
    addresses_.erase(key);
    return;
  }
  // "instance version [address]": older collectors announce no address.
  const std::vector<absl::string_view> fields =
      absl::StrSplit(value, ' ', absl::SkipEmpty());
  addresses_[key] = fields.size() >= 3 ? std::string(fields[2]) : "";
  // A replayed entry is the key's last announcement, possibly old: it
  // counts from when it was written (the servers' clock), and says nothing
  // about who runs now (a predecessor with this id that stopped).
  const absl::Time seen =
      replayed
          ? std::min(absl::Now(), absl::FromUnixNanos(kvEntry_Created(entry)))
          : absl::Now();
  auto [last, first] = last_seen_.try_emplace(key, seen);
  if (first || last->second < seen - kMissedPeriods * options_.period) {
    live_since_[key] = seen;  // live again after a silence
  }
  last->second = std::max(last->second, seen);
  if (!replayed && key == id_ && !absl::StartsWith(value, instance_)) {
    if (!conflict_seen_.has_value()) {
      LogError(absl::StrCat("another collector announces --collector_id=", id_,
                            " (instance ", value.substr(0, 16),
                            "): give every collector its own id"));
    }
    conflict_seen_ = absl::Now();
  }
}

void ClusterMembers::Run() {
  absl::Time next_announce = absl::Now() + options_.period;
  while (!stopping_.load()) {
    RevisionGaps gaps(BucketLastSequence(nats_->js(), options_.bucket));
    kvWatchOptions watch_options;
    kvWatchOptions_Init(&watch_options);
    kvWatcher* watcher = nullptr;
    natsStatus s = kvStore_WatchAll(&watcher, kv_, &watch_options);
    absl::Time heard = absl::Now();  // the last entry this watcher gave
    bool replaying = true;           // until the watcher's end-of-replay marker
    std::string missed;  // why the watcher is recreated, when it missed one
    while (s == NATS_OK && !stopping_.load() && missed.empty()) {
      if (absl::Now() >= next_announce) {
        Announce();
        next_announce = absl::Now() + options_.period;
      }
      kvEntry* entry = nullptr;
      s = kvWatcher_Next(&entry, watcher, 250);
      if (s == NATS_TIMEOUT) {
        s = NATS_OK;
        // Not even our own announcements: the watcher is dead.
        if (absl::Now() - heard > kMissedPeriods * options_.period) {
          s = NATS_TIMEOUT;
        }
        continue;
      }
      if (s != NATS_OK) continue;
      heard = absl::Now();
      if (entry == nullptr) {
        replaying = false;
        gaps.Replayed();
        continue;
      }
      const RevisionGaps::Range passed = gaps.Before(kvEntry_Revision(entry));
      Seen(entry, replaying);
      kvEntry_Destroy(entry);
      // An announcement missed for good (cluster/kv_watch.h) would make its
      // member look older than it is: read the bucket again.
      missed = MissedRevision(*nats_, options_.bucket, passed);
    }
    EndKvWatcher(nats_->nc(), watcher);
    if (stopping_.load()) return;
    if (!missed.empty()) {
      LogWarning(absl::StrCat("watching the cluster's members: ", missed,
                              "; watching again"));
    }
    watcher_restarts_.fetch_add(1);
    absl::SleepFor(absl::Milliseconds(200));
  }
}

std::vector<ClusterMembers::Member> ClusterMembers::Live() const {
  const absl::Time cutoff = absl::Now() - kMissedPeriods * options_.period;
  std::vector<Member> live;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, seen] : last_seen_) {
    if (seen < cutoff) continue;
    auto since = live_since_.find(id);
    auto address = addresses_.find(id);
    live.push_back(Member{id, seen, id == id_,
                          since == live_since_.end() ? seen : since->second,
                          address == addresses_.end() ? "" : address->second});
  }
  return live;
}

bool ClusterMembers::id_conflict() const {
  absl::MutexLock lock(&mu_);
  return conflict_seen_.has_value() &&
         absl::Now() - *conflict_seen_ < kMissedPeriods * options_.period;
}

}  // namespace fabricdiag::cluster
