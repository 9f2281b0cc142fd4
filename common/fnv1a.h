// FNV-1a, 64 bits: the stable hash that places nodes.
//
// Agents pick their collector by it (client/collector_list.h), the gNMI
// bridge its switches, and a cluster's analysis leader the agents it hands
// off. It must give the same value in every process, on every machine and
// in every version: std::hash and absl::Hash promise none of that.
//
//   uint64_t h = Fnv1a64("gpu-003");
//   uint64_t mixed = Fmix64(h);
//
// Pure; thread-safe.
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"

namespace fabricdiag {

// Offset basis 14695981039346656037, prime 1099511628211, over the bytes of
// `bytes`. Changing it moves nodes between collectors: tests pin its
// values.
inline uint64_t Fnv1a64(absl::string_view bytes) {
  uint64_t hash = 14695981039346656037u;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211u;
  }
  return hash;
}

// MurmurHash3's 64-bit finalizer: every output bit depends on every input
// bit. FNV-1a's own bits are not that well mixed (for names that differ in
// their last bytes its low and upper bits move together), so a second
// choice made from the same hash as the placement goes through this first.
inline uint64_t Fmix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdu;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53u;
  h ^= h >> 33;
  return h;
}

}  // namespace fabricdiag
