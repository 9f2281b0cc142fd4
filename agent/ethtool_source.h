// EthtoolSource: the ethtool statistics of every netdev (`ethtool -S`), as
// Samples with Subsystem::kEthtool, the driver's exact stat name and the
// meaning/priority/unit the counter table (counters/counter_table.h) gives
// it.
//
// Two modes, chosen at construction:
//   - kernel: through an injected EthtoolStats (KernelEthtoolStats in
//     production, a gmock in tests);
//   - text (`--ethtool_dir=DIR`): the stats of netdev IF are parsed from the
//     file DIR/IF, which holds the text `ethtool -S IF` prints. A missing file
//     means IF has no ethtool stats. The directory is read with plain file
//     reads (it is a support bundle or a simulator's output, not sysfs).
//
//   auto kernel = KernelEthtoolStats::Create();   // check .ok()
//   EthtoolSource source(*std::move(kernel), EthtoolSourceOptions{});
//   // or: EthtoolSource source(EthtoolTextDir{"/tmp/bundle/ethtool"}, {});
//   SourceStatus status = source.Collect(netdevs, &snapshot);
//
// It reads the netdevs it is given: the Snapshotter passes those the netdev
// source found in the same round.
//
// Errors: a netdev whose driver has no ethtool stats (lo: kUnimplemented),
// a netdev that vanished (kNotFound; its cached names are dropped) and a
// missing text file are not errors. Any other failure, and unparseable lines
// in a text file (the parseable lines are still used), count one error for
// that netdev in the returned SourceStatus; other netdevs are unaffected.
//
// Kernel mode caches each netdev's stat names and re-reads them when the
// driver's stat count changes (mlx5 adds per-priority PFC counters when PFC
// is enabled, docs/counters.md) and, as a safety net, every
// `names_refresh_reads` reads; a steady-state read is GSSET_INFO + GSTATS
// per netdev. Names of netdevs no longer listed are forgotten.
//
// Thread safety: Collect() must not be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/ethtool_ioctl.h"
#include "agent/ethtool_names.h"
#include "agent/ethtool_text.h"
#include "agent/sample.h"
#include "agent/source.h"

namespace fabricdiag::agent {

struct EthtoolSourceOptions {
  // Also emit per-queue/ring/channel stats (IsPerQueueStat). Off by default:
  // a 64-channel mlx5 has thousands of them and the port-level stats carry
  // the sums.
  bool include_per_queue = false;
  // Text mode: files larger than this are rejected (a hostile or mistaken
  // path such as a device node must not exhaust memory).
  size_t max_text_file_bytes = 16 << 20;
  // Kernel mode: re-read a netdev's names after this many reads even when
  // the count is unchanged (0 = only on count changes). Moving PFC from
  // priority 3 to priority 4 swaps rx_prio3_pause* for rx_prio4_pause* and
  // keeps the count, so without this the values would keep the old labels
  // until the next count change. At 1 s intervals: one GSTRINGS a minute.
  int names_refresh_reads = 60;
};

// Strong type for the text-mode directory, so the two constructors cannot be
// confused.
struct EthtoolTextDir {
  std::string path;
};

class EthtoolSource : public NetdevStatsSource {
 public:
  // Kernel mode. `stats` must not be null.
  EthtoolSource(std::unique_ptr<EthtoolStats> stats,
                EthtoolSourceOptions options);
  // Text mode: netdev IF is read from `dir.path`/IF.
  EthtoolSource(EthtoolTextDir dir, EthtoolSourceOptions options);

  absl::string_view name() const override { return "ethtool"; }

  SourceStatus Collect(absl::Span<const NetdevInfo> netdevs,
                       Snapshot* snapshot) override;

  // Number of netdevs whose stat names are cached (for tests and debugging).
  size_t cached_netdevs() const { return cache_.size(); }

 private:
  // The stat set of one netdev as last read, with the series description
  // of every stat that is emitted.
  struct NameCache {
    std::vector<std::string> names;  // every stat, in driver order
    // Per stat: index into `table`, or -1 when not emitted (per-queue while
    // excluded, or a duplicate name).
    std::vector<int32_t> desc;
    // Immutable once built; shared with the snapshots that point into it.
    std::shared_ptr<const std::vector<SeriesDesc>> table;
    int reads = 0;  // value reads since the names were read
  };

  NameCache BuildCache(const std::string& ifname,
                       std::vector<std::string> names) const;
  absl::Status CollectKernel(const std::string& ifname, Snapshot* snapshot);
  absl::Status CollectText(const std::string& ifname, Snapshot* snapshot);
  // Reads the text file of `ifname` into text_buf_; kNotFound when absent.
  absl::Status ReadTextFile(const std::string& ifname);
  // Appends one sample per emitted stat; `value(i)` is stat i's value.
  template <typename ValueAt>
  void Emit(const NameCache& cache, ValueAt value, Snapshot* snapshot) const;

  const std::unique_ptr<EthtoolStats> stats_;  // null in text mode
  const std::string text_dir_;
  const EthtoolSourceOptions options_;
  absl::flat_hash_map<std::string, NameCache> cache_;
  // Text mode: the buffers every read reuses; text_buf_ holds text_len_
  // bytes of the last file read.
  std::string text_buf_;
  size_t text_len_ = 0;
  bool text_noatime_ = true;  // open with O_NOATIME while permitted
  EthtoolTextView parsed_;
};

}  // namespace fabricdiag::agent
