// Turns agent Snapshots into the compact ingest wire format.
//
// A node has ~1,200 series (8 NICs x ~150 counters); sending their names
// every second would dominate the collector's parse time. So the encoder
// keeps a Schema (the ordered list of series with their metadata) and emits
// it only when it changes; each Report carries packed numbers in schema
// order and names the schema it was encoded with.
//
// When does the schema change?
// - A new series appears (a NIC comes up, a driver adds ethtool names), or
//   a known series changes its metadata (width, scale, unit, ...): at once.
// - A series vanishes: it is first reported as `absent` for up to
//   `max_absent_reports` consecutive reports, so that one unreadable sysfs
//   file does not churn a 100 KB schema through 8,000 agents; after that a
//   new schema without it is emitted (a NIC was removed).
// Reports are always complete: every schema index has a raw value.
//
//   ReportEncoder encoder;
//   RateCalculator rates;
//   ASSIGN_OR_RETURN(EncodedReport encoded,
//                    encoder.Encode(snapshot, rates.Update(snapshot)));
//   client.Enqueue(std::move(encoded));
//
// Not thread-safe: one encoder per sampling loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/rate.h"
#include "agent/sample.h"
#include "proto/ingest.pb.h"

namespace fabricdiag::agent {

// One encoded sampling round.
struct EncodedReport {
  // Set when `report` is the first report of a new schema.
  std::optional<v1::Schema> new_schema;
  // Set when the node's devices differ from the previous report (and on the
  // first report).
  std::optional<v1::Inventory> new_inventory;
  // `report.seq` is 0: the StreamClient numbers reports as it queues them.
  v1::Report report;
};

class ReportEncoder {
 public:
  struct Options {
    // Consecutive reports a known series may be missing from before the
    // schema drops it. 0 drops it at once.
    int max_absent_reports = 3;
  };

  // Hard limits that keep one hostile or buggy snapshot from producing an
  // absurd message (the collector caps messages at 16 MB): at most 32,768
  // series (a 64-port switch with ~300 ethtool counters each is ~19,000),
  // names as long as the kernel allows (IFNAMSIZ 16, IB_DEVICE_NAME_MAX 64,
  // ETH_GSTRING_LEN 32) with generous headroom.
  static constexpr size_t kMaxSeries = 32768;
  static constexpr size_t kMaxDeviceBytes = 64;
  static constexpr size_t kMaxNameBytes = 128;
  static constexpr size_t kMaxUnitBytes = 32;
  static constexpr size_t kMaxErrorBytes = 256;

  ReportEncoder() : ReportEncoder(Options{}) {}
  explicit ReportEncoder(Options options) : options_(options) {}

  // Encodes `snapshot`; `rates[i]` belongs to `snapshot.samples[i]`.
  // Samples with invalid metadata (empty or over-long names, width outside
  // 1..64, non-finite scale) and duplicate keys are skipped and counted;
  // non-finite rates are sent as "no rate". Returns InvalidArgument when
  // `rates` does not match the samples, and ResourceExhausted when the
  // snapshot has more than kMaxSeries valid series.
  absl::StatusOr<EncodedReport> Encode(const Snapshot& snapshot,
                                       const std::vector<SampleRate>& rates);

  // The schema the last report was encoded with; nullptr before the first.
  const v1::Schema* schema() const { return has_schema_ ? &schema_ : nullptr; }

  uint64_t schemas_emitted() const { return schemas_emitted_; }
  // Samples not encoded because their metadata was invalid or their key
  // repeated an earlier sample of the same snapshot.
  uint64_t skipped_samples() const { return skipped_samples_; }
  // Rates that were NaN or infinite (sent as "no rate").
  uint64_t invalid_rates() const { return invalid_rates_; }

 private:
  using Key = std::tuple<int, std::string, uint32_t, std::string>;
  using KeyView =
      std::tuple<int, absl::string_view, uint32_t, absl::string_view>;

  // The samples a report carries and where they go in the schema.
  struct Selection {
    std::vector<size_t> kept;         // indices into snapshot.samples
    std::vector<uint32_t> positions;  // schema index of each kept sample
    std::vector<bool> present;        // per schema index
  };

  // Announces a new schema holding the kept samples in their order.
  void StartNewSchema(const Snapshot& snapshot, Selection* sel,
                      EncodedReport* out);
  // The selection of the last report, for a snapshot with the same
  // descriptions.
  void ReuseLastSelection(const Snapshot& snapshot, Selection* sel,
                          EncodedReport* out);
  // Valid samples, first occurrence of each key, mapped onto the schema.
  absl::Status SelectSamples(const Snapshot& snapshot, Selection* sel,
                             EncodedReport* out);
  // Raw values, rates and the per-series flags, in schema order.
  void AddValues(const Snapshot& snapshot, const std::vector<SampleRate>& rates,
                 const Selection& sel, v1::Report* report);
  // Sets out->new_inventory when the inventory changed.
  void UpdateInventory(const Snapshot& snapshot, EncodedReport* out);
  // Fills `positions[i]` with the schema index of `kept[i]`; returns false
  // when the current schema cannot carry this snapshot.
  bool MapToSchema(const Snapshot& snapshot, const std::vector<size_t>& kept,
                   std::vector<uint32_t>* positions,
                   std::vector<bool>* present);
  void NewSchema(const Snapshot& snapshot, const std::vector<size_t>& kept);
  // Advances the absence streaks of the schema's series not `present`;
  // false (streaks untouched) when one has been missing too long.
  bool CommitAbsences(const std::vector<bool>& present);
  // True when `snapshot` points at exactly the descriptions, in the same
  // order, that the last report was mapped from.
  bool SameDescriptionsAsLastReport(const Snapshot& snapshot) const;
  void RememberDescriptions(const Snapshot& snapshot,
                            const std::vector<size_t>& kept,
                            const std::vector<uint32_t>& positions);

  Options options_;
  bool has_schema_ = false;
  v1::Schema schema_;
  absl::flat_hash_map<Key, uint32_t> index_;  // series key -> schema index
  std::vector<int> absent_streak_;            // per schema index
  uint64_t last_schema_id_ = 0;
  std::string last_inventory_;  // serialized, to detect changes
  bool has_inventory_ = false;
  // The last report's samples: their descriptions (kept alive by
  // last_owners_, so that an equal pointer is the same object), which of
  // them were kept, and their schema positions.
  std::vector<const SeriesDesc*> last_descs_;
  std::vector<std::shared_ptr<const void>> last_owners_;
  std::vector<size_t> last_kept_;
  std::vector<uint32_t> last_positions_;
  uint64_t last_schema_mapped_ = 0;  // schema_id of last_positions_
  uint64_t last_skipped_ = 0;        // samples skipped in that snapshot
  uint64_t schemas_emitted_ = 0;
  uint64_t skipped_samples_ = 0;
  uint64_t invalid_rates_ = 0;
};

}  // namespace fabricdiag::agent
