#include "tests/cli/test_env.h"

#include <sys/stat.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace fabricdiag::cli::testing {

TestEnv::TestEnv()
    : clock(absl::FromUnixSeconds(kExampleUnixSeconds) + absl::Seconds(65)) {
  env.in = &in;
  env.out = &out;
  env.err = &err;
  env.clock = &clock;
  env.reconnect_backoff = absl::Milliseconds(1);
  env.max_reconnect_backoff = absl::Milliseconds(2);
}

std::string WriteTempFile(const std::string& name, const std::string& content) {
  const ::testing::TestInfo* info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/cli_", info->test_suite_name(), "_",
                   info->name(), "_", name);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << content;
  f.close();
  EXPECT_TRUE(f.good()) << path;
  // Tokens must not be readable by others (the CLI refuses them).
  EXPECT_EQ(::chmod(path.c_str(), 0600), 0) << path;
  return path;
}

}  // namespace fabricdiag::cli::testing
