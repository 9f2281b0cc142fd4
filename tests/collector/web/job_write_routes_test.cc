#include "collector/web/job_write_routes.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/declared/file_declared_state.h"
#include "collector/declared/layout_leases.h"
#include "collector/declared/layout_registry.h"
#include "collector/state/state_store.h"
#include "collector/web/web_api.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Json = nlohmann::json;

// 16 ranks on 2 hosts: tp=8 dp=2.
std::string LayoutBody(const std::string& extra = "",
                       const std::string& job_field = "") {
  return absl::StrCat(
      "{", job_field,
      R"("gpus_per_node": 8, "parallelism": {"tp": 8, "pp": 1, "dp": 2},)"
      R"( "hosts": ["gpu-000", "gpu-001"])",
      extra, "}");
}

class JobWriteRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }

  // A collector on the state directory (again: a restart).
  void Start() {
    leases_.reset();
    registry_.reset();
    declared_.reset();
    store_.reset();
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        StateStore::Open(tmp_.path() + "/state", &clock_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    declared_ = std::make_unique<FileDeclaredState>(store_.get());
    registry_ = std::make_unique<LayoutRegistry>(declared_.get(), &clock_);
    ASSERT_TRUE(registry_->Load().ok());
    leases_ = std::make_unique<LayoutLeases>(
        registry_.get(), &clock_,
        [this](const std::string& job) { expired_jobs_.push_back(job); });
    JobWriteSources sources;
    sources.registry = registry_.get();
    sources.leases = leases_.get();
    sources.clock = &clock_;
    sources.on_layouts_changed = [this](const std::string& job, absl::Time) {
      changed_jobs_.push_back(job);
    };
    sources.warnings = [](const v1::Layout& layout) {
      return std::vector<std::string>{
          absl::StrCat("hosts: ", layout.hosts_size(), " checked")};
    };
    routes_ = JobWriteRoutes(sources);
    ASSERT_EQ(routes_.size(), 1u);
  }

  HttpResponse Call(const std::string& method, const std::string& path,
                    const std::string& body = "",
                    const std::string& authorization = "") {
    HttpRequest r;
    r.method = method;
    r.path = path;
    r.body = body;
    r.authorization = authorization;
    return routes_[0].handler(r);
  }

  // A PUT of LayoutBody(`extra`) with these condition headers.
  HttpResponse PutIf(const std::string& job, const std::string& if_match,
                     const std::string& if_none_match = "",
                     const std::string& extra = "") {
    HttpRequest r;
    r.method = "PUT";
    r.path = "/api/v1/jobs/" + job;
    r.body = LayoutBody(extra);
    r.if_match = if_match;
    r.if_none_match = if_none_match;
    return routes_[0].handler(r);
  }

  static std::string EtagOf(const HttpResponse& r) {
    for (const auto& [name, value] : r.headers) {
      if (name == "ETag") return value;
    }
    return "";
  }

  static Json Body(const HttpResponse& r) { return Json::parse(r.body); }
  static std::string ErrorOf(const HttpResponse& r) {
    return Body(r).value("error", "");
  }

  ::fabricdiag::testing::TempDir tmp_;
  FakeClock clock_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<FileDeclaredState> declared_;
  std::unique_ptr<LayoutRegistry> registry_;
  std::unique_ptr<LayoutLeases> leases_;
  std::vector<HttpRoute> routes_;
  std::vector<std::string> changed_jobs_;
  std::vector<std::string> expired_jobs_;
};

TEST_F(JobWriteRoutesTest, RouteTakesBoundedBodiesForWriteMethods) {
  EXPECT_EQ(routes_[0].path, "/api/v1/jobs/");
  EXPECT_THAT(routes_[0].methods, ElementsAre("PUT", "DELETE", "POST"));
  EXPECT_EQ(routes_[0].max_body_bytes, kMaxJobBodyBytes);
}

