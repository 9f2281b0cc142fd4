#include "tests/testing/nats_jwt.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace fabricdiag::testing {
namespace {

// NKey prefixes: the first base32 letter of an encoded key says its role.
constexpr uint8_t kPrefixSeed = 18 << 3;      // 'S'
constexpr uint8_t kPrefixOperator = 14 << 3;  // 'O'
constexpr uint8_t kPrefixAccount = 0;         // 'A'
constexpr uint8_t kPrefixUser = 20 << 3;      // 'U'

// CRC-16/XMODEM, which NKeys append (little-endian) to what they encode.
uint16_t Crc16(const std::string& data) {
  uint16_t crc = 0;
  for (unsigned char byte : data) {
    crc ^= static_cast<uint16_t>(byte) << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

// RFC 4648 base32, without padding.
std::string Base32(const std::string& data) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char byte : data) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out.push_back(kAlphabet[(buffer >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(buffer << (5 - bits)) & 31]);
  return out;
}

std::string WithCrc(std::string raw) {
  const uint16_t crc = Crc16(raw);
  raw.push_back(static_cast<char>(crc & 0xff));
  raw.push_back(static_cast<char>(crc >> 8));
  return Base32(raw);
}

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

// An Ed25519 key pair with the NKey encodings of its role.
class NKey {
 public:
  static absl::StatusOr<NKey> Make(uint8_t prefix) {
    std::array<unsigned char, 32> seed;
    if (RAND_bytes(seed.data(), static_cast<int>(seed.size())) != 1) {
      return absl::InternalError("RAND_bytes failed");
    }
    std::unique_ptr<EVP_PKEY, PkeyFree> key(EVP_PKEY_new_raw_private_key(
        EVP_PKEY_ED25519, nullptr, seed.data(), seed.size()));
    std::array<unsigned char, 32> pub;
    size_t pub_len = pub.size();
    if (key == nullptr ||
        EVP_PKEY_get_raw_public_key(key.get(), pub.data(), &pub_len) != 1) {
      return absl::InternalError("making an Ed25519 key failed");
    }
    NKey k;
    k.key_ = std::shared_ptr<EVP_PKEY>(key.release(), PkeyFree());
    k.public_ = WithCrc(absl::StrCat(
        std::string(1, static_cast<char>(prefix)),
        std::string(reinterpret_cast<const char*>(pub.data()), pub_len)));
    std::string raw;
    raw.push_back(static_cast<char>(kPrefixSeed | (prefix >> 5)));
    raw.push_back(static_cast<char>((prefix & 31) << 3));
    raw.append(reinterpret_cast<const char*>(seed.data()), seed.size());
    k.seed_ = WithCrc(raw);
    return k;
  }

  const std::string& public_key() const { return public_; }
  const std::string& seed() const { return seed_; }

  absl::StatusOr<std::string> Sign(const std::string& data) const {
    std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
    std::array<unsigned char, 64> sig;
    size_t sig_len = sig.size();
    if (ctx == nullptr ||
        EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) !=
            1 ||
        EVP_DigestSign(ctx.get(), sig.data(), &sig_len,
                       reinterpret_cast<const unsigned char*>(data.data()),
                       data.size()) != 1) {
      return absl::InternalError("Ed25519 signing failed");
    }
    return std::string(reinterpret_cast<const char*>(sig.data()), sig_len);
  }

 private:
  std::shared_ptr<EVP_PKEY> key_;
  std::string public_;
  std::string seed_;
};

// A NATS JWT (v2, "ed25519-nkey") of `subject` issued by `issuer`.
absl::StatusOr<std::string> Jwt(const NKey& issuer, const std::string& subject,
                                const std::string& name, nlohmann::json nats) {
  static int serial = 0;
  const nlohmann::json header = {{"typ", "JWT"}, {"alg", "ed25519-nkey"}};
  const nlohmann::json claims = {
      {"jti", Base32(absl::StrCat(subject, "/", ++serial))},
      {"iat", absl::ToUnixSeconds(absl::Now())},
      {"iss", issuer.public_key()},
      {"name", name},
      {"sub", subject},
      {"nats", std::move(nats)}};
  const std::string signed_part =
      absl::StrCat(absl::WebSafeBase64Escape(header.dump()), ".",
                   absl::WebSafeBase64Escape(claims.dump()));
  absl::StatusOr<std::string> sig = issuer.Sign(signed_part);
  if (!sig.ok()) return sig.status();
  return absl::StrCat(signed_part, ".", absl::WebSafeBase64Escape(*sig));
}

}  // namespace

