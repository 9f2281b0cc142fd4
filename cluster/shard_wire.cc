#include "cluster/shard_wire.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/numeric/bits.h"
#include "analysis/signal_slots.h"
#include "counters/meanings.h"
#include "google/protobuf/arena.h"

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

// A growing run of bytes in protobuf's wire format whose appends check
// their room once, not byte by byte. Cleared, it keeps its storage.
class WireBuffer {
 public:
  static constexpr size_t kMaxVarint = 10;

  size_t size() const { return size_; }
  absl::string_view bytes() const { return {data_.data(), size_}; }
  void clear() { size_ = 0; }

  void Varint(uint64_t v) {
    char* at = Room(kMaxVarint);
    char* const start = at;
    while (v >= 0x80) {
      *at++ = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    *at++ = static_cast<char>(v);
    size_ += static_cast<size_t>(at - start);
  }
  void Float(float f) {
    // A fixed32: little-endian.
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    char* const at = Room(sizeof(bits));
    for (size_t i = 0; i < sizeof(bits); ++i) {
      at[i] = static_cast<char>(bits >> (8 * i));
    }
    size_ += sizeof(bits);
  }
  void Byte(char c) {
    *Room(1) = c;
    ++size_;
  }
  void Append(absl::string_view s) {
    if (s.empty()) return;  // its data() may be null, which memcpy refuses
    std::memcpy(Room(s.size()), s.data(), s.size());
    size_ += s.size();
  }
  // A length-delimited field: its tag (one byte: fields 1-15), length
  // and bytes.
  void String(char tag, absl::string_view s) {
    Byte(tag);
    Varint(s.size());
    Append(s);
  }

 private:
  // Where `n` more bytes go (not yet counted in size_).
  char* Room(size_t n) {
    if (data_.size() - size_ < n) {
      data_.resize(std::max({data_.size() * 2, size_ + n, size_t{64}}));
    }
    return data_.data() + size_;
  }

  std::vector<char> data_;
  size_t size_ = 0;
};

// A field's tag of one byte (fields 1-15), as proto/cluster.proto numbers
// them: field number << 3 | wire type.
constexpr char Tag(int field, int wire_type) {
  return static_cast<char>(field << 3 | wire_type);
}
constexpr int kVarintType = 0;
constexpr int kFixed64Type = 1;
constexpr int kLengthType = 2;  // strings, messages and packed fields

// ShardPortBlock's.
constexpr char kSlotsTag = Tag(1, kLengthType);
constexpr char kNodeTag = Tag(2, kLengthType);
constexpr char kNodePortsTag = Tag(3, kLengthType);
constexpr char kSwitchNodeTag = Tag(4, kLengthType);
constexpr char kDeviceTag = Tag(5, kLengthType);
constexpr char kNetdevTag = Tag(6, kLengthType);
constexpr char kWindowPresentTag = Tag(7, kLengthType);
constexpr char kWindowValuesTag = Tag(8, kLengthType);
constexpr char kWindowCountsTag = Tag(9, kLengthType);
constexpr char kWindowSecondsTag = Tag(10, kLengthType);
constexpr char kRecentPresentTag = Tag(11, kLengthType);
constexpr char kRecentValuesTag = Tag(12, kLengthType);
constexpr char kRecentCountsTag = Tag(13, kLengthType);
constexpr char kRecentSecondsTag = Tag(14, kLengthType);
constexpr char kWindowRatesTag = Tag(15, kLengthType);
// Field 16's tag, (16 << 3 | 2) as a varint, takes two bytes.
constexpr char kRecentRatesTag[] = {static_cast<char>(0x82), 0x01};

// ShardChunk's.
constexpr char kCollectorIdTag = Tag(1, kLengthType);
constexpr char kPublishedTag = Tag(2, kVarintType);
constexpr char kShardTag = Tag(3, kLengthType);
constexpr char kChunkTag = Tag(4, kVarintType);
constexpr char kChunksTag = Tag(5, kVarintType);
constexpr char kWindowSecondsOfChunkTag = Tag(6, kFixed64Type);
constexpr char kRecentSecondsOfChunkTag = Tag(7, kFixed64Type);
constexpr char kPortsTag = Tag(8, kLengthType);

// The most a ShardChunk's fields before its block's bytes take, besides
// the collector's and the shard's names: each field's tag and a varint (a
// string's length, the time, the two counts, the block's length) or a
// double.
constexpr size_t kMaxHeaderBytes =
    6 * (1 + WireBuffer::kMaxVarint) + 2 * (1 + sizeof(double));

// Where each slot a shard of one kind reads lies in a PortSignals, and
// which of them are link rates: a port's values are read at their offsets,
// without a call per slot.
struct SlotPlan {
  std::vector<size_t> offsets;
  uint64_t rate_bits = 0;   // bit i: slot i is a link rate
  std::string slots_field;  // a block's `slots`, tag and length first
};

SlotPlan PlanFor(absl::Span<const int> slots) {
  SlotPlan plan;
  analysis::PortSignals probe;
  const char* base = reinterpret_cast<const char*>(&probe);
  plan.offsets.reserve(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    plan.offsets.push_back(static_cast<size_t>(
        reinterpret_cast<const char*>(&analysis::SlotOf(probe, slots[i])) -
        base));
    if (IsRate(slots[i])) plan.rate_bits |= uint64_t{1} << i;
  }
  WireBuffer packed;
  for (int slot : slots) packed.Varint(static_cast<uint32_t>(slot));
  WireBuffer field;
  field.String(kSlotsTag, packed.bytes());
  plan.slots_field = std::string(field.bytes());
  return plan;
}

const SlotPlan& PlanOf(analysis::ShardKind kind) {
  static const SlotPlan* const jobs =
      new SlotPlan(PlanFor(analysis::ShardSlots(analysis::ShardKind::kJobs)));
  static const SlotPlan* const switches = new SlotPlan(
      PlanFor(analysis::ShardSlots(analysis::ShardKind::kSwitches)));
  return kind == analysis::ShardKind::kJobs ? *jobs : *switches;
}

// The columns of one view of a block being written.
struct ViewColumns {
  WireBuffer present;
  WireBuffer values;
  WireBuffer rates;
  WireBuffer counts;
  WireBuffer seconds;

