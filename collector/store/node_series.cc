#include "collector/store/node_series.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag::collector {
namespace {

// A node cannot grow without bound by sending schema after schema of new
// keys: twice the largest schema the ingest path accepts.
constexpr size_t kMaxSeriesPerNode = 131072;

size_t StringHeapBytes(const std::string& s) {
  // libstdc++ keeps up to 15 chars inline (SSO).
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

float ToStoredRate(double rate) {
  // Rates are validated finite, but a finite double beyond FLT_MAX would be
  // undefined behaviour to convert; no NIC counts that fast anyway.
  return static_cast<float>(
      std::clamp(rate, -double{FLT_MAX}, double{FLT_MAX}));
}

}  // namespace

NodeSeries::NodeSeries(std::string name, size_t window_samples,
                       SeriesLayouts* layouts)
    : name_(std::move(name)),
      layouts_(layouts),
      closed_frames_(std::max<size_t>(
          1, (window_samples + RateHistory::kFrameSamples - 1) /
                 RateHistory::kFrameSamples)),
      time_capacity_((closed_frames_ + 1) * RateHistory::kFrameSamples),
      times_(time_capacity_, 0),
      seqs_(time_capacity_, 0),
      history_(closed_frames_) {
  // Nodes start at different points of a frame, so that the thousands of
  // agents that connect together (a collector restart) do not all close a
  // frame, and in the first window allocate a new one, in the same second.
  next_k_ = absl::Hash<std::string>{}(name_) % RateHistory::kFrameSamples;
}

absl::StatusOr<uint64_t> NodeSeries::BeginStream(absl::string_view boot_id,
                                                 uint32_t interval_ms,
                                                 uint64_t stream,
                                                 absl::string_view peer,
                                                 absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (boot_id != boot_id_ && StreamLive(now)) {
    ++duplicate_streams_;
    last_duplicate_peer_ = std::string(peer);
    last_duplicate_ = now;
    return absl::AlreadyExistsError(
        absl::StrCat("another agent process (boot ", boot_id_,
                     ") is streaming as this node "
                     "from ",
                     peer_, "; two agents run with the same --node"));
  }
  stream_ = stream;
  peer_ = std::string(peer);
  stream_heard_ = now;
  interval_ms_ = interval_ms;
  if (boot_id != boot_id_) {
    // The agent restarted: seq and schema ids start over. The series keep
    // their history; the sample clock k simply continues.
    boot_id_ = std::string(boot_id);
    held_seq_ = 0;
    acked_elsewhere_ = 0;
  }
  return held_seq_;
}

void NodeSeries::AckedElsewhere(absl::string_view boot_id, uint64_t seq) {
  absl::MutexLock lock(&mu_);
  if (boot_id == boot_id_) acked_elsewhere_ = std::max(acked_elsewhere_, seq);
}

absl::StatusOr<std::vector<uint32_t>> NodeSeries::MapSchema(
    const v1::Schema& schema) {
  absl::MutexLock lock(&mu_);
  const size_t n = static_cast<size_t>(schema.series_size());
  std::vector<uint32_t> slots(n);
  // The schema the node already has, in order: a reconnect, or the agent
  // restarted unchanged. Nothing to build.
  if (layout_ != nullptr && layout_->size() == n) {
    bool same = true;
    for (size_t i = 0; same && i < n; ++i) {
      same = SameMeta(layout_->metas()[i], schema.series(static_cast<int>(i)));
    }
    if (same) {
      for (size_t i = 0; i < n; ++i) slots[i] = static_cast<uint32_t>(i);
      ++version_;
      return slots;
    }
  }
  // A node's first schema, like another node's: share its layout.
  if (layout_ == nullptr) {
    if (std::shared_ptr<const SeriesLayout> shared =
            layouts_->FindEqual(schema)) {
      layout_ = std::move(shared);
      for (size_t i = 0; i < n; ++i) slots[i] = static_cast<uint32_t>(i);
      history_.Resize(n);
      ++version_;
      return slots;
    }
  }
  // Otherwise the node's series grow by the new keys, and known keys take
  // the schema's metadata; the result is interned like any layout.
  std::vector<SeriesMeta> metas;
  if (layout_ != nullptr) metas = layout_->metas();
  std::vector<bool> mapped(metas.size(), false);
  absl::flat_hash_map<SeriesLayout::KeyView, uint32_t> added;
  bool changed = layout_ == nullptr;
  for (size_t i = 0; i < n; ++i) {
    const v1::Series& s = schema.series(static_cast<int>(i));
    int64_t slot = layout_ == nullptr ? -1
                                      : layout_->Find(s.subsystem(), s.device(),
                                                      s.port(), s.name());
    const bool duplicate =
        slot >= 0
            ? mapped[static_cast<size_t>(slot)]
            : !added
                   .emplace(SeriesLayout::KeyView(s.subsystem(), s.device(),
                                                  s.port(), s.name()),
                            static_cast<uint32_t>(metas.size()))
                   .second;
    if (duplicate) {
      return absl::InvalidArgumentError(
          absl::StrCat("schema ", schema.schema_id(), " lists series ",
                       s.device(), "/", s.port(), "/", s.name(), " twice"));
    }
    if (slot < 0) {
      if (metas.size() >= kMaxSeriesPerNode) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "node ", name_, " would exceed ", kMaxSeriesPerNode, " series"));
      }
      slot = static_cast<int64_t>(metas.size());
      metas.push_back(MetaOf(s));
      mapped.push_back(true);
      changed = true;
    } else {
      mapped[static_cast<size_t>(slot)] = true;
      if (!SameMeta(metas[static_cast<size_t>(slot)], s)) {
        metas[static_cast<size_t>(slot)] = MetaOf(s);
        changed = true;
      }
    }
    slots[i] = static_cast<uint32_t>(slot);
  }
  if (changed) layout_ = layouts_->Intern(std::move(metas));
  history_.Resize(layout_->size());
  ++version_;
  return slots;
}

