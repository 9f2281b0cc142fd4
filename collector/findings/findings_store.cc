#include "collector/findings/findings_store.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/finding_wire.h"
#include "common/log.h"
#include "google/protobuf/util/message_differencer.h"

namespace fabricdiag::collector {
namespace {

bool ByIdDescending(const v1::Finding& a, const v1::Finding& b) {
  return FindingIdNumber(a) > FindingIdNumber(b);
}

// Summaries carry numbers ("94% of the last 5 s") that move every pass; the
// evidence has its own threshold, so only the words count here.
std::string SummaryWords(absl::string_view summary) {
  std::string out;
  bool in_number = false;
  for (char c : summary) {
    bool numeric = std::isdigit(static_cast<unsigned char>(c)) ||
                   (in_number && (c == '.' || c == ','));
    if (numeric) {
      if (!in_number) out.push_back('#');
      in_number = true;
    } else {
      in_number = false;
      out.push_back(c);
    }
  }
  return out;
}

bool Involves(const v1::Finding& finding, absl::string_view node) {
  return finding.node() == node ||
         std::find(finding.nodes().begin(), finding.nodes().end(), node) !=
             finding.nodes().end();
}

// Whether the finding's life (first seen to resolved, or on while active)
// overlaps the filter's window.
bool InWindow(const v1::Finding& finding, const FindingsFilter& filter) {
  if (filter.until_unix_nanos != 0 &&
      finding.first_seen_unix_nanos() > filter.until_unix_nanos) {
    return false;
  }
  return filter.since_unix_nanos == 0 ||
         finding.state() == v1::FINDING_STATE_ACTIVE ||
         finding.resolved_unix_nanos() >= filter.since_unix_nanos;
}

bool Matches(const v1::Finding& finding, const FindingsFilter& filter) {
  return (filter.job.empty() || finding.job() == filter.job) &&
         (filter.kind.empty() || finding.kind() == filter.kind) &&
         (filter.device.empty() || finding.device() == filter.device) &&
         (filter.node.empty() || Involves(finding, filter.node)) &&
         (filter.min_severity == v1::SEVERITY_UNSPECIFIED ||
          finding.severity() >= filter.min_severity) &&
         (filter.below_id == 0 || FindingIdNumber(finding) < filter.below_id) &&
         InWindow(finding, filter);
}

}  // namespace

uint64_t FindingIdNumber(const v1::Finding& finding) {
  absl::string_view id = finding.id();
  uint64_t n = 0;
  if (id.size() > 2) (void)absl::SimpleAtoi(id.substr(2), &n);
  return n;
}

FindingsStore::FindingsStore(StateStore* store, FindingsStoreOptions options)
    : store_(store), options_(options) {}

FindingsStore::~FindingsStore() = default;

absl::Status FindingsStore::Load() {
  absl::MutexLock update_lock(&update_mu_);
  absl::StatusOr<LoadedFindings> loaded = store_->ReadFindings();
  if (!loaded.ok()) return loaded.status();
  absl::MutexLock lock(&mu_);
  next_id_ = loaded->next_id;
  std::vector<v1::Finding> resolved;
  for (StoredFinding& stored : loaded->findings) {
    v1::Finding& f = stored.finding;
    if (f.state() != v1::FINDING_STATE_ACTIVE) {
      resolved.push_back(std::move(f));
      continue;
    }
    Key key{f.kind(), f.job(), f.node(), f.device(), f.group()};
    auto it = active_.find(key);
    if (it != active_.end()) {
      // Cannot happen unless the log was edited; keep the newer id.
      v1::Finding old = std::move(it->second.finding);
      old.set_state(v1::FINDING_STATE_RESOLVED);
      old.set_resolved_unix_nanos(old.last_seen_unix_nanos());
      resolved.push_back(std::move(old));
    }
    int64_t last_seen = f.last_seen_unix_nanos();
    active_[key] = Entry{std::move(f), std::move(stored.source), last_seen};
  }
  std::sort(resolved.begin(), resolved.end(),
            [](const v1::Finding& a, const v1::Finding& b) {
              if (a.resolved_unix_nanos() != b.resolved_unix_nanos()) {
                return a.resolved_unix_nanos() < b.resolved_unix_nanos();
              }
              return FindingIdNumber(a) < FindingIdNumber(b);
            });
  resolved_.clear();
  resolved_ids_.clear();
  resolved_bytes_ = 0;
  for (v1::Finding& f : resolved) KeepResolved(std::move(f));
  // The retention by time applies from the first pass (the store reads no
  // clock).
  TrimResolved(absl::InfinitePast());
  compacted_bytes_ = store_->findings_log_bytes();
  return absl::OkStatus();
}

bool FindingsStore::Material(const v1::Finding& before,
                             const analysis::Finding& now) const {
  if (before.severity() != analysis::SeverityToWire(now.severity)) return true;
  std::vector<std::string> nodes = analysis::WireNodes(now);
  if (static_cast<size_t>(before.nodes_size()) != nodes.size() ||
      !std::equal(nodes.begin(), nodes.end(), before.nodes().begin())) {
    return true;
  }
  if (SummaryWords(before.summary()) != SummaryWords(now.summary)) return true;
  if (static_cast<size_t>(before.evidence_text_size()) !=
      now.evidence_text.size()) {
    return true;
  }
  for (const auto& [name, text] : now.evidence_text) {
    auto it = before.evidence_text().find(name);
    if (it == before.evidence_text().end() || it->second != text) return true;
  }
  // The job's owners changed (its layout applied again with other labels):
  // alerts route by them.
  if (static_cast<size_t>(before.labels_size()) != now.labels.size()) {
    return true;
  }
  for (const auto& [key, value] : now.labels) {
    auto it = before.labels().find(key);
    if (it == before.labels().end() || it->second != value) return true;
  }
  // The count of passes a condition held grows every pass: it is kept
  // current in memory (Update) but is not a change to log or
  // to tell watchers about.
  size_t finite = 0;
  for (const auto& [name, value] : now.evidence) {
    if (!std::isfinite(value) || name == analysis::kIntervalsHeldEvidence) {
      continue;
    }
    ++finite;
    auto it = before.evidence().find(name);
    if (it == before.evidence().end()) return true;
    double diff = std::fabs(it->second - value);
    double scale = std::max(std::fabs(it->second), std::fabs(value));
    if (diff > 1e-12 && diff > options_.evidence_change * scale) return true;
  }
  const size_t before_counted =
      static_cast<size_t>(before.evidence_size()) -
      before.evidence().count(analysis::kIntervalsHeldEvidence);
  return finite != before_counted;
}

void FindingsStore::KeepResolved(v1::Finding finding) {
  resolved_bytes_ += finding.ByteSizeLong();
  resolved_ids_.insert(finding.id());
  resolved_.push_back(std::move(finding));
}

void FindingsStore::TrimResolved(absl::Time now) {
  const int64_t oldest_kept =
      now == absl::InfinitePast()
          ? INT64_MIN
          : absl::ToUnixNanos(now - options_.resolved_retention);
  while (!resolved_.empty() &&
         (resolved_.size() > options_.max_resolved ||
          resolved_bytes_ > options_.max_resolved_bytes ||
          resolved_.front().resolved_unix_nanos() < oldest_kept)) {
    resolved_bytes_ -= resolved_.front().ByteSizeLong();
    resolved_ids_.erase(resolved_.front().id());
    resolved_.pop_front();
  }
}

void FindingsStore::Open(const analysis::Finding& report, const Key& key,
                         int64_t now_nanos, absl::string_view source,
                         UpdateBatch& batch) {
  Entry entry;
  entry.source = std::string(source);
  entry.shared = true;
  v1::Finding& f = entry.finding;
  f.set_id(absl::StrFormat("f-%06d", next_id_++));
  analysis::FillWireFinding(report, &f);
  f.set_state(v1::FINDING_STATE_ACTIVE);
  f.set_first_seen_unix_nanos(now_nanos);
  f.set_last_seen_unix_nanos(now_nanos);
  entry.persisted_last_seen = now_nanos;
  ++counters_.opened_by_kind[report.kind];
  batch.lifecycle_change = true;
  batch.events.emplace_back(WatchEvent::Type::kOpened, f);
  batch.to_log.push_back(StoredFinding{f, entry.source});
  active_.emplace(key, std::move(entry));
}

// An immaterial change only bumps last_seen (and the held-intervals count),
// and reaches the log at most once per last_seen_persist_interval.
void FindingsStore::Refresh(const analysis::Finding& report, int64_t now_nanos,
                            absl::string_view source, Entry& entry,
                            UpdateBatch& batch) {
  entry.source = std::string(source);
  entry.finding.set_last_seen_unix_nanos(now_nanos);
  if (!Material(entry.finding, report)) {
    auto held = report.evidence.find(analysis::kIntervalsHeldEvidence);
    if (held != report.evidence.end() && std::isfinite(held->second)) {
      (*entry.finding.mutable_evidence())[analysis::kIntervalsHeldEvidence] =
          held->second;
    }
    if (now_nanos - entry.persisted_last_seen >=
        absl::ToInt64Nanoseconds(options_.last_seen_persist_interval)) {
      entry.persisted_last_seen = now_nanos;
      batch.to_log.push_back(StoredFinding{entry.finding, entry.source});
    }
    return;
  }
  entry.persisted_last_seen = now_nanos;
  analysis::FillWireFinding(report, &entry.finding);
  ++counters_.updated;
  batch.events.emplace_back(WatchEvent::Type::kUpdated, entry.finding);
  batch.to_log.push_back(StoredFinding{entry.finding, entry.source});
}

// Resolves the active findings of `source` it did not report this pass; the
// events go out in id order so watchers see them in the order they opened.
void FindingsStore::ResolveUnreported(
    const absl::flat_hash_set<Key>& seen, int64_t now_nanos,
    absl::string_view source, const absl::flat_hash_set<std::string>* within,
    UpdateBatch& batch) {
  std::vector<Key> gone;
  for (const auto& [key, entry] : active_) {
    if (entry.source == source && !seen.contains(key) &&
        (within == nullptr || within->contains(std::get<2>(key)))) {
      gone.push_back(key);
    }
  }
  ResolveKeys(gone, now_nanos, batch);
}

void FindingsStore::ResolveKeys(const std::vector<Key>& gone, int64_t now_nanos,
                                UpdateBatch& batch) {
  std::vector<v1::Finding> resolved;
  for (const Key& key : gone) {
    auto it = active_.find(key);
    v1::Finding f = std::move(it->second.finding);
    std::string owner = std::move(it->second.source);
    active_.erase(it);
    f.set_state(v1::FINDING_STATE_RESOLVED);
    f.set_resolved_unix_nanos(now_nanos);
    batch.to_log.push_back(StoredFinding{f, std::move(owner)});
    resolved.push_back(std::move(f));
  }
  std::sort(resolved.begin(), resolved.end(),
            [](const v1::Finding& a, const v1::Finding& b) {
              return FindingIdNumber(a) < FindingIdNumber(b);
            });
  for (v1::Finding& f : resolved) {
    ++counters_.resolved_by_kind[f.kind()];
    batch.lifecycle_change = true;
    batch.events.emplace_back(WatchEvent::Type::kResolved, f);
    KeepResolved(std::move(f));
  }
}

absl::Status FindingsStore::Update(
    const std::vector<analysis::Finding>& reports, absl::Time now,
    absl::string_view source) {
  return UpdateIn(reports, now, source, nullptr);
}

absl::Status FindingsStore::UpdateWithin(
    const std::vector<analysis::Finding>& reports, absl::Time now,
    absl::string_view source, const absl::flat_hash_set<std::string>& within) {
  return UpdateIn(reports, now, source, &within);
}

absl::Status FindingsStore::UpdateIn(
    const std::vector<analysis::Finding>& reports, absl::Time now,
    absl::string_view source, const absl::flat_hash_set<std::string>* within) {
  absl::MutexLock update_lock(&update_mu_);
  // Every report could open a finding: ids for all of them first.
  if (absl::Status reserved = ReserveIds(reports.size()); !reserved.ok()) {
    return absl::Status(
        reserved.code(),
        absl::StrCat("no finding ids for ", source, ": ", reserved.message()));
  }
  const int64_t now_nanos = absl::ToUnixNanos(now);
  UpdateBatch batch;
  {
    absl::MutexLock lock(&mu_);
    watchers_.RemoveClosed();
    absl::flat_hash_set<Key> seen;
    for (const analysis::Finding& report : reports) {
      Key key{report.kind, report.job, report.node, report.device,
              report.group};
      if (!seen.insert(key).second) continue;
      auto it = active_.find(key);
      if (it == active_.end()) {
        Open(report, key, now_nanos, source, batch);
      } else {
        Refresh(report, now_nanos, source, it->second, batch);
      }
    }
    ResolveUnreported(seen, now_nanos, source, within, batch);
    TrimResolved(now);
  }
  return Commit(batch, absl::StrCat("findings of ", source), true);
}

absl::Status FindingsStore::Commit(UpdateBatch& batch, absl::string_view what,
                                   bool share) {
  if (batch.to_log.empty()) return absl::OkStatus();
  // Durable first, then told: a watcher never sees an id that a crash could
  // make the store hand out again.
  absl::Status status =
      store_->AppendFindings(batch.to_log, batch.lifecycle_change);
  if (status.ok()) status = MaybeCompact();
  if (!status.ok()) {
    LogError(absl::StrCat(what, " not persisted: ", status.message()));
  }
  {
    absl::MutexLock lock(&mu_);
    if (!status.ok()) ++counters_.persist_errors;
    for (const auto& [type, finding] : batch.events) {
      counters_.watcher_overflows += watchers_.Broadcast(type, finding);
    }
  }
  if (share) {
    absl::Status shared = replication_->Write(batch.to_log);
    if (status.ok()) status = std::move(shared);
  }
  return status;
}

absl::Status FindingsStore::MaybeCompact() {
  uint64_t limit = std::max(options_.compact_log_bytes, 2 * compacted_bytes_);
  if (store_->findings_log_bytes() <= limit) return absl::OkStatus();
  std::vector<StoredFinding> all;
  uint64_t next_id = 0;
  {
    absl::MutexLock lock(&mu_);
    next_id = next_id_;
    all.reserve(active_.size() + resolved_.size());
    for (const auto& [key, entry] : active_) {
      all.push_back(StoredFinding{entry.finding, entry.source});
    }
    for (const v1::Finding& f : resolved_) all.push_back(StoredFinding{f, ""});
  }
  std::sort(all.begin(), all.end(),
            [](const StoredFinding& a, const StoredFinding& b) {
              return FindingIdNumber(a.finding) < FindingIdNumber(b.finding);
            });
  absl::Status status = store_->RewriteFindings(all, next_id);
  compacted_bytes_ = store_->findings_log_bytes();
  return status;
}

std::vector<v1::Finding> FindingsStore::List(
    const FindingsFilter& filter) const {
  return ListPage(filter).findings;
}

FindingsPage FindingsStore::ListPage(const FindingsFilter& filter) const {
  bool want_active = filter.all || filter.state == v1::FINDING_STATE_ACTIVE ||
                     filter.state == v1::FINDING_STATE_UNSPECIFIED;
  bool want_resolved = filter.all || filter.state == v1::FINDING_STATE_RESOLVED;
  size_t limit = filter.limit == 0 ? kDefaultListLimit : filter.limit;
  std::vector<v1::Finding> out;
  {
    absl::MutexLock lock(&mu_);
    if (want_active) {
      for (const auto& [key, entry] : active_) {
        if (Matches(entry.finding, filter)) out.push_back(entry.finding);
      }
    }
    if (want_resolved) {
      for (const v1::Finding& f : resolved_) {
        if (Matches(f, filter)) out.push_back(f);
      }
    }
  }
  FindingsPage page;
  if (out.size() > limit) {
    std::partial_sort(out.begin(), out.begin() + static_cast<long>(limit),
                      out.end(), ByIdDescending);
    out.resize(limit);
    page.more = true;
  } else {
    std::sort(out.begin(), out.end(), ByIdDescending);
  }
  if (marks_ != nullptr) {
    for (v1::Finding& f : out) marks_->Mark(&f);
  }
  page.findings = std::move(out);
  return page;
}

std::vector<std::string> FindingsStore::Jobs() const {
  std::set<std::string> jobs;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, entry] : active_) {
      if (!entry.finding.job().empty()) jobs.insert(entry.finding.job());
    }
    for (const v1::Finding& f : resolved_) {
      if (!f.job().empty()) jobs.insert(f.job());
    }
  }
  return std::vector<std::string>(jobs.begin(), jobs.end());
}

