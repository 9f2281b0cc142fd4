// What the rate analyzers read: every port of the fabric, with the mean rate
// of each signal over the analysis window.
//
// The collector builds a FabricView from its series store once per pass
// (collector/runner/fabric_view_builder.h); tests and the scenario suite build
// one by hand. Analyzers never see counter names: the builder maps every
// driver's spelling (mlx5 `np_cnp_sent`, bnxt `pfc_pri3_rx_duration_us`, IB
// PMA `symbol_error`, ...) onto the fields of PortSignals, in base units per
// second, so one analyzer works on every NIC.
//
// A port is an RDMA device port of a host ("mlx5_2"), a plain netdev of a
// host without RDMA ("eth0"), or a switch front-panel port ("swp3", a netdev
// of a node the topology lists as a switch).
//
//   FabricView view;
//   view.window_seconds = 5;
//   PortView& p = view.AddPort("gpu-003", "mlx5_2");
//   p.netdev = "eth2";
//   p.s.rx_bytes = 38e9;
//   view.Finish();                       // sorts and indexes
//   const PortView* q = view.Find("gpu-003", "eth2");  // by netdev too
//
// Immutable after Finish(): thread-safe for concurrent readers.
//
// Port storage is kept from pass to pass. A view's ports take hundreds of
// megabytes at 200k GPUs (656 bytes a port, two views a pass); freed, they
// go back to the kernel, and the next pass's views fault every page in
// again, zeroed: nearly half of the analysis leader's merge. So the
// storage of a large view that ends or is assigned over (ReservePorts()
// and Finish()'s merge of runs take it) is kept for the next large view:
// at most kSparePortVectors vectors of at least kSparePortsMin ports each,
// process-wide; one that kSpareAgeGives other views ended without taking
// (a size no pass builds any more) is freed.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace fabricdiag::analysis {

inline constexpr int kPriorities = 8;
inline constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();

// True when a signal was reported (not NaN).
inline bool Has(double v) { return !std::isnan(v); }
// The signal, or `fallback` when the port does not report it.
inline double Or(double v, double fallback) { return Has(v) ? v : fallback; }
// A rate an analyzer can act on: present, finite and not negative. An
// infinite or negative mean comes from a counter reset or a broken sample,
// never from the fabric, so it is treated like an absent signal rather than
// raised as a fault.
inline bool Usable(double v) { return std::isfinite(v) && v >= 0; }
// `v` when Usable, else kAbsent.
inline double UsableOrAbsent(double v) { return Usable(v) ? v : kAbsent; }

using PerPriority = std::array<double, kPriorities>;
inline PerPriority AbsentPerPriority() {
  PerPriority p;
  p.fill(kAbsent);
  return p;
}

// Mean rates over the window, per second, in base units. kAbsent (NaN)
// means the port does not report the signal: absent is never 0.
struct PortSignals {
  // --- traffic on the wire, bytes/s. RDMA port_rcv_data x4 for RDMA ports
  // (RoCE bypasses the netdev counters on mlx5), else ethtool *_bytes_phy,
  // else netdev statistics.
  double rx_bytes = kAbsent;
  double tx_bytes = kAbsent;

  // --- link (from the node's inventory, not averaged) -------------------
  // Bytes/s the port runs at now (sysfs `rate`, netdev `speed`); 0 unknown.
  double link_rate = 0;
  // Bytes/s the port should run at: verbs active width x lane speed at full
  // width; 0 unknown.
  double expected_rate = 0;
  // False when the port reports itself down (RDMA state != ACTIVE,
  // operstate != up).
  bool link_up = true;

