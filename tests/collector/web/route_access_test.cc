#include "collector/web/route_access.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "collector/web/job_write_routes.h"
#include "collector/web/web_routes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::collector {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

constexpr char kRead[] = "read-0123456789abcdef";
constexpr char kDeclare[] = "declare-0123456789abcdef";
constexpr char kAdmin[] = "admin-0123456789abcdef";

std::shared_ptr<AccessControl> Tokens() {
  return std::make_shared<AccessControl>(std::vector<AccessToken>{
      {"grafana", static_cast<uint8_t>(Scope::kRead), kRead},
      {"slurm", static_cast<uint8_t>(Scope::kDeclare), kDeclare},
      {"oncall", static_cast<uint8_t>(Scope::kAdmin), kAdmin}});
}

HttpRoute Answering(std::string path, std::vector<std::string> methods = {}) {
  HttpRoute route;
  route.path = path;
  route.methods = std::move(methods);
  route.handler = [path](const HttpRequest&) {
    HttpResponse r;
    r.body = "served " + path;
    return r;
  };
  return route;
}

// The routes the collector serves: the page's files are public, every
// /api/ read needs read, the job writes declare.
TEST(RouteScopeTest, TheCollectorsRoutes) {
  std::vector<HttpRoute> routes = WebRoutes(WebSources{});
  for (HttpRoute& r : JobWriteRoutes(JobWriteSources{})) {
    routes.push_back(std::move(r));
  }
  int api = 0;
  for (const HttpRoute& r : routes) {
    const std::optional<Scope> scope = RouteScope(r);
    if (r.path.rfind("/api/", 0) != 0) {
      EXPECT_FALSE(scope.has_value()) << r.path;
    } else if (r.methods.empty()) {
      ++api;
      EXPECT_EQ(scope, Scope::kRead) << r.path;
    } else {
      EXPECT_EQ(r.path, "/api/v1/jobs/");
      EXPECT_EQ(scope, Scope::kDeclare) << r.path;
    }
  }
  EXPECT_GE(api, 5);
  EXPECT_FALSE(RouteScope(Answering("/")).has_value());
  EXPECT_FALSE(RouteScope(Answering("/metrics")).has_value());
  EXPECT_FALSE(RouteScope(Answering("/healthz")).has_value());
  // A write route nobody gave a scope: closed to all but admin.
  EXPECT_EQ(RouteScope(Answering("/api/v1/silences", {"POST"})), Scope::kAdmin);
}

class GuardRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    routes_ = GuardRoutes(
        {Answering("/"), Answering("/metrics"), Answering("/api/v1/findings"),
         Answering("/api/v1/jobs/", {"PUT", "DELETE"}),
         Answering("/api/v1/silences", {"POST"})},
        Tokens());
  }

  HttpResponse Call(const std::string& path, const std::string& token) {
    HttpRequest request;
    request.path = path;
    if (!token.empty()) request.authorization = "Bearer " + token;
    for (const HttpRoute& r : routes_) {
      if (r.path == path) return r.handler(request);
    }
    ADD_FAILURE() << "no route " << path;
    return {};
  }

  std::vector<HttpRoute> routes_;
};

TEST_F(GuardRoutesTest, PublicRoutesNeedNoToken) {
  EXPECT_EQ(Call("/", "").body, "served /");
  EXPECT_EQ(Call("/metrics", "").body, "served /metrics");
}

TEST_F(GuardRoutesTest, NoOrWrongTokenIs401WithTheScope) {
  for (const char* path :
       {"/api/v1/findings", "/api/v1/jobs/", "/api/v1/silences"}) {
    for (const std::string& token : {std::string(), std::string("nope")}) {
      HttpResponse r = Call(path, token);
      EXPECT_EQ(r.status, 401) << path;
      EXPECT_THAT(r.headers, Contains(std::pair<std::string, std::string>(
                                 "WWW-Authenticate", "Bearer")));
      const Json body = Json::parse(r.body);
      EXPECT_THAT(body.value("error", ""), HasSubstr("Authorization: Bearer"));
      EXPECT_THAT(r.body, Not(HasSubstr("served")));
    }
  }
  EXPECT_EQ(Json::parse(Call("/api/v1/findings", "").body).value("scope", ""),
            "read");
}

TEST_F(GuardRoutesTest, TokenWithoutTheScopeIs403NamingIt) {
  struct Case {
    std::string path;
    std::string token;
    std::string scope;
  };
  for (const Case& c : std::vector<Case>{
           {"/api/v1/findings", kDeclare, "read"},
           {"/api/v1/jobs/", kRead, "declare"},
           {"/api/v1/silences", kDeclare, "admin"},
           {"/api/v1/silences", kRead, "admin"},
       }) {
    HttpResponse r = Call(c.path, c.token);
    EXPECT_EQ(r.status, 403) << c.path << " " << c.token;
    const Json body = Json::parse(r.body);
    EXPECT_EQ(body.value("scope", ""), c.scope);
    EXPECT_THAT(body.value("error", ""),
                HasSubstr("needs the " + c.scope + " scope"));
    EXPECT_THAT(r.body, Not(HasSubstr(c.token)));
  }
}

TEST_F(GuardRoutesTest, TokenWithTheScopeIsServed) {
  EXPECT_EQ(Call("/api/v1/findings", kRead).body, "served /api/v1/findings");
  EXPECT_EQ(Call("/api/v1/jobs/", kDeclare).body, "served /api/v1/jobs/");
  for (const char* path :
       {"/api/v1/findings", "/api/v1/jobs/", "/api/v1/silences"}) {
    HttpResponse r = Call(path, kAdmin);
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.body, std::string("served ") + path);
  }
}

TEST(GuardRoutesOpenTest, WithoutATokenFileEveryRouteIsOpen) {
  std::vector<HttpRoute> routes =
      GuardRoutes({Answering("/api/v1/silences", {"POST"})},
                  std::make_shared<AccessControl>());
  EXPECT_EQ(routes[0].handler(HttpRequest{}).body, "served /api/v1/silences");
}

}  // namespace
}  // namespace fabricdiag::collector
