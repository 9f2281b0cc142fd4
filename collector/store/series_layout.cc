#include "collector/store/series_layout.h"

#include <algorithm>
#include <utility>

#include "absl/hash/hash.h"

namespace fabricdiag::collector {
namespace {

size_t StringHeapBytes(const std::string& s) {
  // libstdc++ keeps up to 15 chars inline (SSO).
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

}  // namespace

namespace {

// One series' step of a layout's hash: the same for a SeriesMeta and for
// the v1::Series it was made from.
size_t HashStep(size_t h, int subsystem, absl::string_view device,
                uint32_t port, absl::string_view name, absl::string_view unit,
                int kind, uint32_t width_bits, double scale, int meaning,
                int direction, int32_t priority) {
  return absl::HashOf(h, subsystem, device, port, name, unit, kind, width_bits,
                      scale, meaning, direction, priority);
}

}  // namespace

size_t SeriesLayout::HashOf(const std::vector<SeriesMeta>& metas) {
  size_t h = absl::HashOf(metas.size());
  for (const SeriesMeta& m : metas) {
    h = HashStep(h, m.key.subsystem, m.key.device, m.key.port, m.key.name,
                 m.unit, m.kind, m.width_bits, m.scale, m.meaning, m.direction,
                 m.priority);
  }
  return h;
}

size_t SeriesLayout::HashOf(const v1::Schema& schema) {
  size_t h = absl::HashOf(static_cast<size_t>(schema.series_size()));
  for (const v1::Series& s : schema.series()) {
    h = HashStep(h, s.subsystem(), s.device(), s.port(), s.name(), s.unit(),
                 s.kind(), s.width_bits(), s.scale(), s.meaning(),
                 s.direction(), s.priority());
  }
  return h;
}

bool operator==(const SeriesMeta& a, const SeriesMeta& b) {
  return a.key.subsystem == b.key.subsystem && a.key.port == b.key.port &&
         a.key.device == b.key.device && a.key.name == b.key.name &&
         a.unit == b.unit && a.kind == b.kind && a.width_bits == b.width_bits &&
         a.scale == b.scale && a.meaning == b.meaning &&
         a.direction == b.direction && a.priority == b.priority;
}

bool SameMeta(const SeriesMeta& m, const v1::Series& s) {
  return m.key.subsystem == s.subsystem() && m.key.port == s.port() &&
         m.key.device == s.device() && m.key.name == s.name() &&
         m.unit == s.unit() && m.kind == s.kind() &&
         m.width_bits == s.width_bits() && m.scale == s.scale() &&
         m.meaning == s.meaning() && m.direction == s.direction() &&
         m.priority == s.priority();
}

SeriesMeta MetaOf(const v1::Series& s) {
  SeriesMeta m;
  m.key = {s.subsystem(), s.device(), s.port(), s.name()};
  m.unit = s.unit();
  m.kind = s.kind();
  m.width_bits = s.width_bits();
  m.scale = s.scale();
  m.meaning = s.meaning();
  m.direction = s.direction();
  m.priority = s.priority();
  return m;
}

SeriesLayout::SeriesLayout(std::vector<SeriesMeta> metas)
    : SeriesLayout(std::move(metas), 0) {
  hash_ = HashOf(metas_);
}

SeriesLayout::SeriesLayout(std::vector<SeriesMeta> metas, size_t hash)
    : metas_(std::move(metas)), hash_(hash) {
  metas_.shrink_to_fit();  // built by push_back; kept for the node's life
  index_.reserve(metas_.size());
  for (size_t slot = 0; slot < metas_.size(); ++slot) {
    const SeriesKey& k = metas_[slot].key;
    index_.emplace(KeyView(k.subsystem, k.device, k.port, k.name),
                   static_cast<uint32_t>(slot));
  }
}

int64_t SeriesLayout::Find(int subsystem, absl::string_view device,
                           uint32_t port, absl::string_view name) const {
  auto it = index_.find(KeyView(subsystem, device, port, name));
  return it == index_.end() ? -1 : static_cast<int64_t>(it->second);
}

size_t SeriesLayout::MemoryBytes() const {
  size_t bytes = sizeof(*this) + metas_.capacity() * sizeof(SeriesMeta) +
                 index_.capacity() * (sizeof(std::pair<KeyView, uint32_t>) + 1);
  for (const SeriesMeta& m : metas_) {
    bytes += StringHeapBytes(m.key.device) + StringHeapBytes(m.key.name) +
             StringHeapBytes(m.unit);
  }
  return bytes;
}

std::shared_ptr<const SeriesLayout> SeriesLayouts::Intern(
    std::vector<SeriesMeta> metas) {
  const size_t hash = SeriesLayout::HashOf(metas);
  absl::MutexLock lock(&mu_);
  // Layouts no node uses any more are forgotten now and then, so that a
  // stream of ever-new schemas cannot grow this table without bound.
  if (++interned_since_purge_ >= 64 + by_hash_.size()) {
    interned_since_purge_ = 0;
    for (auto it = by_hash_.begin(); it != by_hash_.end();) {
      auto& list = it->second;
      list.erase(std::remove_if(list.begin(), list.end(),
                                [](const std::weak_ptr<const SeriesLayout>& w) {
                                  return w.expired();
                                }),
                 list.end());
      if (list.empty()) {
        by_hash_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  std::vector<std::weak_ptr<const SeriesLayout>>& candidates = by_hash_[hash];
  for (const std::weak_ptr<const SeriesLayout>& weak : candidates) {
    std::shared_ptr<const SeriesLayout> existing = weak.lock();
    if (existing != nullptr && existing->metas() == metas) return existing;
  }
  // Built under the lock: two nodes interning the same new layout at once
  // must end up with one.
  auto layout = std::make_shared<const SeriesLayout>(std::move(metas), hash);
  candidates.push_back(layout);
  return layout;
}

std::shared_ptr<const SeriesLayout> SeriesLayouts::FindEqual(
    const v1::Schema& schema) const {
  const size_t hash = SeriesLayout::HashOf(schema);
  absl::MutexLock lock(&mu_);
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return nullptr;
  const size_t n = static_cast<size_t>(schema.series_size());
  for (const std::weak_ptr<const SeriesLayout>& weak : it->second) {
    std::shared_ptr<const SeriesLayout> layout = weak.lock();
    if (layout == nullptr || layout->size() != n) continue;
    bool same = true;
    for (size_t i = 0; same && i < n; ++i) {
      same = SameMeta(layout->metas()[i], schema.series(static_cast<int>(i)));
    }
    if (same) return layout;
  }
  return nullptr;
}

size_t SeriesLayouts::live() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [hash, list] : by_hash_) {
    for (const auto& weak : list) n += !weak.expired();
  }
  return n;
}

}  // namespace fabricdiag::collector