TEST_F(JobWriteRoutesTest, PutCreatesThenReplaces) {
  HttpResponse r = Call("PUT", "/api/v1/jobs/moe", LayoutBody());
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  Json j = Body(r);
  EXPECT_EQ(j["job"], "moe");
  // Embedded: the apply time, the layout's revision (LayoutRevision).
  EXPECT_EQ(j["revision"], absl::ToUnixNanos(clock_.Now()));
  EXPECT_EQ(EtagOf(r),
            absl::StrCat("\"", absl::ToUnixNanos(clock_.Now()), "\""));
  EXPECT_EQ(j["warnings"], Json::array({"hosts: 2 checked"}));
  EXPECT_EQ(j["declaration"]["source"], "http");
  EXPECT_TRUE(j["declaration"]["expires"].is_null());
  EXPECT_THAT(changed_jobs_, ElementsAre("moe"));

  r = Call("PUT", "/api/v1/jobs/moe",
           LayoutBody(R"(, "source": "slurm", "owner": "alice")",
                      R"("job": "moe", )"));
  ASSERT_EQ(r.status, 200) << r.body;
  absl::StatusOr<std::shared_ptr<const LayoutEntry>> entry =
      registry_->Get("moe");
  ASSERT_TRUE(entry.ok());
  const v1::LayoutDeclaration& d = (*entry)->applied_layout.declaration();
  EXPECT_EQ(d.source(), "slurm");
  EXPECT_EQ(d.owner(), "alice");
  EXPECT_EQ(d.declared_unix_nanos(), absl::ToUnixNanos(clock_.Now()));
  EXPECT_EQ(d.lease_seconds(), 0u);
}

// If-None-Match: * writes only a new job; If-Match: "N" only over revision
// N (the ETag of the PUT that wrote it). A stale condition is 412 naming
// the revision served, and writes nothing.
TEST_F(JobWriteRoutesTest, AConditionalPutIs412WhenTheRevisionMoved) {
  HttpResponse created = PutIf("moe", "", "*");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string first = EtagOf(created);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first, absl::StrCat("\"", Body(created)["revision"].get<uint64_t>(),
                                "\""));

  HttpResponse again = PutIf("moe", "", "*");
  EXPECT_EQ(again.status, 412) << again.body;
  EXPECT_THAT(ErrorOf(again), HasSubstr("is at revision"));
  EXPECT_EQ(PutIf("moe", "\"0\"").status, 412);

  // The same instant: the revision still grows.
  HttpResponse replaced = PutIf("moe", first, "", R"(, "owner": "bob")");
  ASSERT_EQ(replaced.status, 200) << replaced.body;
  const std::string second = EtagOf(replaced);
  EXPECT_NE(second, first);

  HttpResponse stale = PutIf("moe", first, "", R"(, "owner": "carol")");
  EXPECT_EQ(stale.status, 412) << stale.body;
  EXPECT_THAT(ErrorOf(stale), HasSubstr(second.substr(1, second.size() - 2)));
  EXPECT_EQ((*registry_->Get("moe"))->applied_layout.declaration().owner(),
            "bob");
  EXPECT_EQ(PutIf("absent", first).status, 412);
  EXPECT_FALSE(registry_->Get("absent").ok());
  EXPECT_EQ(PutIf("moe", second).status, 200);
}

TEST_F(JobWriteRoutesTest, BadConditionsAre400) {
  ASSERT_EQ(PutIf("moe", "").status, 201);
  for (const auto& [match, none] :
       std::vector<std::pair<std::string, std::string>>{{"W/\"1\"", ""},
                                                        {"1", ""},
                                                        {"\"abc\"", ""},
                                                        {"\"\"", ""},
                                                        {"*", ""},
                                                        {"\"1\", \"2\"", ""},
                                                        {"\"+1\"", ""},
                                                        {"\"1\"", "*"},
                                                        {"", "\"1\""}}) {
    HttpResponse r = PutIf("moe", match, none);
    EXPECT_EQ(r.status, 400) << match << " | " << none << ": " << r.body;
    EXPECT_THAT(ErrorOf(r), HasSubstr("If-")) << match;
  }
}

