// StragglerBaselines: each NIC's own throughput in past passes, which the
// straggler_nic analyzer (analysis/straggler_nic.h) judges members of
// expert-parallel groups against, and its bytes for surviving a restart.
//
//   StragglerBaselines baselines;   // kept across passes
//   baselines.Update(in);           // once per pass (straggler_nic.cc)
//   std::string bytes = baselines.Serialize();
//   absl::StatusOr<size_t> n = restored.Restore(bytes, keep);
//
// Update() and Seed() judge with the analyzer and live beside it in
// straggler_nic.cc; this file's .cc holds the store, its lookups and its
// serialization.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "analysis/analyzer.h"
#include "analysis/finding.h"
#include "analysis/layout_model.h"

namespace fabricdiag::analysis {

// Each NIC's own throughput (RX + TX) in past passes, per job: an
// exponentially weighted mean over about straggler_nic.history_passes
// passes of the windows in which the NIC was judged and found usual: no
// straggler, so a straggler's own slow windows never lower the bar it is
// measured against, and not far above its own usual (a hot expert's
// incast), so a burst of another fault never raises it. Forgotten for a NIC
// not judged for history_passes passes (its job ended or stayed idle).
//
// Thread-compatible: one owner calls Update(); Find() and Of() may run
// concurrently with other Find()s and Of()s, and with copying.
class StragglerBaselines {
 private:
  struct Job;    // below
  struct Entry;  // below

 public:
  struct Baseline {
    double bytes_per_second = 0;
    int passes = 0;  // windows folded in (saturates at history_passes)
  };

  // The baselines of one layout's NICs, addressed by the layout's own host
  // and NIC indexes (NicRef): looked up by those two integers when Update()
  // last saw this layout, by name otherwise (a layout applied since, or
  // baselines only restored yet). Valid while the baselines and the layout
  // it was made from are unchanged.
  class OfLayout {
   public:
    // The baseline of NIC `nic` of host `host`; null when there is none.
    const Baseline* Find(uint32_t host, uint32_t nic) const;

   private:
    friend class StragglerBaselines;
    const Job* job_ = nullptr;  // null: the job has no baselines
    const LayoutModel* model_ = nullptr;
    bool aligned_ = false;  // the job's names start with model_'s
    // Aligned, when not far sparser than the job's entries: the entry of
    // (host, nic) at host * model_->Nics().size() + nic (null: none). The
    // analyzer asks for each NIC several times a pass (its group's level,
    // then its own bar, in each of its groups and views): an array read
    // instead of a hash lookup each time, made in one walk of the entries.
    std::vector<const Entry*> dense_;
  };

  // Folds the window of `in` in: call once per pass, with the window view
  // (never the newest-samples view, which is noisier and overlaps it), and
  // the same baselines in `in.straggler_baselines` or none.
  void Update(const AnalysisInput& in);
  // The same for one pass whose NICs are judged over several views, each
  // with the layouts it holds (the job shards a collector owns,
  // collector/runner/sharded_rate_pass.h): the pass counts once, so that a
  // NIC is forgotten after history_passes passes however many views there
  // are. Views without a view or a config are skipped; none left: no pass.
  void Update(absl::Span<const AnalysisInput> views);

  // After a restart: the baselines that the still-open straggler_nic
  // findings among `open` were judged against (their evidence
  // own_baseline_bytes_per_second and own_baseline_passes). Without them
  // a straggler of an expert-parallel job would be unjudged until it had a
  // baseline again, and that baseline would be its slow throughput.
  // Other findings are ignored.
  void Seed(const std::vector<Finding>& open);

  // Every baseline as bytes, to survive a restart (the collector keeps them
  // in its state directory, collector/runner/rate_pass.h):
  //   u32le version (1) | u32le count | count x (u32le key length | key
  //   (job NUL host NUL nic) | f64 bytes per second (IEEE, little-endian
  //   bits) | u32le passes)
  std::string Serialize() const;
  // The same, of the jobs for which `jobs(job)` is true only: one analysis
  // shard's (collector/runner/analysis_runner.h keeps each job shard's
  // baselines apart, for whoever owns the shard next).
  using JobFn = std::function<bool(absl::string_view job)>;
  std::string Serialize(const JobFn& jobs) const;

