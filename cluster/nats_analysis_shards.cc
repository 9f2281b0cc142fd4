#include "cluster/nats_analysis_shards.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace fabricdiag::cluster {

absl::StatusOr<std::unique_ptr<NatsAnalysisShards>> NatsAnalysisShards::Start(
    NatsConnection* nats, std::string id, ShardLeases::Members members,
    const Options& options) {
  std::unique_ptr<NatsAnalysisShards> out(
      new NatsAnalysisShards(id, options.counts));
  std::vector<std::string> names;
  names.reserve(options.counts.jobs + options.counts.switches);
  for (int k = 0; k < options.counts.jobs; ++k) {
    names.push_back(absl::StrCat("jobs.", k));
  }
  for (int k = 0; k < options.counts.switches; ++k) {
    names.push_back(absl::StrCat("switches.", k));
  }
  // Receiving first: a shard taken is read from its first pass.
  ASSIGN_OR_RETURN(out->exchange_,
                   ShardExchange::Open(nats, id, options.exchange));
  ASSIGN_OR_RETURN(out->news_, PartNewsExchange::Open(nats, id, options.news));
  // Its own nodes' shard has one candidate: this collector, always. Taken
  // first: holding it is how the others tell that this collector shards.
  ASSIGN_OR_RETURN(out->own_, ShardLeases::Start(
                                  nats, id, {collector::PortsShard(id)},
                                  [id] {
                                    return std::vector<ShardLeases::Candidate>{
                                        {id, absl::InfiniteDuration()}};
                                  },
                                  options.leases));
  ASSIGN_OR_RETURN(
      out->holders_,
      ShardHolders::Start(nats, {options.leases.bucket, options.leases.replicas,
                                 options.leases.ttl}));
  // The job and switch shards go to the live members that shard.
  out->live_ = std::move(members);
  out->members_ = [live = out->live_, holders = out->holders_.get()] {
    return ShardingMembers(live(), *holders);
  };
  out->settle_ = options.leases.settle;
  ASSIGN_OR_RETURN(
      out->shards_,
      ShardLeases::Start(nats, id, names, out->members_, options.leases));
  out->names_ = std::move(names);
  return out;
}

std::vector<ShardLeases::Candidate> ShardingMembers(
    std::vector<ShardLeases::Candidate> live, const ShardHolders& holders) {
  // A watcher that fell behind knows no holder: every live member, as
  // before this collector could tell.
  if (!holders.Current()) return live;
  live.erase(
      std::remove_if(live.begin(), live.end(),
                     [&holders](const ShardLeases::Candidate& c) {
                       return !holders.Of(collector::PortsShard(c.id)).held;
                     }),
      live.end());
  return live;
}

std::vector<std::string> NatsAnalysisShards::NotSharding() const {
  std::vector<std::string> out;
  if (!holders_->Current()) return out;
  for (const ShardLeases::Candidate& c : live_()) {
    if (c.id == id_ || c.live_for < kShardingWithin) continue;
    if (!holders_->Of(collector::PortsShard(c.id)).held) out.push_back(c.id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

NatsAnalysisShards::~NatsAnalysisShards() { Stop(); }

void NatsAnalysisShards::Stop() {
  if (shards_ != nullptr) shards_->Stop();
  if (own_ != nullptr) own_->Stop();
  if (holders_ != nullptr) holders_->Stop();
}

uint64_t NatsAnalysisShards::Term(absl::string_view shard) const {
  return shard == collector::PortsShard(id_) ? own_->Term(shard)
                                             : shards_->Term(shard);
}

std::vector<collector::AnalysisShards::Owned> NatsAnalysisShards::OwnedShards()
    const {
  std::vector<Owned> out;
  for (ShardLeases::Owned& s : shards_->OwnedShards()) {
    out.push_back({std::move(s.shard), s.term, s.handing_over});
  }
  return out;
}

std::string NatsAnalysisShards::OwnerOf(absl::string_view shard) const {
  if (shards_->Term(shard) != 0) return id_;
  const ShardHolders::Seen seen = holders_->Of(shard);
  if (seen.held) return seen.holder;
  std::vector<ShardLeases::Candidate> candidates = members_();
  // A holder that stopped renewing is no choice: its key has expired (as
  // far as a watcher that keeps up can tell).
  if (!seen.holder.empty() && holders_->Current()) {
    candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                    [&seen](const ShardLeases::Candidate& c) {
                                      return c.id == seen.holder;
                                    }),
                     candidates.end());
  }
  // As the leases count it: this collector is live, listed or not yet.
  if (std::none_of(
          candidates.begin(), candidates.end(),
          [this](const ShardLeases::Candidate& c) { return c.id == id_; })) {
    candidates.push_back({id_, absl::InfiniteDuration()});
  }
  return ShardLeases::SettledChoice(shard, candidates, settle_);
}

void NatsAnalysisShards::LetGo(absl::string_view shard) {
  shards_->LetGo(shard);
}

absl::Status NatsAnalysisShards::Exchange(
    const collector::FeatureSlice& local,
    absl::Span<const analysis::ShardPorts> shards,
    absl::Span<const Owned> owned, absl::Time now) {
  std::vector<std::string> names;
  names.reserve(owned.size());
  for (const Owned& o : owned) names.push_back(o.shard);
  const absl::Status own = exchange_->Own(names);
  const absl::Status sent = exchange_->Publish(local, shards, now);
  return own.ok() ? sent : own;
}

void NatsAnalysisShards::Receive(absl::string_view shard, absl::Time now,
                                 const collector::FeatureSlice& local,
                                 absl::Span<const uint32_t> own_ports,
                                 Received* views) {
  exchange_->Assemble(shard, now, &local, own_ports, &views->window,
                      &views->recent);
}

absl::Status NatsAnalysisShards::PublishNews(const analysis::PartNews& news) {
  return news_->Publish(news);
}

std::vector<analysis::PartNews> NatsAnalysisShards::News(absl::Time now) {
  return news_->Fresh(now);
}

}  // namespace fabricdiag::cluster