  // --- PFC, per priority 0..7 -------------------------------------------
  // Seconds paused per second (0..1) from pause-duration counters (mlx5
  // rx_prioN_pause_duration, bnxt pfc_priN_rx_duration_us); kAbsent when
  // the driver has no duration counters.
  PerPriority rx_pause_fraction = AbsentPerPriority();  // pause received
  PerPriority tx_pause_fraction = AbsentPerPriority();  // pause sent
  PerPriority rx_pause_frames = AbsentPerPriority();    // frames/s received
  PerPriority tx_pause_frames = AbsentPerPriority();    // frames/s sent
  // mlx5 tx_pause_storm_{warning,error}_events, events/s: the NIC's own
  // watchdog saw it transmit pause continuously (an error event means it
  // stopped sending pause to protect the fabric).
  double pause_storm_warnings = kAbsent;
  double pause_storm_errors = kAbsent;

  // --- RoCE congestion control, packets/s --------------------------------
  // np_cnp_sent: CNPs this NIC sent as a receiver in reply to CE marks, so
  // traffic towards it is congested (incast / congestion victim).
  double cnp_sent = kAbsent;
  // rp_cnp_handled: CNPs this NIC received as a sender and slowed down for.
  double cnp_handled = kAbsent;
  // np_ecn_marked_roce_packets / rx_ecn_mark: CE-marked packets received.
  double ecn_marked = kAbsent;
  // rx_discards_phy + rx_prioN_discards: packets the port dropped for lack
  // of buffer.
  double rx_discards = kAbsent;
  // rx_out_of_buffer: the host did not post receive buffers fast enough.
  double rx_out_of_buffer = kAbsent;

  // --- link errors, per second --------------------------------------------
  double symbol_errors = kAbsent;      // IB symbol_error, rx_symbol_err_phy
  double rx_errors = kAbsent;          // IB port_rcv_errors, netdev rx_errors
  double crc_errors = kAbsent;         // rx_crc_errors_phy, rx_crc_errors
  double pcs_symbol_errors = kAbsent;  // errors FEC did not correct
  double corrected_bits = kAbsent;     // FEC-corrected bits/s
  double received_bits = kAbsent;      // bits/s (BER denominator)

  // --- flaps, events/s ------------------------------------------------------
  double link_downed = kAbsent;          // IB link_downed
  double link_error_recovery = kAbsent;  // IB link_error_recovery
  double carrier_changes = kAbsent;      // netdev carrier_changes
  double link_down_events = kAbsent;     // ethtool link_down_events_phy

  // --- transport retransmission signals, events/s -------------------------
  double out_of_sequence = kAbsent;        // responder saw a PSN gap
  double packet_seq_err = kAbsent;         // NAK sequence errors received
  double local_ack_timeout_err = kAbsent;  // requester ACK timer expired
  double rnr_nak_retry_err = kAbsent;      // RNR NAKs received
  double retries_exceeded = kAbsent;       // req_*_retries_exceeded: fatal
  double duplicate_request = kAbsent;      // peer retransmitted to us
  double implied_nak_seq_err = kAbsent;
  double adaptive_retrans = kAbsent;  // roce_adp_retrans(+_to)
};

// How the samples behind a port's traffic means lie in the window: a mean
// says how much moved, not whether the samples cover the window evenly.
// straggler_nic needs that to tell a slow NIC from one whose counters were
// read late or stale (docs/findings.md#straggler_nic).
//
// A sample "moved" when the port's traffic counters advanced (RX or TX rate
// above 0). A stale read, a counter that did not advance for an interval,
// is folded into the interval of the next sample that moved: that sample is
// the lump that catches up, and its interval spans both.
struct SampleEvidence {
  // Reports of the node in the window; 0 when the view does not say (a
  // view built by hand), and then the means are taken as evenly sampled.
  int reports = 0;
  // Seconds from the report before the window to its last report.
  double report_span_seconds = 0;
  // Intervals that end at a sample that moved, and the seconds they cover
  // together (from the report before the window to the last sample that
  // moved).
  int intervals = 0;
  double span_seconds = 0;
  double median_interval_seconds = 0;
  double max_interval_seconds = 0;
  // Reports a full window holds at the node's interval; 0 when the view
  // does not say, and then the window's coverage is judged in seconds.
  int expected_reports = 0;
};

