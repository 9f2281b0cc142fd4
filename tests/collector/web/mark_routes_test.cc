#include "collector/web/mark_routes.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "analysis/finding.h"
#include "collector/access/access_control.h"
#include "collector/web/route_access.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collector/stores_fixture.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;
using Json = nlohmann::json;

constexpr char kReadToken[] = "read-0123456789abcdef";
constexpr char kAdminToken[] = "admin-0123456789abcdef";

analysis::Finding Storm(const std::string& node) {
  analysis::Finding f;
  f.kind = "pfc_storm";
  f.severity = analysis::Severity::kCritical;
  f.node = node;
  f.nodes = {node};
  f.device = "mlx5_1";
  f.summary = node + " mlx5_1 has transmitted PFC pause on priority 3";
  f.immediate = true;
  return f;
}

// The routes over the collector's stores with one active finding, guarded
// by a token file with a read and an admin token.
class MarkRoutesTest : public CollectorStoresTest {
 protected:
  void SetUp() override {
    CollectorStoresTest::SetUp();
    ASSERT_TRUE(
        findings_->Update({Storm("leaf-3")}, clock_.Now(), "rate").ok());
    findings_->SetMarks(marks_.get());
    access_ = std::make_shared<AccessControl>(std::vector<AccessToken>{
        {"grafana", static_cast<uint8_t>(Scope::kRead), kReadToken},
        {"oncall", static_cast<uint8_t>(Scope::kAdmin), kAdminToken}});
    routes_ = GuardRoutes(MarkRoutes({marks_.get(), findings_.get(), access_}),
                          access_);
  }

  // What the server would route `method` `path` to, as `token`.
  HttpResponse Call(const std::string& method, const std::string& path,
                    const std::string& body = "",
                    const std::string& token = kAdminToken) {
    HttpRequest r;
    r.method = method;
    r.path = path;
    r.body = body;
    r.authorization = std::string("Bearer ") + token;
    const HttpRoute* best = nullptr;
    for (const HttpRoute& route : routes_) {
      const bool prefix = absl::EndsWith(route.path, "/");
      if (prefix ? !absl::StartsWith(path, route.path) : path != route.path) {
        continue;
      }
      const std::vector<std::string> methods =
          route.methods.empty() ? std::vector<std::string>{"GET", "HEAD"}
                                : route.methods;
      if (std::find(methods.begin(), methods.end(), method) == methods.end()) {
        continue;
      }
      if (best == nullptr || route.path.size() > best->path.size()) {
        best = &route;
      }
    }
    if (best == nullptr) {
      HttpResponse none;
      none.status = 405;
      return none;
    }
    return best->handler(r);
  }

  static Json Body(const HttpResponse& r) {
    return Json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  }
  static std::string ErrorOf(const HttpResponse& r) {
    const Json j = Body(r);
    return j.contains("error") ? j["error"].get<std::string>() : r.body;
  }

  std::string ActiveId() const { return findings_->Active().at(0).id(); }

  std::shared_ptr<AccessControl> access_;
  std::vector<HttpRoute> routes_;
};

// A silence written over HTTP is the CLI's: listed, applied to the finding
// it matches, with the admin token's name as its "who", and expired early.
TEST_F(MarkRoutesTest, SilenceListAndExpire) {
  HttpResponse r =
      Call("POST", "/api/v1/silences",
           R"({"matchers": {"kind": "pfc_storm", "node": "leaf-3"},)"
           R"( "for": "4h", "comment": "RMA 4711"})");
  ASSERT_EQ(r.status, 201) << r.body;
  const Json silence = Body(r);
  EXPECT_THAT(silence["id"].get<std::string>(), StartsWith("s-"));
  EXPECT_EQ(silence["who"], "oncall");
  EXPECT_EQ(silence["comment"], "RMA 4711");
  EXPECT_EQ(silence["matchers"],
            Json({{"kind", "pfc_storm"}, {"node", "leaf-3"}}));
  ASSERT_THAT(findings_->Active(), SizeIs(1));
  EXPECT_THAT(findings_->Active()[0].silenced_by(),
              ::testing::ElementsAre(silence["id"].get<std::string>()));

  // Listed with the read token.
  r = Call("GET", "/api/v1/silences", "", kReadToken);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_THAT(Body(r)["silences"], SizeIs(1));
  EXPECT_EQ(Body(r)["silences"][0]["id"], silence["id"]);

  const std::string path =
      "/api/v1/silences/" + silence["id"].get<std::string>();
  r = Call("DELETE", path);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r)["expired"], true);
  EXPECT_EQ(Body(r)["expired_by"], "oncall");
  EXPECT_TRUE(findings_->Active()[0].silenced_by().empty());
  r = Call("DELETE", "/api/v1/silences/s-0000000000000000");
  EXPECT_EQ(r.status, 404) << r.body;
}

