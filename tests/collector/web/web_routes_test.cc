#include "collector/web/web_routes.h"

#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "analysis/fabric_view.h"
#include "collector/declared/file_declared_state.h"
#include "collector/declared/layout_registry.h"
#include "collector/findings/findings_store.h"
#include "collector/state/state_store.h"
#include "common/clock.h"
#include "common/gzip.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

std::shared_ptr<const analysis::FabricView> View(double hot_rx) {
  auto view = std::make_shared<analysis::FabricView>();
  view->window_seconds = 5;
  for (const char* node : {"gpu-0", "gpu-1"}) {
    for (const char* nic : {"mlx5_0", "mlx5_1"}) {
      analysis::PortView& p = view->AddPort(node, nic);
      p.s.rx_bytes =
          std::string(node) == "gpu-1" && std::string(nic) == "mlx5_0" ? hot_rx
                                                                       : 1e9;
    }
  }
  view->Finish();
  return view;
}

analysis::Finding Hot(const std::string& node) {
  analysis::Finding f;
  f.kind = "hot_expert_incast";
  f.severity = analysis::Severity::kCritical;
  f.node = node;
  f.device = "mlx5_0";
  f.summary = node + " mlx5_0 receives 6x its group's median";
  return f;
}

class WebRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto state = StateStore::Open(tmp_.path() + "/state", &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    findings_ =
        std::make_unique<FindingsStore>(state_.get(), FindingsStoreOptions{});
    ASSERT_TRUE(findings_->Load().ok());
    declared_ = std::make_unique<FileDeclaredState>(state_.get());
    registry_ = std::make_unique<LayoutRegistry>(declared_.get(), &clock_);
    ASSERT_TRUE(registry_->Load().ok());
    view_ = View(6e9);
    routes_ = WebRoutes(
        {findings_.get(), registry_.get(), [this] { return view_; }, &clock_});
  }

  HttpResponse Get(const std::string& path, const std::string& query = "",
                   const std::string& if_none_match = "",
                   bool accepts_gzip = false) {
    HttpRequest request;
    request.method = "GET";
    request.path = path;
    request.query = query;
    request.if_none_match = if_none_match;
    request.accepts_gzip = accepts_gzip;
    for (const HttpRoute& r : routes_) {
      if (r.path == path) return r.handler(request);
    }
    ADD_FAILURE() << "no route " << path;
    return {};
  }

  static std::string Etag(const HttpResponse& r) {
    for (const auto& [name, value] : r.headers) {
      if (name == "ETag") return value;
    }
    return "";
  }

  static nlohmann::ordered_json Body(const HttpResponse& r) {
    return nlohmann::ordered_json::parse(r.body);
  }

  testing::TempDir tmp_;
  FakeClock clock_{absl::FromUnixSeconds(1'790'000'000)};
  std::unique_ptr<StateStore> state_;
  std::unique_ptr<FindingsStore> findings_;
  std::unique_ptr<FileDeclaredState> declared_;
  std::unique_ptr<LayoutRegistry> registry_;
  std::shared_ptr<const analysis::FabricView> view_;
  std::vector<HttpRoute> routes_;
};

TEST_F(WebRoutesTest, FabricEtagNamesTheContentAndGeneratedStaysFresh) {
  const HttpResponse first = Get("/api/v1/fabric");
  ASSERT_EQ(first.status, 200);
  const std::string etag = Etag(first);
  EXPECT_EQ(etag.rfind("W/\"", 0), 0u) << etag;
  const nlohmann::ordered_json a = Body(first);
  EXPECT_EQ(a["api_version"], 1);
  EXPECT_EQ(a["nodes"], nlohmann::ordered_json({"gpu-0", "gpu-1"}));
  EXPECT_EQ(a["values"]["rx_bytes"][1][0], 6e9);

  // Same inputs, later: the same ETag, the same content, a fresh
  // "generated", and the whole body rebuilt elsewhere would be equal.
  clock_.Advance(absl::Seconds(2));
  const HttpResponse second = Get("/api/v1/fabric");
  EXPECT_EQ(Etag(second), etag);
  nlohmann::ordered_json b = Body(second);
  EXPECT_NE(b["generated"], a["generated"]);
  EXPECT_EQ(b.dump().size(), a.dump().size());
  b["generated"] = a["generated"];
  EXPECT_EQ(b, a);
  EXPECT_EQ(
      std::vector<std::string>(
          {"api_version", "generated", "window_seconds", "metrics"}),
      std::vector<std::string>({b.begin().key(), std::next(b.begin()).key(),
                                std::next(b.begin(), 2).key(),
                                std::next(b.begin(), 3).key()}));

  // The client holds it: 304, no body, the ETag again.
  const HttpResponse not_modified = Get("/api/v1/fabric", "", etag);
  EXPECT_EQ(not_modified.status, 304);
  EXPECT_TRUE(not_modified.body.empty());
  EXPECT_EQ(Etag(not_modified), etag);
  EXPECT_EQ(Get("/api/v1/fabric", "", "W/\"other\"").status, 200);
}

// A client that accepts gzip gets the body compressed, with its own fresh
// "generated", request after request and across a new analysis pass;
// one that does not gets no compressed copy.
TEST_F(WebRoutesTest, FabricGzipBodyIsTheBodyWithItsOwnGenerated) {
  EXPECT_TRUE(Get("/api/v1/fabric").gzip_body.empty());
  std::vector<std::string> generated;
  for (int i = 0; i < 4; ++i) {
    if (i == 2) view_ = View(7e9);  // a new pass: a new tail
    clock_.Advance(absl::Seconds(1));
    const HttpResponse r = Get("/api/v1/fabric", "", "", true);
    ASSERT_EQ(r.status, 200);
    ASSERT_FALSE(r.gzip_body.empty());
    absl::StatusOr<std::string> plain = GzipDecompress(r.gzip_body, 1 << 24);
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_EQ(*plain, r.body);
    EXPECT_EQ(r.body.back(), '\n');
    EXPECT_EQ(Body(r)["values"]["rx_bytes"][1][0], i < 2 ? 6e9 : 7e9);
    generated.push_back(Body(r)["generated"]);
  }
  for (size_t i = 1; i < generated.size(); ++i) {
    EXPECT_NE(generated[i], generated[i - 1]);
  }
  // And 304 stays bodiless for gzip clients too.
  const HttpResponse first = Get("/api/v1/fabric", "", "", true);
  const HttpResponse not_modified =
      Get("/api/v1/fabric", "", Etag(first), true);
  EXPECT_EQ(not_modified.status, 304);
  EXPECT_TRUE(not_modified.gzip_body.empty());
  EXPECT_TRUE(not_modified.body.empty());
}

TEST_F(WebRoutesTest, FabricEtagChangesWithTheViewAndTheFindings) {
  const std::string etag = Etag(Get("/api/v1/fabric"));
  // A new pass with the same numbers: the same content, the same ETag.
  view_ = View(6e9);
  EXPECT_EQ(Get("/api/v1/fabric", "", etag).status, 304);
  // Different numbers.
  view_ = View(7e9);
  const HttpResponse changed = Get("/api/v1/fabric", "", etag);
  EXPECT_EQ(changed.status, 200);
  EXPECT_EQ(Body(changed)["values"]["rx_bytes"][1][0], 7e9);
  const std::string etag2 = Etag(changed);
  EXPECT_NE(etag2, etag);
  // A finding outlines a cell.
  ASSERT_TRUE(findings_->Update({Hot("gpu-1")}, clock_.Now(), "rate").ok());
  const HttpResponse outlined = Get("/api/v1/fabric", "", etag2);
  ASSERT_EQ(outlined.status, 200);
  EXPECT_EQ(Body(outlined)["outlined"][0]["node"], "gpu-1");
  EXPECT_NE(Etag(outlined), etag2);
  // No view at all (before the first pass).
  view_ = nullptr;
  const HttpResponse empty = Get("/api/v1/fabric", "", Etag(outlined));
  ASSERT_EQ(empty.status, 200);
  EXPECT_TRUE(Body(empty)["nodes"].empty());
  EXPECT_TRUE(Body(empty)["window_seconds"].is_null());
  EXPECT_EQ(Get("/api/v1/fabric", "", Etag(empty)).status, 304);
}

TEST_F(WebRoutesTest, FabricRefusesAQueryEvenWithAnEtag) {
  const std::string etag = Etag(Get("/api/v1/fabric"));
  const HttpResponse r = Get("/api/v1/fabric", "since=1", etag);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Body(r)["error"], "/api/v1/fabric takes no query");
}

}  // namespace
}  // namespace fabricdiag::collector
