#include "cluster/nats_creds.h"

#include <nats/nats.h>
#include <string.h>  // explicit_bzero

#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace fabricdiag::cluster {
namespace {

// "-----BEGIN NATS USER JWT-----", "------END USER NKEY SEED------".
bool IsDashLine(absl::string_view line) {
  return line.size() >= 6 && absl::StartsWith(line, "---") &&
         absl::EndsWith(line, "---");
}

}  // namespace

NatsCreds::NatsCreds(NatsCreds&& other) noexcept
    : jwt(std::move(other.jwt)), seed(std::move(other.seed)) {
  WipeSecret(&other.seed);
}

NatsCreds& NatsCreds::operator=(NatsCreds&& other) noexcept {
  if (this != &other) {
    WipeSecret(&seed);
    jwt = std::move(other.jwt);
    seed = std::move(other.seed);
    WipeSecret(&other.seed);
  }
  return *this;
}

NatsCreds::~NatsCreds() { WipeSecret(&seed); }

void WipeSecret(std::string* secret) {
  // The whole buffer: a longer secret may have been held in it before
  // (resize() zeroes the characters past the size, bzero the rest).
  secret->resize(secret->capacity());
  explicit_bzero(secret->data(), secret->size());
  secret->clear();
}

absl::StatusOr<NatsCreds> ParseNatsCreds(absl::string_view text) {
  // The values between a header and a footer, in the file's order.
  std::vector<absl::string_view> values;
  absl::string_view candidate;
  enum { kOutside, kAfterHeader, kAfterValue } state = kOutside;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const bool dashes = IsDashLine(line);
    switch (state) {
      case kOutside:
        if (dashes) state = kAfterHeader;
        break;
      case kAfterHeader:
        // Two dash lines in a row: the second may open the next section.
        if (!dashes) {
          candidate = line;
          state = kAfterValue;
        }
        break;
      case kAfterValue:
        if (dashes) values.push_back(candidate);
        state = kOutside;
        break;
    }
  }
  if (values.empty() || !absl::StartsWith(values[0], "eyJ")) {
    return absl::InvalidArgumentError(
        "no user JWT in it (a section \"-----BEGIN NATS USER JWT-----\" as "
        "`nsc generate creds` writes it)");
  }
  if (values.size() < 2) {
    return absl::InvalidArgumentError(
        "no NKey seed in it (a section \"-----BEGIN USER NKEY SEED-----\" "
        "after the JWT's)");
  }
  // "SU": a seed ('S') of a user key ('U'); an operator's or account's
  // seed signs nothing a server takes as a login.
  if (!absl::StartsWith(values[1], "SU")) {
    return absl::InvalidArgumentError(
        "its NKey seed is not a user's (a user seed starts with \"SU\")");
  }
  NatsCreds creds;
  creds.jwt = std::string(values[0]);
  creds.seed = std::string(values[1]);
  return creds;
}

absl::StatusOr<std::string> SignNonce(const std::string& seed,
                                      const std::string& nonce) {
  unsigned char* raw = nullptr;
  int length = 0;
  // The library's crypto is set up by its first use (idempotent).
  natsStatus s = nats_Open(-1);
  if (s == NATS_OK) s = nats_Sign(seed.c_str(), nonce.c_str(), &raw, &length);
  if (s != NATS_OK || raw == nullptr || length <= 0) {
    std::free(raw);
    return absl::InvalidArgumentError(
        absl::StrCat("signing the server's nonce: ", natsStatus_GetText(s),
                     " (the .creds file's NKey seed is damaged)"));
  }
  std::string signature(reinterpret_cast<const char*>(raw),
                        static_cast<size_t>(length));
  std::free(raw);
  if (signature[0] == '\0') {
    return absl::UnavailableError(
        "this nonce's signature starts with a zero byte, which libnats "
        "before 3.8 sends empty (the server would refuse the login): "
        "connecting again for a new nonce");
  }
  return signature;
}

}  // namespace fabricdiag::cluster
