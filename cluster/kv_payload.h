// How the cluster's key-value buckets hold a protobuf: plain when small,
// gzip-compressed when large, so that a value whose names repeat (a
// 200,000-GPU topology, a switch with thousands of LLDP neighbors) fits
// under the NATS servers' default max_payload of 1 MiB. Readers tell the two
// apart by gzip's magic bytes: a protobuf never starts with them (0x1f is
// field 3 with wire type 7, which does not exist).
//
//   std::string value = KvPayload(topology);
//   v1::Topology back;
//   if (!ParseKvPayload(value, kMaxStateObjectBytes, &back)) ...  // damaged
//
// Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"

namespace fabricdiag::cluster {

// Values whose protobuf is larger than this are compressed.
inline constexpr size_t kKvCompressAbove = 64 << 10;

// `message` serialized, gzip-compressed when larger than kKvCompressAbove
// and compression makes it smaller.
std::string KvPayload(const google::protobuf::MessageLite& message);

// Parses `payload` (plain or compressed, inflating to at most `max_bytes`)
// into `message`; false when it is neither.
bool ParseKvPayload(absl::string_view payload, uint64_t max_bytes,
                    google::protobuf::MessageLite* message);

}  // namespace fabricdiag::cluster
