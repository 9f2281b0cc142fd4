#include "tests/cli/test_env.h"

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

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

namespace {

// The directory of this process's temporary files, removed with them once
// the tests have run (gtest owns the environment).
class TempFiles : public ::testing::Environment {
 public:
  const std::string& dir() {
    if (dir_ == nullptr)
      dir_ = std::make_unique<fabricdiag::testing::TempDir>();
    return dir_->path();
  }
  void TearDown() override { dir_.reset(); }

 private:
  std::unique_ptr<fabricdiag::testing::TempDir> dir_;
};

TempFiles* const g_temp_files =
    static_cast<TempFiles*>(::testing::AddGlobalTestEnvironment(new TempFiles));

}  // namespace

std::string TempPath(const std::string& name) {
  const ::testing::TestInfo* info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  return info == nullptr
             ? absl::StrCat(g_temp_files->dir(), "/", name)
             : absl::StrCat(g_temp_files->dir(), "/", info->test_suite_name(),
                            "_", info->name(), "_", name);
}

std::string WriteTempFile(const std::string& name, const std::string& content) {
  std::string path = TempPath(name);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << content;
  f.close();
  EXPECT_TRUE(f.good()) << path;
  // Tokens must not be readable by others (the CLI refuses them).
  EXPECT_EQ(::chmod(path.c_str(), 0600), 0) << path;
  return path;
}

}  // namespace fabricdiag::cli::testing
