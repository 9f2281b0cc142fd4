#include "common/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
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

// A key root owns may be readable by its group (root:fabricdiag 0640, a
// Kubernetes Secret with fsGroup): root chose who reads it. Not by others,
// and not writable by the group.
TEST(FilesTest, RootOwnedSecretsMayBeReadableByTheirGroup) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a root-owned file";
  testing::TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const std::string key = Write(dir.path() + "/key", "s3cret\n", 0640);
  ASSERT_EQ(chown(key.c_str(), 0, 65534), 0);
  // The reader is not root (root reads anything and owns the file).
  EXPECT_EXIT(
      {
        if (setgid(65534) != 0 || setuid(65534) != 0) std::_Exit(3);
        if (!ReadSecretFile("--tls_key", key, 100).ok()) std::_Exit(4);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  for (mode_t mode : {0644, 0660, 0642}) {
    ASSERT_EQ(chmod(key.c_str(), mode), 0);
    EXPECT_EXIT(
        {
          if (setgid(65534) != 0 || setuid(65534) != 0) std::_Exit(3);
          absl::StatusOr<std::string> r = ReadSecretFile("--tls_key", key, 100);
          std::_Exit(!r.ok() && r.status().code() ==
                                    absl::StatusCode::kFailedPrecondition
                         ? 0
                         : 1);
        },
        ::testing::ExitedWithCode(0), "")
        << std::oct << mode;
  }
  // A file of our own (root's, read by root) must still be 0600.
  ASSERT_EQ(chmod(key.c_str(), 0640), 0);
  EXPECT_FALSE(ReadSecretFile("--tls_key", key, 100).ok());
}

}  // namespace
}  // namespace fabricdiag
