#include "agent/ethtool_names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace fabricdiag::agent {
namespace {

// Consumes one or more leading decimal digits.
bool ConsumeDigits(absl::string_view* s) {
  size_t n = 0;
  while (n < s->size() &&
         absl::ascii_isdigit(static_cast<unsigned char>((*s)[n]))) {
    ++n;
  }
  s->remove_prefix(n);
  return n > 0;
}

// `name` is `prefix` + digits + `after`, followed by anything.
bool NumberedPrefix(absl::string_view name, absl::string_view prefix,
                    absl::string_view after) {
  if (!absl::ConsumePrefix(&name, prefix)) return false;
  if (!ConsumeDigits(&name)) return false;
  return absl::StartsWith(name, after);
}

}  // namespace

bool IsPerQueueStat(absl::string_view name) {
  // bnxt_en: "[3]: rx_ucast_packets".
  if (NumberedPrefix(name, "[", "]: ")) return true;
  // mlx5 rings and channels: rx0_, tx3_, ch0_; HTB queues qos_tx0_; the PTP
  // channel ptp_* (en_stats.c). "rx_prio0_" has no digit right after "rx".
  if (NumberedPrefix(name, "rx", "_") || NumberedPrefix(name, "tx", "_") ||
      NumberedPrefix(name, "ch", "_") || NumberedPrefix(name, "qos_tx", "_") ||
      absl::StartsWith(name, "ptp_")) {
    return true;
  }
  // veth, ice, virtio_net: rx_queue_0_xdp_packets, tx_queue_12_bytes.
  if (NumberedPrefix(name, "rx_queue_", "_") ||
      NumberedPrefix(name, "tx_queue_", "_")) {
    return true;
  }
  // i40e: tx-0.tx_packets, rx-3.rx_bytes.
  return NumberedPrefix(name, "rx-", ".") || NumberedPrefix(name, "tx-", ".");
}

}  // namespace fabricdiag::agent
