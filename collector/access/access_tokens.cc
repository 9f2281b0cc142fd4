#include "collector/access/access_tokens.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/names.h"

namespace fabricdiag::collector {
namespace {

constexpr Scope kScopes[] = {Scope::kRead, Scope::kDeclare, Scope::kAdmin};
constexpr size_t kMaxNameLength = 64;

absl::Status LineError(int line, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", why));
}

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_' || c == '@' || c == '-';
}

bool IsValidName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

// Visible ASCII only: anything else cannot travel in an HTTP/2 header.
absl::Status CheckToken(absl::string_view token) {
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(
          "the token holds a character that is not visible ASCII");
    }
  }
  if (token.size() < kMinAccessTokenLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("the token must be at least ", kMinAccessTokenLength,
                     " characters (e.g. `openssl rand -hex 32`)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint8_t> ParseScopes(absl::string_view list) {
  uint8_t scopes = 0;
  for (absl::string_view word : absl::StrSplit(list, ',')) {
    bool known = false;
    for (Scope s : kScopes) {
      if (word == ScopeName(s)) {
        scopes |= static_cast<uint8_t>(s);
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown scope ", QuoteForMessage(word),
                       " (expected read, declare or admin, comma-separated)"));
    }
  }
  return scopes;
}

// A whole file that is one word: the single token of earlier releases.
bool IsSingleToken(absl::string_view stripped) {
  return !stripped.empty() && stripped.front() != '#' &&
         std::find_if(stripped.begin(), stripped.end(), [](char c) {
           return absl::ascii_isspace(static_cast<unsigned char>(c));
         }) == stripped.end();
}

}  // namespace

absl::string_view ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kRead:
      return "read";
    case Scope::kDeclare:
      return "declare";
    case Scope::kAdmin:
      return "admin";
  }
  return "?";
}

bool AccessToken::Allows(Scope needed) const {
  return (scopes & (static_cast<uint8_t>(needed) |
                    static_cast<uint8_t>(Scope::kAdmin))) != 0;
}

std::string AccessToken::ScopeList() const {
  std::vector<absl::string_view> names;
  for (Scope s : kScopes) {
    if ((scopes & static_cast<uint8_t>(s)) != 0) names.push_back(ScopeName(s));
  }
  return absl::StrJoin(names, ",");
}

absl::StatusOr<std::vector<AccessToken>> ParseAccessTokens(
    absl::string_view text) {
  const absl::string_view stripped = absl::StripAsciiWhitespace(text);
  if (IsSingleToken(stripped)) {
    if (absl::Status s = CheckToken(stripped); !s.ok()) return s;
    return std::vector<AccessToken>{{"token",
                                     static_cast<uint8_t>(Scope::kRead) |
                                         static_cast<uint8_t>(Scope::kDeclare) |
                                         static_cast<uint8_t>(Scope::kAdmin),
                                     std::string(stripped)}};
  }
  std::vector<AccessToken> tokens;
  absl::flat_hash_set<std::string> names;
  absl::flat_hash_set<std::string> secrets;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() != 3) {
      return LineError(number, absl::StrCat("expected NAME SCOPE[,SCOPE] "
                                            "TOKEN, found ",
                                            fields.size(), " fields"));
    }
    AccessToken token;
    if (!IsValidName(fields[0])) {
      return LineError(number, absl::StrCat(QuoteForMessage(fields[0]),
                                            " is not a token name "
                                            "([A-Za-z0-9._@-], at most ",
                                            kMaxNameLength, ")"));
    }
    token.name = std::string(fields[0]);
    absl::StatusOr<uint8_t> scopes = ParseScopes(fields[1]);
    if (!scopes.ok()) return LineError(number, scopes.status().message());
    token.scopes = *scopes;
    if (absl::Status s = CheckToken(fields[2]); !s.ok()) {
      return LineError(number, s.message());
    }
    token.token = std::string(fields[2]);
    if (!names.insert(token.name).second) {
      return LineError(
          number, absl::StrCat("the name \"", token.name, "\" is given twice"));
    }
    // Two names for one secret: whose would an ack be?
    if (!secrets.insert(token.token).second) {
      return LineError(number, absl::StrCat("the token of \"", token.name,
                                            "\" is an earlier line's token"));
    }
    tokens.push_back(std::move(token));
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(
        "holds no token (expected NAME SCOPE[,SCOPE] TOKEN lines)");
  }
  return tokens;
}

}  // namespace fabricdiag::collector