  void clear() {
    for (WireBuffer* b : {&present, &values, &rates, &counts, &seconds}) {
      b->clear();
    }
  }
};

// Appends one port's view.
void PutView(const PortView& p, const SlotPlan& plan, uint64_t flags,
             ViewColumns* to) {
  uint64_t mask = kInView | flags;
  if (!p.s.link_up) mask |= kLinkDown;
  const char* base = reinterpret_cast<const char*>(&p.s);
  for (size_t i = 0; i < plan.offsets.size(); ++i) {
    double v;
    std::memcpy(&v, base + plan.offsets[i], sizeof(v));
    if ((plan.rate_bits >> i) & 1) {
      // A speed no link has (negative, infinite, past 2^63) is unknown.
      if (!(v >= 0.5 && v < kMaxRate)) continue;
      to->rates.Varint(static_cast<uint64_t>(std::llround(v)));
    } else {
      if (!analysis::Has(v)) continue;
      to->values.Float(ToFloat(v));
    }
    mask |= uint64_t{1} << (kFirstSlotBit + i);
  }
  const analysis::SampleEvidence& e = p.samples;
  if (HasEvidence(e)) {
    mask |= kSamplesFollow;
    for (int c : {e.reports, e.intervals, e.expected_reports}) {
      to->counts.Varint(static_cast<uint32_t>(std::max(c, 0)));
    }
    for (double s : {e.report_span_seconds, e.span_seconds,
                     e.median_interval_seconds, e.max_interval_seconds}) {
      to->seconds.Float(ToFloat(s));
    }
  }
  to->present.Varint(mask);
}

// A block's layout, found sound by CheckBlock(): each port can then be
// read without a check.
struct BlockLayout {
  std::vector<int> slots;
  // Bit i: slots[i] is a link rate (its values are in `*_rates`).
  uint64_t rate_bits = 0;
  bool has_recent = false;
};

// The columns of one view of a block, for reading.
struct ReadColumns {
  const uint64_t* present;
  const float* values;
  const uint64_t* rates;
  const uint32_t* counts;
  const float* seconds;
};

ReadColumns ReadWindow(const v1::ShardPortBlock& b) {
  return {b.window_present().data(), b.window_values().data(),
          b.window_rates().data(), b.window_sample_counts().data(),
          b.window_sample_seconds().data()};
}
ReadColumns ReadRecent(const v1::ShardPortBlock& b) {
  return {b.recent_present().data(), b.recent_values().data(),
          b.recent_rates().data(), b.recent_sample_counts().data(),
          b.recent_sample_seconds().data()};
}

// Where the next port's values of a view are in its columns.
struct ViewCursor {
  int values = 0;
  int rates = 0;
  int counts = 0;
  int seconds = 0;
};

// Adds what `mask` says one port has to `at`; false when a value of a slot
// the block does not name is said to follow.
bool CountView(uint64_t mask, const BlockLayout& l, ViewCursor* at) {
  const uint64_t slot_bits = mask >> kFirstSlotBit;
  if (l.slots.size() < static_cast<size_t>(kMaxSlots) &&
      (slot_bits >> l.slots.size()) != 0) {
    return false;
  }
  at->rates += absl::popcount(slot_bits & l.rate_bits);
  at->values += absl::popcount(slot_bits & ~l.rate_bits);
  if ((mask & kSamplesFollow) != 0) {
    at->counts += kSampleCounts;
    at->seconds += kSampleSeconds;
  }
  return true;
}

bool CountsFit(const RepeatedField<uint32_t>& counts) {
  return std::all_of(counts.begin(), counts.end(), [](uint32_t c) {
    return c <= static_cast<uint32_t>(std::numeric_limits<int>::max());
  });
}

// Whether `b`'s columns fit together (the node and port columns, each
// presence word with the values that follow it, every count an int), so
// that ReadView() never reads past a column; its layout in *out.
bool CheckBlock(const v1::ShardPortBlock& b, BlockLayout* out) {
  if (b.slots_size() > kMaxSlots) return false;
  out->slots.clear();
  out->slots.reserve(static_cast<size_t>(b.slots_size()));
  out->rate_bits = 0;
  for (uint32_t slot : b.slots()) {
    if (slot >= static_cast<uint32_t>(counters::kSignalSlots) ||
        (!out->slots.empty() && static_cast<int>(slot) <= out->slots.back())) {
      return false;
    }
    if (IsRate(static_cast<int>(slot))) {
      out->rate_bits |= uint64_t{1} << out->slots.size();
    }
    out->slots.push_back(static_cast<int>(slot));
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
  out->has_recent = b.recent_present_size() != 0;
  ViewCursor window;
  for (uint64_t mask : b.window_present()) {
    if ((mask & kInView) == 0 || !CountView(mask, *out, &window)) return false;
  }
  ViewCursor recent;
  for (uint64_t mask : b.recent_present()) {
    if ((mask & kInView) != 0 && !CountView(mask, *out, &recent)) return false;
  }
  return window.values == b.window_values_size() &&
         window.rates == b.window_rates_size() &&
         window.counts == b.window_sample_counts_size() &&
         window.seconds == b.window_sample_seconds_size() &&
         recent.values == b.recent_values_size() &&
         recent.rates == b.recent_rates_size() &&
         recent.counts == b.recent_sample_counts_size() &&
         recent.seconds == b.recent_sample_seconds_size() &&
         CountsFit(b.window_sample_counts()) &&
         CountsFit(b.recent_sample_counts());
}

// Reads one port's view (presence word `mask`) at the cursor of columns
// CheckBlock() found sound.
void ReadView(uint64_t mask, const ReadColumns& c, const BlockLayout& l,
              ViewCursor* at, PortView* p) {
  for (uint64_t bits = mask >> kFirstSlotBit; bits != 0; bits &= bits - 1) {
    const int i = absl::countr_zero(bits);
    if ((l.rate_bits >> i) & 1) {
      analysis::SlotOf(p->s, l.slots[i]) =
          static_cast<double>(c.rates[at->rates++]);
    } else {
      analysis::SlotOf(p->s, l.slots[i]) = c.values[at->values++];
    }
  }
  p->s.link_up = (mask & kLinkDown) == 0;
  if ((mask & kSamplesFollow) == 0) return;
  analysis::SampleEvidence& e = p->samples;
  const uint32_t* n = c.counts + at->counts;
  const float* s = c.seconds + at->seconds;
  at->counts += kSampleCounts;
  at->seconds += kSampleSeconds;
  e.reports = static_cast<int>(n[0]);
  e.intervals = static_cast<int>(n[1]);
  e.expected_reports = static_cast<int>(n[2]);
  e.report_span_seconds = s[0];
  e.span_seconds = s[1];
  e.median_interval_seconds = s[2];
  e.max_interval_seconds = s[3];
}

// Appends a copy of `p` to `to` (RewritePort(): in place when `to` held
// that port there).
void CopyPort(const PortView& p, analysis::FabricView* to) {
  PortView& q = to->RewritePort(p.node, p.device, p.netdev);
  q.is_switch_port = p.is_switch_port;
  q.s = p.s;
  q.samples = p.samples;
}

// One sorted source of a shard's ports, read a node at a time: a chunk
// (CheckBlock()ed), or this collector's own ports of the shard.
struct Source {
  // A chunk's block.
  const v1::ShardPortBlock* block = nullptr;
  const BlockLayout* layout = nullptr;
  ReadColumns window_columns{};
  ReadColumns recent_columns{};
  ViewCursor window_at;
  ViewCursor recent_at;
  int node = 0;  // the node read next
  int port = 0;  // its first port
  // Own ports: indexes into local->window.ports() of [own, own_end) are
  // the node read next.
  const collector::FeatureSlice* local = nullptr;
  absl::Span<const uint32_t> own;
  size_t own_begin = 0;
  size_t own_end = 0;

  bool done() const {
    return block != nullptr ? node >= block->node_size()
                            : own_begin >= own.size();
  }
  absl::string_view current() const {
    return block != nullptr
               ? absl::string_view(block->node(node))
               : absl::string_view(local->window.ports()[own[own_begin]].node);
  }
  // Own ports: finds where the current node's end.
  void FindOwnEnd() {
    own_end = own_begin;
    const absl::Span<const PortView> all = local->window.ports();
    while (own_end < own.size() &&
           all[own[own_end]].node == all[own[own_begin]].node) {
      ++own_end;
    }
  }
  // Adds the current node's ports to the views and moves to the next.
  void ReadNode(analysis::FabricView* window, analysis::FabricView* recent);
};

void Source::ReadNode(analysis::FabricView* window,
                      analysis::FabricView* recent) {
  if (block == nullptr) {
    const absl::Span<const PortView> all = local->window.ports();
    const analysis::FabricView* own_recent =
        local->recent.has_value() ? &*local->recent : nullptr;
    // The node's ports of the recent view, looked up once for all of them.
    const analysis::FabricView::NodePorts recent_ports =
        own_recent != nullptr && own_begin < own_end
            ? own_recent->PortsOfNode(all[own[own_begin]].node)
            : analysis::FabricView::NodePorts{};
    for (size_t k = own_begin; k < own_end; ++k) {
      const PortView& p = all[own[k]];
      CopyPort(p, window);
      const PortView* r = own_recent != nullptr
                              ? own_recent->FindIn(recent_ports, p.device)
                              : nullptr;
      if (recent != nullptr && r != nullptr && r->device == p.device) {
        CopyPort(*r, recent);
      }
    }
    own_begin = own_end;
    FindOwnEnd();
    return;
  }
  const v1::ShardPortBlock& b = *block;
  const std::string& name = b.node(node);
  const bool switch_node = b.switch_node(node);
  const int end = port + static_cast<int>(b.node_ports(node));
  for (; port < end; ++port) {
    const uint64_t mask = window_columns.present[port];
    const std::string& device = b.device(port);
    const std::string& netdev =
        (mask & kNetdevIsDevice) != 0 ? device : b.netdev(port);
    PortView& p = window->RewritePort(name, device, netdev);
    p.is_switch_port = switch_node;
    ReadView(mask, window_columns, *layout, &window_at, &p);
    if (!layout->has_recent) continue;
    const uint64_t recent_mask = recent_columns.present[port];
    if ((recent_mask & kInView) == 0) continue;
    if (recent == nullptr) {
      // Not read, but past: the cursor keeps to the columns.
      PortView skipped;
      ReadView(recent_mask, recent_columns, *layout, &recent_at, &skipped);
      continue;
    }
    PortView& r = recent->RewritePort(name, device, netdev);
    r.is_switch_port = switch_node;
    ReadView(recent_mask, recent_columns, *layout, &recent_at, &r);
  }
  ++node;
}

// Appends `from`'s ports, sorted by device (stable), to `to`.
void AppendByDevice(const analysis::FabricView& from,
                    analysis::FabricView* to) {
  std::vector<const PortView*> ports;
  ports.reserve(from.ports().size());
  for (const PortView& p : from.ports()) ports.push_back(&p);
  std::stable_sort(ports.begin(), ports.end(),
                   [](const PortView* a, const PortView* b) {
                     return a->device < b->device;
                   });
  for (const PortView* p : ports) CopyPort(*p, to);
}

}  // namespace

// One target's buffers: those of the block of the chunk being written, by
// field, and the chunks written, each a serialized ShardChunk after room
// for its header (written last: it says how many chunks the shard took).
struct ShardChunkWriter::Buffers {
  WireBuffer node;  // each name with its tag and length
  WireBuffer node_ports;
  WireBuffer switch_node;
  WireBuffer device;  // as `node`
  WireBuffer netdev;  // as `node`
  ViewColumns window;
  ViewColumns recent;
  std::vector<std::string> chunks;
  std::vector<absl::string_view> written;  // the chunks' messages

