#include "analysis/fabric_view.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"

namespace fabricdiag::analysis {

SampleEvidence SummarizeSamples(absl::Span<const double> times,
                                const std::vector<bool>& moved) {
  SampleEvidence e;
  if (times.size() < 2 || moved.size() + 1 != times.size()) return e;
  e.reports = static_cast<int>(moved.size());
  e.report_span_seconds = times.back() - times.front();
  // A window is a few reports: no allocation per port and pass.
  absl::InlinedVector<double, 16> intervals;
  double since = times[0];  // the last report whose traffic moved
  for (size_t i = 0; i < moved.size(); ++i) {
    if (!moved[i]) continue;  // stale: the next sample that moves covers it
    intervals.push_back(times[i + 1] - since);
    since = times[i + 1];
  }
  if (intervals.empty()) return e;
  e.intervals = static_cast<int>(intervals.size());
  e.span_seconds = since - times[0];
  e.max_interval_seconds =
      *std::max_element(intervals.begin(), intervals.end());
  // The lower median: with two intervals, one stale read (1 s and 2 s) is
  // measured against the regular one.
  const auto mid = intervals.begin() + (intervals.size() - 1) / 2;
  std::nth_element(intervals.begin(), mid, intervals.end());
  e.median_interval_seconds = *mid;
  return e;
}

namespace {

// How far ahead of the port RewritePort() writes over its successors are
// asked for from memory.
constexpr size_t kRewriteAhead = 4;

// The port storage of large views that ended, for the next ones.
class SparePorts {
 public:
  static SparePorts& Get() {
    static SparePorts* const spare = new SparePorts;
    return *spare;
  }

  // An empty vector with room for `ports`: the smallest kept one that
  // has it, else a new one.
  std::vector<PortView> Take(size_t ports) {
    std::vector<PortView> out;
    {
      absl::MutexLock lock(&mu_);
      size_t best = kept_count_;
      for (size_t i = 0; i < kept_count_; ++i) {
        const size_t capacity = kept_[i].ports.capacity();
        if (capacity >= ports &&
            (best == kept_count_ || capacity < kept_[best].ports.capacity())) {
          best = i;
        }
      }
      if (best != kept_count_) {
        out = std::move(kept_[best].ports);
        Erase(best);
        stats_.held_bytes -= out.capacity() * sizeof(PortView);
        ++stats_.reused;
        return out;
      }
    }
    out.reserve(ports);
    return out;
  }

  // Keeps `ports`' storage (its ports destroyed) when it is large. Frees
  // the kept vectors that kSpareAgeGives gives passed by (a view size no
  // pass builds any more: a collector that stopped leading the analysis
  // merges no fabric), then the smallest while there are too many. Does
  // not allocate (view assignment, which gives the storage it replaces,
  // cannot fail).
  void Give(std::vector<PortView>&& ports) noexcept {
    if (ports.capacity() < kSparePortsMin) return;
    ports.clear();
    // Freed outside the lock; at most every kept vector.
    absl::InlinedVector<std::vector<PortView>, kSparePortVectors + 1> dropped;
    absl::MutexLock lock(&mu_);
    ++gives_;
    stats_.held_bytes += ports.capacity() * sizeof(PortView);
    ++stats_.kept;
    kept_[kept_count_++] = Kept{std::move(ports), gives_};
    for (size_t i = 0; i < kept_count_;) {
      if (gives_ - kept_[i].given_at > kSpareAgeGives) {
        dropped.push_back(std::move(kept_[i].ports));
        Erase(i);
      } else {
        ++i;
      }
    }
    while (kept_count_ > kSparePortVectors) {
      size_t smallest = 0;
      for (size_t i = 1; i < kept_count_; ++i) {
        if (kept_[i].ports.capacity() < kept_[smallest].ports.capacity()) {
          smallest = i;
        }
      }
      dropped.push_back(std::move(kept_[smallest].ports));
      Erase(smallest);
    }
    for (const std::vector<PortView>& d : dropped) {
      stats_.held_bytes -= d.capacity() * sizeof(PortView);
      ++stats_.dropped;
    }
  }