// Every bad body is a 400 naming the field, as `fabricdiag layout apply`
// would, and nothing is applied.
TEST_F(JobWriteRoutesTest, BadBodiesAre400NamingTheField) {
  struct Case {
    std::string name;
    std::string body;
    std::string error_prefix;
  };
  const std::vector<Case> cases = {
      {"empty", "", "body: not valid JSON: "},
      {"truncated", R"({"gpus_per_node": 8,)", "body: not valid JSON: "},
      {"garbage", "gpus_per_node: 8", "body: not valid JSON: "},
      {"not an object", "[1, 2]", "body: expected a JSON object"},
      {"too deep", std::string(40, '[') + std::string(40, ']'),
       "body: nested deeper than 32"},
      {"unknown field", LayoutBody(R"(, "colour": "red")"), "colour: "},
      {"float degree",
       R"({"gpus_per_node": 8, "parallelism": {"tp": 8.5, "pp": 1, "dp": 2},)"
       R"( "hosts": ["a", "b"]})",
       "parallelism.tp: "},
      {"wrong count", LayoutBody(R"(, "rails": ["mlx5_0"])"), "rails: "},
      {"path/body job mismatch", LayoutBody("", R"("job": "other", )"),
       "job: \"other\" does not match the path's job \"moe\""},
      {"job not the path's", LayoutBody("", R"("job": 7, )"),
       "job: \"7\" does not match the path's job \"moe\""},
      {"lease 0", LayoutBody(R"(, "lease_seconds": 0)"), "lease_seconds: 0 "},
      {"lease negative", LayoutBody(R"(, "lease_seconds": -5)"),
       "lease_seconds: -5 "},
      {"lease huge", LayoutBody(R"(, "lease_seconds": 99999999999999999999)"),
       "lease_seconds: "},
      {"lease too long", LayoutBody(R"(, "lease_seconds": 604801)"),
       "lease_seconds: 604801 is not between 1 and 604800"},
      {"lease not a number", LayoutBody(R"(, "lease_seconds": "10m")"),
       "lease_seconds: expected a whole number of seconds"},
      {"lease fractional", LayoutBody(R"(, "lease_seconds": 1.5)"),
       "lease_seconds: expected a whole number of seconds"},
      {"unknown source", LayoutBody(R"(, "source": "cron")"), "source: "},
      {"source not a string", LayoutBody(R"(, "source": 1)"), "source: "},
      {"owner control", LayoutBody(R"(, "owner": "a\nb")"), "owner: "},
      {"declaration field", LayoutBody(R"(, "declaration": {})"),
       "declaration: "},
  };
  for (const Case& c : cases) {
    HttpResponse r = Call("PUT", "/api/v1/jobs/moe", c.body);
    EXPECT_EQ(r.status, 400) << c.name << ": " << r.body;
    EXPECT_THAT(ErrorOf(r), StartsWith(c.error_prefix)) << c.name;
  }
  EXPECT_EQ(registry_->NumLayouts(), 0u);
  EXPECT_TRUE(changed_jobs_.empty());
}

