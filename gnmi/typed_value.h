// The values of gNMI updates as switches send them, as leaves.
//
// A counter arrives as `uint_val` (most OpenConfig targets), as a decimal
// `string_val` (SONiC), or inside a `json_ietf_val` (or `json_val`) subtree
// whose 64-bit numbers are strings (RFC 7951 section 6.1) and whose member
// names may carry a module prefix ("openconfig-interfaces:counters"). A
// subtree is walked down to its leaves; a YANG list (a JSON array of
// objects) becomes path elements with keys, the key leaves named by the list
// (kListKeys in typed_value.cc; "name", "index" or "id" otherwise).
//
//   PathView path;                      // prefix + update path
//   DecodeStatus st = DecodeValue(update.val(), &path,
//       [&](const PathView& leaf_path, const Scalar& value) { ... });
//
// Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/strings/string_view.h"
#include "gnmi/gnmi_path.h"
#include "proto/gnmi.pb.h"

namespace fabricdiag::gnmi {

// One leaf value.
struct Scalar {
  enum class Type : uint8_t {
    kUnsigned,  // `number` holds it: uint_val, int_val >= 0, "12345"
    kNegative,  // int_val < 0, a negative JSON number
    kFloat,     // double_val, float_val, decimal_val, a JSON fraction
    kText,      // any other string (enumerations, names, "drop")
    kBool,
    kOutOfRange,  // digits beyond 2^64 - 1
  };
  Type type = Type::kText;
  uint64_t number = 0;
  absl::string_view text;  // kText and kOutOfRange: the string
};

// Why a whole update could not be read.
enum class DecodeStatus : uint8_t {
  kOk,
  kEmptyValue,       // no member of TypedValue set
  kUnsupportedType,  // bytes, proto, any, leaf-list, ascii of a subtree
  kBadJson,          // json_val / json_ietf_val that does not parse
  kTooDeep,          // JSON nested deeper than kMaxJsonDepth
};

// "empty_value", "unsupported_type", "bad_json", "too_deep".
const char* DecodeStatusName(DecodeStatus status);

// Deeper than any YANG model the bridge reads (OpenConfig queues are ~10
// levels below the update path); anything deeper is hostile.
inline constexpr int kMaxJsonDepth = 32;

using LeafFn = std::function<void(const PathView& path, const Scalar& value)>;

// Calls `leaf` for every leaf of `value`, with `path` (the update's path on
// entry, restored on return) extended to the leaf. A JSON `null`, an empty
// object and leaf-lists (arrays of scalars) yield nothing.
DecodeStatus DecodeValue(const ::gnmi::TypedValue& value, PathView* path,
                         const LeafFn& leaf);

// "12345" -> kUnsigned; "-3", "1.5", "drop", "" -> kText (a JSON string is
// text unless it is all digits); "99999999999999999999" -> kOutOfRange.
Scalar ScalarFromString(absl::string_view s);

}  // namespace fabricdiag::gnmi
