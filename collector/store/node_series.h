// Everything the collector holds about one node: its identity and boot,
// dedup state, inventory, and the rate history of every series it reports.
//
// Ingest is O(values) without hashing: a stream maps each Schema onto series
// slots once (MapSchema hashes each key there), then every Report is a loop
// over arrays, `slot[i] -> history.Put(slot, rate[i])`. All series of a node
// share one sample clock k (one k per accepted report), one timestamp ring
// and one RateHistory, stored by column; their names and metadata are a
// SeriesLayout shared with every node that reports the same series. A
// series pays only for its rates.
//
//   auto node = store.OpenNode("gpu-003");
//   uint64_t held = node->BeginStream(boot_id, 1000);  // -> Ack(held)
//   ASSIGN_OR_RETURN(std::vector<uint32_t> slots, node->MapSchema(schema));
//   node->Ingest(boot_id, report_view, slots);
//
// Thread-safe: one mutex per node, so streams of different nodes never
// contend; queries lock the node briefly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "collector/store/rate_history.h"
#include "collector/store/series_layout.h"
#include "proto/ingest.pb.h"

namespace fabricdiag::collector {

// One stored sample. `rate` is NaN when the agent sent no rate for it (first
// sample, reset, gauge, saturated, absent).
struct RatePoint {
  int64_t unix_nanos = 0;  // the report's wall time (agent clock)
  uint64_t seq = 0;        // the report's seq
  double rate = 0;         // base units per second
};

// One accepted sampling round, as plain arrays (views into the Report).
struct ReportView {
  uint64_t seq = 0;
  int64_t wall_time_unix_nanos = 0;
  // One per series of the schema not listed in `no_rate`, in index order.
  absl::Span<const double> rates;
  absl::Span<const uint32_t> no_rate;  // ascending
};

struct NodeInfo {
  std::string node;
  std::string boot_id;
  uint32_t interval_ms = 0;
  absl::Time last_report = absl::InfinitePast();  // collector clock
  // From the latest Inventory: RDMA devices, then netdevs not already
  // listed. Empty until an Inventory arrives.
  std::vector<std::string> devices;
  size_t series = 0;
  uint64_t reports = 0;          // accepted (not duplicates)
  uint64_t duplicates = 0;       // replayed reports already held
  uint64_t missing_reports = 0;  // seq gaps: reports the agent dropped
  uint64_t stale_reports = 0;    // reports of a boot_id that is no longer
                                 // the node's current one
  // The peer ("ipv4:10.0.0.7:51234") of the stream that reports for the node.
  std::string peer;
  // Streams refused because another agent process was already streaming as
  // this node (two agents with the same --node), and the last one's peer.
  uint64_t duplicate_streams = 0;
  std::string last_duplicate_peer;
  absl::Time last_duplicate = absl::InfinitePast();
};

class NodeSeries {
 public:
  // What Ingest did with a report.
  enum class Outcome { kStored, kDuplicate, kStaleBoot };

  // Keeps at least `window_samples` samples of every series. The node's
  // series layout is interned in `layouts`, which must outlive the node.
  NodeSeries(std::string name, size_t window_samples, SeriesLayouts* layouts);

  NodeSeries(const NodeSeries&) = delete;
  NodeSeries& operator=(const NodeSeries&) = delete;

  const std::string& name() const { return name_; }

