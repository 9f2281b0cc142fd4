#include "agent/ethtool_ioctl.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace fabricdiag::agent {
namespace {

// The kernel sizes the GSTRINGS/GSTATS replies by the driver's count at the
// time of the call, not by the count user space passes in
// (net/ethtool/ioctl.c ethtool_get_strings/ethtool_get_stats), so a stat set
// that grows between our GSSET_INFO and the read would be written past a
// buffer sized exactly. Every reply buffer gets this many spare entries:
// enabling PFC on all 8 priorities adds 8 * 5 mlx5 counters, far below it.
constexpr size_t kSpareEntries = 1024;

// A sanity bound on the stat count a driver may report (mlx5 with 256
// channels reports a few tens of thousands).
constexpr size_t kMaxStats = size_t{1} << 20;

absl::Status ErrnoStatus(int err, const std::string& ifname, const char* what) {
  std::string message = absl::StrCat("SIOCETHTOOL ", what, " on ", ifname, ": ",
                                     std::strerror(err));
  switch (err) {
    case EOPNOTSUPP:
      return absl::UnimplementedError(
          absl::StrCat(message, " (driver has no ethtool statistics)"));
    case ENODEV:
    case ENXIO:
      return absl::NotFoundError(message);
    case EPERM:
    case EACCES:
      return absl::PermissionDeniedError(message);
    case EINTR:
    case EAGAIN:
    case EBUSY:
    case ENOMEM:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace

std::vector<std::string> SplitEthtoolStrings(absl::string_view data,
                                             size_t count) {
  count = std::min(count, data.size() / ETH_GSTRING_LEN);
  std::vector<std::string> names;
  names.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    absl::string_view slot = data.substr(i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
    names.emplace_back(slot.substr(0, slot.find('\0')));
  }
  return names;
}

absl::StatusOr<std::unique_ptr<KernelEthtoolStats>>
KernelEthtoolStats::Create() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    int err = errno;
    return absl::UnavailableError(absl::StrCat(
        "cannot create the SIOCETHTOOL socket: ", std::strerror(err)));
  }
  return std::unique_ptr<KernelEthtoolStats>(new KernelEthtoolStats(fd));
}

KernelEthtoolStats::~KernelEthtoolStats() { ::close(fd_); }

absl::Status KernelEthtoolStats::Ioctl(const std::string& ifname, void* data,
                                       const char* what) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ ||
      ifname.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a netdev name: \"", ifname, "\""));
  }
  struct ifreq ifr;
  std::memset(&ifr, 0, sizeof(ifr));
  std::memcpy(ifr.ifr_name, ifname.data(), ifname.size());
  ifr.ifr_data = static_cast<char*>(data);
  if (::ioctl(fd_, SIOCETHTOOL, &ifr) < 0) {
    return ErrnoStatus(errno, ifname, what);
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> KernelEthtoolStats::StatCount(
    const std::string& ifname) {
  // struct ethtool_sset_info ends in a flexible array with one u32 per
  // queried set; we query one set. uint64_t storage keeps it aligned.
  uint64_t buf[(sizeof(struct ethtool_sset_info) + sizeof(uint32_t) + 7) / 8] =
      {};
  auto* info = reinterpret_cast<struct ethtool_sset_info*>(buf);
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = uint64_t{1} << ETH_SS_STATS;
  absl::Status status = Ioctl(ifname, info, "ETHTOOL_GSSET_INFO");
  if (!status.ok()) return status;
  // A driver without get_sset_count (lo) clears the bit instead of failing
  // (net/ethtool/ioctl.c ethtool_get_sset_info).
  if ((info->sset_mask & (uint64_t{1} << ETH_SS_STATS)) == 0) {
    return absl::UnimplementedError(
        absl::StrCat(ifname, ": driver has no ethtool statistics"));
  }
  size_t count = info->data[0];
  if (count > kMaxStats) {
    return absl::InternalError(absl::StrCat(
        ifname, ": driver reports an implausible stat count ", count));
  }
  return count;
}

absl::StatusOr<std::vector<std::string>> KernelEthtoolStats::StatNames(
    const std::string& ifname) {
  // The set may change between GSSET_INFO and GSTRINGS (PFC reconfigured);
  // a couple of retries cover that without looping forever.
  constexpr int kAttempts = 3;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    absl::StatusOr<size_t> count = StatCount(ifname);
    if (!count.ok()) return count.status();
    if (*count == 0) return std::vector<std::string>();

    const size_t capacity = *count + kSpareEntries;
    const size_t bytes =
        sizeof(struct ethtool_gstrings) + capacity * ETH_GSTRING_LEN;
    std::vector<uint64_t> buf((bytes + 7) / 8, 0);
    auto* gstrings = reinterpret_cast<struct ethtool_gstrings*>(buf.data());
    gstrings->cmd = ETHTOOL_GSTRINGS;
    gstrings->string_set = ETH_SS_STATS;
    gstrings->len = static_cast<uint32_t>(*count);
    absl::Status status = Ioctl(ifname, gstrings, "ETHTOOL_GSTRINGS");
    if (!status.ok()) return status;
    if (gstrings->len > capacity) {
      // The kernel has already written past our buffer: memory is corrupt.
      std::fprintf(stderr,
                   "FATAL ETHTOOL_GSTRINGS on %s overflowed: %u > %zu\n",
                   ifname.c_str(), gstrings->len, capacity);
      std::abort();
    }
    if (gstrings->len != *count) continue;

    return SplitEthtoolStrings(
        absl::string_view(reinterpret_cast<const char*>(gstrings->data),
                          *count * ETH_GSTRING_LEN),
        *count);
  }
  return absl::AbortedError(
      absl::StrCat(ifname,
                   ": ethtool stat set kept changing while reading "
                   "its names"));
}