  // The block's fields written so far, about.
  size_t BlockBytes() const {
    size_t bytes = node.size() + node_ports.size() + switch_node.size() +
                   device.size() + netdev.size();
    for (const ViewColumns* v : {&window, &recent}) {
      bytes += v->present.size() + v->values.size() + v->rates.size() +
               v->counts.size() + v->seconds.size();
    }
    return bytes;
  }

  void ClearBlock() {
    for (WireBuffer* b : {&node, &node_ports, &switch_node, &device, &netdev}) {
      b->clear();
    }
    window.clear();
    recent.clear();
  }

  // Appends the block's fields, in their numbers' order (as protobuf
  // writes them), to `to`, and clears them. `with_recent`: whether any
  // port of the block is in the recent view (else no recent column).
  void MoveBlock(const SlotPlan& plan, bool with_recent, std::string* to) {
    const auto raw = [to](const WireBuffer& field) {
      to->append(field.bytes().data(), field.size());
    };
    WireBuffer lengths;  // a packed field's tag and length
    const auto packed = [&](absl::string_view tag, const WireBuffer& field) {
      if (field.size() == 0) return;  // an empty packed field is left out
      lengths.clear();
      lengths.Append(tag);
      lengths.Varint(field.size());
      raw(lengths);
      raw(field);
    };
    const auto one = [](const char& tag) { return absl::string_view(&tag, 1); };
    to->append(plan.slots_field);
    raw(node);
    packed(one(kNodePortsTag), node_ports);
    packed(one(kSwitchNodeTag), switch_node);
    raw(device);
    raw(netdev);
    packed(one(kWindowPresentTag), window.present);
    packed(one(kWindowValuesTag), window.values);
    packed(one(kWindowCountsTag), window.counts);
    packed(one(kWindowSecondsTag), window.seconds);
    if (with_recent) {
      packed(one(kRecentPresentTag), recent.present);
      packed(one(kRecentValuesTag), recent.values);
      packed(one(kRecentCountsTag), recent.counts);
      packed(one(kRecentSecondsTag), recent.seconds);
    }
    packed(one(kWindowRatesTag), window.rates);
    if (with_recent) {
      packed(absl::string_view(kRecentRatesTag, sizeof(kRecentRatesTag)),
             recent.rates);
    }
    ClearBlock();
  }
};

ShardChunkWriter::ShardChunkWriter() = default;
ShardChunkWriter::~ShardChunkWriter() = default;
ShardChunkWriter::ShardChunkWriter(ShardChunkWriter&&) noexcept = default;
ShardChunkWriter& ShardChunkWriter::operator=(ShardChunkWriter&&) noexcept =
    default;

std::vector<v1::ShardChunk> ShardToChunks(const collector::FeatureSlice& slice,
                                          absl::Span<const uint32_t> ports,
                                          analysis::ShardKind kind,
                                          const ShardChunkHeader& header) {
  ShardChunkWriter writer;
  std::vector<v1::ShardChunk> chunks;
  for (absl::string_view data : writer.Write(slice, ports, kind, header)) {
    // What the writer wrote is a ShardChunk.
    chunks.emplace_back().ParseFromArray(data.data(),
                                         static_cast<int>(data.size()));
  }
  return chunks;
}

absl::Span<const absl::string_view> ShardChunkWriter::Write(
    const collector::FeatureSlice& slice, absl::Span<const uint32_t> ports,
    analysis::ShardKind kind, const ShardChunkHeader& header) {
  const Target target{header.shard, kind, ports};
  return WriteTargets(
             slice, absl::MakeConstSpan(&target, 1),
             {header.collector_id, header.published, header.max_chunk_bytes})
      .front();
}

std::vector<absl::Span<const absl::string_view>> ShardChunkWriter::WriteShards(
    const collector::FeatureSlice& slice,
    absl::Span<const analysis::ShardPorts* const> shards,
    const Sender& sender) {
  std::vector<Target> targets;
  targets.reserve(shards.size());
  for (const analysis::ShardPorts* s : shards) {
    targets.push_back({s->shard, s->kind, s->ports});
  }
  return WriteTargets(slice, targets, sender);
}

std::vector<absl::Span<const absl::string_view>> ShardChunkWriter::WriteTargets(
    const collector::FeatureSlice& slice, absl::Span<const Target> targets,
    const Sender& sender) {
  const absl::Span<const PortView> all = slice.window.ports();
  const analysis::FabricView* recent =
      slice.recent.has_value() ? &*slice.recent : nullptr;
  while (buffers_.size() < targets.size()) {
    buffers_.push_back(std::make_unique<Buffers>());
  }

  // Each port's targets, in their order (CSR). An index past the view is
  // left out.
  first_.assign(all.size() + 1, 0);
  for (const Target& t : targets) {
    for (uint32_t i : t.ports) {
      if (i < all.size()) ++first_[i + 1];
    }
  }
  for (size_t i = 0; i < all.size(); ++i) first_[i + 1] += first_[i];
  of_port_.resize(first_[all.size()]);
  {
    std::vector<uint32_t> at(first_.begin(), first_.end() - 1);
    for (uint32_t t = 0; t < targets.size(); ++t) {
      for (uint32_t i : targets[t].ports) {
        if (i < all.size()) of_port_[at[i]++] = t;
      }
    }
  }

  // Where each target's writing is. A chunk's bytes start after room for
  // the most its header can take.
  struct Writing {
    Buffers* buffers;
    const SlotPlan* plan;
    size_t room = 0;
    size_t used = 0;          // chunks written
    int64_t node = -1;        // the node (by ordinal) of the block's last port
    uint32_t node_ports = 0;  // its ports so far, not yet in the block
    bool any_recent = false;  // a port of the block is in the recent view

    // The block's last node's port count into the block.
    void EndNode() {
      if (node_ports > 0) buffers->node_ports.Varint(node_ports);
      node_ports = 0;
    }
    // The block, as the next chunk's.
    void EndChunk() {
      EndNode();
      if (used == buffers->chunks.size()) buffers->chunks.emplace_back();
      std::string& chunk = buffers->chunks[used++];
      chunk.assign(room, '\0');
      buffers->MoveBlock(*plan, any_recent, &chunk);
      any_recent = false;
    }
  };
  std::vector<Writing> writing(targets.size());
  for (size_t t = 0; t < targets.size(); ++t) {
    writing[t].buffers = buffers_[t].get();
    writing[t].buffers->ClearBlock();
    writing[t].plan = &PlanOf(targets[t].kind);
    writing[t].room =
        kMaxHeaderBytes + sender.collector_id.size() + targets[t].shard.size();
  }

  // The slice's ports in order: a shard's ports (ascending) come to it in
  // its own order, each node's together.
  int64_t node = -1;
  analysis::FabricView::NodePorts recent_ports{};
  for (size_t i = 0; i < all.size(); ++i) {
    const PortView& p = all[i];
    if (i == 0 || p.node != all[i - 1].node) {
      ++node;
      recent_ports = recent != nullptr ? recent->PortsOfNode(p.node)
                                       : analysis::FabricView::NodePorts{};
    }
    if (first_[i] == first_[i + 1]) continue;
    const PortView* r =
        recent != nullptr ? recent->FindIn(recent_ports, p.device) : nullptr;
    if (r != nullptr && r->device != p.device) r = nullptr;
    const bool netdev_is_device = p.netdev == p.device;
    for (uint32_t k = first_[i]; k < first_[i + 1]; ++k) {
      Writing& w = writing[of_port_[k]];
      Buffers& b = *w.buffers;
      if (w.node != node) {
        w.EndNode();
        // A chunk ends with the node that took it to the budget.
        if (b.node.size() > 0 && b.BlockBytes() >= sender.max_chunk_bytes) {
          w.EndChunk();
        }
        b.node.String(kNodeTag, p.node);
        b.switch_node.Byte(p.is_switch_port ? 1 : 0);
        w.node = node;
      }
      ++w.node_ports;
      b.device.String(kDeviceTag, p.device);
      b.netdev.String(kNetdevTag,
                      netdev_is_device ? absl::string_view() : p.netdev);
      PutView(p, *w.plan, netdev_is_device ? kNetdevIsDevice : 0, &b.window);
      if (r != nullptr) {
        PutView(*r, *w.plan, 0, &b.recent);
        w.any_recent = true;
      } else {
        b.recent.present.Varint(0);  // not in the recent view
      }
    }
  }

  // The headers, now that each shard's chunks are counted.
  std::vector<absl::Span<const absl::string_view>> written;
  written.reserve(targets.size());
  WireBuffer header;
  for (size_t t = 0; t < targets.size(); ++t) {
    Writing& w = writing[t];
    w.EndChunk();  // the last (or only) one
    Buffers& b = *w.buffers;
    b.written.clear();
    for (size_t c = 0; c < w.used; ++c) {
      std::string& chunk = b.chunks[c];
      // proto3: a field at its default is not written.
      header.clear();
      if (!sender.collector_id.empty()) {
        header.String(kCollectorIdTag, sender.collector_id);
      }
      const int64_t published = absl::ToUnixNanos(sender.published);
      if (published != 0) {
        header.Byte(kPublishedTag);
        header.Varint(static_cast<uint64_t>(published));
      }
      if (!targets[t].shard.empty()) {
        header.String(kShardTag, targets[t].shard);
      }
      if (c != 0) {
        header.Byte(kChunkTag);
        header.Varint(c);
      }
      header.Byte(kChunksTag);
      header.Varint(w.used);
      for (const auto& [tag, seconds] :
           {std::pair(kWindowSecondsOfChunkTag, slice.window.window_seconds),
            std::pair(kRecentSecondsOfChunkTag,
                      recent != nullptr ? recent->window_seconds : 0.0)}) {
        uint64_t bits;
        std::memcpy(&bits, &seconds, sizeof(bits));
        if (bits == 0) continue;
        header.Byte(tag);
        for (int shift = 0; shift < 64; shift += 8) {
          header.Byte(static_cast<char>(bits >> shift));
        }
      }
      header.Byte(kPortsTag);
      header.Varint(chunk.size() - w.room);
      const size_t start = w.room - header.size();
      std::memcpy(chunk.data() + start, header.bytes().data(), header.size());
      b.written.push_back(absl::string_view(chunk).substr(start));
    }
    written.push_back(b.written);
  }
  return written;
}

std::shared_ptr<const v1::ShardChunk> ParseShardChunk(absl::string_view data) {
  // Its first block holds about what the message does on the wire, its
  // later ones twice each before them (and no more than 1 MiB).
  constexpr size_t kMinBlock = 4096;
  constexpr size_t kMaxBlock = size_t{1} << 20;
  google::protobuf::ArenaOptions options;
  options.start_block_size = std::clamp(data.size(), kMinBlock, kMaxBlock);
  options.max_block_size = kMaxBlock;
  auto arena = std::make_shared<google::protobuf::Arena>(options);
  auto* chunk =
      google::protobuf::Arena::CreateMessage<v1::ShardChunk>(arena.get());
  if (!chunk->ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return nullptr;
  }
  // The aliasing constructor: the message's life is its arena's.
  return std::shared_ptr<const v1::ShardChunk>(arena, chunk);
}

bool AddShardChunk(const v1::ShardChunk& chunk, analysis::FabricView* window,
                   analysis::FabricView* recent) {
  BlockLayout layout;
  if (!CheckBlock(chunk.ports(), &layout)) return false;
  // Each view's ports as one sorted run (the writer's order): the views
  // merge the runs of every chunk without sorting, each port moved once.
  analysis::FabricView window_run;
  analysis::FabricView recent_run;
  Source source;
  source.block = &chunk.ports();
  source.layout = &layout;
  source.window_columns = ReadWindow(chunk.ports());
  source.recent_columns = ReadRecent(chunk.ports());
  window_run.ReservePorts(static_cast<size_t>(chunk.ports().device_size()));
  while (!source.done()) {
    source.ReadNode(&window_run, recent != nullptr ? &recent_run : nullptr);
  }
  window->window_seconds = chunk.window_seconds();
  if (!window_run.ports().empty()) window->AppendSorted(window_run.TakePorts());
  if (recent != nullptr && layout.has_recent) {
    recent->window_seconds = chunk.recent_seconds();
    if (!recent_run.ports().empty()) {
      recent->AppendSorted(recent_run.TakePorts());
    }
  }
  return true;
}

void AssembleShardViews(absl::Span<const v1::ShardChunk* const> chunks,
                        const collector::FeatureSlice* local,
                        absl::Span<const uint32_t> own_ports,
                        analysis::FabricView* window,
                        analysis::FabricView* recent,
                        std::vector<size_t>* damaged) {
  // Built again over the last pass's ports, in place where they come back.
  window->BeginRewrite();
  recent->BeginRewrite();
  std::vector<BlockLayout> layouts(chunks.size());
  std::vector<Source> sources;
  sources.reserve(chunks.size() + 1);
  size_t ports = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const v1::ShardPortBlock& b = chunks[c]->ports();
    if (!CheckBlock(b, &layouts[c])) {
      if (damaged != nullptr) damaged->push_back(c);
      continue;
    }
    window->window_seconds = chunks[c]->window_seconds();
    if (layouts[c].has_recent) {
      recent->window_seconds = chunks[c]->recent_seconds();
    }
    ports += static_cast<size_t>(b.device_size());
    Source& s = sources.emplace_back();
    s.block = &b;
    s.layout = &layouts[c];
    s.window_columns = ReadWindow(b);
    s.recent_columns = ReadRecent(b);
  }
  if (local != nullptr) {
    const size_t size = local->window.ports().size();
    // Indexes past the view are left out.
    while (!own_ports.empty() && own_ports.back() >= size) {
      own_ports.remove_suffix(1);
    }
    window->window_seconds = local->window.window_seconds;
    if (local->recent.has_value()) {
      recent->window_seconds = local->recent->window_seconds;
    }
    ports += own_ports.size();
    Source& s = sources.emplace_back();
    s.local = local;
    s.own = own_ports;
    s.FindOwnEnd();
  }
  window->ReservePorts(ports);
  recent->ReservePorts(ports);
  // The sources' nodes merged through a min-heap of their current nodes
  // (then by source: the chunks' order); a node that several sources have
  // (a node changing collectors) gets each one's ports, by device.
  std::vector<size_t> heap;
  heap.reserve(sources.size());
  for (size_t k = 0; k < sources.size(); ++k) {
    if (!sources[k].done()) heap.push_back(k);
  }
  const auto after = [&sources](size_t a, size_t b) {
    const int order = sources[a].current().compare(sources[b].current());
    return order > 0 || (order == 0 && a > b);
  };
  std::make_heap(heap.begin(), heap.end(), after);
  analysis::FabricView shared_window;
  analysis::FabricView shared_recent;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), after);
    const size_t first = heap.back();
    heap.pop_back();
    if (heap.empty() ||
        sources[heap.front()].current() != sources[first].current()) {
      sources[first].ReadNode(window, recent);
      if (!sources[first].done()) {
        heap.push_back(first);
        std::push_heap(heap.begin(), heap.end(), after);
      }
      continue;
    }
    // Several sources have the node.
    std::vector<size_t> having = {first};
    while (!heap.empty() &&
           sources[heap.front()].current() == sources[first].current()) {
      std::pop_heap(heap.begin(), heap.end(), after);
      having.push_back(heap.back());
      heap.pop_back();
    }
    shared_window.Clear();
    shared_recent.Clear();
    for (size_t k : having) sources[k].ReadNode(&shared_window, &shared_recent);
    AppendByDevice(shared_window, window);
    AppendByDevice(shared_recent, recent);
    for (size_t k : having) {
      if (sources[k].done()) continue;
      heap.push_back(k);
      std::push_heap(heap.begin(), heap.end(), after);
    }
  }
  window->Finish();
  recent->Finish();
}

}  // namespace fabricdiag::cluster
