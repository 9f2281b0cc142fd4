#include "client/collector_list.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/address_list.h"
#include "common/status_macros.h"

namespace fabricdiag::client {

absl::StatusOr<std::vector<std::string>> ParseCollectorList(
    absl::string_view value) {
  ASSIGN_OR_RETURN(std::vector<std::string> list,
                   SplitAddressList("collector", value));
  for (const std::string& entry : list) {
    RETURN_IF_ERROR(CheckHostPort("collector", entry, false));
  }
  return list;
}

uint64_t RendezvousHash(absl::string_view node, absl::string_view entry) {
  std::string bytes;
  bytes.reserve(node.size() + 1 + entry.size());
  bytes.append(node.data(), node.size());
  bytes.push_back('\0');
  bytes.append(entry.data(), entry.size());
  return Fmix64(Fnv1a64(bytes));
}

double RendezvousScore(absl::string_view node, absl::string_view entry,
                       double weight) {
  // 53 bits: exactly representable, and +0.5 keeps u off 0 and 1, where
  // ln(u) would be -inf or 0.
  const double u =
      (static_cast<double>(RendezvousHash(node, entry) >> 11) + 0.5) /
      9007199254740992.0;  // 2^53
  return -weight / std::log(u);
}

std::vector<size_t> RankCollectors(absl::string_view node,
                                   const std::vector<std::string>& collectors) {
  std::vector<std::pair<double, size_t>> scored;
  scored.reserve(collectors.size());
  for (size_t i = 0; i < collectors.size(); ++i) {
    scored.emplace_back(RendezvousScore(node, collectors[i], 1.0), i);
  }
  std::stable_sort(
      scored.begin(), scored.end(),
      [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<size_t> order;
  order.reserve(scored.size());
  for (const auto& [score, index] : scored) order.push_back(index);
  return order;
}

size_t PreferredCollectorIndex(absl::string_view node, size_t count) {
  if (count == 0) return 0;
  return static_cast<size_t>(Fnv1a64(node) % count);
}

}  // namespace fabricdiag::client
