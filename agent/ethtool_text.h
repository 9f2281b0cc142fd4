// Parser for the text `ethtool -S IF` prints, used by `--ethtool_dir` (support
// bundles, replay, simulation). Pure: no I/O.
//
//   EthtoolText parsed = ParseEthtoolStatsText(
//       "NIC statistics:\n     rx_prio3_pause: 12\n");
//   // parsed.stats == {{"rx_prio3_pause", 12}}, parsed.errors empty.
//
//   EthtoolTextView view;  // reused: no allocation once warm
//   ParseEthtoolStatsText(text, &view);
//
// Format (ethtool's dump_stats prints "     %.*s: %llu\n" per stat under a
// "NIC statistics:" header):
//   - Leading and trailing blanks (spaces, tabs, CR) are ignored, so 5-space
//     indentation and the TAB-indented bnxt_en capture parse alike.
//   - The value is the text after the LAST ':' of the line; the name is
//     everything before it, trimmed. Names are kept exactly as the driver
//     spells them, so the text path and the ioctl path yield the same names:
//     bnxt_en per-ring stats keep their "[0]: " prefix ("[0]: rx_ucast_packets"
//     is the literal GSTRINGS name, bnxt_ethtool.c), Intel names keep their
//     dots ("tx_priority_3_xoff.nic").
//   - Values are unsigned decimal 64-bit (values above 2^63 are fine). A
//     negative, non-numeric or out-of-range value, an empty name, a name with
//     control or non-ASCII bytes, or a name longer than kMaxEthtoolNameLength
//     makes that one line an error; the other lines are still returned.
//   - Blank lines and the "NIC statistics:" header are skipped.
// The parser never fails as a whole, whatever the input (binary junk, huge
// lines, no newline at the end). At most kMaxEthtoolTextErrors errors are
// kept; `dropped_errors` counts the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace fabricdiag::agent {

// ethtool names are ETH_GSTRING_LEN (32) bytes; text files from other tools
// get some slack.
inline constexpr size_t kMaxEthtoolNameLength = 128;
inline constexpr size_t kMaxEthtoolTextErrors = 16;

struct EthtoolTextError {
  int line = 0;         // 1-based line number
  std::string message;  // names the problem; quotes at most 64 bytes of input
};

struct EthtoolText {
  // In file order; duplicates are kept (the caller decides).
  std::vector<std::pair<std::string, uint64_t>> stats;
  std::vector<EthtoolTextError> errors;
  size_t dropped_errors = 0;  // errors beyond kMaxEthtoolTextErrors
};

EthtoolText ParseEthtoolStatsText(absl::string_view text);

// The same parse with the names as views into `text`, into caller-owned
// storage that is cleared first and keeps its capacity: a reader that
// parses the same file every interval allocates nothing once warm.
struct EthtoolTextView {
  std::vector<std::pair<absl::string_view, uint64_t>> stats;
  std::vector<EthtoolTextError> errors;
  size_t dropped_errors = 0;
  // With `expected` given: the names are exactly `expected`, in order.
  bool matches_expected = false;
};
// `expected` (may be null): the names the last parse of this file found
// (and that passed its checks). A reader re-parsing the same file every
// interval gets its names compared on the way instead of checked again.
void ParseEthtoolStatsText(absl::string_view text, EthtoolTextView* out,
                           const std::vector<std::string>* expected = nullptr);

}  // namespace fabricdiag::agent
