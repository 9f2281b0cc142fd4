// A collector cluster's analysis shards (collector/runner/analysis_shards.h):
// which shards this collector owns and under which terms (cluster/
// shard_leases.h), the other collectors' ports of them (cluster/
// shard_exchange.h) and the parts' news (cluster/part_news_exchange.h), all
// on the collectors' NATS connection.
//
// Two kinds of shards are leased: the job and switch shards
// (analysis/shard_map.h), each owned by one live member that shards
// (ShardingMembers below) chosen by rendezvous hashing, and this
// collector's own nodes' shard
// (collector::PortsShard: "ports.<collector_id>"), which only it ever
// takes: the term under which it writes its port findings, so that a
// restarted process with the same --collector_id fences the writes of the
// one before it. ShardedAnalysisRole gives the findings those terms.
//
//   ASSIGN_OR_RETURN(auto shards, NatsAnalysisShards::Start(
//       nats, "col-a", live_members, {}));
//   ShardedAnalysisRole role(lease, shards.get());
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/rate_parts.h"
#include "analysis/shard_map.h"
#include "cluster/analysis_lease.h"
#include "cluster/nats_connection.h"
#include "cluster/part_news_exchange.h"
#include "cluster/shard_exchange.h"
#include "cluster/shard_holders.h"
#include "cluster/shard_leases.h"
#include "collector/runner/analysis_role.h"
#include "collector/runner/analysis_shards.h"
#include "collector/runner/feature_exchange.h"

namespace fabricdiag::cluster {

class NatsAnalysisShards final : public collector::AnalysisShards {
 public:
  struct Options {
    analysis::ShardCounts counts;
    ShardLeases::Options leases;
    ShardExchange::Options exchange;
    PartNewsExchange::Options news;
  };

  // Starts taking this collector's shards (`members`: the live members,
  // called from the leases' thread) and receiving the news. `nats` must
  // outlive the result.
  static absl::StatusOr<std::unique_ptr<NatsAnalysisShards>> Start(
      NatsConnection* nats, std::string id, ShardLeases::Members members,
      const Options& options);
  // Stop().
  ~NatsAnalysisShards() override;
  // Lets go of every shard (their next owners take them at once) and stops
  // exchanging. Idempotent.
  void Stop();
  NatsAnalysisShards(const NatsAnalysisShards&) = delete;
  NatsAnalysisShards& operator=(const NatsAnalysisShards&) = delete;

  // The term under which this collector owns `shard` (a job or switch
  // shard, or its own nodes' shard); 0 when it does not.
  uint64_t Term(absl::string_view shard) const;
  // Shards handed over to their first choice.
  uint64_t handovers() const { return shards_->handovers(); }
  // The job and switch shards the fabric is cut into, and how many of them
  // no collector holds now, as the lease bucket says (ShardHolders): their
  // jobs and switches go unanalysed until one takes them.
  size_t shard_count() const { return names_.size(); }
  size_t unowned() const { return holders_->Unheld(names_); }
  // Whether unowned() is of now: the bucket's watcher keeps up.
  bool holders_current() const { return holders_->Current(); }
  // A member live this long holds its own nodes' shard if it shards: one
  // started with --analysis_shards takes it within a lease attempt.
  static constexpr absl::Duration kShardingWithin = absl::Seconds(10);
  // The live members (by id, ascending; never this one) that run without
  // --analysis_shards: live for kShardingWithin and holding no own nodes'
  // shard. Their agents' ports reach no shard owner, and their port
  // analyzers run only while they lead. Empty while the bucket's watcher
  // is behind (holders_current() false): not known then.
  std::vector<std::string> NotSharding() const;
  ShardExchange::Stats exchange_stats() const { return exchange_->stats(); }
  PartNewsExchange::Stats news_stats() const { return news_->stats(); }

  std::string Id() const override { return id_; }
  analysis::ShardCounts Counts() const override { return counts_; }
  // The job and switch shards owned now (not the own nodes' shard).
  std::vector<Owned> OwnedShards() const override;
  // Itself for a shard it owns; else the collector whose lease on it the
  // bucket shows renewed (ShardHolders); else, between two owners (let go,
  // or its holder stopped renewing), the one that takes it next: the live
  // members' settled choice (ShardLeases::SettledChoice), a lapsed holder
  // left out.
  std::string OwnerOf(absl::string_view shard) const override;
  void LetGo(absl::string_view shard) override;
  absl::Status Exchange(const collector::FeatureSlice& local,
                        absl::Span<const analysis::ShardPorts> shards,
                        absl::Span<const Owned> owned, absl::Time now) override;
  void Receive(absl::string_view shard, absl::Time now,
               const collector::FeatureSlice& local,
               absl::Span<const uint32_t> own_ports, Received* views) override;
  absl::Status PublishNews(const analysis::PartNews& news) override;
  std::vector<analysis::PartNews> News(absl::Time now) override;

 private:
  NatsAnalysisShards(std::string id, analysis::ShardCounts counts)
      : id_(std::move(id)), counts_(counts) {}

  const std::string id_;
  const analysis::ShardCounts counts_;
  std::vector<std::string> names_;  // jobs.* and switches.*
  ShardLeases::Members live_;       // every live member; any thread
  ShardLeases::Members members_;    // the live members that shard; any thread
  absl::Duration settle_;
  // Declared before the leases, destroyed after them: their threads read it.
  std::unique_ptr<ShardHolders> holders_;
  std::unique_ptr<ShardLeases> shards_;  // jobs.* and switches.*
  std::unique_ptr<ShardLeases> own_;     // ports.<id>
  std::unique_ptr<ShardExchange> exchange_;
  std::unique_ptr<PartNewsExchange> news_;
};

// Of `live`, the members that shard their analysis: those that hold their
// own nodes' shard (collector::PortsShard), which every collector started
// with --analysis_shards takes at once and no other ever does. A member
// without the flag would be the rendezvous first choice for its share of
// the job and switch shards and never take them; one cut off from NATS
// cannot. Every member of `live` while `holders` is not Current().
std::vector<ShardLeases::Candidate> ShardingMembers(
    std::vector<ShardLeases::Candidate> live, const ShardHolders& holders);

// The analysis lease's role (who runs liveness and the layout analyzers),
// with the shards' terms (who writes each shard's findings).
class ShardedAnalysisRole final : public collector::AnalysisRole {
 public:
  // Both must outlive the role.
  ShardedAnalysisRole(const AnalysisLease* lease,
                      const NatsAnalysisShards* shards)
      : lease_(lease), shards_(shards) {}
  bool Leading() const override { return lease_->Leading(); }
  uint64_t Term() const override { return lease_->Term(); }
  uint64_t ShardTerm(absl::string_view shard) const override {
    return shards_->Term(shard);
  }

 private:
  const AnalysisLease* const lease_;
  const NatsAnalysisShards* const shards_;
};

}  // namespace fabricdiag::cluster
