#include "common/prom_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace fabricdiag {
namespace {

// Label values escape backslash, double quote and newline; HELP text
// backslash and newline (exposition format 0.0.4).
void AppendEscaped(absl::string_view s, bool quotes, std::string* out) {
  for (char c : s) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (quotes && c == '"') {
      out->append("\\\"");
    } else {
      out->push_back(c);
    }
  }
}

// "00" "01" ... "99": two digits per lookup.
constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536"
    "37383940414243444546474849505152535455565758596061626364656667686970717273"
    "7475767778798081828384858687888990919293949596979899";

// The 8 digits of `x` < 10^8, zero-padded. The four pairs come from two
// independent divisions, not from a chain of eight.
void PutEightDigits(uint32_t x, char* out) {
  const uint32_t high = x / 10000;
  const uint32_t low = x % 10000;
  std::memcpy(out, kDigitPairs + size_t{2} * (high / 100), 2);
  std::memcpy(out + 2, kDigitPairs + size_t{2} * (high % 100), 2);
  std::memcpy(out + 4, kDigitPairs + size_t{2} * (low / 100), 2);
  std::memcpy(out + 6, kDigitPairs + size_t{2} * (low % 100), 2);
}

// Decimal digits of `v`, no leading zeros ("0" for 0); returns the length
// (at most 20).
size_t PutUnsigned(uint64_t v, char* out) {
  constexpr uint64_t kTenToEight = 100000000;
  char digits[24];
  char* const end = digits + sizeof(digits);
  char* first = end - 8;
  PutEightDigits(static_cast<uint32_t>(v % kTenToEight), first);
  v /= kTenToEight;
  if (v != 0) {
    first -= 8;
    PutEightDigits(static_cast<uint32_t>(v % kTenToEight), first);
    v /= kTenToEight;
    if (v != 0) {
      first -= 8;
      PutEightDigits(static_cast<uint32_t>(v), first);  // v < 1845
    }
  }
  while (first < end - 1 && *first == '0') ++first;
  const auto n = static_cast<size_t>(end - first);
  std::memcpy(out, first, n);
  return n;
}

// AppendSeries for owned and borrowed labels.
template <typename Labels>
void AppendSeriesOf(absl::string_view name, const Labels& labels,
                    std::string* out) {
  out->append(name.data(), name.size());
  if (labels.empty()) return;
  out->push_back('{');
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out->push_back(',');
    absl::StrAppend(out, labels[i].first, "=\"");
    AppendEscaped(labels[i].second, /*quotes=*/true, out);
    out->push_back('"');
  }
  out->push_back('}');
}

}  // namespace

size_t FormatValueTo(double value, char* out) {
  if (std::isnan(value)) {
    std::copy_n("NaN", 3, out);
    return 3;
  }
  if (std::isinf(value)) {
    std::copy_n(value > 0 ? "+Inf" : "-Inf", 4, out);
    return 4;
  }
  // Integral values below 2^53 (nearly every counter) are exact, and their
  // shortest round-trip digits padded with zeros are the integer itself:
  // the text below, without its work. (-0 keeps its sign below.)
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (std::fabs(value) < kExactIntegers && std::trunc(value) == value &&
      !(value == 0 && std::signbit(value))) {
    if (value < 0) {
      *out = '-';
      return 1 + PutUnsigned(static_cast<uint64_t>(-value), out + 1);
    }
    return PutUnsigned(static_cast<uint64_t>(value), out);
  }
  return internal::FormatShortestTo(value, out);
}

std::string FormatValue(double value) {
  char text[kMaxValueTextBytes];
  return std::string(text, FormatValueTo(value, text));
}

namespace internal {

size_t FormatShortestTo(double value, char* out) {
  if (std::isnan(value) || std::isinf(value)) {
    return FormatValueTo(value, out);  // no digits to lay out
  }
  // The shortest digits that round-trip, from scientific notation
  // ("-1.2345e+07"), laid out as printf's %g lays out 16 digits.
  char sci[64];
  const std::to_chars_result r = std::to_chars(sci, sci + sizeof(sci), value,
                                               std::chars_format::scientific);
  const char* in = sci;
  const char* const end = r.ptr;
  char* p = out;
  if (*in == '-') *p++ = *in++;
  const char* const e = std::find(in, end, 'e');
  // At most 17 significant digits (the shortest round trip of a double).
  char digits[24];
  size_t n = 0;
  for (const char* c = in; c < e; ++c) {
    if (*c != '.') digits[n++] = *c;
  }
  // "e+19", "e-07": a sign and at least two digits.
  int exponent = 0;
  std::from_chars(e + 2, end, exponent);
  if (e[1] == '-') exponent = -exponent;
  auto put = [&p](const char* from, size_t count) {
    std::memcpy(p, from, count);
    p += count;
  };
  if (exponent < -4 || exponent >= 16) {
    *p++ = digits[0];
    if (n > 1) {
      *p++ = '.';
      put(digits + 1, n - 1);
    }
    put(e, static_cast<size_t>(end - e));
  } else if (exponent < 0) {
    const size_t zeros = static_cast<size_t>(-exponent - 1);
    put("0.", 2);
    std::memset(p, '0', zeros);
    p += zeros;
    put(digits, n);
  } else {
    const size_t whole = static_cast<size_t>(exponent) + 1;
    if (n <= whole) {
      put(digits, n);
      std::memset(p, '0', whole - n);
      p += whole - n;
    } else {
      put(digits, whole);
      *p++ = '.';
      put(digits + whole, n - whole);
    }
  }
  return static_cast<size_t>(p - out);
}

std::string FormatShortest(double value) {
  char text[kMaxValueTextBytes];
  return std::string(text, FormatShortestTo(value, text));
}

}  // namespace internal

const char* PromTypeName(PromType type) {
  switch (type) {
    case PromType::kCounter:
      return "counter";
    case PromType::kGauge:
      return "gauge";
    case PromType::kUntyped:
      return "untyped";
  }
  return "untyped";
}

void AppendLabelValue(absl::string_view value, std::string* out) {
  AppendEscaped(value, /*quotes=*/true, out);
}

void AppendHelpText(absl::string_view help, std::string* out) {
  AppendEscaped(help, /*quotes=*/false, out);
}

void AppendSeries(absl::string_view name, const PromLabels& labels,
                  std::string* out) {
  AppendSeriesOf(name, labels, out);
}

void AppendSeries(absl::string_view name, absl::Span<const PromLabel> labels,
                  std::string* out) {
  AppendSeriesOf(name, labels, out);
}

void AppendFamilyHeader(absl::string_view name, absl::string_view help,
                        PromType type, std::string* out) {
  absl::StrAppend(out, "# HELP ", name, " ");
  AppendHelpText(help, out);
  absl::StrAppend(out, "\n# TYPE ", name, " ", PromTypeName(type), "\n");
}

void PromWriter::Family(absl::string_view name, absl::string_view help,
                        PromType type) {
  AppendFamilyHeader(name, help, type, out_);
  name_.assign(name.data(), name.size());
}

void PromWriter::SamplesOf(absl::string_view name) {
  name_.assign(name.data(), name.size());
}

void PromWriter::Sample(absl::Span<const PromLabel> labels, double value) {
  AppendSeries(name_, labels, out_);
  char text[kMaxValueTextBytes];
  out_->push_back(' ');
  out_->append(text, FormatValueTo(value, text));
  out_->push_back('\n');
}

}  // namespace fabricdiag
