#include "collector/web/web_routes.h"

#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "analysis/fabric_view.h"
#include "collector/findings/findings_store.h"
#include "collector/web/topology_json.h"
#include "common/clock.h"
#include "common/gzip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collector/stores_fixture.h"
#include "tests/testing/fixed_topology.h"

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

class WebRoutesTest : public CollectorStoresTest {
 protected:
  void SetUp() override {
    CollectorStoresTest::SetUp();
    if (HasFatalFailure()) return;
    view_ = View(6e9);
    routes_ =
        WebRoutes({findings_.get(), registry_.get(), [this] { return view_; },
                   FabricScope::kFabric, &clock_, &topology_});
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

  std::shared_ptr<const analysis::FabricView> view_;
  std::vector<HttpRoute> routes_;
  testing::FixedTopology topology_{Views()};

  // Declared: gpu-1 on leaf-1 swp1; discovered: gpu-2 on leaf-1 swp2 and
  // leaf-1 swp49 to spine-1 swp1; effective: both host links, each with
  // its source.
  static std::shared_ptr<const TopologyViews> Views() {
    v1::Topology declared;
    declared.add_switches()->set_name("leaf-1");
    v1::Link* d = declared.add_links();
    d->set_host("gpu-1");
    d->set_nic("mlx5_0");
    d->set_switch_("leaf-1");
    d->set_port("swp1");
    v1::Topology discovered;
    v1::Switch* leaf = discovered.add_switches();
    leaf->set_name("leaf-1");
    leaf->set_tier(1);
    leaf->add_uplinks("swp49");
    v1::Link* found = discovered.add_links();
    found->set_host("gpu-2");
    found->set_nic("mlx5_0");
    found->set_switch_("leaf-1");
    found->set_port("swp2");
    v1::SwitchLink* up = discovered.add_switch_links();
    up->set_switch_a("leaf-1");
    up->set_port_a("swp49");
    up->set_switch_b("spine-1");
    up->set_port_b("swp1");
    v1::Topology effective = declared;
    effective.mutable_links(0)->set_source(v1::LINK_SOURCE_DECLARED);
    *effective.add_links() = *found;
    effective.mutable_links(1)->set_source(v1::LINK_SOURCE_DISCOVERED);
    auto views = std::make_shared<TopologyViews>();
    views->declared = std::make_shared<const v1::Topology>(declared);
    views->declared_version = 7;
    views->discovered = std::make_shared<const v1::Topology>(discovered);
    auto shared = std::make_shared<const v1::Topology>(effective);
    views->effective_index =
        std::make_shared<const analysis::TopologyIndex>(shared.get());
    views->effective = std::move(shared);
    views->problems = {"leaf-1 swp3 hears two neighbors"};
    return views;
  }
};

// Each view of /api/v1/topology, the effective one naming each link's
// source; a view that is not one, or another parameter, is a 400.
TEST_F(WebRoutesTest, TopologyServesEachViewWithEachLinksSource) {
  HttpResponse effective = Get("/api/v1/topology", "view=effective");
  ASSERT_EQ(effective.status, 200) << effective.body;
  nlohmann::ordered_json j = Body(effective);
  EXPECT_EQ(j["view"], "effective");
  EXPECT_EQ(j["declared_version"], 7);
  ASSERT_EQ(j["links"].size(), 2u);
  EXPECT_EQ(j["links"][0]["host"], "gpu-1");
  EXPECT_EQ(j["links"][0]["source"], "declared");
  EXPECT_EQ(j["links"][1]["host"], "gpu-2");
  EXPECT_EQ(j["links"][1]["source"], "discovered");
  EXPECT_EQ(j["problems"][0], "leaf-1 swp3 hears two neighbors");

  j = Body(Get("/api/v1/topology", "view=discovered"));
  EXPECT_EQ(j["switches"][0]["tier"], 1);
  EXPECT_EQ(j["switches"][0]["uplinks"][0], "swp49");
  ASSERT_EQ(j["switch_links"].size(), 1u);
  EXPECT_EQ(j["switch_links"][0]["switch_b"], "spine-1");
  EXPECT_TRUE(j["links"][0]["source"].is_null());

  j = Body(Get("/api/v1/topology"));  // declared by default
  EXPECT_EQ(j["view"], "declared");
  ASSERT_EQ(j["links"].size(), 1u);
  EXPECT_EQ(j["links"][0]["port"], "swp1");
  EXPECT_TRUE(j["switches"][0]["tier"].is_null());

  HttpResponse bad = Get("/api/v1/topology", "view=guessed");
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body,
              ::testing::HasSubstr("view: 'guessed' is not a topology view"));
  EXPECT_EQ(Get("/api/v1/topology", "job=x").status, 400);
}

