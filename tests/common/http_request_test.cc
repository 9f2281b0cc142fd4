#include "common/http_request.h"

#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag {
namespace {

TEST(ParseRequestHeadTest, WhatTheEndpointsNeed) {
  absl::StatusOr<HttpRequest> r = ParseRequestHead(
      "GET /api/v1/jobs/moe?dim=ep HTTP/1.1\r\nHost: x\r\n"
      "Accept-Encoding: gzip, deflate\r\nconnection: Close\r\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method, "GET");
  EXPECT_EQ(r->path, "/api/v1/jobs/moe");
  EXPECT_EQ(r->query, "dim=ep");
  EXPECT_TRUE(r->accepts_gzip);
  EXPECT_FALSE(r->keep_alive);
  EXPECT_FALSE(r->has_body);

  r = ParseRequestHead("GET / HTTP/1.0\r\n");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->keep_alive);
  r = ParseRequestHead("GET / HTTP/1.0\r\nConnection: keep-alive\r\n");
  EXPECT_TRUE(r->keep_alive);
  r = ParseRequestHead("GET / HTTP/1.1\r\nAccept-Encoding: gzip;q=0\r\n");
  EXPECT_FALSE(r->accepts_gzip);
  r = ParseRequestHead("GET / HTTP/1.1\r\nAccept-Encoding: *\r\n");
  EXPECT_TRUE(r->accepts_gzip);
  r = ParseRequestHead("GET / HTTP/1.1\r\nContent-Length: 3\r\n");
  EXPECT_TRUE(r->has_body);
}

TEST(ParseRequestHeadTest, WhatAWriteNeeds) {
  absl::StatusOr<HttpRequest> r = ParseRequestHead(
      "PUT /api/v1/jobs/moe HTTP/1.1\r\nContent-Length: 42\r\n"
      "authorization:  Bearer abc \r\nExpect: 100-Continue\r\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method, "PUT");
  EXPECT_TRUE(r->has_body);
  EXPECT_EQ(r->content_length, 42u);
  EXPECT_FALSE(r->chunked);
  EXPECT_EQ(r->authorization, "Bearer abc");
  EXPECT_TRUE(r->expect_continue);
  r = ParseRequestHead("PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->chunked);
  EXPECT_TRUE(r->has_body);
  EXPECT_EQ(r->authorization, "");
  EXPECT_FALSE(r->expect_continue);
}

TEST(ParseRequestHeadTest, IfNoneMatchListsJoin) {
  absl::StatusOr<HttpRequest> r = ParseRequestHead("GET / HTTP/1.1\r\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->if_none_match, "");
  r = ParseRequestHead(
      "GET / HTTP/1.1\r\nIf-None-Match: W/\"a\"\r\nif-none-match:  \"b\" \r\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->if_none_match, "W/\"a\", \"b\"");
}

// A write's condition, kept apart from If-None-Match; repeated headers
// join into one list (which the job write route refuses).
TEST(ParseRequestHeadTest, IfMatchIsKeptAndListsJoin) {
  absl::StatusOr<HttpRequest> r =
      ParseRequestHead("PUT /api/v1/jobs/x HTTP/1.1\r\nIf-Match: \"17\"\r\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->if_match, "\"17\"");
  EXPECT_EQ(r->if_none_match, "");
  r = ParseRequestHead(
      "PUT / HTTP/1.1\r\nif-match: \"1\"\r\nIF-MATCH: \"2\"\r\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->if_match, "\"1\", \"2\"");
}

TEST(EtagMatchesTest, WeakComparisonOverTheList) {
  EXPECT_TRUE(EtagMatches("W/\"f1\"", "W/\"f1\""));
  EXPECT_TRUE(EtagMatches("\"f1\"", "W/\"f1\""));
  EXPECT_TRUE(EtagMatches("W/\"f1\"", "\"f1\""));
  EXPECT_TRUE(EtagMatches("\"x\", W/\"f1\" ,\"y\"", "W/\"f1\""));
  EXPECT_TRUE(EtagMatches(" * ", "W/\"f1\""));
  EXPECT_FALSE(EtagMatches("", "W/\"f1\""));
  EXPECT_FALSE(EtagMatches("W/\"f2\"", "W/\"f1\""));
  EXPECT_FALSE(EtagMatches("f1", "W/\"f1\""));
  EXPECT_FALSE(EtagMatches("W/\"f1", "W/\"f1\""));
  EXPECT_FALSE(EtagMatches("W/\"f1\"x", "W/\"f1\""));
  // Not an entity tag: nothing matches it, not even "*".
  EXPECT_FALSE(EtagMatches("*", "f1"));
  EXPECT_FALSE(EtagMatches("\"\"", "\""));
}

TEST(ParseRequestHeadTest, RefusesWhatIsNotHttp11) {
  for (const char* bad :
       {"", "GET", "GET /", "GET / HTTP/2", "GET  / HTTP/1.1",
        "G\x01T / HTTP/1.1", "GET x HTTP/1.1", "GET /a\x7f HTTP/1.1",
        "GET / HTTP/1.1\r\nNoColon", "GET / HTTP/1.1\r\n: empty",
        "GET / HTTP/1.1\r\n folded: x",
        "GET / HTTP/1.1\r\nContent-Length: -1"}) {
    EXPECT_FALSE(ParseRequestHead(bad).ok()) << bad;
  }
}

// Random bytes never crash the parser, and whatever it accepts has a path.
TEST(ParseRequestHeadTest, RandomInputIsHandled) {
  std::mt19937 rng(7);
  const std::string alphabet = "GET /HTP1.0\r\n:abcXYZ?\x01\xff \t";
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % 80);
    for (int k = 0; k < n; ++k) s.push_back(alphabet[rng() % alphabet.size()]);
    absl::StatusOr<HttpRequest> r = ParseRequestHead(s);
    if (r.ok()) {
      EXPECT_EQ(r->path[0], '/') << s;
    }
  }
}

TEST(ParseQueryTest, DecodesPairsInOrder) {
  absl::StatusOr<std::vector<QueryParam>> q =
      ParseQuery("dim=dp&group=dp%3A3&&flag&name=a+b%2Bc&empty=");
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_EQ(q->size(), 5u);
  EXPECT_EQ((*q)[0].key, "dim");
  EXPECT_EQ((*q)[0].value, "dp");
  EXPECT_EQ((*q)[1].value, "dp:3");
  EXPECT_EQ((*q)[2].key, "flag");
  EXPECT_EQ((*q)[2].value, "");
  EXPECT_EQ((*q)[3].value, "a b+c");
  EXPECT_EQ((*q)[4].key, "empty");
  EXPECT_TRUE(ParseQuery("")->empty());
}

TEST(ParseQueryTest, RefusesMalformedEscapesNulAndFloods) {
  for (const char* bad : {"a=%", "a=%4", "a=%zz", "%g0=1", "a=%00"}) {
    EXPECT_EQ(ParseQuery(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  std::string many;
  for (int i = 0; i < 33; ++i) many += "a=1&";
  EXPECT_EQ(ParseQuery(many).status().code(),
            absl::StatusCode::kInvalidArgument);
  many.resize(many.size() - 4);
  EXPECT_TRUE(ParseQuery(many).ok());
}

}  // namespace
}  // namespace fabricdiag
