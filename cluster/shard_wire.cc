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

// Where each slot a shard of one kind reads lies in a PortSignals, and
// which of them are link rates: a port's values are read at their offsets,
// without a call per slot.
struct SlotPlan {
  std::vector<size_t> offsets;
  uint64_t rate_bits = 0;  // bit i: slot i is a link rate
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
  return plan;
}

const SlotPlan& PlanOf(analysis::ShardKind kind) {
  static const SlotPlan* const jobs =
      new SlotPlan(PlanFor(analysis::ShardSlots(analysis::ShardKind::kJobs)));
  static const SlotPlan* const switches = new SlotPlan(
      PlanFor(analysis::ShardSlots(analysis::ShardKind::kSwitches)));
  return kind == analysis::ShardKind::kJobs ? *jobs : *switches;
}

// Appends one port's view; returns an upper bound of the bytes it added.
size_t PutView(const PortView& p, const SlotPlan& plan, uint64_t flags,
               const ViewColumns& to) {
  uint64_t mask = kInView | flags;
  if (!p.s.link_up) mask |= kLinkDown;
  size_t bytes = 10;  // the presence word, a varint
  const char* base = reinterpret_cast<const char*>(&p.s);
  for (size_t i = 0; i < plan.offsets.size(); ++i) {
    double v;
    std::memcpy(&v, base + plan.offsets[i], sizeof(v));
    if ((plan.rate_bits >> i) & 1) {
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

std::vector<v1::ShardChunk> ShardToChunks(const collector::FeatureSlice& slice,
                                          absl::Span<const uint32_t> ports,
                                          analysis::ShardKind kind,
                                          const ShardChunkHeader& header) {
  ShardChunkWriter writer;
  const size_t n = writer.Write(slice, ports, kind, header).size();
  std::vector<v1::ShardChunk> chunks = std::move(writer.chunks_.front());
  chunks.resize(n);
  return chunks;
}

absl::Span<const v1::ShardChunk> ShardChunkWriter::Write(
    const collector::FeatureSlice& slice, absl::Span<const uint32_t> ports,
    analysis::ShardKind kind, const ShardChunkHeader& header) {
  const Target target{header.shard, kind, ports};
  return WriteTargets(
             slice, absl::MakeConstSpan(&target, 1),
             {header.collector_id, header.published, header.max_chunk_bytes})
      .front();
}

std::vector<absl::Span<const v1::ShardChunk>> ShardChunkWriter::WriteShards(
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

std::vector<absl::Span<const v1::ShardChunk>> ShardChunkWriter::WriteTargets(
    const collector::FeatureSlice& slice, absl::Span<const Target> targets,
    const Sender& sender) {
  const absl::Span<const PortView> all = slice.window.ports();
  const analysis::FabricView* recent =
      slice.recent.has_value() ? &*slice.recent : nullptr;
  if (chunks_.size() < targets.size()) chunks_.resize(targets.size());

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

  // Where each target's writing is: the messages of the last write,
  // cleared, keep their repeated fields' storage and cleared strings.
  struct Writing {
    std::vector<v1::ShardChunk>* pool;
    const SlotPlan* plan;
    size_t used = 0;
    v1::ShardChunk* current = nullptr;
    size_t bytes = 0;  // of *current's ports, at most
    ViewColumns window_to{};
    ViewColumns recent_to{};
    int64_t node = -1;  // the node (by ordinal) of the block's last port
    bool any_recent = false;

    v1::ShardChunk& Next() {
      if (used == pool->size()) pool->emplace_back();
      current = &(*pool)[used++];
      // The generated Clear() deletes the block: taken out first and
      // cleared on its own, its columns and strings keep their storage.
      v1::ShardPortBlock* block = current->release_ports();
      current->Clear();
      if (block != nullptr) {
        block->Clear();
        current->set_allocated_ports(block);
      }
      bytes = 0;
      return *current;
    }
  };
  std::vector<Writing> writing(targets.size());
  for (size_t t = 0; t < targets.size(); ++t) {
    writing[t].pool = &chunks_[t];
    writing[t].plan = &PlanOf(targets[t].kind);
    writing[t].Next();
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
      if (w.node != node) {
        if (w.bytes >= sender.max_chunk_bytes) w.Next();
        v1::ShardPortBlock* b = w.current->mutable_ports();
        w.window_to = WindowColumns(b);
        w.recent_to = RecentColumns(b);
        b->add_node(p.node);
        b->add_switch_node(p.is_switch_port);
        b->add_node_ports(0);
        w.bytes += p.node.size() + 8;
        w.node = node;
      }
      v1::ShardPortBlock* b = w.current->mutable_ports();
      ++*b->mutable_node_ports()->Mutable(b->node_ports_size() - 1);
      b->add_device(p.device);
      uint64_t flags = 0;
      if (netdev_is_device) {
        flags = kNetdevIsDevice;
        b->add_netdev();
      } else {
        b->add_netdev(p.netdev);
      }
      w.bytes += p.device.size() + (netdev_is_device ? 0 : p.netdev.size()) + 4;
      w.bytes += PutView(p, *w.plan, flags, w.window_to);
      if (r != nullptr) {
        w.bytes += PutView(*r, *w.plan, 0, w.recent_to);
        w.any_recent = true;
      } else {
        w.recent_to.present->Add(0);  // not in the recent view
        w.bytes += 1;
      }
    }
  }

  std::vector<absl::Span<const v1::ShardChunk>> written;
  written.reserve(targets.size());
  for (size_t t = 0; t < targets.size(); ++t) {
    const Writing& w = writing[t];
    const absl::Span<const int> slots = analysis::ShardSlots(targets[t].kind);
    for (size_t c = 0; c < w.used; ++c) {
      v1::ShardChunk& chunk = (*w.pool)[c];
      chunk.set_collector_id(std::string(sender.collector_id));
      chunk.set_published_unix_nanos(absl::ToUnixNanos(sender.published));
      chunk.set_shard(std::string(targets[t].shard));
      chunk.set_chunk(static_cast<uint32_t>(c));
      chunk.set_chunks(static_cast<uint32_t>(w.used));
      chunk.set_window_seconds(slice.window.window_seconds);
      if (recent != nullptr) chunk.set_recent_seconds(recent->window_seconds);
      v1::ShardPortBlock* b = chunk.mutable_ports();
      b->mutable_slots()->Add(slots.begin(), slots.end());
      // No port in the recent view: no column for it.
      if (!w.any_recent) b->clear_recent_present();
    }
    written.push_back(absl::MakeConstSpan(w.pool->data(), w.used));
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
