#include "collector/access/access_tokens.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kA[] = "0123456789abcdef0123456789abcdef";
constexpr char kB[] = "fedcba9876543210fedcba9876543210";
constexpr char kC[] = "00112233445566778899aabbccddeeff";

TEST(AccessTokensTest, ParsesNamedTokensWithScopes) {
  const std::string text =
      std::string("# who  scopes  token\n\n") + "grafana read " + kA + "\n" +
      "  slurm\tdeclare,read\t" + kB + "  \n" + "oncall admin " + kC;
  absl::StatusOr<std::vector<AccessToken>> tokens = ParseAccessTokens(text);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 3u);
  const AccessToken& grafana = (*tokens)[0];
  EXPECT_EQ(grafana.name, "grafana");
  EXPECT_EQ(grafana.token, kA);
  EXPECT_TRUE(grafana.Allows(Scope::kRead));
  EXPECT_FALSE(grafana.Allows(Scope::kDeclare));
  EXPECT_FALSE(grafana.Allows(Scope::kAdmin));
  const AccessToken& slurm = (*tokens)[1];
  EXPECT_EQ(slurm.name, "slurm");
  EXPECT_EQ(slurm.token, kB);
  EXPECT_EQ(slurm.ScopeList(), "read,declare");
  EXPECT_TRUE(slurm.Allows(Scope::kDeclare));
  EXPECT_FALSE(slurm.Allows(Scope::kAdmin));
  // admin allows everything.
  const AccessToken& oncall = (*tokens)[2];
  for (Scope s : {Scope::kRead, Scope::kDeclare, Scope::kAdmin}) {
    EXPECT_TRUE(oncall.Allows(s)) << ScopeName(s);
  }
}

TEST(AccessTokensTest, DeclareDoesNotIncludeRead) {
  absl::StatusOr<std::vector<AccessToken>> tokens =
      ParseAccessTokens(std::string("prolog declare ") + kA + "\n");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_TRUE((*tokens)[0].Allows(Scope::kDeclare));
  EXPECT_FALSE((*tokens)[0].Allows(Scope::kRead));
}

TEST(AccessTokensTest, OneWordFileIsTheOldSingleTokenWithEveryScope) {
  for (const std::string& text : {std::string(kA), std::string(kA) + "\n",
                                  "\n  " + std::string(kA) + " \n\n"}) {
    absl::StatusOr<std::vector<AccessToken>> tokens = ParseAccessTokens(text);
    ASSERT_TRUE(tokens.ok()) << tokens.status();
    ASSERT_EQ(tokens->size(), 1u);
    EXPECT_EQ((*tokens)[0].name, "token");
    EXPECT_EQ((*tokens)[0].token, kA);
    EXPECT_EQ((*tokens)[0].ScopeList(), "read,declare,admin");
  }
  // The old format's rules still hold.
  EXPECT_THAT(ParseAccessTokens("short").status().message(),
              HasSubstr("at least 16"));
}

TEST(AccessTokensTest, BadFilesNameTheLineAndNeverQuoteTheToken) {
  const std::string a(kA), b(kB);
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", "holds no token"},
      {"# only a comment\n\n", "holds no token"},
      {"ci read\n", "line 1: expected NAME SCOPE[,SCOPE] TOKEN, found 2"},
      {"ci read " + a + " extra\n", "line 1: expected NAME SCOPE"},
      {"x read " + a + "\nci write " + b, "line 2: unknown scope \"write\""},
      {"ci read, admin " + a, "line 1: expected NAME SCOPE"},
      {"ci read, " + a, "line 1: unknown scope \"\""},
      {"ci read,,admin " + a, "line 1: unknown scope \"\""},
      {"ci READ " + a, "unknown scope \"READ\""},
      {"c/i read " + a, "line 1: \"c/i\" is not a token name"},
      {std::string(65, 'n') + " read " + a, "is not a token name"},
      {"ci read short", "line 1: the token must be at least 16"},
      {"ci read " + a + "\xc3\xa9", "not visible ASCII"},
      {"ci read " + a + "\nci admin " + b,
       "line 2: the name \"ci\" is given twice"},
      {"ci read " + a + "\n\nops admin " + a,
       "line 3: the token of \"ops\" is an earlier line's token"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<AccessToken>> tokens = ParseAccessTokens(c.text);
    ASSERT_FALSE(tokens.ok()) << c.text;
    EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(tokens.status().message(), HasSubstr(c.message)) << c.text;
    EXPECT_THAT(tokens.status().message(), Not(HasSubstr(kA))) << c.text;
    EXPECT_THAT(tokens.status().message(), Not(HasSubstr(kB))) << c.text;
  }
}

}  // namespace
}  // namespace fabricdiag::collector
