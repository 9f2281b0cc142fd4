// The NATS security flags before any connection (cluster/nats_connection.h,
// cluster/cluster_member.h): URL forms, what is logged of a URL, and the
// checks of --nats_user, --nats_password_file, --nats_creds and
// --nats_tls_*. No NATS server.
#include <nats/nats.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster/cluster_member.h"
#include "cluster/nats_connection.h"
#include "cluster/nats_creds.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/nats_jwt.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_pki.h"

namespace fabricdiag::cluster {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(NatsUrlFormsTest, TlsAndCredentialsInTheUrlAreAccepted) {
  absl::StatusOr<std::vector<std::string>> urls =
      ParseNatsUrls("tls://n1:4222,nats://u:p@n2:4222,nats://token@n3:4222");
  ASSERT_TRUE(urls.ok()) << urls.status();
  EXPECT_EQ(urls->size(), 3u);
  for (const char* bad : {"https://n1:4222", "nats://u:p@n2", "tls://n1"}) {
    EXPECT_FALSE(ParseNatsUrls(bad).ok()) << bad;
  }
  // The message names the entry without its password.
  absl::Status bad = ParseNatsUrls("nats://u:secret@n2:99999").status();
  EXPECT_THAT(bad.message(), HasSubstr("nats://u:***@n2:99999"));
  EXPECT_THAT(bad.message(), ::testing::Not(HasSubstr("secret")));
}

TEST(NatsUrlFormsTest, PasswordsAndTokensAreRedacted) {
  EXPECT_EQ(RedactNatsUrl("nats://u:secret@h:4222"), "nats://u:***@h:4222");
  EXPECT_EQ(RedactNatsUrl("tls://tok@h:4222"), "tls://***@h:4222");
  EXPECT_EQ(RedactNatsUrl("nats://h:4222"), "nats://h:4222");
  // An @ in the password: everything up to the last one is secret.
  EXPECT_EQ(RedactNatsUrl("nats://u:a@b@h:4222"), "nats://u:***@h:4222");
}

class NatsSecurityFlagsTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text,
                    mode_t mode) {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }

  static void ExpectInvalid(const NatsSecurity& security,
                            const std::string& message) {
    const absl::Status s = ValidateNatsSecurity(security);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr(message));
  }

  testing::TempDir dir_;
};

TEST_F(NatsSecurityFlagsTest, NoneIsValid) {
  EXPECT_TRUE(ValidateNatsSecurity({}).ok());
}

TEST_F(NatsSecurityFlagsTest, FlagsThatGoTogether) {
  NatsSecurity user_only;
  user_only.user = "fabricdiag";
  ExpectInvalid(user_only, "--nats_user and --nats_password_file");
  NatsSecurity both;
  both.user = "fabricdiag";
  both.password_file = Write("pw", "secret\n", 0600);
  both.creds_file = Write("creds", "x", 0600);
  ExpectInvalid(both, "pass one");
  NatsSecurity cert_only;
  cert_only.tls_cert = Write("cert.pem", "-----BEGIN CERTIFICATE-----", 0644);
  ExpectInvalid(cert_only, "--nats_tls_cert and --nats_tls_key");
}

TEST_F(NatsSecurityFlagsTest, SecretsOthersCanReadAreRefused) {
  NatsSecurity security;
  security.user = "fabricdiag";
  security.password_file = Write("pw", "secret\n", 0644);
  ExpectInvalid(security, "chmod 600");
  security.password_file = Write("pw", "secret\n", 0600);
  EXPECT_TRUE(ValidateNatsSecurity(security).ok());
  security.password_file = Write("empty", "\n", 0600);
  ExpectInvalid(security, "holds no token");
  security.password_file = dir_.path() + "/missing";
  ExpectInvalid(security, "--nats_password_file");

  NatsSecurity creds;
  creds.creds_file = Write("user.creds",
                           "-----BEGIN NATS USER JWT-----\neyJ0\n"
                           "------END NATS USER JWT------\n"
                           "-----BEGIN USER NKEY SEED-----\nSUA\n"
                           "------END USER NKEY SEED------\n",
                           0644);
  ExpectInvalid(creds, "chmod 600");
  ::chmod(creds.creds_file.c_str(), 0600);
  EXPECT_TRUE(ValidateNatsSecurity(creds).ok());
  creds.creds_file = Write("not.creds", "user: x\n", 0600);
  ExpectInvalid(creds, "not a NATS .creds file");
}

TEST_F(NatsSecurityFlagsTest, CertificatesMustBePem) {
  NatsSecurity security;
  security.tls_ca = Write("ca.txt", "not a certificate\n", 0644);
  ExpectInvalid(security, "--nats_tls_ca");
  security.tls_ca = dir_.path() + "/missing.pem";
  ExpectInvalid(security, "--nats_tls_ca");

  absl::StatusOr<testing::TestPki> pki =
      testing::MakeTestPki(dir_.path(), {"col-a"});
  if (!pki.ok()) GTEST_SKIP() << pki.status();
  security.tls_ca = pki->ca_cert;
  security.tls_cert = pki->clients["col-a"].cert;
  security.tls_key = pki->clients["col-a"].key;
  EXPECT_TRUE(ValidateNatsSecurity(security).ok());
  ::chmod(security.tls_key.c_str(), 0644);
  ExpectInvalid(security, "chmod 600");
}

TEST_F(NatsSecurityFlagsTest, SecurityFlagsNeedNats) {
  ClusterOptions options;
  options.security.tls_ca = "/etc/nats/ca.pem";
  const absl::Status s = ValidateClusterOptions(options);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("need --nats"));
}

