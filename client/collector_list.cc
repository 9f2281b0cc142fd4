#include "client/collector_list.h"

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

size_t PreferredCollectorIndex(absl::string_view node, size_t count) {
  if (count == 0) return 0;
  return static_cast<size_t>(Fnv1a64(node) % count);
}

size_t HandoffCollectorIndex(absl::string_view node, size_t current,
                             size_t count) {
  if (count <= 1) return 0;
  // Mixed: FNV-1a's bits alone follow those that placed the node (with 3
  // collectors, every agent one of them hands off went to the same other).
  const size_t step =
      1 + static_cast<size_t>(Fmix64(Fnv1a64(node)) % (count - 1));
  return (current % count + step) % count;
}

}  // namespace fabricdiag::client
