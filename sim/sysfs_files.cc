#include "sim/sysfs_files.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "counters/counter_table.h"

namespace fabricdiag::sim {
namespace {

using counters::CounterSpec;
using counters::Direction;
using counters::Family;
using counters::Meaning;

std::string Num(uint64_t v) { return absl::StrCat(v, "\n"); }

std::string RateText(int gbps) {
  return gbps >= 400 ? "400 Gb/sec (4X NDR)\n" : "200 Gb/sec (4X HDR)\n";
}

// What the driver prints for a simulated `value`: IB data in 4-octet words,
// and the counter kept within the width the table gives it (an IB PMA
// counter stops at all-ones, IBA 16.1.3.5; others wrap). The simulated
// PMA has extended width: its data counters are 64-bit.
uint64_t Printed(const CounterSpec& row, uint64_t value) {
  if (row.scale > 1) value = static_cast<uint64_t>(value / row.scale);
  const uint32_t bits =
      row.width_bits == counters::kPmaWidth ? 64 : row.width_bits;
  if (bits >= 64) return value;
  const uint64_t max = (uint64_t{1} << bits) - 1;
  if (row.family == Family::kIbPma) return std::min(value, max);
  return value & max;
}

// Calls emit(name, printed value) for every mlx5 counter of `family`. The
// first spelling of a meaning (and direction) carries the simulated value;
// later spellings of it, and counters the simulator does not model, read 0.
template <typename Emit>
void ForEachCounter(Family family, const PortCounters& c, bool switch_port,
                    Emit emit) {
  std::set<std::pair<Meaning, Direction>> carried;
  for (const CounterSpec* row :
       counters::RowsFor(family, counters::Driver::kMlx5)) {
    // The simulated NICs run PFC: mlx5 prints global pause counters only
    // while 802.3x pause is enabled (en_stats.c).
    if (absl::StrContains(row->name, "global_pause")) continue;
    std::optional<Counter> counter;
    if (row->meaning != Meaning::kNone &&
        carried.emplace(row->meaning, row->direction).second) {
      counter = CounterOf(family, row->meaning, row->direction, switch_port);
    }
    if (!counters::IsPerPriority(*row)) {
      emit(counters::ExpandName(*row, -1),
           Printed(*row, counter ? c.value[*counter] : 0));
      continue;
    }
    for (int p = 0; p < kPriorities; ++p) {
      emit(counters::ExpandName(*row, p),
           Printed(*row, counter ? c.value[*counter + p] : 0));
    }
  }
}

}  // namespace

std::vector<FileEntry> RdmaDeviceFiles(const SimNic& nic, size_t nic_index,
                                       const PortCounters& c,
                                       bool with_static) {
  std::vector<FileEntry> out;
  if (with_static) {
    // A ConnectX-7 (MT4129) with firmware of the 28.39 line.
    out.push_back({"fw_ver", "28.39.1002\n"});
    out.push_back({"board_id", "MT_0000000838\n"});
    out.push_back({"hca_type", "MT4129\n"});
    out.push_back({"node_type", "1: CA\n"});
    out.push_back({"node_guid", absl::StrFormat("b83f:d203:%04x:%04x\n",
                                                (nic_index >> 16) & 0xffff,
                                                nic_index & 0xffff)});
    out.push_back({absl::StrCat("device/net/", nic.netdev, "/"), ""});
    out.push_back({"ports/1/link_layer", "Ethernet\n"});
    out.push_back({"ports/1/gid_attrs/ndevs/0", nic.netdev + "\n"});
    out.push_back({"ports/1/gid_attrs/ndevs/1", nic.netdev + "\n"});
    out.push_back({"ports/1/gid_attrs/types/0", "IB/RoCE v1\n"});
    out.push_back({"ports/1/gid_attrs/types/1", "RoCE v2\n"});
    out.push_back({"ports/1/hw_counters/lifespan", "10\n"});  // a setting
  }
  out.push_back({"ports/1/state", c.link_up ? "4: ACTIVE\n" : "1: DOWN\n"});
  out.push_back(
      {"ports/1/phys_state", c.link_up ? "5: LinkUp\n" : "3: Disabled\n"});
  out.push_back({"ports/1/rate", RateText(c.speed_gbps)});
  ForEachCounter(Family::kIbPma, c, false,
                 [&out](const std::string& name, uint64_t v) {
                   out.push_back({"ports/1/counters/" + name, Num(v)});
                 });
  ForEachCounter(Family::kRdmaHw, c, false,
                 [&out](const std::string& name, uint64_t v) {
                   out.push_back({"ports/1/hw_counters/" + name, Num(v)});
                 });
  return out;
}

std::vector<FileEntry> NetdevFiles(const PortCounters& c, bool switch_port,
                                   bool with_static) {
  std::vector<FileEntry> out;
  if (with_static) {
    out.push_back({"mtu", switch_port ? "9216\n" : "9000\n"});
    out.push_back({"type", "1\n"});
  }
  out.push_back({"operstate", c.link_up ? "up\n" : "down\n"});
  out.push_back({"carrier", c.link_up ? "1\n" : "0\n"});
  // Mb/s; SPEED_UNKNOWN (-1) while the link is down (net-sysfs.c).
  out.push_back({"speed", c.link_up ? absl::StrCat(c.speed_gbps * 1000, "\n")
                                    : std::string("-1\n")});
  ForEachCounter(Family::kNetdevStatistics, c, switch_port,
                 [&out](const std::string& name, uint64_t v) {
                   out.push_back({"statistics/" + name, Num(v)});
                 });
  ForEachCounter(Family::kNetdevAttribute, c, switch_port,
                 [&out](const std::string& name, uint64_t v) {
                   out.push_back({name, Num(v)});
                 });
  return out;
}

std::string EthtoolStatsText(const PortCounters& c) {
  std::string out = "NIC statistics:\n";
  ForEachCounter(Family::kEthtool, c, false,
                 [&out](const std::string& name, uint64_t v) {
                   absl::StrAppend(&out, "     ", name, ": ", v, "\n");
                 });
  return out;
}

}  // namespace fabricdiag::sim