// Nothing declared: the declared view is a 404, the others answer.
TEST(TopologyJsonTest, NoDeclaredTopologyIsNotFound) {
  TopologyViews views;
  views.discovered = std::make_shared<const v1::Topology>();
  views.effective = views.discovered;
  absl::StatusOr<nlohmann::ordered_json> declared =
      TopologyJson(views, "declared");
  EXPECT_EQ(declared.status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<nlohmann::ordered_json> discovered =
      TopologyJson(views, "discovered");
  ASSERT_TRUE(discovered.ok()) << discovered.status();
  EXPECT_TRUE((*discovered)["links"].empty());
}

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
          {"api_version", "generated", "window_seconds", "scope"}),
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

// /api/v1/findings takes the filters of `fabricdiag findings` as query
// parameters, checked by the same code: 400 naming the parameter.
TEST_F(WebRoutesTest, FindingsFilterByQueryAndRefuseBadInput) {
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(findings_->Update({Hot("gpu-1")}, clock_.Now(), "hot").ok());
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(findings_->Update({}, clock_.Now(), "hot").ok());  // resolved
  clock_.Advance(absl::Hours(3));
  analysis::Finding warm = Hot("gpu-2");
  warm.severity = analysis::Severity::kWarning;
  ASSERT_TRUE(findings_->Update({warm}, clock_.Now(), "hot").ok());

  auto ids = [](const nlohmann::ordered_json& list) {
    std::vector<std::string> out;
    for (const auto& f : list) out.push_back(f["id"]);
    return out;
  };
  nlohmann::ordered_json all = Body(Get("/api/v1/findings"));
  EXPECT_EQ(ids(all["active"]), std::vector<std::string>{"f-000002"});
  EXPECT_EQ(ids(all["resolved"]), std::vector<std::string>{"f-000001"});
  EXPECT_TRUE(all["next_page_token"].is_null());
  // Resolved over two hours ago: outside the window.
  nlohmann::ordered_json recent = Body(Get("/api/v1/findings", "since=2h"));
  EXPECT_EQ(ids(recent["active"]), std::vector<std::string>{"f-000002"});
  EXPECT_TRUE(recent["resolved"].empty());
  nlohmann::ordered_json node = Body(Get("/api/v1/findings", "node=gpu-1"));
  EXPECT_TRUE(node["active"].empty());
  EXPECT_EQ(ids(node["resolved"]), std::vector<std::string>{"f-000001"});
  nlohmann::ordered_json critical =
      Body(Get("/api/v1/findings", "severity=critical&kind=hot_expert_incast"));
  EXPECT_TRUE(critical["active"].empty());
  EXPECT_EQ(ids(critical["resolved"]), std::vector<std::string>{"f-000001"});
  // Paging the resolved list.
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(findings_->Update({}, clock_.Now(), "hot").ok());
  nlohmann::ordered_json first = Body(Get("/api/v1/findings", "resolved=1"));
  EXPECT_EQ(ids(first["resolved"]), std::vector<std::string>{"f-000002"});
  ASSERT_TRUE(first["next_page_token"].is_string());
  nlohmann::ordered_json second = Body(Get(
      "/api/v1/findings",
      "resolved=1&page_token=" + first["next_page_token"].get<std::string>()));
  EXPECT_EQ(ids(second["resolved"]), std::vector<std::string>{"f-000001"});
  EXPECT_TRUE(second["next_page_token"].is_null());

  for (const auto& [query, error] :
       std::vector<std::pair<std::string, std::string>>{
           {"kind=pfc_strom", "kind: unknown finding kind \"pfc_strom\""},
           {"job=typo", "job: unknown job \"typo\""},
           {"severity=loud", "severity: unknown severity \"loud\""},
           {"since=yesterday", "since: \"yesterday\" is neither"},
           {"until=2026-13-01T00:00:00Z", "until: "},
           {"since=1h&until=2h", "until: "},
           {"page_token=garbage", "page_token: "},
           {"colour=red", "unknown parameter 'colour'"}}) {
    const HttpResponse r = Get("/api/v1/findings", query);
    EXPECT_EQ(r.status, 400) << query;
    EXPECT_THAT(Body(r)["error"].get<std::string>(),
                ::testing::StartsWith(error))
        << query;
  }
}