TEST_F(JobWriteRoutesTest, ModelErrorsAreTheCollectorsOwn) {
  // 16 ranks need 2 hosts of 8 GPUs; 3 are too many.
  HttpResponse r =
      Call("PUT", "/api/v1/jobs/moe",
           R"({"gpus_per_node": 8, "parallelism": {"tp": 8, "pp": 1, "dp": 2},)"
           R"( "hosts": ["a", "b", "c"]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(ErrorOf(r), StartsWith("hosts: "));
}

// The training-job module and the Slurm prolog declare through this PUT:
// labels travel in its JSON, and a bad one is a 400 naming it.
TEST_F(JobWriteRoutesTest, LabelsAreTakenFromTheBody) {
  HttpResponse r = Call(
      "PUT", "/api/v1/jobs/moe",
      LayoutBody(R"(, "source": "slurm", "labels": {"team": "ml-infra"})"));
  ASSERT_EQ(r.status, 201) << r.body;
  absl::StatusOr<std::shared_ptr<const LayoutEntry>> entry =
      registry_->Get("moe");
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ((*entry)->applied_layout.labels().at("team"), "ml-infra");
  // GET /api/v1/jobs lists them.
  EXPECT_EQ(JobsJson(*registry_->Snapshot())["jobs"][0]["labels"].dump(),
            R"({"team":"ml-infra"})");

  r = Call("PUT", "/api/v1/jobs/moe",
           LayoutBody(R"(, "labels": {"team": "ml-infra", "Owner": "x"})"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(ErrorOf(r), StartsWith("labels.\"Owner\": a key must match"));
  r = Call("PUT", "/api/v1/jobs/moe", LayoutBody(R"(, "labels": ["team"])"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(ErrorOf(r), StartsWith("labels: expected a mapping"));
}

TEST_F(JobWriteRoutesTest, BadPathsAndMethods) {
  HttpResponse r = Call("PUT", "/api/v1/jobs/a%20b", LayoutBody());
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(ErrorOf(r), HasSubstr("is not a job name"));
  r = Call("DELETE", "/api/v1/jobs/", "");
  EXPECT_EQ(r.status, 404);
  r = Call("POST", "/api/v1/jobs/moe", "");
  EXPECT_EQ(r.status, 405);
  r = Call("PUT", "/api/v1/jobs/moe/renew", "");
  EXPECT_EQ(r.status, 405);
  HttpRequest q;
  q.method = "DELETE";
  q.path = "/api/v1/jobs/moe";
  q.query = "force=1";
  r = routes_[0].handler(q);
  EXPECT_EQ(r.status, 400);
}

TEST_F(JobWriteRoutesTest, DeleteTwice) {
  ASSERT_EQ(Call("PUT", "/api/v1/jobs/moe", LayoutBody()).status, 201);
  HttpResponse r = Call("DELETE", "/api/v1/jobs/moe");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(Body(r)["deleted"], true);
  EXPECT_EQ(registry_->NumLayouts(), 0u);
  r = Call("DELETE", "/api/v1/jobs/moe");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(Body(r)["deleted"], false);
  EXPECT_THAT(changed_jobs_, ElementsAre("moe", "moe"));
}

TEST_F(JobWriteRoutesTest, RenewMovesTheExpiry) {
  ASSERT_EQ(
      Call("PUT", "/api/v1/jobs/moe", LayoutBody(R"(, "lease_seconds": 60)"))
          .status,
      201);
  const absl::Time t0 = clock_.Now();
  clock_.Advance(absl::Seconds(50));
  HttpResponse r = Call("POST", "/api/v1/jobs/moe/renew");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r)["declaration"]["lease_seconds"], 60);
  EXPECT_EQ(Body(r)["declaration"]["expires"].get<std::string>(),
            TimeJson(t0 + absl::Seconds(110)).get<std::string>());
  // A longer lease from now on.
  r = Call("POST", "/api/v1/jobs/moe/renew", R"({"lease_seconds": 600})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r)["declaration"]["expires"].get<std::string>(),
            TimeJson(t0 + absl::Seconds(650)).get<std::string>());

  for (const std::string& bad :
       {std::string(R"({"lease_seconds": 0})"),
        std::string(R"({"lease_seconds": -1})"),
        std::string(R"({"lease_seconds": "x"})"),
        std::string(R"({"lease": 5})"), std::string("{")}) {
    r = Call("POST", "/api/v1/jobs/moe/renew", bad);
    EXPECT_EQ(r.status, 400) << bad;
  }
}

TEST_F(JobWriteRoutesTest, RenewOfAMissingOrUnleasedJob) {
  HttpResponse r = Call("POST", "/api/v1/jobs/gone/renew");
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(ErrorOf(r), HasSubstr("gone"));
  ASSERT_EQ(Call("PUT", "/api/v1/jobs/moe", LayoutBody()).status, 201);
  r = Call("POST", "/api/v1/jobs/moe/renew");
  EXPECT_EQ(r.status, 409);
  EXPECT_THAT(ErrorOf(r), StartsWith("lease_seconds: "));
  // Given a length, an unleased layout gets a lease.
  r = Call("POST", "/api/v1/jobs/moe/renew", R"({"lease_seconds": 30})");
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(JobWriteRoutesTest, ExpiredLeaseRemovesTheLayoutAndRenewIs404) {
  ASSERT_EQ(
      Call("PUT", "/api/v1/jobs/moe", LayoutBody(R"(, "lease_seconds": 30)"))
          .status,
      201);
  ASSERT_EQ(Call("PUT", "/api/v1/jobs/keep", LayoutBody()).status, 201);
  clock_.Advance(absl::Seconds(29));
  EXPECT_EQ(leases_->ExpireDue(), 0);
  clock_.Advance(absl::Seconds(1));
  // Past the expiry and not yet removed: renewing is too late already.
  HttpResponse r = Call("POST", "/api/v1/jobs/moe/renew");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(leases_->ExpireDue(), 1);
  EXPECT_THAT(expired_jobs_, ElementsAre("moe"));
  EXPECT_EQ(leases_->expired(), 1u);
  EXPECT_FALSE(registry_->Get("moe").ok());
  EXPECT_TRUE(registry_->Get("keep").ok());
  r = Call("POST", "/api/v1/jobs/moe/renew");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(leases_->ExpireDue(), 0);
  std::string metrics;
  leases_->AppendMetrics(&metrics);
  EXPECT_THAT(metrics, HasSubstr("\nfabricdiag_layouts_expired_total 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\nfabricdiag_layouts_leased 0\n"));
}

TEST_F(JobWriteRoutesTest, LeaseSurvivesARestart) {
  ASSERT_EQ(Call("PUT", "/api/v1/jobs/moe",
                 LayoutBody(R"(, "lease_seconds": 30, "owner": "bob")"))
                .status,
            201);
  const absl::Time expiry = clock_.Now() + absl::Seconds(30);
  Start();
  absl::StatusOr<std::shared_ptr<const LayoutEntry>> entry =
      registry_->Get("moe");
  ASSERT_TRUE(entry.ok());
  const v1::LayoutDeclaration& d = (*entry)->applied_layout.declaration();
  EXPECT_EQ(d.owner(), "bob");
  EXPECT_EQ(d.source(), "http");
  EXPECT_EQ(LeaseExpiry(d), expiry);
  std::string metrics;
  leases_->AppendMetrics(&metrics);
  EXPECT_THAT(metrics, HasSubstr("\nfabricdiag_layouts_leased 1\n"));
  // The restarted collector removes it on time.
  clock_.Advance(absl::Seconds(31));
  EXPECT_EQ(leases_->ExpireDue(), 1);
  Start();
  EXPECT_EQ(registry_->NumLayouts(), 0u);
}

TEST_F(JobWriteRoutesTest, LayoutsWithoutDeclarationStillLoad) {
  // What an older collector stored: no declaration at all.
  ASSERT_TRUE(registry_
                  ->Apply([] {
                    v1::Layout l;
                    l.set_job("old");
                    l.set_gpus_per_node(8);
                    l.mutable_parallelism()->set_tp(8);
                    l.mutable_parallelism()->set_pp(1);
                    l.mutable_parallelism()->set_dp(1);
                    l.add_hosts("gpu-000");
                    return l;
                  }())
                  .ok());
  Start();
  ASSERT_TRUE(registry_->Get("old").ok());
  EXPECT_EQ(leases_->ExpireDue(), 0);
  clock_.Advance(absl::Hours(24 * 365));
  EXPECT_EQ(leases_->ExpireDue(), 0);
  EXPECT_EQ(registry_->NumLayouts(), 1u);
}

TEST(ParseJobDeclarationTest, FillsTheJobFromThePath) {
  absl::StatusOr<JobDeclaration> d =
      ParseJobDeclaration("moe", LayoutBody(R"(, "lease_seconds": 90)"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->layout.job(), "moe");
  EXPECT_EQ(d->lease_seconds, 90);
  EXPECT_EQ(d->source, "http");
  EXPECT_EQ(d->layout.hosts_size(), 2);
}

}  // namespace
}  // namespace fabricdiag::collector