// The evidence of n reports: `times` holds n + 1 report times in seconds,
// ascending, times[0] being the report just before the window (the first
// sample's rate covers times[0] to times[1]); `moved[i]` says whether the
// report at times[i + 1] moved. Reports 0 when the sizes do not fit.
SampleEvidence SummarizeSamples(absl::Span<const double> times,
                                const std::vector<bool>& moved);

struct PortView {
  std::string node;
  // The RDMA device ("mlx5_2"), or the netdev for a port without one
  // ("eth0", "swp3"). Layouts and topology name NICs by this.
  std::string device;
  // The port's netdev ("eth2"); equal to `device` for plain netdevs; "" when
  // unknown.
  std::string netdev;
  // The node is a switch in the topology: this is a switch front-panel port.
  bool is_switch_port = false;
  PortSignals s;
  // How the traffic samples lie in the window (reports 0: unknown).
  SampleEvidence samples;
};

// Asks for every cache line of `ports` at once, ahead of their reads (a
// hint: what is read does not change). A sweep that reads a few fields of
// each 656-byte port, scattered over its cache lines, waits for memory at
// each; asked for ahead, the lines come as one stream at full speed.
inline void Prefetch(absl::Span<const PortView> ports) {
  constexpr size_t kCacheLine = 64;
  const char* at = reinterpret_cast<const char*>(ports.data());
  const char* const end =
      reinterpret_cast<const char*>(ports.data() + ports.size());
  for (; at < end; at += kCacheLine) __builtin_prefetch(at);
}

// Port storage kept for the next views (see the top of this file).
inline constexpr size_t kSparePortVectors = 4;
inline constexpr size_t kSparePortsMin = (size_t{8} << 20) / sizeof(PortView);
// A pass ends 2 views (4 on the analysis leader): about 4 passes.
inline constexpr uint64_t kSpareAgeGives = 8;

// How the kept storage served, since the process started.
struct SparePortStats {
  uint64_t kept = 0;      // vectors kept when their view ended
  uint64_t reused = 0;    // views that took a kept vector
  uint64_t dropped = 0;   // kept vectors freed: too old, or too many
  size_t held_bytes = 0;  // capacity held now
};
SparePortStats GetSparePortStats();
// Frees every kept vector now (they count as dropped).
void FreeSparePorts();

class FabricView {
 public:
  FabricView() = default;
  // Gives a large view's port storage back for the next one, as does
  // assigning over a view.
  ~FabricView();
  FabricView(const FabricView&) = default;
  FabricView& operator=(const FabricView& other);
  FabricView(FabricView&&) = default;
  FabricView& operator=(FabricView&& other) noexcept;

  // Length of the window the means were taken over.
  double window_seconds = 5;

  // Appends a port; call Finish() before any lookup. The reference is valid
  // until the next AddPort().
  PortView& AddPort(std::string node, std::string device);
  // Room for `ports` ports before AddPort() has to grow the view (kept
  // storage when there is some).
  void ReservePorts(size_t ports);
  // Empties the view but keeps its storage for the ports added next: a
  // view built again each pass (an analysis shard's) writes over memory it
  // already has, rather than faulting fresh pages in.
  void Clear();

  // Builds the view again in place, for a view made anew each pass from
  // ports that come back in the same order (an analysis shard's, assembled
  // from its chunks): BeginRewrite(), then RewritePort() for each port in
  // place of AddPort(), then Finish(). A port that is the one the view
  // held at its position (same node and device) is reused: its names, its
  // place in the index and its memory kept, its other fields reset (as a
  // new port's). From the first port that is not, the rest are dropped and
  // ports are added as AddPort() adds them; Finish() then indexes the view
  // again. When every port came back, and no more, Finish() has nothing to
  // do: at 1M GPUs a collector's shard views hold ~200,000 ports of 656
  // bytes, which clearing, adding and indexing each pass walked three
  // times. A view not Finish()ed, or holding AppendSorted() runs, is
  // Clear()ed instead. Lookups must wait for Finish().
  void BeginRewrite();
  // The reference is valid until the next RewritePort() or AddPort().
  PortView& RewritePort(absl::string_view node, absl::string_view device,
                        absl::string_view netdev);

