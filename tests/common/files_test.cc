#include "common/files.h"

#include <sys/stat.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag {
namespace {

using ::testing::HasSubstr;

std::string Write(const std::string& path, const std::string& text,
                  mode_t mode) {
  std::ofstream(path, std::ios::binary) << text;
  chmod(path.c_str(), mode);
  return path;
}

TEST(FilesTest, ReadFileCappedReadsWholeFilesWithinTheCap) {
  testing::TempDir dir;
  const std::string path = Write(dir.path() + "/f", "hello\n", 0644);
  EXPECT_EQ(*ReadFileCapped(path, 6), "hello\n");
  absl::StatusOr<std::string> big = ReadFileCapped(path, 5);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(big.status().message()), HasSubstr("larger than 5"));
  EXPECT_EQ(ReadFileCapped(dir.path() + "/none", 10).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadFileCapped(dir.path(), 10).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(FilesTest, SecretsReadableByOthersAreRefusedWithTheFix) {
  testing::TempDir dir;
  const std::string token = Write(dir.path() + "/token", "s3cret\n", 0600);
  EXPECT_EQ(*ReadSecretFile("--token_file", token, 100), "s3cret\n");
  EXPECT_TRUE(ReadSecretFile("--token_file", token, 100).ok());
  for (mode_t mode : {0644, 0640, 0604, 0620, 0602}) {
    chmod(token.c_str(), mode);
    absl::StatusOr<std::string> r = ReadSecretFile("--token_file", token, 100);
    ASSERT_FALSE(r.ok()) << std::oct << mode;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(r.status().message()),
                HasSubstr("chmod 600 " + token));
  }
  chmod(token.c_str(), 0400);
  EXPECT_TRUE(ReadSecretFile("--token_file", token, 100).ok());
  EXPECT_THAT(std::string(ReadSecretFile("--tls_key", dir.path() + "/none", 10)
                              .status()
                              .message()),
              HasSubstr("--tls_key: cannot open"));
}

}  // namespace
}  // namespace fabricdiag
