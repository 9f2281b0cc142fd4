// The TLS rule set (client/tls.h, docs/client-tls.md) as each binary applies
// it: one table of --tls_* combinations through the agent's, the CLI's and
// the gNMI bridge's configuration checks. A combination one binary accepts,
// all accept, and they refuse the others with the same message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "agent/agent_app.h"
#include "client/client_config.h"
#include "client/tls.h"
#include "gnmi/bridge_app.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::client {
namespace {

using ::testing::HasSubstr;

constexpr char kCertificate[] =
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
constexpr char kKey[] =
    "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";

struct Path {
  const char* name;
  std::function<absl::Status(const TlsFlags&)> check;
};

class TlsRulesTest : public ::testing::TestWithParam<Path> {
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

TEST_P(TlsRulesTest, OneTableForEveryClient) {
  const std::string ca = Write("ca.pem", kCertificate);
  const std::string cert = Write("cert.pem", kCertificate);
  const std::string key = Write("key.pem", kKey);
  const std::string open_key = Write("open-key.pem", kKey, 0644);
  const std::string not_pem = Write("not-pem.txt", "hello\n");
  struct Case {
    TlsFlags flags;
    std::string error;  // empty: accepted
  };
  const std::vector<Case> cases = {
      {{}, ""},
      {{ca, "", "", ""}, ""},
      {{ca, "", "", "collector.example"}, ""},
      {{ca, cert, key, ""}, ""},
      {{ca, cert, key, "collector.example"}, ""},
      // The agent used to accept these two (system roots, or a name it
      // never checked); a client certificate for an unverified server and a
      // name for a plaintext connection are mistakes.
      {{"", cert, key, ""}, "--tls_cert: needs --tls_ca"},
      {{"", "", "", "collector.example"}, "--tls_server_name: needs --tls_ca"},
      {{ca, cert, "", ""}, "--tls_key: --tls_cert and --tls_key go together"},
      {{ca, "", key, ""}, "--tls_cert: --tls_cert and --tls_key go together"},
      {{dir_.path() + "/missing.pem", "", "", ""}, "No such file"},
      {{key, "", "", ""}, "--tls_ca=" + key + " holds no PEM certificate"},
      {{ca, not_pem, key, ""}, "--tls_cert=" + not_pem + " is not in PEM"},
      {{ca, cert, open_key, ""}, "chmod 600"},
  };
  for (const Case& c : cases) {
    const std::string what = c.flags.ca + "|" + c.flags.cert + "|" +
                             c.flags.key + "|" + c.flags.server_name;
    absl::Status s = GetParam().check(c.flags);
    if (c.error.empty()) {
      EXPECT_TRUE(s.ok()) << what << ": " << s;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << what;
      EXPECT_THAT(std::string(s.message()), HasSubstr(c.error)) << what;
    }
  }
}

absl::Status AgentCheck(const TlsFlags& tls) {
  agent::AgentConfig config;
  config.node = "gpu-001";
  config.sysfs_root = "/";  // any directory: nothing is read
  config.collector = "127.0.0.1:9811";
  config.tls = tls;
  return agent::ValidateAgentConfig(config);
}

absl::Status CliCheck(const TlsFlags& tls) {
  ClientFlags flags;
  flags.tls = tls;
  return LoadClientConfig(flags).status();
}

absl::Status BridgeCheck(const TlsFlags& tls) {
  gnmi::BridgeConfig config;
  config.collector = "127.0.0.1:9811";
  config.tls = tls;
  return gnmi::ValidateBridgeConfig(config);
}

INSTANTIATE_TEST_SUITE_P(Clients, TlsRulesTest,
                         ::testing::Values(Path{"agent", AgentCheck},
                                           Path{"cli", CliCheck},
                                           Path{"gnmi_bridge", BridgeCheck}),
                         [](const ::testing::TestParamInfo<Path>& param_info) {
                           return std::string(param_info.param.name);
                         });

}  // namespace
}  // namespace fabricdiag::client
