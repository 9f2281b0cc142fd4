#include "agent/collector_list.h"

#include "common/address_list.h"
#include "common/status_macros.h"

namespace fabricdiag::agent {

absl::StatusOr<std::vector<std::string>> ParseCollectorList(
    absl::string_view value) {
  ASSIGN_OR_RETURN(std::vector<std::string> list,
                   SplitAddressList("collector", value));
  for (const std::string& entry : list) {
    RETURN_IF_ERROR(CheckHostPort("collector", entry, false));
  }
  return list;
}

uint64_t Fnv1a64(absl::string_view bytes) {
  uint64_t hash = 14695981039346656037u;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211u;
  }
  return hash;
}

size_t PreferredCollectorIndex(absl::string_view node, size_t count) {
  if (count == 0) return 0;
  return static_cast<size_t>(Fnv1a64(node) % count);
}

}  // namespace fabricdiag::agent
