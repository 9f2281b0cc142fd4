#include "analysis/straggler_baselines.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "common/little_endian.h"

namespace fabricdiag::analysis {
namespace {

// StragglerBaselines::IndexCells() of a job's entries, const or not.
template <typename Entries, typename Entry>
void IndexCellsOf(Entries& entries, const LayoutModel& model,
                  std::vector<Entry*>* cells) {
  cells->clear();
  const size_t hosts = model.Hosts().size();
  const size_t nics = model.Nics().size();
  constexpr size_t kMaxCellsPerEntry = 4;
  if (hosts == 0 || nics == 0 || entries.empty() ||
      hosts > (kMaxCellsPerEntry * entries.size() + 64) / nics) {
    return;
  }
  cells->assign(hosts * nics, nullptr);
  for (auto& [key, e] : entries) {
    const uint64_t host = key >> 32;
    const uint64_t nic = key & 0xffffffffu;
    // Names Seed() or Restore() added past the layout's are not its NICs.
    if (host < hosts && nic < nics) (*cells)[host * nics + nic] = &e;
  }
}

}  // namespace

uint32_t StragglerBaselines::Job::AddHost(absl::string_view host) {
  auto [it, fresh] =
      host_index.try_emplace(host, static_cast<uint32_t>(hosts.size()));
  if (fresh) hosts.emplace_back(host);
  return it->second;
}

uint32_t StragglerBaselines::Job::AddNic(absl::string_view nic) {
  auto [it, fresh] =
      nic_index.try_emplace(nic, static_cast<uint32_t>(nics.size()));
  if (fresh) nics.emplace_back(nic);
  return it->second;
}

const StragglerBaselines::Entry* StragglerBaselines::Job::At(
    uint32_t host, uint32_t nic) const {
  auto it = entries.find(CellKey(host, nic));
  return it == entries.end() ? nullptr : &it->second;
}

bool StragglerBaselines::Job::AlignedWith(const LayoutModel& model) const {
  const absl::Span<const std::string> h = model.Hosts();
  const absl::Span<const std::string> n = model.Nics();
  return h.size() <= hosts.size() && n.size() <= nics.size() &&
         std::equal(h.begin(), h.end(), hosts.begin()) &&
         std::equal(n.begin(), n.end(), nics.begin());
}

const StragglerBaselines::Baseline* StragglerBaselines::OfLayout::Find(
    uint32_t host, uint32_t nic) const {
  if (job_ == nullptr) return nullptr;
  const Entry* e = nullptr;
  if (!dense_.empty()) {
    const size_t nics = model_->Nics().size();
    if (host >= model_->Hosts().size() || nic >= nics) return nullptr;
    e = dense_[size_t{host} * nics + nic];
  } else if (aligned_) {
    e = job_->At(host, nic);
  } else {
    if (host >= model_->Hosts().size() || nic >= model_->Nics().size()) {
      return nullptr;
    }
    auto h = job_->host_index.find(model_->Hosts()[host]);
    auto n = job_->nic_index.find(model_->Nics()[nic]);
    if (h == job_->host_index.end() || n == job_->nic_index.end()) {
      return nullptr;
    }
    e = job_->At(h->second, n->second);
  }
  if (e == nullptr || e->baseline.passes == 0) return nullptr;
  return &e->baseline;
}

StragglerBaselines::OfLayout StragglerBaselines::Of(
    const LayoutModel& model) const {
  OfLayout of;
  auto it = jobs_.find(model.job());
  if (it == jobs_.end()) return of;
  of.job_ = &it->second;
  of.model_ = &model;
  of.aligned_ = it->second.AlignedWith(model);
  if (of.aligned_) IndexCells(it->second, model, &of.dense_);
  return of;
}

void StragglerBaselines::IndexCells(const Job& job, const LayoutModel& model,
                                    std::vector<const Entry*>* cells) {
  IndexCellsOf(job.entries, model, cells);
}

void StragglerBaselines::IndexCells(Job& job, const LayoutModel& model,
                                    std::vector<Entry*>* cells) {
  IndexCellsOf(job.entries, model, cells);
}

StragglerBaselines::Entry& StragglerBaselines::EntryOf(absl::string_view job,
                                                       absl::string_view host,
                                                       absl::string_view nic) {
  Job& j = jobs_[job];
  const uint32_t h = j.AddHost(host);
  auto [it, fresh] = j.entries.try_emplace(CellKey(h, j.AddNic(nic)));
  if (fresh) ++size_;
  return it->second;
}

StragglerBaselines::Job& StragglerBaselines::Align(const LayoutModel& model) {
  Job& job = jobs_[model.job()];
  if (job.AlignedWith(model)) return job;
  // The layout changed (or only restored baselines named its NICs): names
  // that start with its own, every baseline moved by name.
  Job aligned;
  aligned.seen = job.seen;
  for (const std::string& host : model.Hosts()) aligned.AddHost(host);
  for (const std::string& nic : model.Nics()) aligned.AddNic(nic);
  aligned.entries.reserve(job.entries.size());
  for (const auto& [key, e] : job.entries) {
    const uint32_t host = aligned.AddHost(job.hosts[key >> 32]);
    const uint32_t nic = aligned.AddNic(job.nics[key & 0xffffffffu]);
    aligned.entries[CellKey(host, nic)] = e;
  }
  job = std::move(aligned);
  return job;
}

namespace {
constexpr uint32_t kBaselinesVersion = 1;
// Bytes of one baseline besides its key: key length, rate, passes.
constexpr size_t kBaselineFixedBytes = 4 + 8 + 4;
}  // namespace

std::string StragglerBaselines::Serialize() const { return Serialize(nullptr); }

std::string StragglerBaselines::Serialize(const JobFn& jobs) const {
  // The key is job NUL host NUL nic: NUL never occurs in those names.
  const absl::string_view nul("\0", 1);
  auto names = [](const Job& job, uint64_t key) {
    return std::pair<absl::string_view, absl::string_view>(
        job.hosts[key >> 32], job.nics[key & 0xffffffffu]);
  };
  // Only what Restore() takes back: an entry judged but never folded in (a
  // NIC that straggled from its first pass) has no baseline yet, and one
  // such entry would make the whole record unreadable.
  auto kept = [](const Entry& e) {
    return e.baseline.passes >= 1 && e.baseline.bytes_per_second > 0 &&
           std::isfinite(e.baseline.bytes_per_second);
  };
  size_t bytes = 8;
  uint32_t count = 0;
  for (const auto& [name, job] : jobs_) {
    if (jobs && !jobs(name)) continue;
    for (const auto& [key, e] : job.entries) {
      if (!kept(e)) continue;
      const auto [host, nic] = names(job, key);
      bytes += kBaselineFixedBytes + name.size() + host.size() + nic.size() + 2;
      ++count;
    }
  }
  std::string out;
  out.reserve(bytes);
  PutU32(&out, kBaselinesVersion);
  PutU32(&out, count);
  for (const auto& [name, job] : jobs_) {
    if (jobs && !jobs(name)) continue;
    for (const auto& [key, e] : job.entries) {
      if (!kept(e)) continue;
      const auto [host, nic] = names(job, key);
      PutU32(&out,
             static_cast<uint32_t>(name.size() + host.size() + nic.size() + 2));
      absl::StrAppend(&out, name, nul, host, nul, nic);
      uint64_t bits = 0;
      static_assert(sizeof(bits) == sizeof(e.baseline.bytes_per_second));
      std::memcpy(&bits, &e.baseline.bytes_per_second, sizeof(bits));
      PutU64(&out, bits);
      PutU32(&out, static_cast<uint32_t>(std::max(e.baseline.passes, 0)));
    }
  }
  return out;
}

absl::StatusOr<size_t> StragglerBaselines::Restore(absl::string_view data,
                                                   const KeepFn& keep) {
  if (data.size() < 8)
    return absl::DataLossError("baselines: truncated header");
  if (const uint32_t version = GetU32(data.data());
      version != kBaselinesVersion) {
    return absl::DataLossError(
        absl::StrCat("baselines: unknown version ", version));
  }
  const uint32_t count = GetU32(data.data() + 4);
  // Each baseline takes at least its fixed bytes: a count the data cannot
  // hold is damage, not a reason to reserve memory.
  if (count > (data.size() - 8) / kBaselineFixedBytes) {
    return absl::DataLossError(absl::StrCat(
        "baselines: ", count, " baselines in ", data.size(), " bytes"));
  }
  struct Parsed {
    std::string key;
    Baseline baseline;
  };
  std::vector<Parsed> parsed;
  parsed.reserve(count);
  size_t at = 8;
  for (uint32_t i = 0; i < count; ++i) {
    if (data.size() - at < 4) break;
    const uint32_t key_size = GetU32(data.data() + at);
    if (data.size() - at - 4 < key_size + 12ull) {
      return absl::DataLossError(
          absl::StrCat("baselines: baseline ", i, " is truncated"));
    }
    at += 4;
    Parsed p;
    p.key = std::string(data.substr(at, key_size));
    at += key_size;
    const uint64_t bits = GetU64(data.data() + at);
    std::memcpy(&p.baseline.bytes_per_second, &bits, sizeof(bits));
    p.baseline.passes = static_cast<int>(
        std::min<uint32_t>(GetU32(data.data() + at + 8), 1000000));
    at += 12;
    const std::vector<absl::string_view> parts =
        absl::StrSplit(p.key, absl::string_view("\0", 1));
    if (parts.size() != 3 || !(p.baseline.bytes_per_second > 0) ||
        !std::isfinite(p.baseline.bytes_per_second) || p.baseline.passes < 1) {
      return absl::DataLossError(
          absl::StrCat("baselines: baseline ", i, " is not valid"));
    }
    parsed.push_back(std::move(p));
  }
  if (parsed.size() != count || at != data.size()) {
    return absl::DataLossError(absl::StrCat("baselines: ", parsed.size(),
                                            " of ", count, " baselines in ", at,
                                            " of ", data.size(), " bytes"));
  }
  size_t added = 0;
  for (Parsed& p : parsed) {
    const std::vector<absl::string_view> parts =
        absl::StrSplit(p.key, absl::string_view("\0", 1));
    if (keep && !keep(parts[0], parts[1], parts[2])) continue;
    Entry& e = EntryOf(parts[0], parts[1], parts[2]);
    e.baseline = p.baseline;
    e.last_judged = pass_;
    ++added;
  }
  return added;
}

size_t StragglerBaselines::Adopt(const JobFn& jobs, StragglerBaselines&& from) {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (!jobs(it->first)) {
      ++it;
      continue;
    }
    size_ -= it->second.entries.size();
    jobs_.erase(it++);
  }
  size_t adopted = 0;
  for (auto& [name, job] : from.jobs_) {
    if (!jobs(name)) continue;
    // Judged this pass of these baselines, not of `from`'s; the layout
    // seen anew by the next Update().
    for (auto& [key, e] : job.entries) e.last_judged = pass_;
    job.seen = 0;
    adopted += job.entries.size();
    jobs_.insert_or_assign(name, std::move(job));
  }
  size_ += adopted;
  return adopted;
}

const StragglerBaselines::Baseline* StragglerBaselines::Find(
    absl::string_view job, absl::string_view host,
    absl::string_view nic) const {
  auto j = jobs_.find(job);
  if (j == jobs_.end()) return nullptr;
  auto h = j->second.host_index.find(host);
  auto n = j->second.nic_index.find(nic);
  if (h == j->second.host_index.end() || n == j->second.nic_index.end()) {
    return nullptr;
  }
  const Entry* e = j->second.At(h->second, n->second);
  if (e == nullptr || e->baseline.passes == 0) return nullptr;
  return &e->baseline;
}

}  // namespace fabricdiag::analysis
