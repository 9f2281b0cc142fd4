// SYNTHETIC `ethtool -S` text of a ConnectX (mlx5_core) port, for the
// benchmark's `--ethtool_dir` tree.
//
// No real, complete capture of an mlx5 port with per-priority PFC enabled is
// available (tests/fixtures/ethtool/PROVENANCE.md). This generator prints the
// port-level names the mlx5 driver registers (drivers/net/ethernet/mellanox/
// mlx5/core/en_stats.c: SW sums, vport, IEEE 802.3/RFC 2863/2819/3635 PPCNT
// groups, physical-layer counters, per-priority traffic, PFC on one
// priority, PCIe, module events) with made-up values: the names the agent
// interprets come from the counter table (counters/counter_table.h), the
// ones it exports raw are listed here. Per-ring
// (rx0_*, tx3_*, ch0_*) lines are left out, as the agent skips them by
// default. The values mean nothing; only the shape (about 200 lines, the
// per-priority PFC lines present) matters for a cost measurement.
//
//   std::string text = SyntheticMlx5EthtoolStats(/*seed=*/1,
//   /*pfc_priority=*/3);
//   // "NIC statistics:\n     rx_packets: ...\n ... rx_prio3_pause: ...\n"
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace fabricdiag::agent {

// The stat names, in the order printed.
std::vector<std::string> SyntheticMlx5EthtoolNames(int pfc_priority);

// The whole text, with values derived from `seed` (distinct per NIC).
std::string SyntheticMlx5EthtoolStats(uint64_t seed, int pfc_priority);

// Writes `dir`/IF for each netdev (dir must exist) plus a SYNTHETIC.README
// note saying where the files come from.
absl::Status WriteSyntheticEthtoolDir(const std::string& dir,
                                      const std::vector<std::string>& netdevs,
                                      int pfc_priority);

}  // namespace fabricdiag::agent
