#include "client/token.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "tests/testing/temp_dir.h"

namespace fabricdiag::client {
namespace {

using ::testing::HasSubstr;

class TokenTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text, mode_t mode = 0600) {
    std::string path = dir_.path() + "/token";
    std::ofstream(path, std::ios::trunc) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }

  testing::TempDir dir_;
};

TEST_F(TokenTest, IngestTokenIsTrimmed) {
  absl::StatusOr<std::string> token =
      ReadIngestToken(Write("0123456789abcdef0123\n"));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "0123456789abcdef0123");
}

TEST_F(TokenTest, ShortOrEmptyIngestTokenSaysWhereTheTokenComesFrom) {
  for (const char* text : {"", "\n", "short\n"}) {
    absl::Status s = ReadIngestToken(Write(text)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(s.message(), HasSubstr("--ingest_token_file")) << text;
    EXPECT_THAT(s.message(), HasSubstr("/etc/fabricdiag/ingest-token"));
  }
}

TEST_F(TokenTest, TokenReadableByOthersIsRefused) {
  const std::string path = Write("0123456789abcdef0123\n", 0644);
  absl::Status s = ReadIngestToken(path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("chmod 600"));
  s = ReadApiToken("token_file", path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--token_file"));
}

TEST_F(TokenTest, ApiTokenMayBeShort) {
  absl::StatusOr<std::string> token = ReadApiToken("token_file", Write("x\n"));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "x");
  EXPECT_THAT(
      ReadApiToken("token_file", "/nonexistent/token").status().message(),
      HasSubstr("--token_file: cannot open /nonexistent/token"));
}

}  // namespace
}  // namespace fabricdiag::client