  // Replaces the baselines of the jobs for which `jobs(job)` is true with
  // those of the same jobs in `from` (what the shard's previous owner
  // stored, Restore()d there), as if judged this pass. Returns how many
  // were taken in.
  size_t Adopt(const JobFn& jobs, StragglerBaselines&& from);

  // Adds the baselines of `data` (what Serialize() wrote) for which
  // `keep(job, host, nic)` is true, as if judged this pass: one not judged
  // again is forgotten after history_passes passes, like any other. Returns
  // how many were added. DataLoss naming the damage, and nothing added, when
  // `data` is not such bytes (truncated, a bad length, a baseline that is
  // not a positive finite rate).
  using KeepFn = std::function<bool(
      absl::string_view job, absl::string_view host, absl::string_view nic)>;
  absl::StatusOr<size_t> Restore(absl::string_view data, const KeepFn& keep);

  // The baseline of `nic` of `host` in `job`; null when there is none.
  const Baseline* Find(absl::string_view job, absl::string_view host,
                       absl::string_view nic) const;

  // The baselines of `model`'s NICs, for many lookups (the analyzer's).
  OfLayout Of(const LayoutModel& model) const;

  size_t size() const { return size_; }
  // Whether any NIC of `job` has a baseline.
  bool HasJob(absl::string_view job) const { return jobs_.contains(job); }

 private:
  struct Entry {
    Baseline baseline;
    uint64_t last_judged = 0;  // pass_ when last judged
    // Of the pass that last judged it, in Update(): its window's
    // throughput, and whether any of its groups found it unusual (a
    // straggler, or far above its group and its own baseline: a hot
    // expert), which keeps the window out of the baseline.
    double window = 0;
    bool unusual = false;
  };
  // One job's baselines, by (host, NIC) indexes into its own names. After
  // Update() has seen the job's layout, the names start with the layout's
  // Hosts() and Nics() in order, so its NicRefs are these indexes as they
  // are; names only Seed(), Restore() or an earlier layout gave follow.
  // Sparse: a layout may place each rank on a NIC of its own name.
  struct Job {
    std::vector<std::string> hosts;
    std::vector<std::string> nics;
    absl::flat_hash_map<std::string, uint32_t> host_index;
    absl::flat_hash_map<std::string, uint32_t> nic_index;
    absl::flat_hash_map<uint64_t, Entry> entries;  // by CellKey(host, nic)
    uint64_t seen = 0;  // pass_ when Update() last had the job's layout

    uint32_t AddHost(absl::string_view host);
    uint32_t AddNic(absl::string_view nic);
    const Entry* At(uint32_t host, uint32_t nic) const;
    // Whether the names start with `model`'s.
    bool AlignedWith(const LayoutModel& model) const;
  };
  static uint64_t CellKey(uint32_t host, uint32_t nic) {
    return (uint64_t{host} << 32) | nic;
  }

  // Update()'s halves: each NIC of `in`'s layouts judged this pass, then
  // the windows of those found usual folded in and the NICs not judged for
  // `history` passes forgotten.
  void Judge(const AnalysisInput& in);
  void Fold(int history);
  // The entry of (job, host, nic), made when there was none.
  Entry& EntryOf(absl::string_view job, absl::string_view host,
                 absl::string_view nic);
  // The job of `model`, its names starting with the model's (moving the
  // baselines it has when they did not).
  Job& Align(const LayoutModel& model);
  // The entry of each (host, nic) of `model`, whose names `job`'s start
  // with, at host * model.Nics().size() + nic (null: none); left empty
  // when such a table would be far sparser than the job's entries. Valid
  // until an entry is added or removed.
  static void IndexCells(const Job& job, const LayoutModel& model,
                         std::vector<const Entry*>* cells);
  static void IndexCells(Job& job, const LayoutModel& model,
                         std::vector<Entry*>* cells);

  uint64_t pass_ = 0;
  size_t size_ = 0;  // entries of every job
  absl::flat_hash_map<std::string, Job> jobs_;
};

}  // namespace fabricdiag::analysis