  void FreeAll() {
    absl::InlinedVector<std::vector<PortView>, kSparePortVectors + 1> dropped;
    absl::MutexLock lock(&mu_);
    while (kept_count_ > 0) {
      dropped.push_back(std::move(kept_[kept_count_ - 1].ports));
      Erase(kept_count_ - 1);
    }
    for (const std::vector<PortView>& d : dropped) {
      stats_.held_bytes -= d.capacity() * sizeof(PortView);
      ++stats_.dropped;
    }
  }

  SparePortStats Stats() {
    absl::MutexLock lock(&mu_);
    return stats_;
  }

 private:
  struct Kept {
    std::vector<PortView> ports;
    uint64_t given_at = 0;  // gives_ when it was kept
  };

  // Removes kept_[i], keeping the others in order.
  void Erase(size_t i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::move(kept_.begin() + i + 1, kept_.begin() + kept_count_,
              kept_.begin() + i);
    kept_[--kept_count_] = Kept{};
  }

  absl::Mutex mu_;
  // kept_[0, kept_count_): one more than kept between two gives.
  std::array<Kept, kSparePortVectors + 1> kept_ ABSL_GUARDED_BY(mu_);
  size_t kept_count_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t gives_ ABSL_GUARDED_BY(mu_) = 0;
  SparePortStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

SparePortStats GetSparePortStats() { return SparePorts::Get().Stats(); }

void FreeSparePorts() { SparePorts::Get().FreeAll(); }

FabricView::~FabricView() { GiveStorage(); }

FabricView& FabricView::operator=(const FabricView& other) {
  if (this != &other) *this = FabricView(other);
  return *this;
}

FabricView& FabricView::operator=(FabricView&& other) noexcept {
  if (this == &other) return *this;
  GiveStorage();
  window_seconds = other.window_seconds;
  ports_ = std::move(other.ports_);
  runs_ = std::move(other.runs_);
  unsorted_ = other.unsorted_;
  nodes_ = std::move(other.nodes_);
  prefixes_ = std::move(other.prefixes_);
  rewriting_ = other.rewriting_;
  rewritten_ = other.rewritten_;
  other.rewriting_ = false;
  other.rewritten_ = 0;
  other.ports_.clear();
  other.runs_.clear();
  other.unsorted_ = false;
  other.nodes_.clear();
  other.prefixes_.clear();
  return *this;
}

void FabricView::GiveStorage() noexcept {
  SparePorts::Get().Give(std::move(ports_));
  for (std::vector<PortView>& run : runs_) {
    SparePorts::Get().Give(std::move(run));
  }
  ports_.clear();
  runs_.clear();
}

void FabricView::ReservePorts(size_t ports) {
  if (ports_.empty() && ports_.capacity() < ports && ports >= kSparePortsMin) {
    ports_ = SparePorts::Get().Take(ports);
  } else {
    ports_.reserve(ports);
  }
}

void FabricView::Clear() {
  for (std::vector<PortView>& run : runs_) {
    SparePorts::Get().Give(std::move(run));
  }
  runs_.clear();
  ports_.clear();
  unsorted_ = false;
  nodes_.clear();
  prefixes_.clear();
  rewriting_ = false;
  rewritten_ = 0;
}

void FabricView::BeginRewrite() {
  // Only a Finish()ed view's ports are where its index says.
  if (!runs_.empty() || unsorted_ || rewriting_ ||
      prefixes_.size() != ports_.size()) {
    Clear();
  }
  rewriting_ = true;
  rewritten_ = 0;
}

PortView& FabricView::RewritePort(absl::string_view node,
                                  absl::string_view device,
                                  absl::string_view netdev) {
  if (rewriting_ && rewritten_ < ports_.size()) {
    // Ports are rewritten in order, each written over whole: the ones a
    // few ahead are asked for from memory while this one is written.
    if (ports_.size() - rewritten_ > kRewriteAhead) {
      Prefetch(absl::MakeConstSpan(&ports_[rewritten_ + kRewriteAhead], 1));
    }
    PortView& p = ports_[rewritten_];
    if (p.node == node && p.device == device) {
      if (p.netdev != netdev) {
        p.netdev.assign(netdev.data(), netdev.size());
        prefixes_[rewritten_] = PrefixesOf(p);
      }
      p.is_switch_port = false;
      p.s = PortSignals();
      p.samples = SampleEvidence();
      ++rewritten_;
      return p;
    }
  }
  PortView& p = AddPort(std::string(node), std::string(device));
  p.netdev.assign(netdev.data(), netdev.size());
  return p;
}

void FabricView::EndRewrite() {
  if (!rewriting_) return;
  // The ports not rewritten go; the view is indexed again at Finish().
  ports_.erase(ports_.begin() + rewritten_, ports_.end());
  rewriting_ = false;
  unsorted_ = true;
}

PortView& FabricView::AddPort(std::string node, std::string device) {
  EndRewrite();
  unsorted_ = true;
  PortView& p = ports_.emplace_back();
  p.node = std::move(node);
  p.device = std::move(device);
  return p;
}

namespace {

// The first 8 bytes of `name`, zero-padded: equal for equal names.
uint64_t NamePrefix(absl::string_view name) {
  uint64_t prefix = 0;
  std::memcpy(&prefix, name.data(), std::min(name.size(), sizeof(prefix)));
  return prefix;
}

// A name's length, for NamePrefixes (names longer than 4 GiB share one).
uint32_t SizeOf(absl::string_view name) {
  return static_cast<uint32_t>(
      std::min<size_t>(name.size(), std::numeric_limits<uint32_t>::max()));
}

bool PortOrder(const PortView& a, const PortView& b) {
  return std::tie(a.node, a.device) < std::tie(b.node, b.device);
}

// Moves every port of `runs` (each sorted by PortOrder) into one sorted
// vector, each port once. Consecutive runs that follow each other (the
// chunks of one collector's slice) form a chain, read as one sorted
// sequence; chains are concatenated when they too follow each other, else
// merged through a heap of their heads. Equal ports keep the order of
// their runs, as pairwise std::inplace_merge would. Each port is compared
// with the one before it as it lands (both in cache then): a run that was
// not sorted after all leaves ports out of order, and the result is
// sorted (*resorted). `landed(port, new_node)` sees each port as it lands,
// before it moves (new_node: its node is not the one before it's); what it
// saw is in the result's order unless *resorted.
template <typename Landed>
std::vector<PortView> MergeRuns(std::vector<std::vector<PortView>>& runs,
                                Landed landed, bool* resorted) {
  size_t total = 0;
  // The non-empty runs, and where each chain of them starts.
  std::vector<size_t> order;
  std::vector<size_t> chain_starts;
  const PortView* last = nullptr;  // the end of the runs so far
  for (size_t r = 0; r < runs.size(); ++r) {
    total += runs[r].size();
    if (runs[r].empty()) continue;
    if (last == nullptr || PortOrder(runs[r].front(), *last)) {
      chain_starts.push_back(order.size());
    }
    order.push_back(r);
    last = &runs[r].back();
  }
  std::vector<PortView> out = total >= kSparePortsMin
                                  ? SparePorts::Get().Take(total)
                                  : std::vector<PortView>();
  out.reserve(total);
  bool in_order = true;
  const auto land = [&out, &in_order, &landed](PortView& p) {
    bool new_node = true;
    if (!out.empty()) {
      const PortView& before = out.back();
      const int node = p.node.compare(before.node);
      if (node < 0 || (node == 0 && p.device < before.device)) {
        in_order = false;
      }
      new_node = node != 0;
    }
    landed(p, new_node);
    out.push_back(std::move(p));
  };
  const auto sorted = [&out, &in_order, resorted] {
    *resorted = !in_order;
    if (!in_order) std::sort(out.begin(), out.end(), PortOrder);
  };
  if (chain_starts.size() <= 1) {
    for (size_t r : order) {
      for (PortView& p : runs[r]) land(p);
    }
    sorted();
    return out;
  }
  chain_starts.push_back(order.size());
  // Per chain: its current run (index into `order`), the end of its runs,
  // and the next port in the current run; a min-heap by that port, then by
  // chain (earlier runs first).
  struct Head {
    size_t chain;
    size_t run;
    size_t end;
    size_t pos;
  };
  std::vector<Head> heads;
  for (size_t c = 0; c + 1 < chain_starts.size(); ++c) {
    heads.push_back({c, chain_starts[c], chain_starts[c + 1], 0});
  }
  const auto at = [&](const Head& h) -> PortView& {
    return runs[order[h.run]][h.pos];
  };
  const auto after = [&](const Head& a, const Head& b) {
    if (PortOrder(at(b), at(a))) return true;
    if (PortOrder(at(a), at(b))) return false;
    return a.chain > b.chain;
  };
  std::make_heap(heads.begin(), heads.end(), after);
  while (!heads.empty()) {
    std::pop_heap(heads.begin(), heads.end(), after);
    Head& h = heads.back();
    // The chain's ports up to the next chain's head, without the heap (a
    // node's ports come from one chain).
    bool done = false;
    do {
      land(at(h));
      if (++h.pos == runs[order[h.run]].size()) {
        h.pos = 0;
        done = ++h.run == h.end;
      }
    } while (!done && (heads.size() == 1 || !after(h, heads.front())));
    if (done) {
      heads.pop_back();
    } else {
      std::push_heap(heads.begin(), heads.end(), after);
    }
  }
  sorted();
  return out;
}

}  // namespace

std::vector<PortView> FabricView::TakePorts() {
  EndRewrite();
  std::vector<PortView> ports;
  if (runs_.empty()) {
    ports = std::move(ports_);
  } else {
    // Not Finish()ed: the runs in the order they came.
    runs_.insert(runs_.begin(), std::move(ports_));
    for (std::vector<PortView>& run : runs_) {
      std::move(run.begin(), run.end(), std::back_inserter(ports));
    }
  }
  ports_.clear();
  runs_.clear();
  unsorted_ = false;
  nodes_.clear();
  prefixes_.clear();
  return ports;
}

std::vector<std::vector<PortView>> FabricView::TakeRuns() {
  if (unsorted_ || rewriting_) Finish();
  std::vector<std::vector<PortView>> runs = std::move(runs_);
  if (!ports_.empty()) runs.push_back(std::move(ports_));
  ports_.clear();
  runs_.clear();
  nodes_.clear();
  prefixes_.clear();
  return runs;
}

void FabricView::AppendSorted(std::vector<PortView>&& ports) {
  EndRewrite();
  // Not checked here: Finish()'s merge compares every port it moves anyway.
  // Ports already here (sorted by Finish(), or unsorted_) are a run too.
  if (!ports_.empty()) runs_.push_back(std::move(ports_));
  ports_.clear();
  runs_.push_back(std::move(ports));
}

void FabricView::Finish() {
  if (rewriting_ && rewritten_ == ports_.size()) {
    // Every port came back where it was: the index holds as it is.
    rewriting_ = false;
    return;
  }
  EndRewrite();
  // Where each node's ports start, and prefixes_: taken as a merge moves
  // the ports (each in cache then), else in a sweep of ports_ below.
  std::vector<uint32_t> node_starts;
  bool indexed = false;
  prefixes_.clear();
  if (!runs_.empty()) {
    // Ports AddPort()ed after the runs (unsorted_) come last.
    if (!ports_.empty()) runs_.push_back(std::move(ports_));
    if (unsorted_) {
      ports_.clear();
      for (std::vector<PortView>& run : runs_) {
        std::move(run.begin(), run.end(), std::back_inserter(ports_));
      }
    } else {
      size_t total = 0;
      for (const std::vector<PortView>& run : runs_) total += run.size();
      prefixes_.reserve(total);
      node_starts.reserve(total / 8 + 1);
      bool resorted = false;
      ports_ = MergeRuns(
          runs_,
          [this, &node_starts](const PortView& p, bool new_node) {
            if (new_node) {
              node_starts.push_back(static_cast<uint32_t>(prefixes_.size()));
            }
            prefixes_.push_back(PrefixesOf(p));
          },
          &resorted);
      indexed = !resorted;
    }
    for (std::vector<PortView>& run : runs_) {
      SparePorts::Get().Give(std::move(run));
    }
    runs_.clear();
  }
  // Views built in order (a decoded chunk, the series store's) are not
  // sorted again. One sweep checks the order and indexes the nodes, each
  // port's node compared once with the one before it (as a tuple's order
  // it was compared twice, and again to find where nodes start: at 1M GPUs
  // those compares were 3% of a sharded collector's interval).
  if (unsorted_) {
    node_starts.clear();
    prefixes_.clear();
    prefixes_.reserve(ports_.size());
    indexed = true;
    for (uint32_t i = 0; i < ports_.size(); ++i) {
      const PortView& p = ports_[i];
      const int order = i == 0 ? 1 : p.node.compare(ports_[i - 1].node);
      if (order < 0 || (order == 0 && p.device < ports_[i - 1].device)) {
        indexed = false;
        break;
      }
      if (order > 0) node_starts.push_back(i);
      prefixes_.push_back(PrefixesOf(p));
    }
    if (!indexed) std::sort(ports_.begin(), ports_.end(), PortOrder);
  }
  unsorted_ = false;
  if (!indexed) {
    node_starts.clear();
    prefixes_.clear();
    prefixes_.reserve(ports_.size());
    for (uint32_t i = 0; i < ports_.size(); ++i) {
      if (i == 0 || ports_[i].node != ports_[i - 1].node) {
        node_starts.push_back(i);
      }
      prefixes_.push_back(PrefixesOf(ports_[i]));
    }
  }
  nodes_.clear();
  nodes_.reserve(node_starts.size());
  for (size_t k = 0; k < node_starts.size(); ++k) {
    const uint32_t end = k + 1 < node_starts.size()
                             ? node_starts[k + 1]
                             : static_cast<uint32_t>(ports_.size());
    nodes_[ports_[node_starts[k]].node] = {node_starts[k], end};
  }
}

FabricView::NamePrefixes FabricView::PrefixesOf(const PortView& p) {
  return {NamePrefix(p.device), NamePrefix(p.netdev), SizeOf(p.device),
          SizeOf(p.netdev)};
}

absl::Span<const PortView> FabricView::PortsOf(absl::string_view node) const {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return {};
  return absl::MakeConstSpan(ports_).subspan(
      it->second.first, it->second.second - it->second.first);
}

FabricView::NodePorts FabricView::PortsOfNode(absl::string_view node) const {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return {};
  return {it->second.first,
          std::min(it->second.second, static_cast<uint32_t>(ports_.size()))};
}

const PortView* FabricView::FindIn(NodePorts node,
                                   absl::string_view name) const {
  const uint32_t end = std::min(node.end, static_cast<uint32_t>(ports_.size()));
  // Ports AddPort()ed since Finish() have no prefixes (nor a place in
  // nodes_): compare whole names then.
  const bool indexed = prefixes_.size() == ports_.size();
  const uint64_t prefix = NamePrefix(name);
  const uint32_t size = SizeOf(name);
  // Equal prefixes and sizes are equal names when the name fits the prefix.
  const bool prefix_is_name = name.size() <= sizeof(prefix);
  // The first of the node's ports whose device (or netdev) is `name`.
  const auto first_named = [&](bool netdev) -> const PortView* {
    for (uint32_t i = node.begin; i < end; ++i) {
      if (indexed) {
        const NamePrefixes& p = prefixes_[i];
        if ((netdev ? p.netdev : p.device) != prefix ||
            (netdev ? p.netdev_size : p.device_size) != size) {
          continue;
        }
        if (prefix_is_name) return &ports_[i];
      }
      if ((netdev ? ports_[i].netdev : ports_[i].device) == name) {
        return &ports_[i];
      }
    }
    return nullptr;
  };
  if (const PortView* p = first_named(/*netdev=*/false)) return p;
  if (name.empty()) return nullptr;  // "" is no port's netdev
  return first_named(/*netdev=*/true);
}

const PortView* FabricView::Find(absl::string_view node,
                                 absl::string_view name) const {
  return FindIn(PortsOfNode(node), name);
}

}  // namespace fabricdiag::analysis
