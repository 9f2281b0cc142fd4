// Each job shard's straggler baselines, kept with the shard: its owner
// writes what it learned of the shard's NICs under the shard's own name
// (BaselinesStore::ForShard: straggler_baselines.jobs.17.pb in the state
// directory, keys "jobs.17.*" of a cluster's bucket), and the collector
// that takes the shard next, after a failover or a hand-back, judges the
// shard's NICs against that history rather than learning them afresh.
//
//   ShardBaselines kept(&store, &writer, {every, max_age, counts});
//   // a shard taken (collector/runner/analysis_runner.h, TakeShards):
//   ShardBaselines::Taken t = kept.Take("jobs.17", now, layouts, &baselines);
//   // after each pass, with the shards owned:
//   kept.Save(now, owned, baselines, /*all=*/false);
//
// Thread-compatible: one caller (the analysis pass). The writes run on the
// writer's thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/layout_model.h"
#include "analysis/shard_map.h"
#include "analysis/straggler_baselines.h"
#include "collector/state/baselines_store.h"

namespace fabricdiag::collector {

class ShardBaselines {
 public:
  struct Options {
    // How often an owned shard's baselines are written; a shard taken is
    // first written this long after (so that a moment's outage at the take
    // does not replace good baselines with the little learned since).
    absl::Duration every;
    // Stored baselines older than this are not used.
    absl::Duration max_age;
    analysis::ShardCounts counts;
  };

  // What Take() did.
  struct Taken {
    size_t restored = 0;  // baselines taken in
    size_t dropped = 0;   // stored, of NICs no longer in a layout
    // Not empty: what was stored was not used (damaged, too old, or could
    // not be read), a warning to log; the baselines are left as they were.
    std::string problem;
    // The store did not answer (not damage): the shards taken next in the
    // same pass had better not wait for it too.
    bool unanswered = false;
  };

  // `store` (whose ForShard() each shard's comes from) and `writer` must
  // outlive this; this must outlive the writes handed to `writer`.
  ShardBaselines(BaselinesStore* store, BaselinesWriter* writer,
                 Options options)
      : store_(store), writer_(writer), options_(options) {}

  // Whether `shard` is a job shard, whose baselines are kept here.
  static bool Keeps(absl::string_view shard);

  // Job shard `shard` was taken (owned anew, or again under a newer term):
  // what its last owner stored replaces `baselines`' of the shard's jobs
  // (StragglerBaselines::Adopt), those of NICs no longer in one of
  // `layouts` (every declared layout) dropped. Nothing stored, nothing
  // usable, or none of a NIC still in a layout: `baselines` are left as
  // they are (what this collector learned when it owned the shard before,
  // or loaded at its start). Without `read`, the store is not read (it
  // did not answer for a shard taken before in the same pass): only the
  // first write waits its period.
  Taken Take(const std::string& shard, absl::Time now,
             absl::Span<const analysis::LayoutModel* const> layouts,
             analysis::StragglerBaselines* baselines, bool read = true);

  // Hands the baselines of each job shard of `owned` to the writer: those
  // last written (or taken) Options::every ago or more, every one when
  // `all` (a clean stop). A shard with no baseline of its jobs is written
  // once, not again while it has none (its stored file says so already).
  void Save(absl::Time now, absl::Span<const std::string> owned,
            const analysis::StragglerBaselines& baselines, bool all);

  // Job shard `shard` goes to another collector: its baselines are handed
  // to the writer now, and `done` runs once written (or failed) so that
  // the shard may go; false (nothing written, `done` not called) when it
  // is no job shard, or when its Take() could not use what was stored and
  // it was taken less than Options::every ago (the little learned since
  // would replace good baselines, as Save() avoids).
  bool HandOver(const std::string& shard, absl::Time now,
                const analysis::StragglerBaselines& baselines,
                std::function<void()> done);

 private:
  BaselinesStore* StoreOf(const std::string& shard);
  analysis::StragglerBaselines::JobFn JobsOf(const std::string& shard) const;

  BaselinesStore* const store_;
  BaselinesWriter* const writer_;
  const Options options_;
  // Made on first use and kept: the writer may still hold a write of a
  // shard handed over since, and there are at most counts.jobs.
  absl::flat_hash_map<std::string, std::unique_ptr<BaselinesStore>> stores_;
  // When each shard's baselines were last written, or it was taken.
  absl::flat_hash_map<std::string, absl::Time> written_;
  // Shards whose Take() did not read what was stored (damaged, too old,
  // unread), until written since.
  absl::flat_hash_set<std::string> unread_;
  // Shards last written with no baseline (since taken).
  absl::flat_hash_set<std::string> wrote_none_;
  // What a shard with no baseline is written as.
  const std::string no_baselines_ = analysis::StragglerBaselines().Serialize();
};

}  // namespace fabricdiag::collector