// With --analysis_shards the id names a key of its own: a name a node may
// have but a key may not is refused, naming the flag.
TEST_F(NatsSecurityFlagsTest, AShardedCollectorsIdMustBeAKeyToken) {
  ClusterOptions options;
  options.nats = "nats://127.0.0.1:4222";
  options.analysis_shards = true;
  for (const char* id : {"col..a", "col-a."}) {
    options.collector_id = id;
    const absl::Status s = ValidateClusterOptions(options);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << id << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr("--collector_id=")) << id;
    EXPECT_THAT(s.message(), HasSubstr("--analysis_shards")) << id;
    // Unsharded, the same id is a node name like any other.
    options.analysis_shards = false;
    EXPECT_TRUE(ValidateClusterOptions(options).ok()) << id;
    options.analysis_shards = true;
  }
  options.collector_id = "col-a.rack2";
  EXPECT_TRUE(ValidateClusterOptions(options).ok());
}

// A .creds file as `nsc generate creds` writes it, with CRLF line ends
// and the text it puts around the sections.
TEST(NatsCredsTest, TheJwtAndTheSeedAreRead) {
  absl::StatusOr<NatsCreds> creds = ParseNatsCreds(
      "-----BEGIN NATS USER JWT-----\r\n"
      "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln\r\n"
      "------END NATS USER JWT------\r\n"
      "\r\n"
      "************************* IMPORTANT *************************\r\n"
      "NKEY Seed printed below can be used to sign and prove identity.\r\n"
      "\r\n"
      "-----BEGIN USER NKEY SEED-----\r\n"
      "  SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY  \r\n"
      "------END USER NKEY SEED------\r\n"
      "\r\n"
      "*************************************************************\r\n");
  ASSERT_TRUE(creds.ok()) << creds.status();
  EXPECT_EQ(creds->jwt,
            "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln");
  EXPECT_EQ(creds->seed,
            "SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY");
  NatsCreds moved = std::move(*creds);
  EXPECT_TRUE(creds->seed.empty());
  EXPECT_EQ(moved.seed.substr(0, 2), "SU");
}

TEST(NatsCredsTest, AFileWithoutBothPartsIsRefusedWithoutItsSecret) {
  const std::string jwt =
      "-----BEGIN NATS USER JWT-----\neyJ0\n------END NATS USER JWT------\n";
  const std::string seed_of = "-----BEGIN USER NKEY SEED-----\n";
  const std::string end = "\n------END USER NKEY SEED------\n";
  struct Case {
    std::string text;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {"", "no user JWT"},
           {"user: x\npassword: y\n", "no user JWT"},
           {absl::StrCat(seed_of, "SUAXYZSECRET", end), "no user JWT"},
           {jwt, "no NKey seed"},
           // A value without its footer is no section.
           {absl::StrCat(jwt, seed_of, "SUAXYZSECRET\n"), "no NKey seed"},
           // An account's seed logs no user in.
           {absl::StrCat(jwt, seed_of, "SAAXYZSECRET", end), "not a user's"},
       }) {
    absl::StatusOr<NatsCreds> creds = ParseNatsCreds(c.text);
    EXPECT_TRUE(absl::IsInvalidArgument(creds.status()))
        << c.text << ": " << creds.status();
    EXPECT_THAT(creds.status().message(), HasSubstr(c.says)) << c.text;
    EXPECT_THAT(creds.status().message(), Not(HasSubstr("SECRET")));
  }
}

// libnats before 3.8 sends a signature whose first byte is zero empty:
// SignNonce refuses exactly those (1 nonce in 256) and hands over the
// others as libnats' own signing makes them.
TEST(NatsCredsTest, ASignatureThatWouldGoOutEmptyIsNotHandedOver) {
  absl::StatusOr<testing::NatsJwtAuth> auth =
      testing::MakeNatsJwtAuth("fabricdiag");
  ASSERT_TRUE(auth.ok()) << auth.status();
  absl::StatusOr<NatsCreds> creds = ParseNatsCreds(auth->user_creds);
  ASSERT_TRUE(creds.ok()) << creds.status();
  ASSERT_EQ(nats_Open(-1), NATS_OK);  // its crypto, which nats_Sign needs
  // Until two are refused: 512 nonces on average (a signature takes ~3 ms
  // here); none in 12,000 happens once in 1e20.
  int refused = 0;
  int tries = 0;
  for (; tries < 12000 && refused < 2; ++tries) {
    const std::string nonce = absl::StrCat("nonce-", tries);
    unsigned char* raw = nullptr;
    int length = 0;
    ASSERT_EQ(nats_Sign(creds->seed.c_str(), nonce.c_str(), &raw, &length),
              NATS_OK);
    const std::string expected(reinterpret_cast<const char*>(raw),
                               static_cast<size_t>(length));
    std::free(raw);
    absl::StatusOr<std::string> signature = SignNonce(creds->seed, nonce);
    if (expected[0] == '\0') {
      EXPECT_TRUE(absl::IsUnavailable(signature.status())) << nonce;
      ++refused;
    } else {
      ASSERT_TRUE(signature.ok()) << nonce << ": " << signature.status();
      EXPECT_EQ(*signature, expected) << nonce;
    }
  }
  EXPECT_EQ(refused, 2) << tries << " nonces";
  EXPECT_TRUE(
      absl::IsInvalidArgument(SignNonce("SUnotaseed", "nonce-a").status()));
}

}  // namespace
}  // namespace fabricdiag::cluster
