#include "cluster/finding_terms.h"

#include <algorithm>

namespace fabricdiag::cluster {

bool FindingTerms::Admit(absl::string_view id, uint64_t term, uint64_t revision,
                         absl::string_view shard) {
  Seen& seen = by_id_[id];
  uint64_t& newest = newest_term_[shard];
  const bool same_shard = seen.term == 0 || seen.shard == shard;
  const bool stale =
      term != 0 && ((same_shard && term < seen.term) || term < newest);
  newest = std::max(newest, term);
  if (stale) {
    // Its revision and (in its own shard) its term are still what the
    // bucket was seen to hold.
    if (same_shard) Saw(id, term, revision, shard);
    seen.revision = std::max(seen.revision, revision);
    return false;
  }
  Saw(id, term, revision, shard);
  return true;
}

void FindingTerms::NewTerm(uint64_t term, absl::string_view shard) {
  uint64_t& newest = newest_term_[shard];
  newest = std::max(newest, term);
}

void FindingTerms::Saw(absl::string_view id, uint64_t term, uint64_t revision,
                       absl::string_view shard) {
  Seen& seen = by_id_[id];
  seen.revision = std::max(seen.revision, revision);
  if (seen.term == 0 || seen.shard == shard) {
    seen.term = std::max(seen.term, term);
  } else if (term != 0) {
    // Moved to another shard: its terms are the ones that count now.
    seen.term = term;
  }
  if (term != 0) seen.shard = std::string(shard);
}

void FindingTerms::Gone(absl::string_view id) {
  auto it = by_id_.find(id);
  if (it != by_id_.end()) it->second.revision = 0;
}

FindingTerms::Seen FindingTerms::Get(absl::string_view id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? Seen{} : it->second;
}

bool WrittenHere(const collector::AnalysisRole& role,
                 const collector::StoredFinding& version) {
  const absl::string_view shard = collector::ShardOfSource(version.source);
  const uint64_t term = shard.empty() ? role.Term() : role.ShardTerm(shard);
  return term != 0 && version.term >= term;
}

}  // namespace fabricdiag::cluster
