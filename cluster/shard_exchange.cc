#include "cluster/shard_exchange.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cluster/shard_wire.h"

namespace fabricdiag::cluster {
namespace {

// More chunks than a shard of any fabric needs (a 1M-GPU fabric's largest
// shard is a few MB): a publication claiming more is refused.
constexpr uint32_t kMaxChunks = 4096;
// More collectors than a cluster has: made-up names cannot grow what a
// shard holds past this (16 MB of chunk pointers at most).
constexpr size_t kMaxCollectorsPerShard = 256;

}  // namespace

absl::StatusOr<std::unique_ptr<ShardExchange>> ShardExchange::Open(
    NatsConnection* nats, std::string collector_id, Options options) {
  if (nats == nullptr || collector_id.empty()) {
    return absl::InvalidArgumentError(
        "shard exchange: a NATS connection and a collector id are needed");
  }
  return std::unique_ptr<ShardExchange>(
      new ShardExchange(nats, std::move(collector_id), std::move(options)));
}

ShardExchange::ShardExchange(NatsConnection* nats, std::string collector_id,
                             Options options)
    : nats_(nats), id_(std::move(collector_id)), options_(std::move(options)) {}

ShardExchange::~ShardExchange() {
  absl::MutexLock own(&own_mu_);
  std::vector<std::unique_ptr<NatsSubscription>> subs;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [name, shard] : shards_) {
      subs.push_back(std::move(shard.subscription));
    }
    shards_.clear();
  }
  // Without the lock: the handler takes it.
  NatsSubscription::End(std::move(subs));
}

absl::Status ShardExchange::Own(const std::vector<std::string>& owned) {
  absl::MutexLock own(&own_mu_);
  const absl::flat_hash_set<std::string> wanted(owned.begin(), owned.end());
  std::vector<std::unique_ptr<NatsSubscription>> gone;
  std::vector<std::string> added;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = shards_.begin(); it != shards_.end();) {
      if (wanted.contains(it->first)) {
        ++it;
        continue;
      }
      gone.push_back(std::move(it->second.subscription));
      it = shards_.erase(it);
    }
    for (const std::string& s : wanted) {
      if (shards_.find(s) == shards_.end()) added.push_back(s);
    }
  }
  // Without the lock: the handler takes it.
  NatsSubscription::End(std::move(gone));
  std::sort(added.begin(), added.end());
  std::vector<std::string> failed;
  for (const std::string& shard : added) {
    // A shard's chunks arrive in a burst from every collector at once: let
    // them queue rather than be dropped as a slow consumer.
    std::unique_ptr<NatsSubscription> sub = NatsSubscription::Open(
        nats_->nc(), absl::StrCat(options_.subject, ".", shard, ".>"),
        &ShardExchange::OnChunk, this, {65536, 256 << 20});
    if (sub == nullptr) {
      failed.push_back(shard);
      continue;
    }
    absl::MutexLock lock(&mu_);
    shards_[shard].subscription = std::move(sub);
  }
  if (failed.empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "shard exchange: not receiving ", failed.size(), " shard(s) (",
      failed.front(), failed.size() > 1 ? ", ..." : "",
      "): subscribing failed; tried again at the next change"));
}

void ShardExchange::OnChunk(natsConnection* /*nc*/, natsSubscription* /*sub*/,
                            natsMsg* msg, void* closure) {
  auto* self = static_cast<ShardExchange*>(closure);
  self->Take(absl::string_view(natsMsg_GetData(msg),
                               static_cast<size_t>(natsMsg_GetDataLength(msg))),
             absl::Now());
  natsMsg_Destroy(msg);
}

