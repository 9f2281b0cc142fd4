#include "cluster/feature_cache.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "cluster/feature_wire.h"
#include "proto/cluster_facts.pb.h"

namespace fabricdiag::cluster {
namespace {

// Another collector's nodes are as current as the slice it published.
void ObservedUntil(int64_t published_unix_nanos,
                   std::vector<collector::NodeFacts>* nodes) {
  for (collector::NodeFacts& n : *nodes) {
    n.liveness.observed_until = absl::FromUnixNanos(published_unix_nanos);
  }
}

}  // namespace

FeatureCache::FeatureCache(std::string collector_id)
    : id_(std::move(collector_id)) {}

std::unique_ptr<FeatureCache::Decoded> FeatureCache::Decode(
    const v1::FeatureChunk& chunk) {
  auto d = std::make_unique<Decoded>();
  // Every port's recent signals, whether or not this chunk names a recent
  // window: a slice has a recent view from its first chunk that does on,
  // and then takes the recent ports of every later chunk (as
  // AddChunkToSlice over the whole slice).
  d->slice.recent.emplace();
  if (!AddChunkToSlice(chunk, &d->slice)) return nullptr;
  d->recent_seconds = chunk.recent_seconds();
  FinishSlice(&d->slice);
  return d;
}

void FeatureCache::Received(absl::string_view data, absl::Time received) {
  // Decoded here, on the receiving thread, not in the analysis pass; the
  // message is kept as it came (smaller than parsed) for a merge that
  // needs it again. A collector that does not analyse reads the header and
  // the nodes' facts alone (v1::FeatureChunkFacts): every port is decoded
  // only if it ever merges the fabric.
  std::unique_ptr<Decoded> decoded;
  std::shared_ptr<const std::string> kept;
  std::vector<collector::NodeFacts> nodes;
  Header header;
  bool valid = false;
  bool damaged = false;  // parsed, but its ports do not decode
  if (decode_on_receipt_.load(std::memory_order_relaxed)) {
    google::protobuf::Arena arena;
    auto* chunk =
        google::protobuf::Arena::CreateMessage<v1::FeatureChunk>(&arena);
    valid = chunk->ParseFromArray(data.data(), static_cast<int>(data.size()));
    header = {chunk->collector_id(), chunk->published_unix_nanos(),
              chunk->chunk(), chunk->chunks()};
    if (valid && header.collector_id != id_) {
      decoded = Decode(*chunk);
      damaged = decoded == nullptr;
      nodes = NodesOfChunk(*chunk);
    }
  } else {
    v1::FeatureChunkFacts facts;
    valid = facts.ParseFromArray(data.data(), static_cast<int>(data.size()));
    header = {facts.collector_id(), facts.published_unix_nanos(), facts.chunk(),
              facts.chunks()};
    if (valid && header.collector_id != id_) nodes = NodesOfChunk(facts);
  }
  valid = valid && header.chunks != 0 && header.chunk < header.chunks;
  ObservedUntil(header.published_unix_nanos, &nodes);
  if (decoded != nullptr) {
    ObservedUntil(header.published_unix_nanos, &decoded->slice.nodes);
  }
  if (valid && !damaged && header.collector_id != id_) {
    kept = std::make_shared<const std::string>(data);
  }
  Chunk replaced;  // freed after the lock
  absl::MutexLock lock(&mu_);
  ++stats_.received_chunks;
  stats_.received_bytes += data.size();
  if (!valid) {
    ++stats_.undecodable_chunks;
    return;
  }
  // Its nodes' facts are kept; its ports are lost.
  if (damaged) ++stats_.undecodable_chunks;
  if (header.collector_id == id_) return;  // our own: merged locally
  const int64_t published = header.published_unix_nanos;
  const uint32_t chunks = header.chunks;
  replaced = Keep(std::move(header),
                  Chunk{std::move(kept), published, chunks, received,
                        std::move(decoded), std::move(nodes)},
                  &chunks_);
}

void FeatureCache::ReceivedLiveness(absl::string_view data,
                                    absl::Time received) {
  // Parsed on an arena: a chunk's thousands of node messages are freed at
  // once.
  google::protobuf::Arena arena;
  auto* facts =
      google::protobuf::Arena::CreateMessage<v1::FeatureChunkFacts>(&arena);
  bool valid =
      facts->ParseFromArray(data.data(), static_cast<int>(data.size()));
  Header header{facts->collector_id(), facts->published_unix_nanos(),
                facts->chunk(), facts->chunks()};
  valid = valid && header.chunks != 0 && header.chunk < header.chunks;
  std::vector<collector::NodeFacts> nodes;
  if (valid && header.collector_id != id_) {
    nodes = NodesOfChunk(*facts);
    ObservedUntil(header.published_unix_nanos, &nodes);
  }
  Chunk replaced;  // freed after the lock
  absl::MutexLock lock(&mu_);
  ++stats_.received_liveness_chunks;
  stats_.received_liveness_bytes += data.size();
  if (!valid) {
    ++stats_.undecodable_chunks;
    return;
  }
  if (header.collector_id == id_) return;
  const int64_t published = header.published_unix_nanos;
  const uint32_t chunks = header.chunks;
  replaced = Keep(
      std::move(header),
      Chunk{nullptr, published, chunks, received, nullptr, std::move(nodes)},
      &liveness_);
}

FeatureCache::Chunk FeatureCache::Keep(Header header, Chunk c, ChunkMap* into) {
  auto key = std::make_pair(std::move(header.collector_id), header.chunk);
  auto it = into->find(key);
  if (it == into->end()) {
    into->emplace(std::move(key), std::move(c));
    return Chunk();
  }
  if (it->second.published_unix_nanos > header.published_unix_nanos) {
    return c;  // a late copy (catch-up racing the subscription)
  }
  return std::exchange(it->second, std::move(c));
}

std::map<std::string, std::vector<std::pair<uint32_t, FeatureCache::Chunk*>>>
FeatureCache::Fresh(ChunkMap& from, absl::Time cutoff) {
  // Per collector: its newest fresh chunk, which names the count.
  std::map<std::string, const Chunk*> newest;
  for (const auto& [key, c] : from) {
    if (c.received < cutoff) continue;
    const Chunk*& n = newest[key.first];
    if (n == nullptr || c.published_unix_nanos > n->published_unix_nanos) {
      n = &c;
    }
  }
  std::map<std::string, std::vector<std::pair<uint32_t, Chunk*>>> fresh;
  for (auto& [key, c] : from) {
    auto n = newest.find(key.first);
    // A chunk index beyond what the collector now publishes is left over
    // from a larger slice.
    if (c.received < cutoff || n == newest.end() ||
        key.second >= n->second->chunks) {
      continue;
    }
    fresh[key.first].emplace_back(key.second, &c);
  }
  return fresh;
}

bool FeatureCache::HasFeatureChunk(const std::string& collector_id,
                                   uint32_t index, absl::Time since) const {
  absl::MutexLock lock(&mu_);
  const auto it = chunks_.find(std::make_pair(collector_id, index));
  return it != chunks_.end() && it->second.received >= since;
}

void FeatureCache::DropFeatures() {
  ChunkMap dropped;  // freed after the lock
  absl::MutexLock lock(&mu_);
  dropped.swap(chunks_);
}

std::vector<std::string> FeatureCache::WithoutLiveness(
    absl::Time cutoff, const std::vector<std::string>& live) const {
  absl::flat_hash_set<absl::string_view> heard;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, c] : liveness_) {
    if (c.received >= cutoff) heard.insert(key.first);
  }
  std::vector<std::string> without;
  for (const std::string& id : live) {
    if (id != id_ && !heard.contains(id)) without.push_back(id);
  }
  return without;
}

