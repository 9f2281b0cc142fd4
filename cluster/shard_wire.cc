#include "cluster/shard_wire.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/numeric/bits.h"
#include "analysis/signal_slots.h"
#include "counters/meanings.h"

namespace fabricdiag::cluster {
namespace {

using analysis::PortView;
using google::protobuf::RepeatedField;

// A presence word's flags (proto/cluster.proto's ShardPortBlock); bit
// kFirstSlotBit + i says a value of slots[i] follows.
constexpr uint64_t kInView = 1;
constexpr uint64_t kLinkDown = 2;
constexpr uint64_t kNetdevIsDevice = 4;
constexpr uint64_t kSamplesFollow = 8;
constexpr int kFirstSlotBit = 4;
constexpr int kMaxSlots = 64 - kFirstSlotBit;
constexpr int kSampleCounts = 3;
constexpr int kSampleSeconds = 4;

constexpr int kLinkRateSlot = static_cast<int>(counters::Signal::kLinkRate);
constexpr int kExpectedRateSlot =
    static_cast<int>(counters::Signal::kExpectedRate);

// The two link rates, whose unknown is 0, travel as integers.
bool IsRate(int slot) {
  return slot == kLinkRateSlot || slot == kExpectedRateSlot;
}
constexpr double kMaxRate = 9.2e18;  // below 2^63

// `v` as a float; a finite value past the float range is infinite (as
// good as any: no analyzer uses a rate that is not finite).
float ToFloat(double v) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (v > kMax) return std::numeric_limits<float>::infinity();
  if (v < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(v);
}

bool HasEvidence(const analysis::SampleEvidence& e) {
  return e.reports != 0 || e.intervals != 0 || e.expected_reports != 0 ||
         e.report_span_seconds != 0 || e.span_seconds != 0 ||
         e.median_interval_seconds != 0 || e.max_interval_seconds != 0;
}

// The columns of one view of a block.
struct ViewColumns {
  RepeatedField<uint64_t>* present;
  RepeatedField<float>* values;
  RepeatedField<uint64_t>* rates;
  RepeatedField<uint32_t>* counts;
  RepeatedField<float>* seconds;
};

ViewColumns WindowColumns(v1::ShardPortBlock* b) {
  return {b->mutable_window_present(), b->mutable_window_values(),
          b->mutable_window_rates(), b->mutable_window_sample_counts(),
          b->mutable_window_sample_seconds()};
}
ViewColumns RecentColumns(v1::ShardPortBlock* b) {
  return {b->mutable_recent_present(), b->mutable_recent_values(),
          b->mutable_recent_rates(), b->mutable_recent_sample_counts(),
          b->mutable_recent_sample_seconds()};
}

// Appends one port's view; returns an upper bound of the bytes it added.
size_t PutView(const PortView& p, absl::Span<const int> slots, uint64_t flags,
               const ViewColumns& to) {
  uint64_t mask = kInView | flags;
  if (!p.s.link_up) mask |= kLinkDown;
  size_t bytes = 10;  // the presence word, a varint
  for (size_t i = 0; i < slots.size(); ++i) {
    const double v = analysis::SlotOf(p.s, slots[i]);
    if (IsRate(slots[i])) {
      // A speed no link has (negative, infinite, past 2^63) is unknown.
      if (!(v >= 0.5 && v < kMaxRate)) continue;
      to.rates->Add(static_cast<uint64_t>(std::llround(v)));
      bytes += 10;
    } else {
      if (!analysis::Has(v)) continue;
      to.values->Add(ToFloat(v));
      bytes += 4;
    }
    mask |= uint64_t{1} << (kFirstSlotBit + i);
  }
  const analysis::SampleEvidence& e = p.samples;
  if (HasEvidence(e)) {
    mask |= kSamplesFollow;
    for (int c : {e.reports, e.intervals, e.expected_reports}) {
      to.counts->Add(static_cast<uint32_t>(std::max(c, 0)));
    }
    for (double s : {e.report_span_seconds, e.span_seconds,
                     e.median_interval_seconds, e.max_interval_seconds}) {
      to.seconds->Add(ToFloat(s));
    }
    bytes += kSampleCounts * 5 + kSampleSeconds * 4;
  }
  to.present->Add(mask);
  return bytes;
}

// Reads one port's view at the columns' cursors; false when they do not
// fit the mask.
struct ViewCursor {
  int values = 0;
  int rates = 0;
  int counts = 0;
  int seconds = 0;
};

bool ReadCount(uint32_t v, int* out) {
  if (v > static_cast<uint32_t>(std::numeric_limits<int>::max())) return false;
  *out = static_cast<int>(v);
  return true;
}

bool GetView(uint64_t mask, const v1::ShardPortBlock& b, bool recent,
             absl::Span<const int> slots, ViewCursor* at, PortView* p) {
  const RepeatedField<float>& values =
      recent ? b.recent_values() : b.window_values();
  const RepeatedField<uint64_t>& rates =
      recent ? b.recent_rates() : b.window_rates();
  const uint64_t slot_bits = mask >> kFirstSlotBit;
  if (slots.size() < static_cast<size_t>(kMaxSlots) &&
      (slot_bits >> slots.size()) != 0) {
    return false;  // a value of a slot the block does not name
  }
  for (uint64_t bits = slot_bits; bits != 0; bits &= bits - 1) {
    const int slot = slots[absl::countr_zero(bits)];
    if (IsRate(slot)) {
      if (at->rates >= rates.size()) return false;
      analysis::SlotOf(p->s, slot) =
          static_cast<double>(rates.Get(at->rates++));
    } else {
      if (at->values >= values.size()) return false;
      analysis::SlotOf(p->s, slot) = values.Get(at->values++);
    }
  }
  p->s.link_up = (mask & kLinkDown) == 0;
  if ((mask & kSamplesFollow) == 0) return true;
  const RepeatedField<uint32_t>& counts =
      recent ? b.recent_sample_counts() : b.window_sample_counts();
  const RepeatedField<float>& seconds =
      recent ? b.recent_sample_seconds() : b.window_sample_seconds();
  if (at->counts + kSampleCounts > counts.size() ||
      at->seconds + kSampleSeconds > seconds.size()) {
    return false;
  }
  analysis::SampleEvidence& e = p->samples;
  const uint32_t* c = counts.data() + at->counts;
  const float* s = seconds.data() + at->seconds;
  at->counts += kSampleCounts;
  at->seconds += kSampleSeconds;
  e.report_span_seconds = s[0];
  e.span_seconds = s[1];
  e.median_interval_seconds = s[2];
  e.max_interval_seconds = s[3];
  return ReadCount(c[0], &e.reports) && ReadCount(c[1], &e.intervals) &&
         ReadCount(c[2], &e.expected_reports);
}

bool CursorAtEnd(const ViewCursor& at, const v1::ShardPortBlock& b,
                 bool recent) {
  if (recent) {
    return at.values == b.recent_values_size() &&
           at.rates == b.recent_rates_size() &&
           at.counts == b.recent_sample_counts_size() &&
           at.seconds == b.recent_sample_seconds_size();
  }
  return at.values == b.window_values_size() &&
         at.rates == b.window_rates_size() &&
         at.counts == b.window_sample_counts_size() &&
         at.seconds == b.window_sample_seconds_size();
}

}  // namespace

std::vector<v1::ShardChunk> ShardToChunks(const collector::FeatureSlice& slice,
                                          absl::Span<const uint32_t> ports,
                                          analysis::ShardKind kind,
                                          const ShardChunkHeader& header) {
  const absl::Span<const int> slots = analysis::ShardSlots(kind);
  const absl::Span<const PortView> all = slice.window.ports();
  const analysis::FabricView* recent =
      slice.recent.has_value() ? &*slice.recent : nullptr;
  std::vector<v1::ShardChunk> chunks(1);
  size_t bytes = 0;  // of chunks.back()'s ports, at most
  bool any_recent = false;
  size_t i = 0;
  while (i < ports.size() && ports[i] >= all.size()) ++i;
  while (i < ports.size()) {
    const std::string& node = all[ports[i]].node;
    if (bytes >= header.max_chunk_bytes) {
      chunks.emplace_back();
      bytes = 0;
    }
    v1::ShardPortBlock* b = chunks.back().mutable_ports();
    const ViewColumns window_to = WindowColumns(b);
    const ViewColumns recent_to = RecentColumns(b);
    const analysis::FabricView::NodePorts recent_ports =
        recent != nullptr ? recent->PortsOfNode(node)
                          : analysis::FabricView::NodePorts{};
    b->add_node(node);
    b->add_switch_node(all[ports[i]].is_switch_port);
    uint32_t count = 0;
    bytes += node.size() + 8;
    for (; i < ports.size() && ports[i] < all.size() &&
           all[ports[i]].node == node;
         ++i) {
      const PortView& p = all[ports[i]];
      ++count;
      b->add_device(p.device);
      uint64_t flags = 0;
      if (p.netdev == p.device) {
        flags = kNetdevIsDevice;
        b->add_netdev();
      } else {
        b->add_netdev(p.netdev);
      }
      bytes += p.device.size() + b->netdev(b->netdev_size() - 1).size() + 4;
      bytes += PutView(p, slots, flags, window_to);
      const PortView* r =
          recent != nullptr ? recent->FindIn(recent_ports, p.device) : nullptr;
      if (r != nullptr && r->device == p.device) {
        bytes += PutView(*r, slots, 0, recent_to);
        any_recent = true;
      } else {
        recent_to.present->Add(0);  // not in the recent view
        bytes += 1;
      }
    }
    b->add_node_ports(count);
    // Skip indexes past the view.
    while (i < ports.size() && ports[i] >= all.size()) ++i;
  }
  for (size_t c = 0; c < chunks.size(); ++c) {
    v1::ShardChunk& chunk = chunks[c];
    chunk.set_collector_id(std::string(header.collector_id));
    chunk.set_published_unix_nanos(absl::ToUnixNanos(header.published));
    chunk.set_shard(std::string(header.shard));
    chunk.set_chunk(static_cast<uint32_t>(c));
    chunk.set_chunks(static_cast<uint32_t>(chunks.size()));
    chunk.set_window_seconds(slice.window.window_seconds);
    if (recent != nullptr) chunk.set_recent_seconds(recent->window_seconds);
    v1::ShardPortBlock* b = chunk.mutable_ports();
    b->mutable_slots()->Add(slots.begin(), slots.end());
    // No port in the recent view: no column for it.
    if (!any_recent) b->clear_recent_present();
  }
  return chunks;
}

bool AddShardChunk(const v1::ShardChunk& chunk, analysis::FabricView* window,
                   analysis::FabricView* recent) {
  const v1::ShardPortBlock& b = chunk.ports();
  if (b.slots_size() > kMaxSlots) return false;
  std::vector<int> slots;
  slots.reserve(static_cast<size_t>(b.slots_size()));
  for (uint32_t slot : b.slots()) {
    if (slot >= static_cast<uint32_t>(counters::kSignalSlots) ||
        (!slots.empty() && static_cast<int>(slot) <= slots.back())) {
      return false;
    }
    slots.push_back(static_cast<int>(slot));
  }
  const int n = b.device_size();
  if (b.node_ports_size() != b.node_size() ||
      b.switch_node_size() != b.node_size() || b.netdev_size() != n ||
      b.window_present_size() != n ||
      (b.recent_present_size() != 0 && b.recent_present_size() != n)) {
    return false;
  }
  uint64_t total = 0;
  for (uint32_t count : b.node_ports()) total += count;
  if (total != static_cast<uint64_t>(n)) return false;

  const bool read_recent = recent != nullptr && b.recent_present_size() != 0;
  // Each view's ports as one sorted run (the writer's order): the views
  // merge the runs of every chunk without sorting, each port moved once.
  std::vector<PortView> window_run(static_cast<size_t>(n));
  std::vector<PortView> recent_run;
  if (read_recent) recent_run.reserve(static_cast<size_t>(n));
  ViewCursor window_at;
  ViewCursor recent_at;
  int port = 0;
  for (int k = 0; k < b.node_size(); ++k) {
    const std::string& node = b.node(k);
    for (uint32_t j = 0; j < b.node_ports(k); ++j, ++port) {
      const uint64_t mask = b.window_present(port);
      if ((mask & kInView) == 0) return false;
      const std::string& device = b.device(port);
      const std::string& netdev =
          (mask & kNetdevIsDevice) != 0 ? device : b.netdev(port);
      PortView& p = window_run[static_cast<size_t>(port)];
      p.node = node;
      p.device = device;
      p.netdev = netdev;
      p.is_switch_port = b.switch_node(k);
      if (!GetView(mask, b, false, slots, &window_at, &p)) return false;
      if (!read_recent) continue;
      const uint64_t recent_mask = b.recent_present(port);
      if ((recent_mask & kInView) == 0) continue;
      PortView& r = recent_run.emplace_back();
      r.node = node;
      r.device = device;
      r.netdev = netdev;
      r.is_switch_port = b.switch_node(k);
      if (!GetView(recent_mask, b, true, slots, &recent_at, &r)) return false;
    }
  }
  if (!CursorAtEnd(window_at, b, false) ||
      (read_recent && !CursorAtEnd(recent_at, b, true))) {
    return false;
  }
  window->window_seconds = chunk.window_seconds();
  if (!window_run.empty()) window->AppendSorted(std::move(window_run));
  if (read_recent) {
    recent->window_seconds = chunk.recent_seconds();
    if (!recent_run.empty()) recent->AppendSorted(std::move(recent_run));
  }
  return true;
}

}  // namespace fabricdiag::cluster