  // A stream said Hello. Returns the highest seq held for `boot_id` (0 =
  // none), which the collector acknowledges at once, and makes `stream` the
  // one that reports for the node.
  //
  // A boot_id other than the current one starts a fresh seq space (the
  // agent restarted) - unless the current stream is still live: open, and
  // heard from within kLiveIntervals of its interval (at least kMinLive).
  // Then two agent processes claim the same node, and the newcomer is
  // refused with AlreadyExists (and counted), instead of both taking turns.
  // The same boot_id again is the same agent reconnecting before its old
  // stream was noticed gone: it takes over.
  static constexpr int kLiveIntervals = 3;
  static constexpr absl::Duration kMinLive = absl::Seconds(3);
  absl::StatusOr<uint64_t> BeginStream(absl::string_view boot_id,
                                       uint32_t interval_ms, uint64_t stream,
                                       absl::string_view peer, absl::Time now);
  // The agent's Hello says a collector acknowledged the reports of
  // `boot_id` up to `seq` (another collector of a cluster, before a
  // failover or a hand-back): a skip in seq up to it is reports stored
  // there, not reports the agent dropped. Ignored for a boot that is not
  // the current one.
  void AckedElsewhere(absl::string_view boot_id, uint64_t seq);
  // The stream ended (closed, broken or rejected).
  void EndStream(uint64_t stream);
  // The stream ended with a hand-off at `now` (collector clock): the
  // collector sent the node's agent to another one. As EndStream; until
  // the agent reports here again, ViewState::handed_off says when.
  void HandOff(uint64_t stream, absl::Time now);
  // Whether the node's agent streams here at `now`: a stream is open and
  // live as BeginStream judges it.
  bool Streaming(absl::Time now) const;

  // The slot of every series of `schema`, in schema order, creating slots
  // for new keys (and updating the metadata of known ones). InvalidArgument
  // when the schema lists the same key twice.
  absl::StatusOr<std::vector<uint32_t>> MapSchema(const v1::Schema& schema);

  // Stores `report` unless it is a duplicate (seq already held for
  // `boot_id`) or belongs to a boot that is no longer current. `slots` is
  // MapSchema()'s answer for the report's schema; the report must have been
  // validated against it (sizes, ascending in-range no_rate, finite rates).
  // `received` is the collector's clock. Returns the outcome; `*held` gets
  // the highest seq now held for `boot_id`.
  Outcome Ingest(absl::string_view boot_id, const ReportView& report,
                 absl::Span<const uint32_t> slots, absl::Time received,
                 uint64_t* held);

  // Replaces the node's inventory and device list (from an Inventory
  // message).
  void SetInventory(const v1::Inventory& inventory);
  // The latest Inventory; empty until one arrives.
  v1::Inventory inventory() const;

  // Changes whenever the node's series, their metadata or its inventory may
  // have changed (a schema was mapped, an inventory arrived), so readers can
  // cache what they derive from ListSeries() and inventory().
  uint64_t version() const;

  // The mean rate of every series slot (ListSeries() order) over the last
  // `samples` reports, ignoring samples without a rate; NaN for a series
  // with no rate among them. One lock, no allocation once `out` has grown.
  void RecentMeans(size_t samples, std::vector<double>* out) const;
  // The same for the given slots only: (*out)[i] is the mean of slots[i].
  // The analyzers read a few dozen signals per NIC, not every counter.
  void RecentMeans(size_t samples, absl::Span<const uint32_t> slots,
                   std::vector<double>* out) const;

  // How the last `samples` reports lie in time, for PortView::samples:
  // *times gets the wall times (agent clock, seconds after the first one)
  // of the report before them and of each of them that is held, oldest
  // first, and *moved whether any of `slots` had a rate above 0 at each of
  // them (times->size() == moved->size() + 1, or both empty). A missed
  // report leaves no time, so the interval across it is as long as the
  // gap. One lock, no allocation once the vectors have grown.
  void RecentActivity(size_t samples, absl::Span<const uint32_t> slots,
                      std::vector<double>* times,
                      std::vector<bool>* moved) const;

  // RecentMeans(slots) and RecentActivity(activity[p]) of every port p, for
  // each window, under one lock: what an analysis pass's views read of the
  // node.
  struct WindowRead {
    size_t samples = 0;                      // in: the newest reports
    std::vector<double> means;               // out: per entry of `slots`
    std::vector<std::vector<double>> times;  // out: per entry of `activity`
    std::vector<std::vector<bool>> moved;    // out: per entry of `activity`
    // Scratch (the first window's holds every window's sums and counts).
    std::vector<double> sums;
    std::vector<uint64_t> counts;
  };
  void ReadWindows(absl::Span<const uint32_t> slots,
                   absl::Span<const std::vector<uint32_t>> activity,
                   absl::Span<WindowRead> windows) const;