void FeatureCache::DecodeOnReceipt(bool decode) {
  decode_on_receipt_.store(decode, std::memory_order_relaxed);
}

collector::FeatureSlice FeatureCache::Merged(collector::FeatureSlice local,
                                             absl::Time cutoff,
                                             collector::MergeScope scope) {
  return Merged(std::move(local), cutoff, scope, Presence{});
}

collector::FeatureSlice FeatureCache::Merged(collector::FeatureSlice local,
                                             absl::Time cutoff,
                                             collector::MergeScope scope,
                                             const Presence& presence) {
  const bool ports = scope == collector::MergeScope::kFabric;
  // Per other collector, its chunks in index order: decoded when received,
  // or (taken by an earlier merge, or not decoded on receipt) the message
  // to decode; for a merge of nodes only, the chunk's nodes.
  struct Part {
    std::shared_ptr<const std::string> data;
    std::unique_ptr<Decoded> decoded;
    std::vector<collector::NodeFacts> nodes;
    uint32_t index = 0;  // the chunk's, and its version: to mark it damaged
    int64_t published_unix_nanos = 0;
  };
  std::map<std::string, std::vector<Part>> parts;
  // For a merge of nodes only: per other collector, its nodes' facts.
  std::map<std::string, std::vector<collector::NodeFacts>> nodes_only_parts;
  {
    absl::MutexLock lock(&mu_);
    if (ports) {
      for (auto& [id, chunks] : Fresh(chunks_, cutoff)) {
        for (auto& [index, c] : chunks) {
          // The facts serve only when the ports fail to decode at merge.
          Part part{c->data,
                    std::move(c->decoded),
                    {},
                    index,
                    c->published_unix_nanos};
          if (part.decoded == nullptr) part.nodes = c->nodes;
          parts[id].push_back(std::move(part));
        }
      }
    } else {
      // A collector's liveness chunks where fresh ones arrived, its
      // feature chunks' facts otherwise: copied once, straight into its
      // slice (a chunk not replaced by the next merge is merged again).
      for (ChunkMap* from : {&liveness_, &chunks_}) {
        for (auto& [id, chunks] : Fresh(*from, cutoff)) {
          auto [it, inserted] = nodes_only_parts.try_emplace(id);
          if (!inserted) continue;
          size_t count = 0;
          for (auto& [index, c] : chunks) count += c->nodes.size();
          it->second.reserve(count);
          for (auto& [index, c] : chunks) {
            it->second.insert(it->second.end(), c->nodes.begin(),
                              c->nodes.end());
          }
        }
      }
    }
  }
  uint64_t decoded_here = 0;
  uint64_t undecodable_here = 0;
  // Chunks whose ports failed to decode here: (collector, index, version).
  std::vector<std::tuple<std::string, uint32_t, int64_t>> damaged;
  uint64_t remote_ports = 0;
  std::map<std::string, collector::FeatureSlice> remote;
  for (auto& [id, nodes] : nodes_only_parts) {
    remote[id].nodes = std::move(nodes);
  }
  nodes_only_parts.clear();
  for (auto& [id, member] : parts) {
    collector::FeatureSlice& slice = remote[id];
    for (Part& part : member) {
      if (part.decoded == nullptr && part.data == nullptr) {
        // Found damaged on receipt (and counted then): its nodes' facts.
        for (collector::NodeFacts& n : part.nodes) {
          slice.nodes.push_back(std::move(n));
        }
        continue;
      }
      if (part.decoded == nullptr) {
        google::protobuf::Arena arena;
        auto* chunk =
            google::protobuf::Arena::CreateMessage<v1::FeatureChunk>(&arena);
        if (chunk->ParseFromString(*part.data)) part.decoded = Decode(*chunk);
        if (part.decoded != nullptr) {
          ObservedUntil(part.published_unix_nanos, &part.decoded->slice.nodes);
        }
        if (part.decoded == nullptr) {
          // Its header and facts parsed on receipt, its ports do not: the
          // nodes' facts count, their ports are lost.
          ++undecodable_here;
          damaged.emplace_back(id, part.index, part.published_unix_nanos);
          for (collector::NodeFacts& n : part.nodes) {
            slice.nodes.push_back(std::move(n));
          }
          continue;
        }
        ++decoded_here;
      }
      collector::FeatureSlice& d = part.decoded->slice;
      // Each chunk's ports are one sorted run; a slice's chunks hold
      // ascending nodes, so the runs follow each other.
      slice.window.window_seconds = d.window.window_seconds;
      remote_ports += d.window.ports().size();
      slice.window.AppendSorted(d.window.TakePorts());
      if (part.decoded->recent_seconds > 0) {
        if (!slice.recent.has_value()) slice.recent.emplace();
        slice.recent->window_seconds = part.decoded->recent_seconds;
      }
      if (slice.recent.has_value()) {
        slice.recent->AppendSorted(d.recent->TakePorts());
      }
      for (collector::NodeFacts& n : d.nodes) {
        slice.nodes.push_back(std::move(n));
      }
    }
    // Not Finish()ed: MergeFeatureSlices merges the runs of every slice
    // at once.
  }
  parts.clear();
  if (!ports) {
    // This collector's own ports are left out too (freed here rather than
    // merged into a view no one reads).
    collector::FeatureSlice nodes_only;
    nodes_only.window.window_seconds = local.window.window_seconds;
    nodes_only.nodes = std::move(local.nodes);
    local = std::move(nodes_only);
  }
  for (collector::NodeFacts& n : local.nodes) n.collector = id_;
  std::vector<collector::FeatureSlice*> slices = {&local};
  for (auto& [id, slice] : remote) {
    for (collector::NodeFacts& n : slice.nodes) n.collector = id;
    slices.push_back(&slice);
  }
  collector::FeatureSlice merged = collector::MergeFeatureSlices(slices);
  absl::MutexLock lock(&mu_);
  stats_.merged_members = remote.size();
  stats_.merged_remote_ports = remote_ports;
  stats_.merge_decoded_chunks = decoded_here;
  stats_.undecodable_chunks += undecodable_here;
  // Counted once: later merges take only the nodes' facts of that version,
  // as of a chunk found damaged on receipt.
  for (auto& [id, index, published] : damaged) {
    auto it = chunks_.find(std::make_pair(std::move(id), index));
    if (it != chunks_.end() && it->second.published_unix_nanos == published) {
      it->second.data = nullptr;
    }
  }
  stats_.unobserved_nodes.clear();
  // The live collectors whose features are missing from this merge, with
  // their last news (their clocks), by id.
  std::vector<std::pair<std::string, absl::Time>> missing;
  for (const std::string& id : presence.live) {
    if (id == id_) continue;
    last_live_[id] = presence.now;
    stats_.unobserved_nodes[id] = 0;
    if (remote.count(id) == 0) {
      merged.complete = false;
      // One never heard from (it started moments ago, or this one did)
      // may hold agents all the same: its news is none.
      missing.emplace_back(id, NewestNews(id));
    }
  }
  // Facts of a node that its collector's slice in this merge does not
  // give. When that collector's features stopped arriving, while it runs
  // or its agents may still be reconnecting elsewhere, the node keeps the
  // state it had; then agent_down judges it as of now. So it does at once
  // when that collector's features arrive without the node (it restarted
  // and has not heard from the agent since).
  const auto left_merge =
      [&](collector::NodeFacts& f) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        auto live = last_live_.find(f.collector);
        if (f.collector != id_ && remote.count(f.collector) == 0 &&
            live != last_live_.end() &&
            presence.now - live->second <= presence.left_grace) {
          f.unobserved = true;
          ++stats_.unobserved_nodes[f.collector];
        } else {
          f.liveness.observed_until = absl::InfiniteFuture();
        }
      };
  // What the merge gives of each node, against what is remembered of it:
  // both sorted by name (the merge's nodes as MergeFeatureSlices leaves
  // them), walked together.
  const auto by_node = [](const collector::NodeFacts& a,
                          const collector::NodeFacts& b) {
    return a.liveness.node < b.liveness.node;
  };
  if (!std::is_sorted(merged.nodes.begin(), merged.nodes.end(), by_node)) {
    std::stable_sort(merged.nodes.begin(), merged.nodes.end(), by_node);
  }
  std::vector<collector::NodeFacts> first_heard;  // not remembered before
  std::vector<collector::NodeFacts> gone;  // remembered, not in this merge
  size_t r = 0;
  for (collector::NodeFacts& n : merged.nodes) {
    const std::string& node = n.liveness.node;
    while (r < remembered_.size() && remembered_[r].liveness.node < node) {
      gone.push_back(remembered_[r++]);
    }
    collector::NodeFacts* kept = nullptr;
    if (r < remembered_.size() && remembered_[r].liveness.node == node) {
      kept = &remembered_[r++];
    } else if (r > 0 && remembered_[r - 1].liveness.node == node) {
      // A node twice in the merge: MergeFeatureSlices lists each once, but
      // the walk does not count on it.
      kept = &remembered_[r - 1];
    } else if (!first_heard.empty() &&
               first_heard.back().liveness.node == node) {
      kept = &first_heard.back();
    } else {
      first_heard.push_back(n);
      continue;
    }
    if (kept->collector != n.collector &&
        kept->liveness.last_report > n.liveness.last_report) {
      // Another collector heard the node after the one the merge took it
      // from: its agent moved there (a failover, a hand-back), and that
      // collector's features did not arrive this time. What the earlier
      // collector still says of the node is older news, not the agent's
      // silence: the node is judged as the collector that holds it would
      // have it, as if that one had left the merge.
      n = *kept;
      left_merge(n);
      continue;
    }
    // Assigned field by field: the strings keep their buffers.
    kept->liveness = n.liveness;
    if (kept->collector != n.collector) kept->collector = n.collector;
    kept->unobserved = n.unobserved;
    kept->handed_off = n.handed_off;
  }
  while (r < remembered_.size()) gone.push_back(remembered_[r++]);
  if (!first_heard.empty()) {
    const size_t before = remembered_.size();
    remembered_.insert(remembered_.end(),
                       std::make_move_iterator(first_heard.begin()),
                       std::make_move_iterator(first_heard.end()));
    std::inplace_merge(remembered_.begin(), remembered_.begin() + before,
                       remembered_.end(), by_node);
  }
  for (collector::NodeFacts& f : gone) {
    left_merge(f);
    merged.nodes.push_back(std::move(f));
  }
  // A node whose collector handed its agent to another one after its last
  // report, and that reported nowhere since: the agent is on its way. It
  // waits out a pause before it connects (longer with each hand-off in a
  // row, up to its backoff's 30 s), and the collector it goes to publishes
  // its arrival a pass later: that silence is not the agent's. It is judged
  // as of its last report, as its collector's, for as long as a
  // reconnecting agent is waited for (either way of that collector's clock:
  // a hand-off stamped far from now says nothing). Counted apart from the
  // unobserved nodes of collectors whose features stopped.
  stats_.moving_nodes = 0;
  for (collector::NodeFacts& f : merged.nodes) {
    if (f.unobserved || !f.liveness.ever_reported ||
        f.handed_off == absl::InfinitePast() ||
        f.handed_off < f.liveness.last_report ||
        absl::AbsDuration(presence.now - f.handed_off) > presence.left_grace) {
      continue;
    }
    f.unobserved = true;
    f.liveness.observed_until =
        std::min(f.liveness.observed_until, f.liveness.last_report);
    ++stats_.moving_nodes;
  }
  if (!missing.empty()) {
    // An agent that went silent where it streamed after the last news of
    // a live collector whose features are missing may be streaming there
    // now (handed back to it, or failed over to it, while its features
    // stall): what it does is unknown, not silence, for as long as a
    // reconnecting agent is waited for. It is judged as of its last
    // report, as a node of that collector (the first by id of several).
    // Silent means two of its reports missed: a node that merely reports
    // between two passes stays observed.
    std::sort(missing.begin(), missing.end());
    for (collector::NodeFacts& f : merged.nodes) {
      const analysis::NodeLiveness& l = f.liveness;
      if (f.unobserved || !l.ever_reported ||
          presence.now - l.last_report > presence.left_grace) {
        continue;
      }
      const absl::Duration interval =
          l.interval > absl::ZeroDuration()
              ? l.interval
              : absl::Seconds(1);  // the agent's default --interval
      if (std::min(presence.now, l.observed_until) - l.last_report <=
          2 * interval) {
        continue;
      }
      for (const auto& [id, news] : missing) {
        if (news >= l.last_report) continue;
        f.unobserved = true;
        f.liveness.observed_until = l.last_report;
        f.collector = id;
        ++stats_.unobserved_nodes[id];
        break;
      }
    }
  }
  return merged;
}

absl::Time FeatureCache::NewestNews(const std::string& collector_id) const {
  absl::Time newest = absl::InfinitePast();
  for (const ChunkMap* from : {&chunks_, &liveness_}) {
    for (auto it = from->lower_bound(std::make_pair(collector_id, 0u));
         it != from->end() && it->first.first == collector_id; ++it) {
      newest = std::max(newest,
                        absl::FromUnixNanos(it->second.published_unix_nanos));
    }
  }
  return newest;
}

std::map<std::string, absl::Time> FeatureCache::LastReceived(Feed feed) const {
  std::map<std::string, absl::Time> last;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, c] : feed == Feed::kFeatures ? chunks_ : liveness_) {
    auto [it, inserted] = last.try_emplace(key.first, c.received);
    if (!inserted) it->second = std::max(it->second, c.received);
  }
  return last;
}

FeatureCache::Stats FeatureCache::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace fabricdiag::cluster
