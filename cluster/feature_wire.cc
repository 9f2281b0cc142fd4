#include "cluster/feature_wire.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#include "absl/container/btree_map.h"

namespace fabricdiag::cluster {
namespace {

using analysis::PerPriority;
using analysis::PortSignals;

// Every optional double of PortSignals with its wire accessors, in one
// table so that both directions stay in step.
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

// A field added to PortSignals or SampleEvidence needs a wire field and a
// row above: the sizes catch a forgotten one.
static_assert(sizeof(PortSignals) ==
                  sizeof(double) * (2 + 1 + 4 * analysis::kPriorities +
                                    std::size(kOptionalFields)),
              "PortSignals changed: update proto/cluster.proto and the table");
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

void SignalsToWire(const PortSignals& s, v1::PortSignalsWire* w) {
  for (const OptionalField& f : kOptionalFields) {
    if (analysis::Has(s.*f.signal)) (w->*f.set)(s.*f.signal);
  }
  w->set_link_rate(s.link_rate);
  w->set_expected_rate(s.expected_rate);
  w->set_link_down(!s.link_up);
  for (const PriorityField& f : kPriorityFields) {
    const PerPriority& p = s.*f.signal;
    if (std::none_of(p.begin(), p.end(), analysis::Has)) continue;
    RepeatedDouble* out = (w->*f.mutable_field)();
    out->Reserve(analysis::kPriorities);
    for (double v : p) out->Add(v);
  }
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

void EvidenceToWire(const analysis::SampleEvidence& e,
                    v1::SampleEvidenceWire* w) {
  w->set_reports(e.reports);
  w->set_expected_reports(e.expected_reports);
  w->set_report_span_seconds(e.report_span_seconds);
  w->set_intervals(e.intervals);
  w->set_span_seconds(e.span_seconds);
  w->set_median_interval_seconds(e.median_interval_seconds);
  w->set_max_interval_seconds(e.max_interval_seconds);
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

void NodeToWire(absl::string_view node, const NodeParts& parts,
                v1::NodeFeatures* w) {
  w->set_node(std::string(node));
  if (parts.facts != nullptr) {
    const analysis::NodeLiveness& l = parts.facts->liveness;
    w->set_has_liveness(true);
    if (l.ever_reported && l.last_report != absl::InfinitePast()) {
      w->set_last_report_unix_nanos(absl::ToUnixNanos(l.last_report));
    }
    w->set_interval_nanos(absl::ToInt64Nanoseconds(l.interval));
    w->set_boot_id(parts.facts->boot_id);
  }
  // Both views are sorted by device: one pass pairs them up.
  size_t r = 0;
  for (const analysis::PortView& p : parts.window) {
    v1::PortFeatures* out = w->add_ports();
    out->set_device(p.device);
    out->set_netdev(p.netdev);
    out->set_is_switch_port(p.is_switch_port);
    SignalsToWire(p.s, out->mutable_window());
    EvidenceToWire(p.samples, out->mutable_window_samples());
    while (r < parts.recent.size() && parts.recent[r].device < p.device) {
      ++r;
    }
    if (r < parts.recent.size() && parts.recent[r].device == p.device) {
      SignalsToWire(parts.recent[r].s, out->mutable_recent());
      EvidenceToWire(parts.recent[r].samples, out->mutable_recent_samples());
    }
  }
}

}  // namespace

std::vector<v1::FeatureChunk> SliceToChunks(
    const collector::FeatureSlice& slice, absl::string_view collector_id,
    absl::Time published, size_t max_chunk_bytes) {
  absl::btree_map<absl::string_view, NodeParts> nodes;
  for (const collector::NodeFacts& n : slice.nodes) {
    nodes[n.liveness.node].facts = &n;
  }
  for (const analysis::PortView& p : slice.window.ports()) {
    nodes[p.node].window = slice.window.PortsOf(p.node);
  }
  if (slice.recent.has_value()) {
    for (const analysis::PortView& p : slice.recent->ports()) {
      nodes[p.node].recent = slice.recent->PortsOf(p.node);
    }
  }
  std::vector<v1::FeatureChunk> chunks(1);
  size_t bytes = 0;  // of chunks.back()'s nodes
  for (const auto& [node, parts] : nodes) {
    v1::NodeFeatures wire;
    NodeToWire(node, parts, &wire);
    // The node's bytes, its tag and length prefix.
    const size_t size = wire.ByteSizeLong() + 6;
    if (bytes > 0 && bytes + size > max_chunk_bytes) {
      chunks.emplace_back();
      bytes = 0;
    }
    *chunks.back().add_nodes() = std::move(wire);
    bytes += size;
  }
  for (size_t i = 0; i < chunks.size(); ++i) {
    v1::FeatureChunk& c = chunks[i];
    c.set_collector_id(std::string(collector_id));
    c.set_published_unix_nanos(absl::ToUnixNanos(published));
    c.set_chunk(static_cast<uint32_t>(i));
    c.set_chunks(static_cast<uint32_t>(chunks.size()));
    c.set_window_seconds(slice.window.window_seconds);
    if (slice.recent.has_value()) {
      c.set_recent_seconds(slice.recent->window_seconds);
    }
  }
  return chunks;
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
  facts->boot_id = n.boot_id();
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

void AddChunkToSlice(const v1::FeatureChunk& chunk,
                     collector::FeatureSlice* slice) {
  slice->window.window_seconds = chunk.window_seconds();
  if (chunk.recent_seconds() > 0) {
    if (!slice->recent.has_value()) slice->recent.emplace();
    slice->recent->window_seconds = chunk.recent_seconds();
  }
  for (const v1::NodeFeatures& n : chunk.nodes()) {
    collector::NodeFacts facts;
    if (FactsFromWire(n, &facts)) slice->nodes.push_back(std::move(facts));
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
  }
}

void FinishSlice(collector::FeatureSlice* slice) {
  slice->window.Finish();
  if (slice->recent.has_value()) slice->recent->Finish();
}

}  // namespace fabricdiag::cluster
