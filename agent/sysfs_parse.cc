#include "agent/sysfs_parse.h"

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/decimal.h"

namespace fabricdiag::agent {
namespace {

constexpr uint64_t kBytesPerSecondPerGbps = 125000000;  // 1e9 bits / 8

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

absl::string_view TrimValue(absl::string_view text) {
  return absl::StripAsciiWhitespace(text);
}

std::string DescribeValue(absl::string_view text) {
  constexpr size_t kMax = 32;
  bool cut = text.size() > kMax;
  std::string out =
      absl::StrCat("\"", absl::CHexEscape(text.substr(0, kMax)), "\"");
  if (cut) absl::StrAppend(&out, "...");
  return out;
}

absl::StatusOr<uint64_t> ParseU64(absl::string_view text) {
  absl::string_view v = TrimValue(text);
  if (v.empty()) return absl::InvalidArgumentError("empty value");
  if (absl::StartsWith(v, "N/A")) {
    return absl::UnimplementedError(
        absl::StrCat("counter not supported: ", DescribeValue(v)));
  }
  if (v.front() == '-') {
    return absl::InvalidArgumentError(absl::StrCat(
        "negative value for an unsigned counter: ", DescribeValue(v)));
  }
  uint64_t value = 0;
  bool overflow = false;
  if (!ParseDecimalU64(v, &value, &overflow)) {
    if (overflow) {
      return absl::OutOfRangeError(
          absl::StrCat("value exceeds 2^64-1: ", DescribeValue(v)));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("not a decimal number: ", DescribeValue(v)));
  }
  return value;
}

absl::StatusOr<int64_t> ParseI64(absl::string_view text) {
  absl::string_view v = TrimValue(text);
  if (v.empty()) return absl::InvalidArgumentError("empty value");
  bool negative = false;
  if (v.front() == '-') {
    negative = true;
    v.remove_prefix(1);
    if (v.empty()) return absl::InvalidArgumentError("lone '-'");
  }
  uint64_t magnitude = 0;
  bool overflow = false;
  if (!ParseDecimalU64(v, &magnitude, &overflow)) {
    if (overflow) {
      return absl::OutOfRangeError(
          absl::StrCat("value out of int64 range: ", DescribeValue(text)));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("not a decimal number: ", DescribeValue(text)));
  }
  constexpr uint64_t kMaxPos =
      static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (magnitude > kMaxPos + (negative ? 1 : 0)) {
    return absl::OutOfRangeError(
        absl::StrCat("value out of int64 range: ", DescribeValue(text)));
  }
  if (negative) {
    // -(2^63) has no positive counterpart: go through unsigned arithmetic.
    return static_cast<int64_t>(~magnitude + 1);
  }
  return static_cast<int64_t>(magnitude);
}

absl::StatusOr<uint64_t> ParseHexU64(absl::string_view text) {
  absl::string_view v = TrimValue(text);
  if (!absl::StartsWith(v, "0x") && !absl::StartsWith(v, "0X")) {
    return absl::InvalidArgumentError(
        absl::StrCat("hex value without 0x prefix: ", DescribeValue(v)));
  }
  v.remove_prefix(2);
  if (v.empty()) return absl::InvalidArgumentError("no digits after 0x");
  uint64_t value = 0;
  for (char c : v) {
    int d;
    if (IsDigit(c)) {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("not a hex number: ", DescribeValue(text)));
    }
    if (value >> 60 != 0) {
      return absl::OutOfRangeError(
          absl::StrCat("hex value exceeds 64 bits: ", DescribeValue(text)));
    }
    value = (value << 4) | static_cast<uint64_t>(d);
  }
  return value;
}

absl::StatusOr<StateLine> ParseStateLine(absl::string_view text) {
  absl::string_view v = TrimValue(text);
  size_t colon = v.find(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("state line without ':': ", DescribeValue(v)));
  }
  absl::StatusOr<int64_t> id = ParseI64(v.substr(0, colon));
  if (!id.ok() || *id < 0 || *id > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("state line with a bad id: ", DescribeValue(v)));
  }
  StateLine line;
  line.id = static_cast<int>(*id);
  line.name = std::string(TrimValue(v.substr(colon + 1)));
  return line;
}