  NodeInfo Info() const;
  // What a fabric view needs to know of the node before reading it: when
  // it last reported, at which interval, and whether its series or
  // inventory changed (version) or its agent restarted (boot_id).
  struct ViewState {
    absl::Time last_report = absl::InfinitePast();
    uint32_t interval_ms = 0;
    uint64_t version = 0;
    std::string boot_id;
    // When this collector handed the node's agent to another one (HandOff)
    // after its last report here; InfinitePast when it did not.
    absl::Time handed_off = absl::InfinitePast();
  };
  ViewState StateForView() const;
  // When the latest report arrived (collector clock) and the interval the
  // node's agent reports at: what Info() says of them, without copying the
  // rest.
  struct Arrival {
    absl::Time last_report = absl::InfinitePast();
    uint32_t interval_ms = 0;
  };
  Arrival LastArrival() const;
  std::vector<SeriesMeta> ListSeries() const;

  // The newest stored sample of `key` with a rate; NotFound when the series
  // is unknown or has no rate in the window.
  absl::StatusOr<RatePoint> Latest(const SeriesKey& key) const;
  // Every stored sample of `key` whose wall time is >= `since`, oldest
  // first (NaN rate = no rate that round). NotFound for an unknown series.
  absl::StatusOr<std::vector<RatePoint>> Window(const SeriesKey& key,
                                                absl::Time since) const;

  // Bytes used by this node's rates and timestamps; its layout (shared
  // with other nodes) is not included.
  size_t MemoryBytes() const;
  size_t series_count() const;
  // The node's series and their metadata (null before the first schema).
  std::shared_ptr<const SeriesLayout> layout() const;

 private:
  // The slot of `key`, or -1.
  int64_t Find(const SeriesKey& key) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool StreamLive(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecentMeansLocked(size_t samples, absl::Span<const uint32_t> slots,
                         std::vector<double>* out,
                         std::vector<uint64_t>* counts) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecentActivityLocked(size_t samples, absl::Span<const uint32_t> slots,
                            std::vector<double>* times,
                            std::vector<bool>* moved) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Timestamp and seq of sample k; false when k is not held.
  bool SampleTime(uint64_t k, int64_t* unix_nanos, uint64_t* seq) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string name_;
  SeriesLayouts* const layouts_;
  const size_t closed_frames_;
  const size_t time_capacity_;  // samples the timestamp ring holds

  mutable absl::Mutex mu_;
  std::string boot_id_ ABSL_GUARDED_BY(mu_);
  uint64_t stream_ ABSL_GUARDED_BY(mu_) = 0;  // 0: no open stream
  std::string peer_ ABSL_GUARDED_BY(mu_);
  absl::Time stream_heard_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // The latest HandOff of a stream that reported for the node.
  absl::Time handed_off_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t duplicate_streams_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_duplicate_peer_ ABSL_GUARDED_BY(mu_);
  absl::Time last_duplicate_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint32_t interval_ms_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t held_seq_ ABSL_GUARDED_BY(mu_) = 0;  // highest seq of boot_id_
  // The highest seq of boot_id_ acknowledged by any collector, as the
  // agent said (AckedElsewhere).
  uint64_t acked_elsewhere_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_k_ ABSL_GUARDED_BY(mu_) = 0;  // next sample number
  // Per k % time_capacity_: wall time and seq; 0 = no report.
  std::vector<int64_t> times_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> seqs_ ABSL_GUARDED_BY(mu_);
  absl::Time last_report_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::vector<std::string> devices_ ABSL_GUARDED_BY(mu_);
  v1::Inventory inventory_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  // The node's series, shared with every node that reports the same ones.
  std::shared_ptr<const SeriesLayout> layout_ ABSL_GUARDED_BY(mu_);
  // The rates of every slot.
  RateHistory history_ ABSL_GUARDED_BY(mu_);
  uint64_t reports_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t duplicates_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t missing_reports_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t stale_reports_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fabricdiag::collector
