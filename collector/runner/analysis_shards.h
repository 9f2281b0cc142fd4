// Where a collector's analysis shards come from: which it owns, the other
// collectors' ports of them, and the other collectors' news. The seam
// between the analysis runner's sharded rate pass (collector/runner/
// sharded_rate_pass.h) and the ways a collector can be placed:
//
//   - Embedded: a cluster of one (OneCollectorShards below): it owns every
//     shard under one term, holds every port of each, and hears no news.
//   - Cluster: shard leases, the shards' features and the parts' news on
//     NATS (cluster/shard_leases.h, cluster/shard_exchange.h,
//     cluster/part_news_exchange.h).
//
//   for (const AnalysisShards::Owned& s : shards.OwnedShards()) ...
//   shards.Exchange(local, AssignShards(local.window, ...), owned, now);
//   shards.Receive("jobs.3", now, local, own_ports_of_jobs_3, &views);
//
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/fabric_view.h"
#include "analysis/rate_parts.h"
#include "analysis/shard_map.h"
#include "collector/runner/feature_exchange.h"

namespace fabricdiag::collector {

// The findings source of the rate analyzers run over the whole fabric (by
// the collector that leads the analysis, without --analysis_shards).
inline constexpr char kUnshardedRateSource[] = "rate_analyzers";

// The findings source of analysis shard `shard`: "rate@<shard>".
inline std::string ShardSource(absl::string_view shard) {
  return absl::StrCat("rate@", shard);
}
// The shard of collector `collector_id`'s own nodes, which only it owns:
// "ports.<id>" ("ports" for the embedded collector, whose id is empty).
inline std::string PortsShard(absl::string_view collector_id) {
  return collector_id.empty() ? std::string("ports")
                              : absl::StrCat("ports.", collector_id);
}
// The findings source of its port analyzers: ShardSource(PortsShard(id)).
inline std::string PortsSource(absl::string_view collector_id) {
  return ShardSource(PortsShard(collector_id));
}

class AnalysisShards {
 public:
  struct Owned {
    std::string shard;
    uint64_t term = 0;
    // Another collector takes it next: once what this one kept of it is
    // written for that one (its straggler baselines), LetGo().
    bool handing_over = false;
  };
  // A shard's views for a pass: every collector's ports of it, Finish()ed.
  // Kept by the caller from pass to pass: each Receive() rebuilds them
  // over their storage.
  struct Received {
    analysis::FabricView window;
    analysis::FabricView recent;
  };

  virtual ~AnalysisShards() = default;

  // This collector's --collector_id ("" embedded): its port findings'
  // source is PortsSource(id) (collector/runner/sharded_rate_pass.h), and
  // the nodes it holds are those whose facts name it.
  virtual std::string Id() const = 0;
  // How the fabric is cut (the same on every collector).
  virtual analysis::ShardCounts Counts() const = 0;
  // The shards this collector owns now, with their terms.
  virtual std::vector<Owned> OwnedShards() const = 0;
  // The collector that owns (or is about to own) job or switch shard
  // `shard`, as this one can tell; "" when it cannot. Any thread.
  virtual std::string OwnerOf(absl::string_view /*shard*/) const { return ""; }
  // Owned `shard`, handing over, may go to its next owner now (ignored
  // otherwise). Without it, it goes after a while all the same.
  virtual void LetGo(absl::string_view /*shard*/) {}
  // Sends `local`'s ports of `shards` (AssignShards of local.window) that
  // are not in `owned` to their owners, and receives the shards of
  // `owned` from now on. Unavailable when they could not all be sent (the
  // next pass sends them again).
  virtual absl::Status Exchange(const FeatureSlice& local,
                                absl::Span<const analysis::ShardPorts> shards,
                                absl::Span<const Owned> owned,
                                absl::Time now) = 0;
  // Owned `shard`'s views for this pass, into `views`: what the other
  // collectors sent of it, with `local`'s own ports at `own_ports`
  // (ascending indexes into local.window; each with its newest samples
  // from local.recent when it has them).
  virtual void Receive(absl::string_view shard, absl::Time now,
                       const FeatureSlice& local,
                       absl::Span<const uint32_t> own_ports,
                       Received* views) = 0;
  // Tells the others what this pass's parts found; Unavailable when it
  // could not.
  virtual absl::Status PublishNews(const analysis::PartNews& news) = 0;
  // The other collectors' latest news (each at most a few seconds old).
  virtual std::vector<analysis::PartNews> News(absl::Time now) = 0;
};

// The embedded collector: a cluster of one owns every shard, in one term,
// and exchanges nothing.
class OneCollectorShards final : public AnalysisShards {
 public:
  explicit OneCollectorShards(analysis::ShardCounts counts = {})
      : counts_(counts) {
    for (int k = 0; k < counts_.jobs; ++k) {
      owned_.push_back({absl::StrCat("jobs.", k), 1});
    }
    for (int k = 0; k < counts_.switches; ++k) {
      owned_.push_back({absl::StrCat("switches.", k), 1});
    }
  }
  std::string Id() const override { return ""; }
  analysis::ShardCounts Counts() const override { return counts_; }
  std::vector<Owned> OwnedShards() const override { return owned_; }
  absl::Status Exchange(const FeatureSlice& /*local*/,
                        absl::Span<const analysis::ShardPorts> /*shards*/,
                        absl::Span<const Owned> /*owned*/,
                        absl::Time /*now*/) override {
    return absl::OkStatus();
  }
  // Its own ports alone.
  void Receive(absl::string_view shard, absl::Time now,
               const FeatureSlice& local, absl::Span<const uint32_t> own_ports,
               Received* views) override;
  absl::Status PublishNews(const analysis::PartNews& /*news*/) override {
    return absl::OkStatus();
  }
  std::vector<analysis::PartNews> News(absl::Time /*now*/) override {
    return {};
  }

 private:
  const analysis::ShardCounts counts_;
  std::vector<Owned> owned_;
};

}  // namespace fabricdiag::collector
