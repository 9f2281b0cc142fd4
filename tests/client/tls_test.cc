#include "client/tls.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "tests/testing/temp_dir.h"

namespace fabricdiag::client {
namespace {

using ::testing::HasSubstr;

constexpr char kCertificate[] =
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
constexpr char kKey[] =
    "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";

class TlsTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text,
                    mode_t mode = 0600) {
    std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }

  testing::TempDir dir_;
};

TEST_F(TlsTest, NoFlagsIsPlaintext) {
  absl::StatusOr<TlsConfig> tls = LoadTls({});
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_FALSE(tls->enabled());
}

TEST_F(TlsTest, CaAloneIsServerVerifiedTls) {
  TlsFlags flags;
  flags.ca = Write("ca.pem", kCertificate);
  flags.server_name = "collector.example";
  absl::StatusOr<TlsConfig> tls = LoadTls(flags);
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_TRUE(tls->enabled());
  EXPECT_EQ(tls->ca_pem, kCertificate);
  EXPECT_EQ(tls->server_name, "collector.example");
  EXPECT_TRUE(tls->cert_pem.empty());
}

TEST_F(TlsTest, CaCertAndKeyIsMutualTls) {
  TlsFlags flags;
  flags.ca = Write("ca.pem", kCertificate);
  flags.cert = Write("cert.pem", kCertificate);
  flags.key = Write("key.pem", kKey);
  absl::StatusOr<TlsConfig> tls = LoadTls(flags);
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_EQ(tls->cert_pem, kCertificate);
  EXPECT_EQ(tls->key_pem, kKey);
}

// The combination rules need no file: they are checked before any is read.
TEST_F(TlsTest, CombinationsAreRefusedBeforeAnyFileIsRead) {
  TlsFlags cert_only;
  cert_only.cert = "/nonexistent/cert.pem";
  EXPECT_EQ(CheckTlsFlags(cert_only).message(),
            "--tls_key: --tls_cert and --tls_key go together (mutual TLS)");
  TlsFlags key_only;
  key_only.key = "/nonexistent/key.pem";
  EXPECT_EQ(CheckTlsFlags(key_only).message(),
            "--tls_cert: --tls_cert and --tls_key go together (mutual TLS)");
  TlsFlags no_ca;
  no_ca.cert = "/nonexistent/cert.pem";
  no_ca.key = "/nonexistent/key.pem";
  EXPECT_EQ(LoadTls(no_ca).status().message(),
            "--tls_cert: needs --tls_ca (TLS is off without it)");
  TlsFlags name_only;
  name_only.server_name = "collector.example";
  EXPECT_EQ(LoadTls(name_only).status().message(),
            "--tls_server_name: needs --tls_ca (TLS is off without it)");
}

TEST_F(TlsTest, FilesMustHoldWhatTheirFlagSays) {
  TlsFlags flags;
  flags.ca = Write("ca.pem", kKey);  // a key given as the CA
  absl::Status s = LoadTls(flags).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("--tls_ca=" + flags.ca + " holds no PEM certificate"));

  flags.ca = Write("text.pem", "hello\n");
  EXPECT_THAT(LoadTls(flags).status().message(),
              HasSubstr("not in PEM format"));

  flags.ca = "/nonexistent/ca.pem";
  s = LoadTls(flags).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--tls_ca"));
  EXPECT_THAT(s.message(), HasSubstr("No such file"));

  flags.ca = Write("ca.pem", kCertificate);
  flags.cert = Write("cert.pem", kKey);
  flags.key = Write("key.pem", kKey);
  EXPECT_THAT(LoadTls(flags).status().message(),
              HasSubstr("--tls_cert=" + flags.cert));
}

// As ssh refuses a private key others can read.
TEST_F(TlsTest, KeyReadableByOthersIsRefusedWithTheFix) {
  TlsFlags flags;
  flags.ca = Write("ca.pem", kCertificate);
  flags.cert = Write("cert.pem", kCertificate);
  flags.key = Write("key.pem", kKey, 0644);
  absl::Status s = LoadTls(flags).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--tls_key"));
  EXPECT_THAT(s.message(), HasSubstr("chmod 600"));
}

TEST_F(TlsTest, HostileFilesAreNotReadWhole) {
  TlsFlags flags;
  flags.ca = "/dev/zero";
  EXPECT_THAT(LoadTls(flags).status().message(),
              HasSubstr("/dev/zero is not a regular file"));
  flags.ca = Write("big.pem",
                   "-----BEGIN CERTIFICATE-----" + std::string(2 << 20, 'a'));
  EXPECT_THAT(LoadTls(flags).status().message(),
              HasSubstr("larger than 1048576 bytes"));
}

// The value of the server name override in `args`; "" when unset.
std::string ServerNameOverride(const grpc::ChannelArguments& args) {
  const grpc_channel_args c = args.c_channel_args();
  for (size_t i = 0; i < c.num_args; ++i) {
    if (std::string(c.args[i].key) == GRPC_SSL_TARGET_NAME_OVERRIDE_ARG) {
      return c.args[i].value.string;
    }
  }
  return "";
}

TEST_F(TlsTest, ServerNameOverridesOnlyWithTls) {
  TlsConfig tls;
  tls.server_name = "collector.example";
  grpc::ChannelArguments plaintext;
  SetTlsChannelArguments(tls, &plaintext);
  EXPECT_EQ(ServerNameOverride(plaintext), "");

  tls.ca_pem = kCertificate;
  grpc::ChannelArguments secure;
  SetTlsChannelArguments(tls, &secure);
  EXPECT_EQ(ServerNameOverride(secure), "collector.example");
  EXPECT_NE(ChannelCredentials(tls), nullptr);
}

}  // namespace
}  // namespace fabricdiag::client