absl::StatusOr<std::vector<uint64_t>> KernelEthtoolStats::StatValues(
    const std::string& ifname, size_t count) {
  if (count > kMaxStats) {
    return absl::InvalidArgumentError(
        absl::StrCat(ifname, ": stat count ", count, " is implausible"));
  }
  absl::StatusOr<size_t> current = StatCount(ifname);
  if (!current.ok()) return current.status();
  if (*current != count) {
    return absl::AbortedError(absl::StrCat(ifname, ": ethtool stat count is ",
                                           *current, ", expected ", count));
  }
  // The kernel warns when asked for an empty set (WARN_ON_ONCE(!n_stats)).
  if (count == 0) return std::vector<uint64_t>();

  const size_t capacity = count + kSpareEntries;
  // struct ethtool_stats is {u32 cmd; u32 n_stats; u64 data[]}: one u64 of
  // header, then the values.
  static_assert(sizeof(struct ethtool_stats) == sizeof(uint64_t));
  std::vector<uint64_t> buf(1 + capacity, 0);
  auto* stats = reinterpret_cast<struct ethtool_stats*>(buf.data());
  stats->cmd = ETHTOOL_GSTATS;
  stats->n_stats = static_cast<uint32_t>(count);
  absl::Status status = Ioctl(ifname, stats, "ETHTOOL_GSTATS");
  if (!status.ok()) return status;
  if (stats->n_stats > capacity) {
    std::fprintf(stderr, "FATAL ETHTOOL_GSTATS on %s overflowed: %u > %zu\n",
                 ifname.c_str(), stats->n_stats, capacity);
    std::abort();
  }
  // Re-validate: the set may have changed after GSSET_INFO.
  if (stats->n_stats != count) {
    return absl::AbortedError(absl::StrCat(ifname, ": ETHTOOL_GSTATS returned ",
                                           stats->n_stats, " values, expected ",
                                           count));
  }
  return std::vector<uint64_t>(buf.begin() + 1, buf.begin() + 1 + count);
}

}  // namespace fabricdiag::agent
