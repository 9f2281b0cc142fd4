#include "tests/testing/exposition_text.h"

#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace fabricdiag::testing {
namespace {

bool IsNameChar(char c, bool first) {
  return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_' ||
         c == ':' ||
         (!first && absl::ascii_isdigit(static_cast<unsigned char>(c)));
}

// Consumes a metric or label name from the front of `s`.
bool ConsumeName(absl::string_view* s, std::string* name) {
  size_t n = 0;
  while (n < s->size() && IsNameChar((*s)[n], n == 0)) ++n;
  if (n == 0) return false;
  name->assign(s->data(), n);
  s->remove_prefix(n);
  return true;
}

// Consumes `"value"` with escapes from the front of `s`.
bool ConsumeQuoted(absl::string_view* s, std::string* value) {
  if (!absl::ConsumePrefix(s, "\"")) return false;
  value->clear();
  while (!s->empty()) {
    const char c = s->front();
    s->remove_prefix(1);
    if (c == '"') return true;
    if (c != '\\') {
      value->push_back(c);
      continue;
    }
    if (s->empty()) return false;
    const char e = s->front();
    s->remove_prefix(1);
    if (e == 'n') {
      value->push_back('\n');
    } else if (e == '\\' || e == '"') {
      value->push_back(e);
    } else {
      return false;
    }
  }
  return false;  // no closing quote
}

bool ParseValue(absl::string_view token, double* value) {
  if (token == "NaN") {
    *value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (token == "+Inf" || token == "Inf") {
    *value = std::numeric_limits<double>::infinity();
    return true;
  }
  if (token == "-Inf") {
    *value = -std::numeric_limits<double>::infinity();
    return true;
  }
  return absl::SimpleAtod(token, value) && std::isfinite(*value);
}

absl::Status LineError(int line, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("exposition line ", line, ": ", why));
}

}  // namespace

absl::StatusOr<std::vector<ExpositionSample>> ParseExpositionText(
    absl::string_view text) {
  std::vector<ExpositionSample> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    ExpositionSample sample;
    if (!ConsumeName(&line, &sample.name)) {
      return LineError(line_no, "no metric name");
    }
    if (absl::ConsumePrefix(&line, "{")) {
      for (;;) {
        line = absl::StripLeadingAsciiWhitespace(line);
        if (absl::ConsumePrefix(&line, "}")) break;
        std::string key;
        std::string value;
        if (!ConsumeName(&line, &key) || !absl::ConsumePrefix(&line, "=") ||
            !ConsumeQuoted(&line, &value)) {
          return LineError(line_no, "malformed label");
        }
        if (!sample.labels.emplace(std::move(key), std::move(value)).second) {
          return LineError(line_no, "duplicate label");
        }
        line = absl::StripLeadingAsciiWhitespace(line);
        if (absl::ConsumePrefix(&line, "}")) break;
        if (!absl::ConsumePrefix(&line, ",")) {
          return LineError(line_no, "expected ',' or '}' after a label");
        }
      }
    }
    const std::vector<absl::string_view> rest =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (rest.empty() || rest.size() > 2) {
      return LineError(line_no, "expected VALUE [TIMESTAMP]");
    }
    if (!ParseValue(rest[0], &sample.value)) {
      return LineError(line_no, "value is not a number");
    }
    out.push_back(std::move(sample));
  }
  return out;
}

}  // namespace fabricdiag::testing