NodeSeries::Outcome NodeSeries::Ingest(absl::string_view boot_id,
                                       const ReportView& report,
                                       absl::Span<const uint32_t> slots,
                                       absl::Time received, uint64_t* held) {
  absl::MutexLock lock(&mu_);
  if (boot_id != boot_id_) {
    ++stale_reports_;
    *held = 0;
    return Outcome::kStaleBoot;
  }
  if (report.seq <= held_seq_) {
    // A replay after a reconnect: the agent did not see our Ack in time.
    ++duplicates_;
    *held = held_seq_;
    return Outcome::kDuplicate;
  }
  // Reports skipped are reports the agent dropped from its full buffer, but
  // for those another collector acknowledged. The first report held of a
  // boot may start anywhere the agent's Hello does not account for (it
  // predates the acknowledged seq, or the agent names none): those reports
  // went to a previous collector process.
  if (held_seq_ == 0 && acked_elsewhere_ != 0 &&
      report.seq > acked_elsewhere_ + 1) {
    missing_reports_ += report.seq - acked_elsewhere_ - 1;
  }
  if (held_seq_ != 0 && report.seq > held_seq_ + 1) {
    const uint64_t skipped = report.seq - held_seq_ - 1;
    const uint64_t stored_up_to = std::max(held_seq_, acked_elsewhere_);
    if (report.seq > stored_up_to + 1) {
      missing_reports_ += report.seq - stored_up_to - 1;
    }
    // Dropped reports leave a hole in the time axis (at most one window).
    const uint64_t holes = std::min<uint64_t>(skipped, time_capacity_);
    for (uint64_t h = 0; h < holes; ++h) {
      times_[next_k_ % time_capacity_] = 0;
      seqs_[next_k_ % time_capacity_] = 0;
      ++next_k_;
    }
  }
  const uint64_t k = next_k_++;
  history_.Begin(k);
  times_[k % time_capacity_] = report.wall_time_unix_nanos;
  seqs_[k % time_capacity_] = report.seq;
  held_seq_ = report.seq;
  last_report_ = received;
  stream_heard_ = received;
  ++reports_;

  // The hot loop: no hashing, one Put per value, in slot order.
  constexpr float kNoRate = std::numeric_limits<float>::quiet_NaN();
  const uint32_t* no_rate = report.no_rate.data();
  const uint32_t* no_rate_end = no_rate + report.no_rate.size();
  const double* rate = report.rates.data();
  const uint32_t n = static_cast<uint32_t>(slots.size());
  RateHistory::SampleWriter writer = history_.Writer();
  for (uint32_t i = 0; i < n; ++i) {
    float value;
    if (no_rate != no_rate_end && *no_rate == i) {
      value = kNoRate;
      ++no_rate;
    } else {
      value = ToStoredRate(*rate++);
    }
    writer.Put(slots[i], value);
  }
  *held = held_seq_;
  return Outcome::kStored;
}

