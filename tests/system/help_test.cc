// Every binary answers --help with every flag its main file defines, and
// --version with the project version: the flags are read from the sources,
// so a new flag that --help does not show fails here.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace fabricdiag {
namespace {

using ::fabricdiag::testing::RunCommand;
using ::fabricdiag::testing::RunResult;
using ::testing::HasSubstr;

struct Binary {
  const char* program;  // as --version names it
  const char* path;
  const char* main_source;  // relative to the source tree
  // The shared flag blocks it links (client/*_flags.cc), whose flags are
  // its own too.
  std::vector<std::string> flag_blocks;
};

void PrintTo(const Binary& b, std::ostream* os) { *os << b.program; }

// The flag names ABSL_FLAG defines in `source`.
std::set<std::string> FlagsDefinedIn(const std::string& source) {
  std::ifstream in(std::string(FABRICDIAG_SOURCE_DIR) + "/" + source);
  EXPECT_TRUE(in.good()) << source;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::set<std::string> out;
  const std::regex flag(R"(ABSL_FLAG\(\s*[^,]+,\s*([a-z0-9_]+)\s*,)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), flag);
       it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

class HelpTest : public ::testing::TestWithParam<Binary> {};

TEST_P(HelpTest, HelpListsEveryFlag) {
  const Binary& b = GetParam();
  std::set<std::string> flags = FlagsDefinedIn(b.main_source);
  for (const std::string& block : b.flag_blocks) {
    const std::set<std::string> shared = FlagsDefinedIn(block);
    EXPECT_FALSE(shared.empty()) << "no flags parsed from " << block;
    flags.insert(shared.begin(), shared.end());
  }
  ASSERT_GE(flags.size(), 4u) << "no flags parsed from " << b.main_source;
  RunResult r = RunCommand({b.path, "--help"});
  // Abseil's --help exits 1 after printing; the CLI's own help exits 0.
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.exit_code;
  const std::string help = r.out + r.err;
  EXPECT_THAT(help, ::testing::Not(HasSubstr("No flags matched")));
  for (const std::string& flag : flags) {
    EXPECT_THAT(help, HasSubstr("--" + flag)) << b.program;
  }
}

TEST_P(HelpTest, VersionIsTheProjectVersion) {
  const Binary& b = GetParam();
  RunResult r = RunCommand({b.path, "--version"});
  EXPECT_THAT(r.out, HasSubstr(std::string(b.program) + " " + kVersion))
      << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    AllBinaries, HelpTest,
    ::testing::Values(
        Binary{"fabricdiag-agent",
               FABRICDIAG_AGENT_BINARY,
               "agent/agent_main.cc",
               {"client/stream_flags.cc", "client/tls_flags.cc"}},
        Binary{"fabricdiag-collector",
               FABRICDIAG_COLLECTOR_BINARY,
               "server/collector_main.cc",
               {}},
        Binary{"fabricdiag-sim", FABRICDIAG_SIM_BINARY, "sim/sim_main.cc", {}},
        Binary{"fabricdiag",
               FABRICDIAG_CLI_BINARY,
               "cli/main.cc",
               {"client/tls_flags.cc"}},
        Binary{"fabricdiag-gnmi-bridge",
               FABRICDIAG_GNMI_BRIDGE_BINARY,
               "gnmi/bridge_main.cc",
               {"client/stream_flags.cc", "client/tls_flags.cc"}}),
    [](const ::testing::TestParamInfo<Binary>& param_info) {
      std::string name = param_info.param.program;
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace fabricdiag
