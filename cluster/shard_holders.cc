#include "cluster/shard_holders.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/key_lease.h"
#include "cluster/kv_watch.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace fabricdiag::cluster {
namespace {

// ShardLeases' keys: "shard.<name>".
constexpr absl::string_view kKeyPrefix = "shard.";

}  // namespace

void HolderKeys::Put(absl::string_view shard, absl::string_view holder,
                     uint64_t revision, absl::Time now) {
  Key& k = keys_[shard];
  if (k.revision == revision && k.holder == holder) return;  // replayed
  k.holder = std::string(holder);
  k.revision = revision;
  k.arrived = now;
}

void HolderKeys::Erase(absl::string_view shard) { keys_.erase(shard); }

const HolderKeys::Key* HolderKeys::Find(absl::string_view shard) const {
  auto it = keys_.find(shard);
  return it == keys_.end() ? nullptr : &it->second;
}

absl::StatusOr<std::unique_ptr<ShardHolders>> ShardHolders::Start(
    NatsConnection* nats, const Options& options) {
  ASSIGN_OR_RETURN(
      kvStore * kv,
      BindLeaseBucket(*nats, options.bucket, options.replicas, options.ttl));
  std::unique_ptr<ShardHolders> holders(new ShardHolders(nats, options, kv));
  holders->watcher_ = std::thread(&ShardHolders::Watch, holders.get());
  RETURN_IF_ERROR(WaitForReplay(holders->replayed_, *nats, options.bucket));
  return holders;
}

ShardHolders::~ShardHolders() {
  Stop();
  kvStore_Destroy(kv_);
}

void ShardHolders::Stop() {
  stopping_ = true;
  if (watcher_.joinable()) watcher_.join();
}

ShardHolders::Seen ShardHolders::Of(absl::string_view shard) const {
  absl::MutexLock lock(&mu_);
  const HolderKeys::Key* key = keys_.Find(shard);
  if (key == nullptr) return {};
  return {key->holder, absl::Now() - key->arrived < options_.ttl};
}

size_t ShardHolders::Unheld(absl::Span<const std::string> shards) const {
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  size_t unheld = 0;
  for (const std::string& shard : shards) {
    const HolderKeys::Key* key = keys_.Find(shard);
    unheld += key == nullptr || now - key->arrived >= options_.ttl;
  }
  return unheld;
}

bool ShardHolders::Current() const {
  absl::MutexLock lock(&mu_);
  return absl::Now() - last_write_ < options_.ttl;
}

void ShardHolders::Apply(kvEntry* entry) {
  const absl::string_view key = kvEntry_Key(entry);
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  last_write_ = now;
  if (!absl::StartsWith(key, kKeyPrefix)) return;  // the analysis lease
  const absl::string_view shard = key.substr(kKeyPrefix.size());
  if (kvEntry_Operation(entry) != kvOp_Put) {
    keys_.Erase(shard);  // let go: deleted by its holder
    return;
  }
  const char* value = kvEntry_ValueString(entry);
  const absl::string_view holder = value == nullptr ? "" : value;
  if (!IsValidNodeName(holder)) {
    // No collector's id (ShardLeases writes the owner's --collector_id): a
    // hostile or broken writer's. No owner anyone can name: its owner's
    // next renewal finds the revision moved and lets go, and the shard is
    // taken again once that value expired (the bucket's TTL).
    keys_.Erase(shard);
    return;
  }
  keys_.Put(shard, holder, kvEntry_Revision(entry), now);
}

void ShardHolders::Watch() {
  BucketWatch watch;
  watch.what = "the analysis shards' holders";
  watch.stopping = [this] { return stopping_.load(); };
  watch.pause = [this](absl::Duration d) {
    absl::SleepFor(d);
    return !stopping_.load();
  };
  watch.apply = [this](kvEntry* entry) { Apply(entry); };
  watch.replayed = [this] {
    if (!replayed_.HasBeenNotified()) replayed_.Notify();
  };
  RunBucketWatch(*nats_, kv_, options_.bucket, watch);
}

}  // namespace fabricdiag::cluster
