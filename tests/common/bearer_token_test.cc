#include "common/bearer_token.h"

#include "gtest/gtest.h"

namespace fabricdiag {
namespace {

constexpr char kToken[] = "0123456789abcdef0123456789abcdef";

TEST(BearerTokenTest, SchemeIsCaseInsensitiveTokenIsExact) {
  for (const char* ok : {"Bearer 0123456789abcdef0123456789abcdef",
                         "bearer 0123456789abcdef0123456789abcdef",
                         "BEARER 0123456789abcdef0123456789abcdef",
                         "Bearer   0123456789abcdef0123456789abcdef"}) {
    EXPECT_TRUE(BearerTokenMatches(ok, kToken)) << ok;
  }
  for (const char* bad :
       {"", "Bearer", "Bearer ", "Bearer0123456789abcdef0123456789abcdef",
        "Basic 0123456789abcdef0123456789abcdef",
        "Bearer 0123456789ABCDEF0123456789abcdef",
        "Bearer 0123456789abcdef0123456789abcde",
        "Bearer 0123456789abcdef0123456789abcdef0",
        "Bearer 0123456789abcdef0123456789abcdef "}) {
    EXPECT_FALSE(BearerTokenMatches(bad, kToken)) << bad;
  }
  EXPECT_FALSE(BearerTokenMatches("Bearer x", ""));
}

}  // namespace
}  // namespace fabricdiag