void NodeSeries::SetInventory(const v1::Inventory& inventory) {
  std::vector<std::string> devices;
  for (const v1::RdmaDevice& d : inventory.rdma_devices()) {
    devices.push_back(d.name());
  }
  for (const v1::Netdev& n : inventory.netdevs()) {
    if (std::find(devices.begin(), devices.end(), n.name()) == devices.end()) {
      devices.push_back(n.name());
    }
  }
  absl::MutexLock lock(&mu_);
  devices_ = std::move(devices);
  inventory_ = inventory;
  ++version_;
}

v1::Inventory NodeSeries::inventory() const {
  absl::MutexLock lock(&mu_);
  return inventory_;
}

uint64_t NodeSeries::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

void NodeSeries::RecentMeans(size_t samples, std::vector<double>* out) const {
  absl::MutexLock lock(&mu_);
  out->assign(history_.series(), std::numeric_limits<double>::quiet_NaN());
  const uint64_t end = next_k_;
  const uint64_t begin = end > samples ? end - samples : 0;
  for (size_t slot = 0; slot < history_.series(); ++slot) {
    double sum = 0;
    uint64_t n = 0;
    history_.Accumulate(static_cast<uint32_t>(slot), begin, end, &sum, &n);
    if (n > 0) (*out)[slot] = sum / static_cast<double>(n);
  }
}

void NodeSeries::RecentMeans(size_t samples, absl::Span<const uint32_t> slots,
                             std::vector<double>* out) const {
  std::vector<uint64_t> counts;
  absl::MutexLock lock(&mu_);
  RecentMeansLocked(samples, slots, out, &counts);
}

void NodeSeries::RecentMeansLocked(size_t samples,
                                   absl::Span<const uint32_t> slots,
                                   std::vector<double>* out,
                                   std::vector<uint64_t>* counts) const {
  const uint64_t end = next_k_;
  const uint64_t begin = end > samples ? end - samples : 0;
  // The sums in *out, then divided by their counts.
  out->assign(slots.size(), 0.0);
  counts->assign(slots.size(), 0);
  history_.Accumulate(slots, absl::MakeConstSpan(&begin, 1), end, out->data(),
                      counts->data());
  for (size_t i = 0; i < slots.size(); ++i) {
    (*out)[i] = (*counts)[i] > 0 ? (*out)[i] / static_cast<double>((*counts)[i])
                                 : std::numeric_limits<double>::quiet_NaN();
  }
}

void NodeSeries::RecentActivity(size_t samples,
                                absl::Span<const uint32_t> slots,
                                std::vector<double>* times,
                                std::vector<bool>* moved) const {
  absl::MutexLock lock(&mu_);
  RecentActivityLocked(samples, slots, times, moved);
}

