// Fixed-width little-endian integers in byte strings, the encoding of the
// collector's state files (collector/state/object_store.h,
// collector/state/findings_log.h): the bytes do not depend on the host.
//
//   std::string out;
//   PutU32(&out, length);
//   const uint32_t length = GetU32(out.data());  // reads 4 bytes
#pragma once

#include <cstdint>
#include <string>

namespace fabricdiag {

inline void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

inline void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// The caller guarantees 4 (GetU32) or 8 (GetU64) readable bytes at `p`.
inline uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

inline uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace fabricdiag
