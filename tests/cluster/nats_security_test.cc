// The NATS security flags before any connection (cluster/nats_connection.h,
// cluster/cluster_member.h): URL forms, what is logged of a URL, and the
// checks of --nats_user, --nats_password_file, --nats_creds and
// --nats_tls_*. No NATS server.
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "cluster/cluster_member.h"
#include "cluster/nats_connection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_pki.h"

namespace fabricdiag::cluster {
namespace {

using ::testing::HasSubstr;

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

}  // namespace
}  // namespace fabricdiag::cluster
