// RunCli dispatch, client configuration and text helpers.
#include "cli/cli.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "cli/text_output.h"
#include "client/client_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/test_env.h"
#include "tests/client/fake_collector_client.h"

namespace fabricdiag::cli {
namespace {

using client::testing::FakeCollectorClient;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::TestEnv;
using testing::WriteTempFile;

class RunCliTest : public ::testing::Test {
 protected:
  int Run(std::vector<std::string> args) {
    return RunCli(args, options, factory, t.env);
  }
  CliOptions options;
  TestEnv t;
  std::shared_ptr<FakeCollectorClient> client =
      std::make_shared<FakeCollectorClient>();
  int factory_calls = 0;
  ClientConfig seen_config;
  ClientFactory factory = [this](const ClientConfig& config) {
    ++factory_calls;
    seen_config = config;
    return client;
  };
};

TEST_F(RunCliTest, NoCommandOrUnknownIsUsageError) {
  EXPECT_EQ(Run({}), kExitInvalid);
  EXPECT_THAT(t.err.str(), AllOf(HasSubstr("no command given"),
                                 HasSubstr("usage: fabricdiag")));
  TestEnv other;
  EXPECT_EQ(RunCli({"layout", "frob"}, options, factory, other.env),
            kExitInvalid);
  EXPECT_THAT(other.err.str(), HasSubstr("unknown command \"layout frob\""));
  EXPECT_EQ(factory_calls, 0);
}

TEST_F(RunCliTest, WrongArgumentCountNamesTheCommand) {
  EXPECT_EQ(Run({"layout", "show"}), kExitInvalid);
  EXPECT_THAT(t.err.str(),
              HasSubstr("layout show: expected JOB, got 0 arguments"));
  TestEnv other;
  EXPECT_EQ(RunCli({"nodes", "extra"}, options, factory, other.env),
            kExitInvalid);
  EXPECT_THAT(other.err.str(), HasSubstr("nodes: expected no arguments"));
  EXPECT_EQ(factory_calls, 0);
}

TEST_F(RunCliTest, HelpGoesToStdout) {
  EXPECT_EQ(Run({"help"}), kExitOk);
  EXPECT_THAT(t.out.str(), AllOf(HasSubstr("layout apply FILE"),
                                 HasSubstr("plan FILE"), HasSubstr("watch")));
}

TEST_F(RunCliTest, DispatchesWithConfig) {
  options.client.address = "collector-0:9999";
  options.client.timeout = absl::Seconds(3);
  EXPECT_EQ(Run({"nodes"}), kExitOk);
  EXPECT_EQ(factory_calls, 1);
  EXPECT_EQ(seen_config.address, "collector-0:9999");
  EXPECT_EQ(seen_config.timeout, absl::Seconds(3));
  EXPECT_EQ(client->calls, 1);
}

TEST_F(RunCliTest, TokenIsReadAndTrimmed) {
  options.client.token_file = WriteTempFile("token", "s3cr3t-token\n");
  EXPECT_EQ(Run({"layout", "list"}), kExitOk);
  EXPECT_EQ(seen_config.token, "s3cr3t-token");
}

TEST_F(RunCliTest, UnreadableTokenFileIsInvalidInputBeforeAnyRpc) {
  options.client.token_file = "/nonexistent/token";
  EXPECT_EQ(Run({"layout", "list"}), kExitInvalid);
  EXPECT_EQ(t.err.str(),
            "fabricdiag: --token_file: cannot open /nonexistent/token: No "
            "such file or directory\n");
  EXPECT_EQ(factory_calls, 0);
}

// Like ssh with a private key: a token others can read is refused, and the
// message says how to fix it.
TEST_F(RunCliTest, TokenReadableByOthersIsRefusedWithTheFix) {
  const std::string path = WriteTempFile("token", "s3cr3t-token\n");
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  options.client.token_file = path;
  EXPECT_EQ(Run({"layout", "list"}), kExitInvalid);
  EXPECT_THAT(t.err.str(), HasSubstr("--token_file=" + path +
                                     " is readable or writable by group or "
                                     "others (mode 0644)"));
  EXPECT_THAT(t.err.str(), HasSubstr("chmod 600 " + path));
  EXPECT_EQ(factory_calls, 0);
}

TEST_F(RunCliTest, TokenFileWithoutReadPermission) {
  const std::string path = WriteTempFile("token", "x\n");
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  options.client.token_file = path;
  // Root reads any file: the check runs in a child that is `nobody`.
  EXPECT_EXIT(
      {
        if (::geteuid() == 0 &&
            (::setgid(65534) != 0 || ::setuid(65534) != 0)) {
          std::_Exit(3);
        }
        const int code = Run({"nodes"});
        const bool named =
            t.err.str().find("Permission denied") != std::string::npos;
        std::_Exit(code == kExitInvalid && named ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(RunCliTest, BadTokenFilesAreInvalidInput) {
  const std::pair<std::string, std::string> cases[] = {
      {"\n  \n", "holds no token"},
      {"two words\n", "space or non-ASCII"},
      {"tok\x01"
       "en",
       "space or non-ASCII"},
      {std::string(2 << 20, 'a'), "larger than"},
  };
  for (const auto& [content, message] : cases) {
    TestEnv local;
    options.client.token_file = WriteTempFile("token", content);
    EXPECT_EQ(RunCli({"nodes"}, options, factory, local.env), kExitInvalid);
    EXPECT_THAT(local.err.str(),
                AllOf(HasSubstr("--token_file: "), HasSubstr(message)));
  }
  EXPECT_EQ(factory_calls, 0);
}

TEST_F(RunCliTest, BadAddressTimeoutAndCaAreInvalidInput) {
  struct Case {
    ClientFlags flags;
    std::string message;
  };
  std::vector<Case> cases(10);
  cases[0].flags.address = "";
  cases[0].message = "--collector: empty address";
  cases[1].flags.address = "no-port";
  cases[1].message = "--collector: \"no-port\" is not HOST:PORT";
  cases[2].flags.address = "host:99999";
  cases[2].message = "is not HOST:PORT";
  cases[3].flags.timeout = absl::ZeroDuration();
  cases[3].message = "--timeout: must be positive";
  cases[4].flags.tls.ca = WriteTempFile("ca.pem", "not a certificate");
  cases[4].message = "--tls_ca=";
  cases[5].flags.tls.server_name = "collector.example";
  cases[5].message = "--tls_server_name: needs --tls_ca";
  const std::string pem = "-----BEGIN CERTIFICATE-----\nx\n";
  cases[6].flags.tls.ca = WriteTempFile("ca2.pem", pem);
  cases[6].flags.tls.cert = WriteTempFile("cert.pem", pem);
  cases[6].message = "--tls_key: --tls_cert and --tls_key go together";
  cases[7].flags.tls.cert = cases[6].flags.tls.cert;
  cases[7].flags.tls.key = WriteTempFile("key.pem", pem);
  cases[7].message = "--tls_cert: needs --tls_ca";
  // A private key others can read is refused, with the fix.
  cases[8].flags.tls.ca = cases[6].flags.tls.ca;
  cases[8].flags.tls.cert = cases[6].flags.tls.cert;
  cases[8].flags.tls.key = WriteTempFile("open-key.pem", pem);
  chmod(cases[8].flags.tls.key.c_str(), 0644);
  cases[8].message = "chmod 600";
  cases[9].flags.tls.ca = cases[6].flags.tls.ca;
  cases[9].flags.tls.cert = WriteTempFile("cert2.pem", "not pem");
  cases[9].flags.tls.key = cases[7].flags.tls.key;
  cases[9].message = "--tls_cert=";
  for (const Case& c : cases) {
    TestEnv local;
    options.client = c.flags;
    EXPECT_EQ(RunCli({"findings"}, options, factory, local.env), kExitInvalid);
    EXPECT_THAT(local.err.str(), HasSubstr(c.message));
  }
  EXPECT_EQ(factory_calls, 0);
}

TEST_F(RunCliTest, UriAddressesPassThrough) {
  for (const char* address :
       {"dns:///collector:9811", "unix:/run/c.sock", "[::1]:9811"}) {
    options.client.address = address;
    EXPECT_TRUE(LoadClientConfig(options.client).ok()) << address;
  }
}

TEST_F(RunCliTest, PlanNeedsNoCollector) {
  options.client.token_file = "/nonexistent/token";  // not even read
  const std::string file = WriteTempFile("l.yaml", testing::kValidLayoutYaml);
  EXPECT_EQ(Run({"plan", file}), kExitOk);
  EXPECT_EQ(factory_calls, 0);
  EXPECT_THAT(t.out.str(), HasSubstr("layout moe-train-42"));
}

TEST(TableTest, AlignsAndDashesEmptyCells) {
  Table table({"A", "LONGER", "LAST"});
  table.AddRow({"xxxxx", "", "free text"});
  table.AddRow({"y", "z\x1b", ""});
  std::ostringstream out;
  table.Print(out);
  EXPECT_EQ(out.str(),
            "A      LONGER  LAST\n"
            "xxxxx  -       free text\n"
            "y      z?      -\n");
}

TEST(JsonToYamlTest, RejectsGarbage) { EXPECT_FALSE(JsonToYaml("{").ok()); }

}  // namespace
}  // namespace fabricdiag::cli