void NodeSeries::ReadWindows(absl::Span<const uint32_t> slots,
                             absl::Span<const std::vector<uint32_t>> activity,
                             absl::Span<WindowRead> windows) const {
  if (windows.empty()) return;
  // Every window's sums and counts, from one read of each slot's values,
  // in the first window's scratch ([w * slots.size() + i]).
  absl::InlinedVector<uint64_t, 4> froms(windows.size());
  absl::MutexLock lock(&mu_);
  const uint64_t end = next_k_;
  for (size_t w = 0; w < windows.size(); ++w) {
    froms[w] = end > windows[w].samples ? end - windows[w].samples : 0;
  }
  std::vector<double>& sums = windows[0].sums;
  std::vector<uint64_t>& counts = windows[0].counts;
  sums.assign(windows.size() * slots.size(), 0.0);
  counts.assign(windows.size() * slots.size(), 0);
  history_.Accumulate(slots, froms, end, sums.data(), counts.data());
  for (size_t w = 0; w < windows.size(); ++w) {
    WindowRead& read = windows[w];
    read.means.resize(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
      const size_t at = w * slots.size() + i;
      read.means[i] = counts[at] > 0
                          ? sums[at] / static_cast<double>(counts[at])
                          : std::numeric_limits<double>::quiet_NaN();
    }
    read.times.resize(activity.size());
    read.moved.resize(activity.size());
    for (size_t p = 0; p < activity.size(); ++p) {
      read.times[p].clear();
      read.moved[p].clear();
      if (activity[p].empty()) continue;
      RecentActivityLocked(read.samples, activity[p], &read.times[p],
                           &read.moved[p]);
    }
  }
}

void NodeSeries::RecentActivityLocked(size_t samples,
                                      absl::Span<const uint32_t> slots,
                                      std::vector<double>* times,
                                      std::vector<bool>* moved) const {
  times->clear();
  moved->clear();
  const uint64_t end = next_k_;
  const uint64_t begin = end > samples ? end - samples : 0;
  // The report before the window starts its first interval; across
  // dropped reports, the last one held before them (so the interval spans
  // the gap). Without one, the window's first report starts it.
  uint64_t k = begin;
  int64_t first = 0;
  uint64_t seq = 0;
  for (uint64_t back = begin; back > 0 && begin - back < time_capacity_;
       --back) {
    if (SampleTime(back - 1, &first, &seq)) {
      times->push_back(0);
      break;
    }
  }
  for (; k < end; ++k) {
    int64_t nanos = 0;
    if (!SampleTime(k, &nanos, &seq)) continue;  // a dropped report
    if (times->empty()) {
      first = nanos;
      times->push_back(0);
      continue;
    }
    times->push_back(static_cast<double>(nanos - first) / 1e9);
    bool any = false;
    for (uint32_t slot : slots) any = any || history_.At(slot, k) > 0;
    moved->push_back(any);
  }
  if (moved->empty()) times->clear();
}

void NodeSeries::EndStream(uint64_t stream) {
  absl::MutexLock lock(&mu_);
  if (stream_ == stream) stream_ = 0;
}

void NodeSeries::HandOff(uint64_t stream, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (stream_ != stream) return;  // another stream took the node over
  stream_ = 0;
  handed_off_ = now;
}

NodeSeries::ViewState NodeSeries::StateForView() const {
  absl::MutexLock lock(&mu_);
  return ViewState{
      last_report_, interval_ms_, version_, boot_id_,
      handed_off_ >= last_report_ ? handed_off_ : absl::InfinitePast()};
}

NodeSeries::Arrival NodeSeries::LastArrival() const {
  absl::MutexLock lock(&mu_);
  return Arrival{last_report_, interval_ms_};
}

bool NodeSeries::StreamLive(absl::Time now) const {
  const absl::Duration live =
      std::max(kMinLive, kLiveIntervals * absl::Milliseconds(interval_ms_));
  return stream_ != 0 && now - stream_heard_ < live;
}

bool NodeSeries::Streaming(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  return StreamLive(now);
}

