// No silent misses: the names a layout uses that no agent reports. A host
// name that is an FQDN where agents report short names, or a NIC named
// `mlx5_0` on a host whose NICs are named otherwise, is a valid layout that
// would get no analysis at all; it is accepted, with a warning per name
// (`fabricdiag layout apply` prints them, the HTTP API returns them).
//
//   LayoutNameCheck check([&runner] { return runner.LatestNames(); });
//   std::vector<std::string> warnings = check.Check(layout);
//
// Compared against the latest analysis pass's view (every port an agent
// reported in the window). A collector of a cluster that shards its
// analysis holds no view of the fabric: its own agents' ports, and the
// names of the nodes that stream to the other collectors, whose NICs are
// not checked. Before the first pass, or while no agent reports at all,
// nothing is checked. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "analysis/fabric_view.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

// At most this many warnings per layout; the last one says how many more.
inline constexpr size_t kMaxNameWarnings = 20;

// What a layout's names are checked against.
struct ReportedNames {
  // The ports agents report: the whole fabric's, or where the analysis is
  // sharded across a cluster, those of this collector's agents. Null: none.
  std::shared_ptr<const analysis::FabricView> ports;
  // Where the analysis is sharded across a cluster: the nodes the other
  // collectors heard from. Known hosts, whose NICs are not checked here.
  absl::flat_hash_set<std::string> hosts_elsewhere;
};

// "hosts: gpu-009 is reported by no agent", "rails: mlx5_9 is reported by
// no agent on gpu-000": the hosts and the (host, NIC) pairs of `layout`
// (through hosts and rails, or ranks) that `view` has no port of, but for
// the hosts in `hosts_elsewhere` (known; their NICs unchecked). Empty when
// nothing is reported at all. Pure.
std::vector<std::string> UnreportedNames(
    const v1::Layout& layout, const analysis::FabricView& view,
    const absl::flat_hash_set<std::string>& hosts_elsewhere = {});

class LayoutNameCheck {
 public:
  using NamesSource = std::function<ReportedNames()>;
  explicit LayoutNameCheck(NamesSource names) : names_(std::move(names)) {}

  // UnreportedNames against the latest names; counts the layouts warned of.
  std::vector<std::string> Check(const v1::Layout& layout);

  // fabricdiag_layout_name_warnings_total, as Prometheus text.
  void AppendMetrics(std::string* out) const;

 private:
  NamesSource names_;
  std::atomic<uint64_t> warned_layouts_{0};
  std::atomic<uint64_t> warnings_{0};
};

}  // namespace fabricdiag::collector
