// What a node's series are: their keys and metadata in slot order, as the
// node's schemas declared them, with an index by key.
//
// Thousands of nodes of a cluster run the same NICs and drivers and report
// the same series, so a layout is immutable and shared: SeriesLayouts
// interns them, and a node pays only for its rates (RateHistory). A node
// whose series change (a NIC added, a new firmware's counters) gets a new
// layout, shared in turn with every node that went the same way.
//
//   SeriesLayouts layouts;
//   std::shared_ptr<const SeriesLayout> a = layouts.Intern(metas);
//   std::shared_ptr<const SeriesLayout> b = layouts.Intern(metas);  // a == b
//   int64_t slot = a->Find(key);
//
// SeriesLayout is immutable, so thread-safe; SeriesLayouts is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "proto/ingest.pb.h"

namespace fabricdiag::collector {

// Identity of a series within a node; the same as the agent's Sample::Key().
struct SeriesKey {
  v1::Subsystem subsystem = v1::SUBSYSTEM_UNSPECIFIED;
  std::string device;
  uint32_t port = 0;
  std::string name;
};

// A series' identity and how to read it (from the Schema).
struct SeriesMeta {
  SeriesKey key;
  std::string unit;
  v1::Kind kind = v1::KIND_UNSPECIFIED;
  uint32_t width_bits = 64;
  double scale = 1;
  v1::Meaning meaning = v1::MEANING_NONE;
  v1::Direction direction = v1::DIRECTION_NONE;
  int32_t priority = -1;
};

bool operator==(const SeriesMeta& a, const SeriesMeta& b);
// Whether `series` (from a Schema) describes exactly `meta`.
bool SameMeta(const SeriesMeta& meta, const v1::Series& series);
inline bool operator!=(const SeriesMeta& a, const SeriesMeta& b) {
  return !(a == b);
}

// The metadata of a Schema's series (everything but the key is copied).
SeriesMeta MetaOf(const v1::Series& series);

class SeriesLayout {
 public:
  using KeyView =
      std::tuple<int, absl::string_view, uint32_t, absl::string_view>;

  // Indexes `metas`, which must not repeat a key.
  explicit SeriesLayout(std::vector<SeriesMeta> metas);
  // The same, with HashOf(metas) already known.
  SeriesLayout(std::vector<SeriesMeta> metas, size_t hash);

  // The content hash Intern() keys layouts by; a schema hashes like the
  // metas it describes.
  static size_t HashOf(const std::vector<SeriesMeta>& metas);
  static size_t HashOf(const v1::Schema& schema);
  SeriesLayout(const SeriesLayout&) = delete;
  SeriesLayout& operator=(const SeriesLayout&) = delete;

  const std::vector<SeriesMeta>& metas() const { return metas_; }
  size_t size() const { return metas_.size(); }
  // The slot of the series with this key, or -1.
  int64_t Find(int subsystem, absl::string_view device, uint32_t port,
               absl::string_view name) const;
  int64_t Find(const SeriesKey& key) const {
    return Find(key.subsystem, key.device, key.port, key.name);
  }
  size_t hash() const { return hash_; }
  size_t MemoryBytes() const;

 private:
  std::vector<SeriesMeta> metas_;
  absl::flat_hash_map<KeyView, uint32_t> index_;  // views into metas_ keys
  size_t hash_ = 0;
};

class SeriesLayouts {
 public:
  // The shared layout equal to `metas` (a new one when none is alive).
  std::shared_ptr<const SeriesLayout> Intern(std::vector<SeriesMeta> metas);
  // A live layout whose series are exactly `schema`'s, in its order; null
  // when there is none. Cheaper than Intern() for the common case of a node
  // joining a cluster of nodes like it: nothing is copied.
  std::shared_ptr<const SeriesLayout> FindEqual(const v1::Schema& schema) const;
  // Distinct layouts in use.
  size_t live() const;

 private:
  mutable absl::Mutex mu_;
  // By content hash; entries whose layout no node uses any more expire.
  absl::flat_hash_map<size_t, std::vector<std::weak_ptr<const SeriesLayout>>>
      by_hash_ ABSL_GUARDED_BY(mu_);
  size_t interned_since_purge_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fabricdiag::collector
