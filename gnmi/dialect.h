// What the bridge subscribes to on a switch of each dialect, in groups of
// one Subscribe RPC each.
//
// A target answers a Subscribe that names a path it does not implement
// with UNIMPLEMENTED for the whole RPC (gNMI specification 3.5.2.4), and
// vendors implement different augments (Arista's PFC counters, Cumulus's
// per switch-priority pause), so paths that not every target has go in
// groups of their own: a group the target refuses is dropped (and tried
// again much later) while the others stream. The `required` group decides
// whether the switch is up.
//
//   for (const GroupSpec& g : GroupsFor(Dialect::kSonic)) { ... }
//
// Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/gnmi.pb.h"

namespace fabricdiag::gnmi {

enum class Dialect : uint8_t {
  kOpenConfig,  // OpenConfig interfaces and QoS, with vendor PFC augments
  kSonic,       // SONiC COUNTERS_DB / APPL_DB with SAI statistic names
};

// "openconfig" / "sonic" (the topology file's spelling).
const char* DialectName(Dialect d);
absl::StatusOr<Dialect> ParseDialect(absl::string_view name);

struct SubscriptionSpec {
  const char* path;  // text form (gnmi_path.h)
  ::gnmi::SubscriptionMode mode;
};

struct GroupSpec {
  const char* name;    // for metrics and logs: "interfaces", "arista_pfc"
  const char* target;  // the prefix target (a SONiC database); "" = none
  bool required;       // the switch is up only while this group streams
  std::vector<SubscriptionSpec> subscriptions;
  // The group's leaves are the switch's LLDP neighbors: the set is
  // complete once it synced, and starts empty when it starts again.
  bool lldp = false;
};

// The groups of `dialect`, the required one first.
const std::vector<GroupSpec>& GroupsFor(Dialect dialect);

}  // namespace fabricdiag::gnmi
