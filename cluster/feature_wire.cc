#include "cluster/feature_wire.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/numeric/bits.h"
#include "analysis/signal_slots.h"
#include "counters/meanings.h"

namespace fabricdiag::cluster {
namespace {

using analysis::PerPriority;
using analysis::PortSignals;

// Every optional double of PortSignals with its accessors in
// PortSignalsWire, the message form of a port that collectors of an earlier
// build write (PortBlock slots are counters::Signal's, not this order).
struct OptionalField {
  double PortSignals::*signal;
  bool (v1::PortSignalsWire::*has)() const;
  double (v1::PortSignalsWire::*get)() const;
  void (v1::PortSignalsWire::*set)(double);
};

#define FABRICDIAG_FIELD(name)                                       \
  OptionalField {                                                    \
    &PortSignals::name, &v1::PortSignalsWire::has_##name,            \
        &v1::PortSignalsWire::name, &v1::PortSignalsWire::set_##name \
  }
constexpr OptionalField kOptionalFields[] = {
    FABRICDIAG_FIELD(rx_bytes),
    FABRICDIAG_FIELD(tx_bytes),
    FABRICDIAG_FIELD(pause_storm_warnings),
    FABRICDIAG_FIELD(pause_storm_errors),
    FABRICDIAG_FIELD(cnp_sent),
    FABRICDIAG_FIELD(cnp_handled),
    FABRICDIAG_FIELD(ecn_marked),
    FABRICDIAG_FIELD(rx_discards),
    FABRICDIAG_FIELD(rx_out_of_buffer),
    FABRICDIAG_FIELD(symbol_errors),
    FABRICDIAG_FIELD(rx_errors),
    FABRICDIAG_FIELD(crc_errors),
    FABRICDIAG_FIELD(pcs_symbol_errors),
    FABRICDIAG_FIELD(corrected_bits),
    FABRICDIAG_FIELD(received_bits),
    FABRICDIAG_FIELD(link_downed),
    FABRICDIAG_FIELD(link_error_recovery),
    FABRICDIAG_FIELD(carrier_changes),
    FABRICDIAG_FIELD(link_down_events),
    FABRICDIAG_FIELD(out_of_sequence),
    FABRICDIAG_FIELD(packet_seq_err),
    FABRICDIAG_FIELD(local_ack_timeout_err),
    FABRICDIAG_FIELD(rnr_nak_retry_err),
    FABRICDIAG_FIELD(retries_exceeded),
    FABRICDIAG_FIELD(duplicate_request),
    FABRICDIAG_FIELD(implied_nak_seq_err),
    FABRICDIAG_FIELD(adaptive_retrans),
};
#undef FABRICDIAG_FIELD

// PortSignalsWire is read, no longer written: a signal added to PortSignals
// travels in its PortBlock slot only (analysis/signal_slots.cc checks
// that every field has one), and this table stays as collectors of earlier
// builds wrote it.
static_assert(std::size(kOptionalFields) == 27,
              "PortSignalsWire is frozen: a new signal needs a slot only");
static_assert(sizeof(analysis::SampleEvidence) == 56,
              "SampleEvidence changed: update proto/cluster.proto");

using RepeatedDouble = google::protobuf::RepeatedField<double>;

struct PriorityField {
  PerPriority PortSignals::*signal;
  RepeatedDouble* (v1::PortSignalsWire::*mutable_field)();
  const RepeatedDouble& (v1::PortSignalsWire::*field)() const;
};
constexpr PriorityField kPriorityFields[] = {
    {&PortSignals::rx_pause_fraction,
     &v1::PortSignalsWire::mutable_rx_pause_fraction,
     &v1::PortSignalsWire::rx_pause_fraction},
    {&PortSignals::tx_pause_fraction,
     &v1::PortSignalsWire::mutable_tx_pause_fraction,
     &v1::PortSignalsWire::tx_pause_fraction},
    {&PortSignals::rx_pause_frames,
     &v1::PortSignalsWire::mutable_rx_pause_frames,
     &v1::PortSignalsWire::rx_pause_frames},
    {&PortSignals::tx_pause_frames,
     &v1::PortSignalsWire::mutable_tx_pause_frames,
     &v1::PortSignalsWire::tx_pause_frames},
};

// --- v1::PortBlock: a node's ports as columns --------------------------
//
// A port's signals in a view are a mask and the values of the slots it sets
// (proto/cluster.proto, PortBlock): the slots are counters::Signal's, read
// and written through analysis::SlotOf.
constexpr int kRateSlot = static_cast<int>(counters::Signal::kLinkRate);
static_assert(static_cast<int>(counters::Signal::kExpectedRate) ==
              kRateSlot + 1);
constexpr int kSlots = counters::kSignalSlots;
static_assert(kSlots == 61, "the slots are proto/cluster.proto's PortBlock's");
constexpr uint64_t kLinkDownBit = uint64_t{1} << 61;
constexpr uint64_t kInViewBit = uint64_t{1} << 63;
// The bits that carry a value: every slot, and 62 for the next one.
constexpr uint64_t kValueBits = ~(kLinkDownBit | kInViewBit);
// SampleEvidence's fields in a view's `*_samples`.
constexpr int kSampleValues = 7;

// Whether a slot holds a reported value: not NaN, but for the two rates,
// whose unknown is 0: anything else.
bool Reported(double v, int slot) {
  if (slot == kRateSlot || slot == kRateSlot + 1) return v != 0;
  return analysis::Has(v);
}

// Appends one port's view to a block's columns.
void PortToBlock(const analysis::PortView& p,
                 google::protobuf::RepeatedField<uint64_t>* present,
                 RepeatedDouble* values, RepeatedDouble* samples) {
  uint64_t mask = kInViewBit;
  for (int slot = 0; slot < kSlots; ++slot) {
    const double v = analysis::SlotOf(p.s, slot);
    if (!Reported(v, slot)) continue;
    mask |= uint64_t{1} << slot;
    values->Add(v);
  }
  if (!p.s.link_up) mask |= kLinkDownBit;
  present->Add(mask);
  const analysis::SampleEvidence& e = p.samples;
  for (double v : {static_cast<double>(e.reports), e.report_span_seconds,
                   static_cast<double>(e.intervals), e.span_seconds,
                   e.median_interval_seconds, e.max_interval_seconds,
                   static_cast<double>(e.expected_reports)}) {
    samples->Add(v);
  }
}

// A count carried as a double: false unless a whole, non-negative int.
bool CountFromWire(double v, int* out) {
  if (!(v >= 0 && v <= 2147483647.0) || v != static_cast<int>(v)) {
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

// Reads one port's view from a block's columns at `*next_value` and
// `samples` (7 doubles); false when the columns are inconsistent.
bool PortFromBlock(uint64_t mask, const RepeatedDouble& values, int* next_value,
                   const double* samples, analysis::PortView* port) {
  for (uint64_t bits = mask & kValueBits; bits != 0; bits &= bits - 1) {
    if (*next_value >= values.size()) return false;
    const double v = values.Get((*next_value)++);
    const int slot = absl::countr_zero(bits);
    if (slot < kSlots) analysis::SlotOf(port->s, slot) = v;
  }
  port->s.link_up = (mask & kLinkDownBit) == 0;
  analysis::SampleEvidence& e = port->samples;
  e.report_span_seconds = samples[1];
  e.span_seconds = samples[3];
  e.median_interval_seconds = samples[4];
  e.max_interval_seconds = samples[5];
  return CountFromWire(samples[0], &e.reports) &&
         CountFromWire(samples[2], &e.intervals) &&
         CountFromWire(samples[6], &e.expected_reports);
}

PortSignals SignalsFromWire(const v1::PortSignalsWire& w) {
  PortSignals s;
  for (const OptionalField& f : kOptionalFields) {
    if ((w.*f.has)()) s.*f.signal = (w.*f.get)();
  }
  s.link_rate = w.link_rate();
  s.expected_rate = w.expected_rate();
  s.link_up = !w.link_down();
  for (const PriorityField& f : kPriorityFields) {
    const RepeatedDouble& in = (w.*f.field)();
    PerPriority& p = s.*f.signal;
    // A message from a build with more priorities keeps the first 8.
    for (int i = 0; i < std::min(in.size(), analysis::kPriorities); ++i) {
      p[static_cast<size_t>(i)] = in.Get(i);
    }
  }
  return s;
}

analysis::SampleEvidence EvidenceFromWire(const v1::SampleEvidenceWire& w) {
  analysis::SampleEvidence e;
  e.reports = w.reports();
  e.expected_reports = w.expected_reports();
  e.report_span_seconds = w.report_span_seconds();
  e.intervals = w.intervals();
  e.span_seconds = w.span_seconds();
  e.median_interval_seconds = w.median_interval_seconds();
  e.max_interval_seconds = w.max_interval_seconds();
  return e;
}

// What one node contributes to a chunk.
struct NodeParts {
  const collector::NodeFacts* facts = nullptr;
  absl::Span<const analysis::PortView> window;
  absl::Span<const analysis::PortView> recent;
};

// A node's liveness facts into `w`: v1::NodeFeatures or
// v1::NodeFeaturesFacts (the same field numbers).
template <typename NodeMessage>
void FactsToWire(const collector::NodeFacts& facts, NodeMessage* w) {
  const analysis::NodeLiveness& l = facts.liveness;
  w->set_has_liveness(true);
  if (l.ever_reported && l.last_report != absl::InfinitePast()) {
    w->set_last_report_unix_nanos(absl::ToUnixNanos(l.last_report));
  }
  w->set_interval_nanos(absl::ToInt64Nanoseconds(l.interval));
  if (facts.handed_off != absl::InfinitePast()) {
    w->set_handed_off_unix_nanos(absl::ToUnixNanos(facts.handed_off));
  }
}

// Nodes' messages, in order, into chunks of whole nodes of at most
// `max_chunk_bytes` each (but for a single node larger than that).
// `ChunkMessage`: v1::FeatureChunk or v1::FeatureChunkFacts.
template <typename ChunkMessage>
class ChunkCutter {
 public:
  explicit ChunkCutter(size_t max_chunk_bytes)
      : chunks_(1), max_bytes_(max_chunk_bytes) {}

  template <typename NodeMessage>
  void Add(NodeMessage&& wire) {
    // The node's bytes, its tag and length prefix.
    const size_t size = wire.ByteSizeLong() + 6;
    if (bytes_ > 0 && bytes_ + size > max_bytes_) {
      chunks_.emplace_back();
      bytes_ = 0;
    }
    *chunks_.back().add_nodes() = std::forward<NodeMessage>(wire);
    bytes_ += size;
  }

  // At least one chunk, each with its header.
  std::vector<ChunkMessage> Finish(absl::string_view collector_id,
                                   absl::Time published) && {
    for (size_t i = 0; i < chunks_.size(); ++i) {
      ChunkMessage& c = chunks_[i];
      c.set_collector_id(std::string(collector_id));
      c.set_published_unix_nanos(absl::ToUnixNanos(published));
      c.set_chunk(static_cast<uint32_t>(i));
      c.set_chunks(static_cast<uint32_t>(chunks_.size()));
    }
    return std::move(chunks_);
  }

 private:
  std::vector<ChunkMessage> chunks_;
  const size_t max_bytes_;
  size_t bytes_ = 0;  // of chunks_.back()'s nodes
};

void NodeToWire(absl::string_view node, const NodeParts& parts,
                v1::NodeFeatures* w) {
  w->set_node(std::string(node));
  if (parts.facts != nullptr) FactsToWire(*parts.facts, w);
  if (parts.window.empty()) return;
  v1::PortBlock* block = w->mutable_port_block();
  const int n = static_cast<int>(parts.window.size());
  block->mutable_device()->Reserve(n);
  block->mutable_netdev()->Reserve(n);
  block->mutable_is_switch_port()->Reserve(n);
  block->mutable_window_present()->Reserve(n);
  block->mutable_window_samples()->Reserve(n * kSampleValues);
  // Both views are sorted by device: one pass pairs them up.
  size_t r = 0;
  for (const analysis::PortView& p : parts.window) {
    block->add_device(p.device);
    block->add_netdev(p.netdev);
    block->add_is_switch_port(p.is_switch_port);
    PortToBlock(p, block->mutable_window_present(),
                block->mutable_window_values(),
                block->mutable_window_samples());
    while (r < parts.recent.size() && parts.recent[r].device < p.device) {
      ++r;
    }
    if (r < parts.recent.size() && parts.recent[r].device == p.device) {
      PortToBlock(parts.recent[r], block->mutable_recent_present(),
                  block->mutable_recent_values(),
                  block->mutable_recent_samples());
    } else {
      block->add_recent_present(0);  // not in the recent view
    }
  }
  // No port in the recent view: no column for it.
  if (block->recent_samples_size() == 0) block->clear_recent_present();
}

}  // namespace

std::vector<v1::FeatureChunk> SliceToChunks(
    const collector::FeatureSlice& slice, absl::string_view collector_id,
    absl::Time published, size_t max_chunk_bytes) {
  absl::btree_map<absl::string_view, NodeParts> nodes;
  for (const collector::NodeFacts& n : slice.nodes) {
    nodes[n.liveness.node].facts = &n;
  }
  // Each node's ports, looked up once per node: a view's ports are sorted
  // by node.
  const auto ports_of =
      [&nodes](const analysis::FabricView& view,
               absl::Span<const analysis::PortView> NodeParts::*part) {
        const std::string* last = nullptr;
        for (const analysis::PortView& p : view.ports()) {
          if (last != nullptr && p.node == *last) continue;
          last = &p.node;
          nodes[p.node].*part = view.PortsOf(p.node);
        }
      };
  ports_of(slice.window, &NodeParts::window);
  if (slice.recent.has_value()) ports_of(*slice.recent, &NodeParts::recent);
  ChunkCutter<v1::FeatureChunk> cutter(max_chunk_bytes);
  for (const auto& [node, parts] : nodes) {
    v1::NodeFeatures wire;
    NodeToWire(node, parts, &wire);
    cutter.Add(std::move(wire));
  }
  std::vector<v1::FeatureChunk> chunks =
      std::move(cutter).Finish(collector_id, published);
  for (v1::FeatureChunk& c : chunks) {
    c.set_window_seconds(slice.window.window_seconds);
    if (slice.recent.has_value()) {
      c.set_recent_seconds(slice.recent->window_seconds);
    }
  }
  return chunks;
}

std::vector<v1::FeatureChunkFacts> SliceToLivenessChunks(
    const collector::FeatureSlice& slice, absl::string_view collector_id,
    absl::Time published, size_t max_chunk_bytes) {
  std::vector<const collector::NodeFacts*> facts;
  facts.reserve(slice.nodes.size());
  for (const collector::NodeFacts& n : slice.nodes) facts.push_back(&n);
  // A collector's own slice comes sorted; one sweep says so.
  const auto by_name = [](const auto* a, const auto* b) {
    return a->liveness.node < b->liveness.node;
  };
  if (!std::is_sorted(facts.begin(), facts.end(), by_name)) {
    std::sort(facts.begin(), facts.end(), by_name);
  }
  ChunkCutter<v1::FeatureChunkFacts> cutter(max_chunk_bytes);
  for (const collector::NodeFacts* n : facts) {
    v1::NodeFeaturesFacts wire;
    wire.set_node(n->liveness.node);
    FactsToWire(*n, &wire);
    cutter.Add(std::move(wire));
  }
  return std::move(cutter).Finish(collector_id, published);
}

namespace {

// The liveness `n` carries, if any.
// `NodeMessage`: v1::NodeFeatures or v1::NodeFeaturesFacts.
template <typename NodeMessage>
bool FactsFromWire(const NodeMessage& n, collector::NodeFacts* facts) {
  if (!n.has_liveness()) return false;
  facts->liveness.node = n.node();
  facts->liveness.ever_reported = n.last_report_unix_nanos() != 0;
  if (facts->liveness.ever_reported) {
    facts->liveness.last_report =
        absl::FromUnixNanos(n.last_report_unix_nanos());
  }
  facts->liveness.interval = absl::Nanoseconds(n.interval_nanos());
  if (n.handed_off_unix_nanos() != 0) {
    facts->handed_off = absl::FromUnixNanos(n.handed_off_unix_nanos());
  }
  return true;
}

}  // namespace

namespace {

template <typename ChunkMessage>
std::vector<collector::NodeFacts> FactsOfNodes(const ChunkMessage& chunk) {
  std::vector<collector::NodeFacts> nodes;
  for (const auto& n : chunk.nodes()) {
    collector::NodeFacts facts;
    if (FactsFromWire(n, &facts)) nodes.push_back(std::move(facts));
  }
  return nodes;
}

}  // namespace

std::vector<collector::NodeFacts> NodesOfChunk(const v1::FeatureChunk& chunk) {
  return FactsOfNodes(chunk);
}

std::vector<collector::NodeFacts> NodesOfChunk(
    const v1::FeatureChunkFacts& chunk) {
  return FactsOfNodes(chunk);
}

namespace {

// The 7 sample values of the port-th port of a `*_samples` column.
const double* SamplesOf(const RepeatedDouble& column, int port) {
  return column.data() + static_cast<ptrdiff_t>(port) * kSampleValues;
}

// Appends the ports of `node`'s block to the slice's views; false when the
// block's columns do not fit together.
bool BlockToSlice(const std::string& node, const v1::PortBlock& b,
                  collector::FeatureSlice* slice) {
  const int n = b.device_size();
  if (b.netdev_size() != n || b.is_switch_port_size() != n ||
      b.window_present_size() != n ||
      b.window_samples_size() != n * kSampleValues) {
    return false;
  }
  // A slice without a recent view skips the block's recent columns.
  const bool recent = slice->recent.has_value() && b.recent_present_size() != 0;
  if (recent && b.recent_present_size() != n) return false;
  int window_next = 0;
  int recent_next = 0;
  int recent_ports = 0;
  for (int i = 0; i < n; ++i) {
    analysis::PortView& port = slice->window.AddPort(node, b.device(i));
    port.netdev = b.netdev(i);
    port.is_switch_port = b.is_switch_port(i);
    if (!PortFromBlock(b.window_present(i), b.window_values(), &window_next,
                       SamplesOf(b.window_samples(), i), &port)) {
      return false;
    }
    if (!recent || (b.recent_present(i) & kInViewBit) == 0) continue;
    if ((recent_ports + 1) * kSampleValues > b.recent_samples_size()) {
      return false;
    }
    analysis::PortView& r = slice->recent->AddPort(node, b.device(i));
    r.netdev = b.netdev(i);
    r.is_switch_port = b.is_switch_port(i);
    if (!PortFromBlock(b.recent_present(i), b.recent_values(), &recent_next,
                       SamplesOf(b.recent_samples(), recent_ports), &r)) {
      return false;
    }
    ++recent_ports;
  }
  // Every value read, none left over.
  return window_next == b.window_values_size() &&
         (!recent || (recent_next == b.recent_values_size() &&
                      recent_ports * kSampleValues == b.recent_samples_size()));
}

}  // namespace

bool AddChunkToSlice(const v1::FeatureChunk& chunk,
                     collector::FeatureSlice* slice) {
  slice->window.window_seconds = chunk.window_seconds();
  if (chunk.recent_seconds() > 0) {
    if (!slice->recent.has_value()) slice->recent.emplace();
    slice->recent->window_seconds = chunk.recent_seconds();
  }
  size_t ports = 0;
  for (const v1::NodeFeatures& n : chunk.nodes()) {
    ports += static_cast<size_t>(n.ports_size() + n.port_block().device_size());
  }
  slice->window.ReservePorts(slice->window.ports().size() + ports);
  if (slice->recent.has_value()) {
    slice->recent->ReservePorts(slice->recent->ports().size() + ports);
  }
  for (const v1::NodeFeatures& n : chunk.nodes()) {
    collector::NodeFacts facts;
    if (FactsFromWire(n, &facts)) slice->nodes.push_back(std::move(facts));
    // Ports as a message each, from a collector of an earlier build.
    for (const v1::PortFeatures& p : n.ports()) {
      const auto add = [&](analysis::FabricView& view,
                           const v1::PortSignalsWire& s,
                           const v1::SampleEvidenceWire& e) {
        analysis::PortView& port = view.AddPort(n.node(), p.device());
        port.netdev = p.netdev();
        port.is_switch_port = p.is_switch_port();
        port.s = SignalsFromWire(s);
        port.samples = EvidenceFromWire(e);
      };
      add(slice->window, p.window(), p.window_samples());
      if (slice->recent.has_value() && p.has_recent()) {
        add(*slice->recent, p.recent(), p.recent_samples());
      }
    }
    if (n.has_port_block() && !BlockToSlice(n.node(), n.port_block(), slice)) {
      return false;
    }
  }
  return true;
}

void FinishSlice(collector::FeatureSlice* slice) {
  slice->window.Finish();
  if (slice->recent.has_value()) slice->recent->Finish();
}

}  // namespace fabricdiag::cluster
