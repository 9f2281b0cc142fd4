// EthtoolStats: the seam between the ethtool source and the kernel's
// SIOCETHTOOL statistics interface (what `ethtool -S IF` prints).
//
// The source only ever talks to the abstract EthtoolStats, so tests inject a
// gmock and production injects KernelEthtoolStats:
//
//   ASSIGN_OR_RETURN(std::unique_ptr<KernelEthtoolStats> kernel,
//                    KernelEthtoolStats::Create());
//   ASSIGN_OR_RETURN(std::vector<std::string> names,
//                    kernel->StatNames("eth0"));
//   absl::StatusOr<std::vector<uint64_t>> values =
//       kernel->StatValues("eth0", names.size());
//   if (absl::IsAborted(values.status())) { /* stat set changed: re-read */ }
//
// Why names and values are separate calls: the names (ETHTOOL_GSTRINGS) are
// large and stable, the values (ETHTOOL_GSTATS) are read every interval. But
// the set is not fixed for the life of a netdev: mlx5 adds the per-priority
// PFC counters (rx_prio3_pause, ...) when PFC is enabled on a priority and
// removes them when it is disabled (en_stats.c mlx5e_grp_per_prio_pfc_*,
// see docs/counters.md). StatValues therefore takes the count the caller's
// names were read for and fails with kAborted when the driver now reports a
// different count, which tells the caller to re-read the names.
//
// Error codes (both implementations and every mock must follow them):
//   kUnimplemented  the driver has no ethtool statistics (lo, some virtual
//                   devices): "no stats", not a failure.
//   kNotFound       the netdev does not exist (any more) (ENODEV).
//   kAborted        StatValues only: the stat count is no longer `count`.
//   kInvalidArgument the interface name cannot be a netdev name.
//   kPermissionDenied, kUnavailable, kInternal: other errors; the message
//                   names the interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::agent {

// Splits a GSTRINGS reply into `count` names of ETH_GSTRING_LEN (32) bytes
// each. A slot is NUL-padded, but a name of exactly 32 characters fills it
// with no terminator; anything after the first NUL in a slot is ignored.
// `data` must hold at least count * 32 bytes (fewer: only whole slots).
std::vector<std::string> SplitEthtoolStrings(absl::string_view data,
                                             size_t count);

class EthtoolStats {
 public:
  virtual ~EthtoolStats() = default;

  // The names of the ETH_SS_STATS string set of `ifname`, in driver order,
  // exactly as the driver spells them (NUL padding removed).
  virtual absl::StatusOr<std::vector<std::string>> StatNames(
      const std::string& ifname) = 0;

  // The current values of the ETH_SS_STATS set of `ifname`: exactly `count`
  // raw 64-bit values, in the same order as StatNames(), or kAborted when
  // the driver's count is no longer `count`.
  virtual absl::StatusOr<std::vector<uint64_t>> StatValues(
      const std::string& ifname, size_t count) = 0;
};

// EthtoolStats over the SIOCETHTOOL ioctl (ETHTOOL_GSSET_INFO,
// ETHTOOL_GSTRINGS, ETHTOOL_GSTATS from linux/ethtool.h). These commands need
// no capability.
//
// The socket is created by Create(), and a socket stays bound to the network
// namespace of the thread that created it: every later call, from any
// thread, queries the netdevs of that namespace. (The veth test relies on
// this to query a namespace of its own.)
//
// Thread safety: all methods are thread-safe (each call is independent
// ioctls on a shared descriptor; there is no other state).
class KernelEthtoolStats : public EthtoolStats {
 public:
  // Opens an AF_INET/SOCK_DGRAM socket in the caller's network namespace.
  static absl::StatusOr<std::unique_ptr<KernelEthtoolStats>> Create();

  ~KernelEthtoolStats() override;
  KernelEthtoolStats(const KernelEthtoolStats&) = delete;
  KernelEthtoolStats& operator=(const KernelEthtoolStats&) = delete;

  absl::StatusOr<std::vector<std::string>> StatNames(
      const std::string& ifname) override;
  absl::StatusOr<std::vector<uint64_t>> StatValues(const std::string& ifname,
                                                   size_t count) override;

 private:
  explicit KernelEthtoolStats(int fd) : fd_(fd) {}

  // The current size of the ETH_SS_STATS set (ETHTOOL_GSSET_INFO);
  // kUnimplemented when the driver does not support it.
  absl::StatusOr<size_t> StatCount(const std::string& ifname);

  // Issues SIOCETHTOOL with `data` as ifr_data; maps errno to a Status.
  absl::Status Ioctl(const std::string& ifname, void* data, const char* what);

  const int fd_;
};

}  // namespace fabricdiag::agent