std::vector<v1::Finding> FindingsStore::Active() const {
  return ActiveIf([](const Entry&) { return true; });
}

std::vector<v1::Finding> FindingsStore::ActiveOf(
    absl::string_view source) const {
  return ActiveIf([source](const Entry& e) { return e.source == source; });
}

std::vector<v1::Finding> FindingsStore::ActiveIf(
    absl::FunctionRef<bool(const Entry&)> which) const {
  std::vector<v1::Finding> out;
  {
    absl::MutexLock lock(&mu_);
    out.reserve(active_.size());
    for (const auto& [key, entry] : active_) {
      if (which(entry)) out.push_back(entry.finding);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const v1::Finding& a, const v1::Finding& b) {
              return FindingIdNumber(a) < FindingIdNumber(b);
            });
  if (marks_ != nullptr) {
    for (v1::Finding& f : out) marks_->Mark(&f);
  }
  return out;
}

std::unique_ptr<Watcher> FindingsStore::Watch(absl::string_view job) {
  absl::MutexLock update_lock(&update_mu_);
  absl::MutexLock lock(&mu_);
  std::vector<const v1::Finding*> snapshot;
  for (const auto& [key, entry] : active_) {
    if (job.empty() || entry.finding.job() == job) {
      snapshot.push_back(&entry.finding);
    }
  }
  std::sort(snapshot.begin(), snapshot.end(),
            [](const v1::Finding* a, const v1::Finding* b) {
              return FindingIdNumber(*a) < FindingIdNumber(*b);
            });
  return watchers_.Add(job, snapshot, options_.watcher_queue);
}

FindingsCounters FindingsStore::Counters() const {
  absl::MutexLock lock(&mu_);
  FindingsCounters out = counters_;
  out.watchers = watchers_.open();
  return out;
}

}  // namespace fabricdiag::collector
