// One switch's LLDP neighbors as its gNMI stream reports them, field by
// field (OpenConfig sends one leaf per field, SONiC one hash per port), and
// the neighbor set the bridge sends to the collector.
//
// Hostile input is bounded (docs/gnmi-bridge.md, "LLDP neighbors"): a text
// is cut to agent::kLldpMaxFieldBytes (an LLDP string TLV's limit), and a
// switch holds at most kMaxNeighbors neighbors: one more is refused and
// counted once. A neighbor without a chassis id or a port id names no far
// end: it is held (its other fields may still come) but not sent.
//
//   LldpTable table;
//   table.Set("Ethernet0", "1", LldpField::kSystemName, "spine-1");
//   table.Set("Ethernet0", "1", LldpField::kChassisId, "0C:29:EF:CE:10:00");
//   table.Set("Ethernet0", "1", LldpField::kPortId, "Ethernet8");
//   std::vector<agent::LldpNeighbor> n = table.Complete();  // one
//
// Thread-compatible.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "agent/lldp_neighbor.h"
#include "gnmi/path_map.h"

namespace fabricdiag::gnmi {

class LldpTable {
 public:
  // As many as an agent keeps: a 512-port switch with a few neighbors per
  // port stays well below it.
  static constexpr size_t kMaxNeighbors = agent::kLldpMaxNeighbors;

  struct SetResult {
    bool truncated = false;  // the value was cut to kLldpMaxFieldBytes
    bool refused = false;    // a new neighbor beyond kMaxNeighbors, first time
  };

  // Sets `field` of the neighbor `neighbor` heard on `port` ("" for a
  // SONiC port's only neighbor). Surrounding blanks are dropped (SONiC
  // stores an absent port description as " "), a type is spelled as lldpd
  // spells it (LldpIdType), and of a management address list
  // ("172.17.2.1,fd00::1") the first one is kept.
  SetResult Set(absl::string_view port, absl::string_view neighbor,
                LldpField field, absl::string_view value);

  // Removes a neighbor; every neighbor of `port` when `neighbor` is
  // empty; every neighbor when `port` is empty too.
  void Remove(absl::string_view port, absl::string_view neighbor);

  // Removes every neighbor and forgets what was refused.
  void Clear();

  // The neighbors with a chassis id and a port id, local_port = the port,
  // sorted, without duplicates. A MAC address id is lower-cased.
  std::vector<agent::LldpNeighbor> Complete() const;

  size_t size() const { return entries_.size(); }
  // Held but not sent: no chassis id or no port id.
  size_t incomplete() const;
  // Bumped by every change of a value; equal generations, equal tables.
  uint64_t generation() const { return generation_; }

 private:
  using Key = std::pair<std::string, std::string>;  // port, neighbor
  using Fields = std::array<std::string, kLldpFieldCount>;

  std::map<Key, Fields> entries_;
  // Neighbors refused so far, each counted once; bounded like the table.
  absl::flat_hash_set<std::string> refused_;
  uint64_t generation_ = 0;
};

}  // namespace fabricdiag::gnmi
