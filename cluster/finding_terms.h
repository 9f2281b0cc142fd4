// Which versions of the cluster's shared findings a deposed analysis leader
// wrote late, by the lease terms they carry (cluster/analysis_lease.h):
//
//   - a version whose term is lower than the highest term seen for that
//     finding in the same shard is dropped: a newer leader (or owner of
//     the shard) wrote the finding since. Terms of different shards do not
//     compare: a finding that moves to another shard (a port's finding
//     when its node's agent moves to another collector, whose own nodes
//     are a shard of their own) is written by that shard's owner from then
//     on, under its own term, whatever the term it was written under
//     before;
//   - so is one whose term is lower than a term already delivered earlier
//     in the bucket's order in this watch: it landed after a newer leader
//     had written (a version, or the mark of its term: NewTerm), so its
//     writer's lease had run out (this catches a late first version of a
//     finding the newer leader never wrote);
//   - equal terms are taken (one leader's successive versions), and so is
//     term 0: a version written before versions carried terms.
//
// It also remembers, per finding, the revision and the highest term seen,
// which the writer compares and sets against.
//
//   FindingTerms terms;
//   terms.StartReplay();                       // a new watcher
//   if (!terms.Admit("f-000042", 7, 1234)) ... // dropped: stale
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "collector/findings/findings_replication.h"
#include "collector/runner/analysis_role.h"

namespace fabricdiag::cluster {

class FindingTerms {
 public:
  struct Seen {
    uint64_t revision = 0;  // 0: never seen
    uint64_t term = 0;      // the highest seen in `shard`
    std::string shard;      // of the latest version taken
  };

  // A new watch delivers the bucket again from its oldest version: the
  // order rule starts over (the per-finding terms stay).
  void StartReplay() { newest_term_.clear(); }

  // A writer of `shard` ("": the analysis leader) under `term` wrote here:
  // what of that shard comes after it in the bucket's order with a lower
  // term is late.
  void NewTerm(uint64_t term, absl::string_view shard = "");

  // A version of finding `id` of `shard`, written under `term`, at
  // `revision` of the bucket, delivered in the bucket's order: whether to
  // apply it (false: a deposed writer's late write). Either way its revision
  // is remembered.
  bool Admit(absl::string_view id, uint64_t term, uint64_t revision,
             absl::string_view shard = "");

  // What the bucket is known to hold for `id`: after a write of this
  // collector, or after reading it back (a version of `shard`).
  void Saw(absl::string_view id, uint64_t term, uint64_t revision,
           absl::string_view shard = "");

  // Forgets `id`'s revision (the key is gone from the bucket); its highest
  // term stays.
  void Gone(absl::string_view id);

  Seen Get(absl::string_view id) const;

 private:
  absl::flat_hash_map<std::string, Seen> by_id_;
  // Per shard, the highest term delivered in this watch, in the bucket's
  // order.
  absl::flat_hash_map<std::string, uint64_t> newest_term_;
};

// Whether `version`, delivered by the shared findings' watcher, is one this
// collector's own store made: it writes the version's shard (the analysis,
// for a source without one: collector/runner/analysis_role.h) now, under a
// term not above the version's. Such a version is not applied again (the
// store may have moved on); any other is, including a previous writer's
// version of a finding this collector now writes, which landed before its
// term's mark and which its store takes over.
bool WrittenHere(const collector::AnalysisRole& role,
                 const collector::StoredFinding& version);

}  // namespace fabricdiag::cluster