  // Sorts ports by (node, device) and builds the indexes. Where the ports
  // came only from AppendSorted(), the sorted runs are merged instead, each
  // port moved once (runs that follow each other are concatenated; ports
  // equal in (node, device) keep the order of their runs); ports added
  // already in order are not sorted again.
  void Finish();

  // For merging views: moves the ports out (the view is left empty), and
  // appends ports already sorted by (node, device) as one run (kept apart
  // until Finish(), which must come before ports() is read). A run is not
  // checked when appended: Finish()'s merge compares each port it moves
  // with the one before, and sorts the view when runs were out of order.
  std::vector<PortView> TakePorts();
  void AppendSorted(std::vector<PortView>&& ports);
  // Moves the ports out as runs (the view is left empty): its
  // AppendSorted() runs not yet Finish()ed, as they were given, or all its
  // ports as one sorted run.
  std::vector<std::vector<PortView>> TakeRuns();

  absl::Span<const PortView> ports() const { return ports_; }
  // The port of `node` whose device or netdev is `name`; null when none.
  const PortView* Find(absl::string_view node, absl::string_view name) const;
  // Find() in two steps, for a caller asking for several names of one
  // node: the node looked up once, then each name among its ports.
  struct NodePorts {
    uint32_t begin = 0;
    uint32_t end = 0;  // begin == end: the node has no port here
  };
  NodePorts PortsOfNode(absl::string_view node) const;
  const PortView* FindIn(NodePorts node, absl::string_view name) const;
  // Every port of `node`, sorted by device; empty when unknown.
  absl::Span<const PortView> PortsOf(absl::string_view node) const;
  // The number of nodes with a port in the view, and each of them with
  // its ports (for FindIn()), in no particular order: a walk over a view's
  // nodes without comparing each port's node name with the one before.
  size_t node_count() const { return nodes_.size(); }
  template <typename F>  // void(absl::string_view node, NodePorts ports)
  void ForEachNode(F&& f) const {
    for (const auto& [node, range] : nodes_) {
      f(absl::string_view(node), NodePorts{range.first, range.second});
    }
  }

 private:
  // Gives ports_ and runs_ to the kept storage; leaves them empty.
  void GiveStorage() noexcept;

  std::vector<PortView> ports_;
  // The AppendSorted() runs not yet merged (ports_ before the first one is
  // its first run); `unsorted_` once a port came from AddPort() or a run
  // was out of order.
  std::vector<std::vector<PortView>> runs_;
  bool unsorted_ = false;
  // node -> [begin, end) in ports_.
  absl::flat_hash_map<std::string, std::pair<uint32_t, uint32_t>> nodes_;
  // Per port of ports_ (built by Finish()): the first bytes of its device
  // and netdev names and their lengths, so Find() compares a node's names
  // in one cache line rather than in ports 656 bytes apart, and does not
  // read the port at all for a name of at most 8 bytes ("mlx5_0", "eth2").
  struct NamePrefixes {
    uint64_t device = 0;
    uint64_t netdev = 0;
    uint32_t device_size = 0;
    uint32_t netdev_size = 0;
  };
  static NamePrefixes PrefixesOf(const PortView& p);
  std::vector<NamePrefixes> prefixes_;
  // Ends a rewrite where it is: the ports not rewritten go, and Finish()
  // indexes the view again.
  void EndRewrite();
  // Between BeginRewrite() and Finish() while every port came back: the
  // ports rewritten so far (the first `rewritten_` of ports_).
  bool rewriting_ = false;
  uint32_t rewritten_ = 0;
};

}  // namespace fabricdiag::analysis
