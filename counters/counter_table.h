// The one table of NIC and switch counters fabricdiag knows: for every
// spelling of every driver (and every gNMI path of a switch), its width,
// unit, scale and meaning.
//
// The agent describes every counter it reads through this table (RDMA PMA
// counters and hw_counters, netdev statistics, ethtool statistics); the
// collector maps only meanings onto analysis signals; the simulator, the
// virtual agents and the test fakes generate their files and series from
// it; docs/counters.md is rendered from it. A new driver spelling is one
// row here (and its line in counter_table_test.cc).
//
//   CounterInfo c = Classify(Family::kEthtool, Driver::kUnknown,
//                            "tx_prio3_pause_duration");
//   // c.meaning == Meaning::kPfcPauseDuration, c.direction == kTx,
//   // c.priority == 3, c.scale == 1e-6, c.unit == "seconds"
//
//   for (const CounterSpec& row : Rows()) { ... }   // every row, in order
//
// Lookup rules (Classify):
// - A name is matched against rows of its family. A row's name is exact, or
//   holds "{p}" where the driver prints one priority digit 0..7.
// - A row of the device's own driver wins, then a driver-independent row
//   (Driver::kAny), then a row of another driver: drivers copy each other's
//   spellings (bnxt_re adopted mlx5's `np_cnp_sent`), so the meaning,
//   direction, unit and scale carry over, but the width only holds for the
//   driver that row describes (64 bits otherwise). With Driver::kUnknown
//   the first matching row is taken whole.
// - mlx5 switchdev representors prefix hw_counters with "vport_": such a
//   name has the width of its unprefixed row and no meaning (it counts a
//   representor's traffic, not the port's).
// - gNMI families: a list key that is not a priority is written "*" in a
//   row ("queue[name=*]", "Queues[*]"). A name that matches no row as it is
//   is looked up again with every key value replaced by "*", so that
//   ".../queue[name=UC3]/state/dropped-pkts" finds its row.
// - Unknown names are described by family defaults (64-bit counter, unit
//   and direction from the name's shape), never guessed into a meaning.
//
// Pure; thread-safe (the index is built once, on first use).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "counters/vocabulary.h"

namespace fabricdiag::counters {

// Which set of names a counter belongs to.
enum class Family : uint8_t {
  kIbPma,             // class/infiniband/D/ports/N/counters/
  kIbPmaExt,          // class/infiniband/D/ports/N/counters_ext/ (< v4.5)
  kRdmaHw,            // class/infiniband/D/{,ports/N/}hw_counters/
  kNetdevStatistics,  // class/net/IF/statistics/
  kNetdevAttribute,   // class/net/IF/<counter attribute>
  kEthtool,           // ETHTOOL_GSTATS / `ethtool -S`
  // gNMI paths of a switch, as a gNMI client receives them.
  // OpenConfig: the schema path with the interface's key left out (the
  // interface is the device), "/interfaces/interface/state/counters/
  // in-octets"; vendor augments are recognised by their path.
  kGnmiOpenConfig,
  // SONiC COUNTERS_DB: the SAI statistic name of a port
  // ("SAI_PORT_STAT_IF_IN_OCTETS"), or "Queues[N]/<name>" for queue N.
  kGnmiSonic,
};
inline constexpr Family kAllFamilies[] = {
    Family::kIbPma,           Family::kIbPmaExt,
    Family::kRdmaHw,          Family::kNetdevStatistics,
    Family::kNetdevAttribute, Family::kEthtool,
    Family::kGnmiOpenConfig,  Family::kGnmiSonic};

// "ib_pma", "ib_pma_ext", "rdma_hw", "netdev_statistics", ...
const char* FamilyName(Family f);

// The family a subsystem's counters belong to; false for subsystems whose
// values are not counters named by drivers (port attributes, verbs) and for
// gNMI, whose family is the switch's dialect (the bridge classifies).
bool FamilyOf(Subsystem subsystem, Family* family);

// Width of the IB PMA data and packet counters: 32 bits, or 64 when the PMA
// has extended width (drivers/infiniband/core/sysfs.c get_counter_table).
inline constexpr uint8_t kPmaWidth = 0;

// One spelling of one counter.
struct CounterSpec {
  Family family;
  Driver driver;
  // Exact name, or with "{p}" for a priority digit 0..7.
  absl::string_view name;
  Meaning meaning;
  Direction direction;
  // Base unit after scaling: "bytes", "packets", "frames", "seconds", ...
  absl::string_view unit;
  // Base-unit value = raw * scale (4: IB 4-octet words; 1e-6: microseconds).
  double scale;
  Kind kind;
  // Bits the kernel keeps (64, 32, 16, 8, 4); kPmaWidth for PMA data.
  uint8_t width_bits;
  // What it counts, in a few words, for docs/counters.md.
  absl::string_view doc;
};

// Every row, in the order of the table (grouped by family and driver).
absl::Span<const CounterSpec> Rows();

// How one counter name is to be read.
struct CounterInfo {
  Meaning meaning = Meaning::kNone;
  Direction direction = Direction::kNone;
  int priority = -1;  // 0..7 for per-priority counters, else -1
  double scale = 1.0;
  std::string unit;
  Kind kind = Kind::kCounter;
  // For IB PMA data and packet counters (kPmaWidth rows) this is 32, and
  // `pma_width` is true: 64 when the PMA has extended width.
  uint32_t width_bits = 64;
  bool pma_width = false;
  // The row that matched; null for a name the table does not know.
  const CounterSpec* row = nullptr;
};

// Describes counter `name` of `family` on a device driven by `driver` (see
// the lookup rules above).
CounterInfo Classify(Family family, Driver driver, absl::string_view name);

// The name `row` has for `priority` ("rx_prio3_pause" for "rx_prio{p}_pause"
// and 3); `row.name` itself when it has no "{p}".
std::string ExpandName(const CounterSpec& row, int priority);

// True when `row.name` holds "{p}".
bool IsPerPriority(const CounterSpec& row);

// The rows a device of `driver` has in `family`: its own rows and the
// driver-independent ones, in table order.
std::vector<const CounterSpec*> RowsFor(Family family, Driver driver);

}  // namespace fabricdiag::counters