absl::StatusOr<NatsJwtAuth> MakeNatsJwtAuth(const std::string& account_name) {
  absl::StatusOr<NKey> op = NKey::Make(kPrefixOperator);
  absl::StatusOr<NKey> system = NKey::Make(kPrefixAccount);
  absl::StatusOr<NKey> account = NKey::Make(kPrefixAccount);
  absl::StatusOr<NKey> user = NKey::Make(kPrefixUser);
  for (const auto* k : {&op, &system, &account, &user}) {
    if (!k->ok()) return k->status();
  }
  NatsJwtAuth auth;
  absl::StatusOr<std::string> op_jwt =
      Jwt(*op, op->public_key(), "test-operator",
          {{"system_account", system->public_key()},
           {"type", "operator"},
           {"version", 2}});
  // The server's own account (its events and JetStream's internal
  // subscriptions): no JetStream of its own.
  absl::StatusOr<std::string> system_jwt = Jwt(
      *op, system->public_key(), "SYS",
      {{"limits", {{"subs", -1}, {"data", -1}, {"payload", -1}, {"conn", -1}}},
       {"type", "account"},
       {"version", 2}});
  const nlohmann::json limits = {
      {"subs", -1},         {"data", -1},    {"payload", -1},
      {"imports", -1},      {"exports", -1}, {"wildcards", true},
      {"conn", -1},         {"leaf", -1},    {"mem_storage", -1},
      {"disk_storage", -1}, {"streams", -1}, {"consumer", -1}};
  absl::StatusOr<std::string> account_jwt = Jwt(
      *op, account->public_key(), account_name,
      {{"limits", limits},
       {"default_permissions",
        {{"pub", nlohmann::json::object()}, {"sub", nlohmann::json::object()}}},
       {"type", "account"},
       {"version", 2}});
  absl::StatusOr<std::string> user_jwt =
      Jwt(*account, user->public_key(), "collector",
          {{"pub", nlohmann::json::object()},
           {"sub", nlohmann::json::object()},
           {"subs", -1},
           {"data", -1},
           {"payload", -1},
           {"type", "user"},
           {"version", 2}});
  for (const auto* j : {&op_jwt, &system_jwt, &account_jwt, &user_jwt}) {
    if (!j->ok()) return j->status();
  }
  auth.operator_jwt = *op_jwt;
  auth.system_account_public_key = system->public_key();
  auth.system_account_jwt = *system_jwt;
  auth.account_public_key = account->public_key();
  auth.account_jwt = *account_jwt;
  auth.user_public_key = user->public_key();
  auth.user_creds = absl::StrCat(
      "-----BEGIN NATS USER JWT-----\n", *user_jwt,
      "\n------END NATS USER JWT------\n\n"
      "************************* IMPORTANT *************************\n"
      "NKEY Seed printed below can be used to sign and prove identity.\n"
      "NKEYs are sensitive and should be treated as secrets.\n\n"
      "-----BEGIN USER NKEY SEED-----\n",
      user->seed(),
      "\n------END USER NKEY SEED------\n\n"
      "*************************************************************\n");
  return auth;
}

std::string NatsJwtServerConfig(const NatsJwtAuth& auth) {
  return absl::StrCat(
      "operator: \"", auth.operator_jwt,
      "\"\nsystem_account: ", auth.system_account_public_key,
      "\nresolver: MEMORY\nresolver_preload: {\n  ",
      auth.system_account_public_key, ": \"", auth.system_account_jwt, "\"\n  ",
      auth.account_public_key, ": \"", auth.account_jwt, "\"\n}\n");
}

}  // namespace fabricdiag::testing