absl::StatusOr<uint64_t> ParseRateBytesPerSecond(absl::string_view text) {
  absl::string_view v = TrimValue(text);
  size_t space = v.find(' ');
  if (space == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("rate without unit: ", DescribeValue(v)));
  }
  absl::string_view number = v.substr(0, space);
  absl::string_view rest = TrimValue(v.substr(space + 1));
  // The kernel prints "Gb/sec"; procfs's test data has "GB/sec" for 0.
  if (!absl::StartsWithIgnoreCase(rest, "Gb/sec")) {
    return absl::InvalidArgumentError(
        absl::StrCat("rate not in Gb/sec: ", DescribeValue(v)));
  }
  absl::string_view whole = number;
  absl::string_view frac;
  size_t dot = number.find('.');
  if (dot != absl::string_view::npos) {
    whole = number.substr(0, dot);
    frac = number.substr(dot + 1);
  }
  uint64_t gbps = 0;
  bool overflow = false;
  if (whole.empty() || !ParseDecimalU64(whole, &gbps, &overflow) ||
      frac.size() > 9) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad rate number: ", DescribeValue(v)));
  }
  // 1e9 Gb/s is far beyond any link; the bound keeps the product in range.
  if (gbps > 1000000000) {
    return absl::OutOfRangeError(
        absl::StrCat("implausible rate: ", DescribeValue(v)));
  }
  uint64_t frac_digits = 0;
  uint64_t frac_scale = 1;
  if (!frac.empty() && !ParseDecimalU64(frac, &frac_digits, &overflow)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad rate number: ", DescribeValue(v)));
  }
  for (size_t i = 0; i < frac.size(); ++i) frac_scale *= 10;
  return gbps * kBytesPerSecondPerGbps +
         frac_digits * kBytesPerSecondPerGbps / frac_scale;
}

bool PmaCounterShowsExtendedWidth(absl::string_view name, uint64_t value) {
  constexpr uint64_t kMax32 = 0xffffffffULL;
  if (name == "unicast_xmit_packets" || name == "unicast_rcv_packets") {
    return true;
  }
  return (name == "port_xmit_data" || name == "port_rcv_data" ||
          name == "port_xmit_packets" || name == "port_rcv_packets") &&
         value > kMax32;
}

bool PmaCounterRevealsWidth(absl::string_view name) {
  return PmaCounterShowsExtendedWidth(name,
                                      std::numeric_limits<uint64_t>::max());
}

bool PmaUsesExtendedWidth(
    const std::vector<std::pair<std::string, uint64_t>>& counters) {
  for (const auto& [name, value] : counters) {
    if (PmaCounterShowsExtendedWidth(name, value)) return true;
  }
  return false;
}

bool IsHwCounterSetting(absl::string_view name) { return name == "lifespan"; }

bool IsSaturated(uint64_t raw, uint32_t width_bits) {
  if (width_bits == 0 || width_bits >= 64) return false;
  return raw == (uint64_t{1} << width_bits) - 1;
}

CounterRead InterpretCounterRead(
    absl::string_view relpath,
    const absl::StatusOr<absl::string_view>& content) {
  CounterRead out;
  if (content.ok()) {
    // Fast path for what the kernel prints ("%llu\n"); anything else takes
    // the general path below, which also explains what is wrong.
    absl::string_view v = *content;
    if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
    bool overflow = false;
    if (!v.empty() && ParseDecimalU64(v, &out.value, &overflow)) {
      out.result = CounterReadResult::kValue;
      return out;
    }
  } else {
    switch (content.status().code()) {
      case absl::StatusCode::kNotFound:
        out.result = CounterReadResult::kGone;
        return out;
      // EINVAL: the attribute exists but has nothing to show (an unsupported
      // counter, an empty GID slot, a down link's speed); EOPNOTSUPP alike.
      case absl::StatusCode::kInvalidArgument:
      case absl::StatusCode::kUnimplemented:
        out.result = CounterReadResult::kAbsent;
        return out;
      default:
        out.result = CounterReadResult::kError;
        out.error = content.status();
        return out;
    }
  }
  if (TrimValue(*content).empty()) {
    out.result = CounterReadResult::kAbsent;
    return out;
  }
  absl::StatusOr<uint64_t> value = ParseU64(*content);
  if (value.ok()) {
    out.result = CounterReadResult::kValue;
    out.value = *value;
    return out;
  }
  if (value.status().code() == absl::StatusCode::kUnimplemented) {
    out.result = CounterReadResult::kAbsent;
    return out;
  }
  out.result = CounterReadResult::kError;
  out.error =
      absl::Status(value.status().code(),
                   absl::StrCat(relpath, ": ", value.status().message()));
  return out;
}

void RecordSourceError(SourceStatus* status, const absl::Status& error) {
  status->ok = false;
  ++status->errors;
  status->last_error = std::string(error.message());
}

}  // namespace fabricdiag::agent
