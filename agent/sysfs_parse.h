// Pure parsers and tables for sysfs attribute values (no I/O).
//
// Fetch and parse are split (as in prometheus/procfs): SysfsReader returns the
// bytes of a file, these functions turn them into numbers. What each counter
// is (width, unit, scale, meaning) is the counter table's business
// (counters/counter_table.h). Everything here is a pure function with a
// table test in tests/agent/sysfs_parse_test.cc.
//
//   absl::StatusOr<uint64_t> v = ParseU64("18126345378\n");  // 18126345378
//   absl::StatusOr<StateLine> s = ParseStateLine("4: ACTIVE\n");
//   // {4, "ACTIVE"}
//   absl::StatusOr<uint64_t> r =
//       ParseRateBytesPerSecond("100 Gb/sec (4X EDR)");  // 12500000000 B/s
//
// Thread safety: all functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/sample.h"

namespace fabricdiag::agent {

// What old kernels print in every counters/ file of a device without a PMA
// (drivers/infiniband/core/sysfs.c before the counters/ group became
// conditional on process_mad).
inline constexpr absl::string_view kNoPmaText = "N/A (no PMA)";

// `text` without leading/trailing ASCII whitespace (incl. newlines).
absl::string_view TrimValue(absl::string_view text);

// A short printable rendering of hostile input for error messages
// ("\x01\xff..." escaped, at most ~40 characters).
std::string DescribeValue(absl::string_view text);

// Decimal unsigned 64-bit value, surrounding whitespace ignored.
// Errors: kUnimplemented for "N/A (no PMA)" (the counter is not supported:
// absent, not an error); kInvalidArgument for empty, negative, non-numeric or
// binary input; kOutOfRange above 2^64-1.
absl::StatusOr<uint64_t> ParseU64(absl::string_view text);

// Decimal signed 64-bit value ("-1" for a netdev speed of a down link).
absl::StatusOr<int64_t> ParseI64(absl::string_view text);

// Hexadecimal value with a mandatory "0x" prefix ("0x1303" in net flags).
absl::StatusOr<uint64_t> ParseHexU64(absl::string_view text);

// "4: ACTIVE" -> {4, "ACTIVE"}; "7: Phy Test" -> {7, "Phy Test"}
// (format "%d: %s" of the state / phys_state port attributes).
struct StateLine {
  int id = -1;
  std::string name;
};
absl::StatusOr<StateLine> ParseStateLine(absl::string_view text);

// The port `rate` attribute, "%d%s Gb/sec (%dX%s)" (sysfs.c rate_show), in
// bytes per second: "100 Gb/sec (4X EDR)" -> 12500000000, "2.5 Gb/sec (1X
// SDR)" -> 312500000, "0 GB/sec" -> 0. Only the leading number and the unit
// are interpreted; the lane/speed suffix may be anything (or absent).
absl::StatusOr<uint64_t> ParseRateBytesPerSecond(absl::string_view text);

// --- counter properties ------------------------------------------------------

// Whether the 32/64-bit PMA counters (port_{xmit,rcv}_{data,packets}) of a
// port are 64-bit, given every (name, value) read from its counters/ dir.
// The kernel picks the 64-bit table when the PMA has extended width
// (sysfs.c get_counter_table: pma_group_ext adds unicast_xmit_packets) or
// the noietf variant (64-bit without unicast files); the latter is only
// recognisable once a value exceeds 2^32-1.
bool PmaUsesExtendedWidth(
    const std::vector<std::pair<std::string, uint64_t>>& counters);

// PmaUsesExtendedWidth for one file: true when `name` exists only in the
// 64-bit table (unicast_*) or `value` does not fit the 32-bit one.
bool PmaCounterShowsExtendedWidth(absl::string_view name, uint64_t value);

// Whether PmaCounterShowsExtendedWidth can ever be true for `name`.
bool PmaCounterRevealsWidth(absl::string_view name);

// hw_counters/lifespan is the cache lifetime of the other files in ms
// (sysfs.c), a setting, not a counter.
bool IsHwCounterSetting(absl::string_view name);

// True when `raw` is all-ones at a width below 64: an IB PMA counter stops
// there (IBA 16.1.3.5) instead of wrapping.
bool IsSaturated(uint64_t raw, uint32_t width_bits);

// --- read outcome ------------------------------------------------------------

// How one counter file turned out, for a source's error accounting.
enum class CounterReadResult {
  kValue,   // `value` is valid
  kAbsent,  // not supported here: "N/A (no PMA)", EINVAL, EOPNOTSUPP, empty
            // file. Normal; the sample is left out and no error is counted.
  kGone,    // the file vanished (ENOENT/ENODEV): the device went away or
            // changed; rescan, but do not count an error.
  kError,   // a real error (junk, overflow, EACCES, EIO, ELOOP, ...)
};
struct CounterRead {
  CounterReadResult result = CounterReadResult::kAbsent;
  uint64_t value = 0;
  absl::Status error;  // set for kError, message names `relpath`
};
CounterRead InterpretCounterRead(
    absl::string_view relpath,
    const absl::StatusOr<absl::string_view>& content);

// Counts `error` in `status`: errors += 1, ok = false, last_error = message.
void RecordSourceError(SourceStatus* status, const absl::Status& error);

}  // namespace fabricdiag::agent