TEST_F(MarkRoutesTest, AckMarksTheActiveFindingOnly) {
  HttpResponse r = Call("POST", "/api/v1/findings/" + ActiveId() + "/ack",
                        R"({"comment": "looking"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r)["acked"]["who"], "oncall");
  EXPECT_EQ(Body(r)["acked"]["comment"], "looking");
  EXPECT_EQ(findings_->Active()[0].acked().who(), "oncall");
  // No body at all is an ack without a comment.
  EXPECT_EQ(Call("POST", "/api/v1/findings/" + ActiveId() + "/ack").status,
            200);
  r = Call("POST", "/api/v1/findings/f-999999/ack");
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(ErrorOf(r), HasSubstr("no active finding \"f-999999\""));
  r = Call("POST", "/api/v1/findings/" + ActiveId() + "/mute");
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(ErrorOf(r), HasSubstr("POST /api/v1/findings/ID/ack"));
}

// A read token may list but not write; no token is a 401.
TEST_F(MarkRoutesTest, WritesNeedTheAdminScope) {
  const std::string body =
      R"({"matchers": {"node": "leaf-3"}, "for": "2h", "comment": "maintenance"})";
  HttpResponse r = Call("POST", "/api/v1/silences", body, kReadToken);
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(Body(r)["scope"], "admin");
  r = Call("POST", "/api/v1/findings/" + ActiveId() + "/ack", "", "nope");
  EXPECT_EQ(r.status, 401) << r.body;
  EXPECT_TRUE(marks_->ListSilences().empty());
  EXPECT_FALSE(findings_->Active()[0].has_acked());
}

// Every bad body is a 400 naming the field; nothing is written.
TEST_F(MarkRoutesTest, BadBodiesNameTheField) {
  struct Case {
    std::string body;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"", "body: not valid JSON"},
      {"[1]", "body: expected a JSON object"},
      {R"({"for": "4h", "comment": "x"})", "matchers: expected an object"},
      {R"({"matchers": {}, "for": "4h", "comment": "x"})", "matchers: missing"},
      {R"({"matchers": {"colour": "red"}, "for": "4h", "comment": "x"})",
       "matchers: unknown key \"colour\""},
      {R"({"matchers": {"node": 3}, "for": "4h", "comment": "x"})",
       "matchers.node: expected a string"},
      {R"({"matchers": {"severity": "loud"}, "for": "4h", "comment": "x"})",
       "matchers: severity must be info, warning or critical"},
      {R"({"matchers": {"node": "a"}, "comment": "x"})", "for: expected"},
      {R"({"matchers": {"node": "a"}, "for": "soon", "comment": "x"})",
       "for: not a duration"},
      {R"({"matchers": {"node": "a"}, "for": "31d", "comment": "x"})",
       "for: at most 30 days"},
      {R"({"matchers": {"node": "a"}, "for": "-1h", "comment": "x"})",
       "for: must be positive"},
      {R"({"matchers": {"node": "a"}, "for": "1h"})", "comment: required"},
      {R"({"matchers": {"node": "a"}, "for": "1h", "comment": "x", "until": 1})",
       "\"until\": unknown field"},
  };
  for (const Case& c : cases) {
    HttpResponse r = Call("POST", "/api/v1/silences", c.body);
    EXPECT_EQ(r.status, 400) << c.body << ": " << r.body;
    EXPECT_THAT(ErrorOf(r), StartsWith(c.error)) << c.body;
  }
  EXPECT_TRUE(marks_->ListSilences().empty());
  HttpResponse r = Call("POST", "/api/v1/findings/" + ActiveId() + "/ack",
                        R"({"comment": 7})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(ErrorOf(r), StartsWith("comment: expected a string"));
}

}  // namespace
}  // namespace fabricdiag::collector