void ShardExchange::Take(absl::string_view data, absl::Time now) {
  std::shared_ptr<const v1::ShardChunk> chunk = ParseShardChunk(data);
  if (chunk == nullptr || chunk->collector_id().empty() ||
      chunk->collector_id() == id_ || chunk->chunks() == 0 ||
      chunk->chunks() > kMaxChunks || chunk->chunk() >= chunk->chunks()) {
    refused_chunks_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  absl::MutexLock lock(&mu_);
  auto shard = shards_.find(chunk->shard());
  if (shard == shards_.end()) {
    refused_chunks_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::map<std::string, FromCollector>& senders = shard->second.from;
  if (senders.size() >= kMaxCollectorsPerShard &&
      senders.find(chunk->collector_id()) == senders.end()) {
    // Full: the sender heard from longest ago makes room, so that a
    // collector that publishes every pass always gets in.
    auto oldest = senders.begin();
    for (auto it = senders.begin(); it != senders.end(); ++it) {
      if (std::max(it->second.complete.received, it->second.pending.received) <
          std::max(oldest->second.complete.received,
                   oldest->second.pending.received)) {
        oldest = it;
      }
    }
    senders.erase(oldest);
  }
  FromCollector& from = senders[chunk->collector_id()];
  const int64_t published = chunk->published_unix_nanos();
  Publication& p = from.pending;
  // Older than what is held: a late message. (What is held no longer
  // counts once stale: a collector whose clock went back is heard again.)
  if ((published <= from.complete.published_nanos &&
       now - from.complete.received <= options_.freshness) ||
      (published < p.published_nanos &&
       now - p.received <= options_.freshness)) {
    return;
  }
  if (published != p.published_nanos || p.chunks.size() != chunk->chunks()) {
    p = Publication();
    p.published_nanos = published;
    p.chunks.resize(chunk->chunks());
  }
  received_chunks_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<const v1::ShardChunk>& slot = p.chunks[chunk->chunk()];
  if (slot == nullptr) ++p.have;
  slot = std::move(chunk);
  p.received = now;
  if (p.have == p.chunks.size()) {
    from.complete = std::move(p);
    p = Publication();
  }
}

absl::Status ShardExchange::Publish(
    const collector::FeatureSlice& local,
    absl::Span<const analysis::ShardPorts> shards, absl::Time now) {
  // While disconnected libnats would buffer what no one should read late
  // (as JetStreamFeatures' liveness).
  if (!nats_->link_up()) {
    publish_errors_.fetch_add(1, std::memory_order_relaxed);
    return absl::UnavailableError(
        "publishing shard features: NATS not connected");
  }
  absl::flat_hash_set<std::string> owned;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, shard] : shards_) owned.insert(name);
  }
  std::vector<const analysis::ShardPorts*> others;
  others.reserve(shards.size());
  for (const analysis::ShardPorts& s : shards) {
    if (!owned.contains(s.shard)) others.push_back(&s);
  }
  absl::MutexLock lock(&publish_mu_);
  uint64_t bytes = 0;
  absl::Status status;
  const std::vector<absl::Span<const absl::string_view>> written =
      writer_.WriteShards(local, others, {id_, now, options_.max_chunk_bytes});
  for (size_t k = 0; k < others.size() && status.ok(); ++k) {
    for (size_t c = 0; c < written[k].size(); ++c) {
      const absl::string_view data = written[k][c];
      const std::string subject = absl::StrCat(
          options_.subject, ".", others[k]->shard, ".", id_, ".", c);
      const natsStatus st =
          natsConnection_Publish(nats_->nc(), subject.c_str(), data.data(),
                                 static_cast<int>(data.size()));
      if (st != NATS_OK) {
        publish_errors_.fetch_add(1, std::memory_order_relaxed);
        status = NatsError(st, absl::StrCat("publishing to ", subject));
        break;
      }
      bytes += data.size();
      published_chunks_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  last_published_bytes_.store(bytes, std::memory_order_relaxed);
  return status;
}

ShardExchange::ShardInput ShardExchange::Received(absl::string_view shard,
                                                  absl::Time now) const {
  ShardInput in;
  Assemble(shard, now, nullptr, {}, &in.window, &in.recent, &in.collectors);
  return in;
}

void ShardExchange::Assemble(absl::string_view shard, absl::Time now,
                             const collector::FeatureSlice* local,
                             absl::Span<const uint32_t> own_ports,
                             analysis::FabricView* window,
                             analysis::FabricView* recent,
                             std::vector<std::string>* collectors) const {
  // The chunks are immutable and shared: decoded without the lock.
  std::vector<std::shared_ptr<const v1::ShardChunk>> held;
  // Per chunk of `held`, the collector it came from (by position in
  // `fresh`).
  std::vector<size_t> sender;
  std::vector<std::string> fresh;
  {
    absl::MutexLock lock(&mu_);
    auto it = shards_.find(shard);
    if (it != shards_.end()) {
      for (const auto& [collector, from] : it->second.from) {
        if (from.complete.chunks.empty() ||
            now - from.complete.received > options_.freshness) {
          continue;
        }
        for (const auto& chunk : from.complete.chunks) {
          held.push_back(chunk);
          sender.push_back(fresh.size());
        }
        fresh.push_back(collector);
      }
    }
  }
  std::vector<const v1::ShardChunk*> chunks;
  chunks.reserve(held.size());
  for (const auto& chunk : held) chunks.push_back(chunk.get());
  std::vector<size_t> damaged;
  AssembleShardViews(chunks, local, own_ports, window, recent, &damaged);
  refused_chunks_.fetch_add(damaged.size(), std::memory_order_relaxed);
  if (collectors == nullptr) return;
  // A collector is heard when one of its chunks was read.
  std::vector<size_t> read(fresh.size(), 0);
  for (size_t s : sender) ++read[s];
  for (size_t c : damaged) --read[sender[c]];
  collectors->clear();
  for (size_t k = 0; k < fresh.size(); ++k) {
    if (read[k] > 0) collectors->push_back(fresh[k]);
  }
}

ShardExchange::Stats ShardExchange::stats() const {
  Stats s;
  s.published_chunks = published_chunks_.load(std::memory_order_relaxed);
  s.last_published_bytes =
      last_published_bytes_.load(std::memory_order_relaxed);
  s.publish_errors = publish_errors_.load(std::memory_order_relaxed);
  s.received_chunks = received_chunks_.load(std::memory_order_relaxed);
  s.refused_chunks = refused_chunks_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace fabricdiag::cluster