NodeInfo NodeSeries::Info() const {
  absl::MutexLock lock(&mu_);
  NodeInfo info;
  info.node = name_;
  info.boot_id = boot_id_;
  info.interval_ms = interval_ms_;
  info.last_report = last_report_;
  info.devices = devices_;
  info.series = layout_ == nullptr ? 0 : layout_->size();
  info.reports = reports_;
  info.duplicates = duplicates_;
  info.missing_reports = missing_reports_;
  info.stale_reports = stale_reports_;
  info.peer = peer_;
  info.duplicate_streams = duplicate_streams_;
  info.last_duplicate_peer = last_duplicate_peer_;
  info.last_duplicate = last_duplicate_;
  return info;
}

std::vector<SeriesMeta> NodeSeries::ListSeries() const {
  absl::MutexLock lock(&mu_);
  if (layout_ == nullptr) return {};
  return layout_->metas();
}

std::shared_ptr<const SeriesLayout> NodeSeries::layout() const {
  absl::MutexLock lock(&mu_);
  return layout_;
}

int64_t NodeSeries::Find(const SeriesKey& key) const {
  return layout_ == nullptr ? -1 : layout_->Find(key);
}

bool NodeSeries::SampleTime(uint64_t k, int64_t* unix_nanos,
                            uint64_t* seq) const {
  if (k >= next_k_ || next_k_ - k > time_capacity_) return false;
  *unix_nanos = times_[k % time_capacity_];
  *seq = seqs_[k % time_capacity_];
  return *seq != 0;
}

absl::StatusOr<RatePoint> NodeSeries::Latest(const SeriesKey& key) const {
  absl::MutexLock lock(&mu_);
  const int64_t slot = Find(key);
  if (slot < 0) {
    return absl::NotFoundError(absl::StrCat("node ", name_, " has no series ",
                                            key.device, "/", key.port, "/",
                                            key.name));
  }
  const uint32_t s = static_cast<uint32_t>(slot);
  for (uint64_t k = history_.end(); k > history_.begin(); --k) {
    const float v = history_.At(s, k - 1);
    RatePoint p;
    if (!std::isnan(v) && SampleTime(k - 1, &p.unix_nanos, &p.seq)) {
      p.rate = v;
      return p;
    }
  }
  return absl::NotFoundError(absl::StrCat("series ", key.device, "/", key.port,
                                          "/", key.name, " of ", name_,
                                          " has no rate yet"));
}

absl::StatusOr<std::vector<RatePoint>> NodeSeries::Window(
    const SeriesKey& key, absl::Time since) const {
  absl::MutexLock lock(&mu_);
  const int64_t slot = Find(key);
  if (slot < 0) {
    return absl::NotFoundError(absl::StrCat("node ", name_, " has no series ",
                                            key.device, "/", key.port, "/",
                                            key.name));
  }
  const uint32_t s = static_cast<uint32_t>(slot);
  const int64_t since_nanos = since == absl::InfinitePast()
                                  ? std::numeric_limits<int64_t>::min()
                                  : absl::ToUnixNanos(since);
  std::vector<RatePoint> out;
  for (uint64_t k = history_.begin(); k < history_.end(); ++k) {
    RatePoint p;
    if (!SampleTime(k, &p.unix_nanos, &p.seq) || p.unix_nanos < since_nanos) {
      continue;
    }
    p.rate = history_.At(s, k);
    out.push_back(p);
  }
  return out;
}

size_t NodeSeries::MemoryBytes() const {
  absl::MutexLock lock(&mu_);
  // The history's inline part is in sizeof(*this) already.
  const size_t history_heap = history_.MemoryBytes() - sizeof(RateHistory);
  size_t bytes = sizeof(*this) + StringHeapBytes(name_) +
                 StringHeapBytes(boot_id_) +
                 times_.capacity() * sizeof(int64_t) +
                 seqs_.capacity() * sizeof(uint64_t) + history_heap +
                 inventory_.SpaceUsedLong();
  for (const std::string& d : devices_) {
    bytes += sizeof(std::string) + StringHeapBytes(d);
  }
  return bytes;
}

size_t NodeSeries::series_count() const {
  absl::MutexLock lock(&mu_);
  return layout_ == nullptr ? 0 : layout_->size();
}

}  // namespace fabricdiag::collector
