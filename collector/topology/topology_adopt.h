// Reading one of the three topologies by name, and adopting the discovered
// one as the declared one: the logic behind GetTopology's view and
// AdoptTopology, kept out of the gRPC service.
//
//   absl::StatusOr<std::shared_ptr<const v1::Topology>> t =
//       TopologyOfView(*source.Current(), TopologyKind::kDiscovered);
//   absl::StatusOr<AdoptResult> adopted =
//       AdoptDiscovered(source, &registry, version_read, deadline);
//   AdoptResult diff_input = AdoptPreview(*source.Current());
//
// Thread-safe (the registry serializes the writes).
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collector/declared/layout_registry.h"
#include "collector/topology/topology_views.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

enum class TopologyKind { kDeclared, kDiscovered, kEffective };

// The topology of `kind`; NotFound for the declared one when none was
// applied. The discovered and effective ones always exist (maybe empty).
absl::StatusOr<std::shared_ptr<const v1::Topology>> TopologyOfView(
    const TopologyViews& views, TopologyKind kind);

// What adopting `discovered` declares: the same cabling, without what only a
// discovery sets (tiers; a topology file has none).
v1::Topology AdoptableTopology(const v1::Topology& discovered);

struct AdoptResult {
  v1::Topology written;  // or that would be, on a dry run
  // RegistrySnapshot::topology_version after the write (now, dry run; of
  // `declared`, from AdoptPreview).
  uint64_t declared_version = 0;
  // From AdoptPreview only: the declared topology `written` was drawn
  // against; null when none was declared.
  std::shared_ptr<const v1::Topology> declared;
};

// What adopting would write, with the declared topology it would replace
// and that one's version, all of the one drawing `views`: what `fabricdiag
// topology diff` compares (two reads could straddle a redraw). Unlike a dry
// run of AdoptDiscovered it answers when nothing is discovered yet (then
// every declared link is missing).
AdoptResult AdoptPreview(const TopologyViews& views);

// Writes the discovered topology of `source` as the declared one when the
// registry still serves `expected_version` (0: none declared); Aborted
// when another write came in between, FailedPrecondition when nothing is
// discovered yet (adopting it would erase the declaration). A dry run
// writes nothing and says what would be written over which version.
absl::StatusOr<AdoptResult> AdoptDiscovered(const TopologySource& source,
                                            LayoutRegistry* registry,
                                            uint64_t expected_version,
                                            bool dry_run, absl::Time deadline);

}  // namespace fabricdiag::collector
