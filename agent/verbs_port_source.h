// The "verbs" source: RDMA port attributes as libibverbs reports them.
//
// For every RDMA device and every port it appends a VerbsPortInfo to
// Snapshot::verbs_ports and these gauges (Subsystem::kVerbs):
//   state                           enum ibv_port_state (4 = ACTIVE)
//   phys_state                      IBA PortPhysicalState (5 = LinkUp)
//   active_mtu_bytes                256..4096
//   active_width_lanes              1, 2, 4, 8, 12
//   expected_rate_bytes_per_second  lanes x per-lane rate; equals the sysfs
//                                   `rate` file ("400 Gb/sec (4X NDR)" = 5e10)
// A gauge whose encoding is unknown (a new IB speed, say) is absent, never 0.
// One device or port failing does not stop the others; a host without RDMA
// devices (or without kernel support) is OK and adds nothing.
//
//   VerbsPortSource verbs(std::make_unique<LibibverbsApi>());
//   Snapshot snapshot;
//   SourceStatus status = verbs.Collect(&snapshot);
//
// Thread safety: Collect() is called from one thread at a time (Source).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/sample.h"
#include "agent/source.h"
#include "agent/verbs.h"

namespace fabricdiag::agent {

class VerbsPortSource final : public Source {
 public:
  // `verbs` is the seam to libibverbs; must not be null.
  explicit VerbsPortSource(std::unique_ptr<VerbsApi> verbs);

  absl::string_view name() const override { return "verbs"; }

  SourceStatus Collect(Snapshot* snapshot) override;

 private:
  using PortTables = std::map<std::pair<std::string, uint32_t>,
                              std::shared_ptr<const std::vector<SeriesDesc>>>;
  std::unique_ptr<VerbsApi> verbs_;
  PortTables tables_;  // the gauges of the ports seen last time
};

// Decodes one port's raw attributes into the snapshot: a VerbsPortInfo and
// the gauges listed above. Pure; exposed for tests and replay tools.
void AppendVerbsPort(absl::string_view device, uint32_t port,
                     const VerbsPortAttr& attr, Snapshot* snapshot);
// The same with the port's gauge descriptions given (VerbsPortSource keeps
// them between snapshots); the snapshot keeps `table` alive.
void AppendVerbsPort(
    const std::shared_ptr<const std::vector<SeriesDesc>>& table,
    const VerbsPortAttr& attr, Snapshot* snapshot);

}  // namespace fabricdiag::agent