// A collector of a sharded cluster holds its own agents' ports: a job's
// groups show the members whose agents stream to it ("scope":
// "collector"), or, where it owns the job's shard, every member's
// ("scope": "fabric", from the job's view).
TEST_F(WebRoutesTest, AJobsGroupsAreWholeWhereItsShardIsOwned) {
  v1::Layout layout;
  layout.set_job("train");
  layout.set_gpus_per_node(2);
  layout.mutable_parallelism()->set_tp(1);
  layout.mutable_parallelism()->set_pp(1);
  layout.mutable_parallelism()->set_dp(4);
  layout.add_hosts("gpu-0");
  layout.add_hosts("gpu-1");
  layout.add_rails("mlx5_0");
  layout.add_rails("mlx5_1");
  ASSERT_TRUE(registry_->Apply(layout).ok());
  // This collector's own agents: gpu-0's.
  auto own = std::make_shared<analysis::FabricView>();
  for (const char* nic : {"mlx5_0", "mlx5_1"}) {
    own->AddPort("gpu-0", nic).s.rx_bytes = 1e9;
  }
  own->Finish();
  view_ = own;
  std::shared_ptr<const analysis::FabricView> job_view;
  std::vector<std::string> asked;
  std::vector<HttpRoute> routes =
      WebRoutes({findings_.get(), registry_.get(), [this] { return view_; },
                 FabricScope::kCollector, &clock_, &topology_, NeverStale(),
                 [&](absl::string_view job) {
                   asked.emplace_back(job);
                   return job_view;
                 },
                 [](absl::string_view job) {
                   return std::string(job == "train" ? "col-b" : "");
                 }});
  const auto get_job = [&routes] {
    HttpRequest request;
    request.method = "GET";
    request.path = "/api/v1/jobs/train";
    request.query = "dim=dp";
    for (const HttpRoute& r : routes) {
      if (r.path == "/api/v1/jobs/") return Body(r.handler(request));
    }
    ADD_FAILURE() << "no job route";
    return nlohmann::ordered_json();
  };
  // The rx of dp group 0's members, by host.
  const auto rx_of = [](const nlohmann::ordered_json& j) {
    std::map<std::string, nlohmann::ordered_json> rx;
    for (const auto& m : j["groups"][0]["members"]) {
      rx[m["host"].get<std::string>() + " " + m["nic"].get<std::string>()] =
          m["rx_bytes"];
    }
    return rx;
  };

  nlohmann::ordered_json j = get_job();
  EXPECT_EQ(j["scope"], "collector");
  EXPECT_EQ(j["shard_owner"], "col-b") << "where the whole job shows";
  std::map<std::string, nlohmann::ordered_json> rx = rx_of(j);
  ASSERT_EQ(rx.size(), 4u) << j.dump();
  EXPECT_EQ(rx["gpu-0 mlx5_0"], 1e9);
  EXPECT_TRUE(rx["gpu-1 mlx5_0"].is_null()) << "streams elsewhere";
  EXPECT_THAT(asked, ::testing::ElementsAre("train"));

  // The job's shard owned here: its view has gpu-1's NICs too.
  auto whole = std::make_shared<analysis::FabricView>();
  for (const char* node : {"gpu-0", "gpu-1"}) {
    for (const char* nic : {"mlx5_0", "mlx5_1"}) {
      whole->AddPort(node, nic).s.rx_bytes = 2e9;
    }
  }
  whole->Finish();
  job_view = whole;
  j = get_job();
  EXPECT_EQ(j["scope"], "fabric");
  rx = rx_of(j);
  EXPECT_EQ(rx["gpu-1 mlx5_0"], 2e9);
  EXPECT_EQ(rx["gpu-0 mlx5_1"], 2e9);

  // An unknown job is a 404 before any view is asked for.
  HttpRequest unknown;
  unknown.method = "GET";
  unknown.path = "/api/v1/jobs/nope";
  for (const HttpRoute& r : routes) {
    if (r.path == "/api/v1/jobs/") {
      EXPECT_EQ(r.handler(unknown).status, 404);
    }
  }
  EXPECT_THAT(asked, ::testing::SizeIs(2));
}

}  // namespace
}  // namespace fabricdiag::collector
