// Stale findings on every surface the collector serves them on: the gRPC
// answers and watch (a real QueryService on loopback), /api/v1/findings
// and /metrics. The staleness itself comes from the test.
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "collector/api/query_service.h"
#include "collector/findings/findings_metrics.h"
#include "collector/findings/findings_store.h"
#include "collector/web/web_routes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/collector.grpc.pb.h"
#include "tests/collector/api/served_query_service.h"
#include "tests/testing/promtool.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;

analysis::Finding Storm() {
  analysis::Finding f;
  f.kind = "pfc_storm";
  f.severity = analysis::Severity::kCritical;
  f.node = "gpu-3";
  f.device = "mlx5_1";
  f.summary = "gpu-3 mlx5_1 pauses its link partner";
  return f;
}

// What the backends would say, set by the test.
class Staleness {
 public:
  void Set(bool stale, absl::Duration age) {
    absl::MutexLock lock(&mu_);
    now_ = {stale, age};
  }
  FindingsStalenessSource Source() {
    return [this] {
      absl::MutexLock lock(&mu_);
      return now_;
    };
  }

 private:
  absl::Mutex mu_;
  FindingsStaleness now_;
};

class FindingsStalenessTest : public ServedQueryServiceTest {
 protected:
  void SetUp() override {
    ServedQueryServiceTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(findings_->Update({Storm()}, clock_.Now(), "rate").ok());
  }

  // The query service on loopback, told staleness by `staleness_`.
  std::unique_ptr<v1::Collector::Stub> Serve() {
    QueryService::Options options;
    options.staleness = staleness_.Source();
    return v1::Collector::NewStub(
        ServedQueryServiceTest::Serve(std::move(options)));
  }

  Staleness staleness_;
};

TEST_F(FindingsStalenessTest, ListFindingsSaysWhetherTheyAreStale) {
  std::unique_ptr<v1::Collector::Stub> stub = Serve();
  v1::ListFindingsResponse current;
  ASSERT_TRUE(stub->ListFindings(Context().get(), {}, &current).ok());
  EXPECT_EQ(current.findings_size(), 1);
  EXPECT_FALSE(current.staleness().stale());

  staleness_.Set(true, absl::Seconds(42));
  v1::ListFindingsResponse stale;
  ASSERT_TRUE(stub->ListFindings(Context().get(), {}, &stale).ok());
  // The findings are still served, marked.
  EXPECT_EQ(stale.findings_size(), 1);
  EXPECT_TRUE(stale.staleness().stale());
  EXPECT_DOUBLE_EQ(stale.staleness().age_seconds(), 42);
}

// A watch that asks for them gets a STALENESS event first when the findings
// are stale as it starts, another when they turn current, and every finding
// event carries the staleness of its moment.
TEST_F(FindingsStalenessTest, WatchTellsWhenTheFindingsTurnStaleAndBack) {
  staleness_.Set(true, absl::Seconds(6));
  std::unique_ptr<v1::Collector::Stub> stub = Serve();
  grpc::ClientContext context;
  v1::WatchFindingsRequest request;
  request.set_staleness_events(true);
  std::unique_ptr<grpc::ClientReader<v1::FindingEvent>> reader =
      stub->WatchFindings(&context, request);
  v1::FindingEvent event;
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::FindingEvent::STALENESS);
  EXPECT_TRUE(event.staleness().stale());
  EXPECT_DOUBLE_EQ(event.staleness().age_seconds(), 6);
  EXPECT_FALSE(event.has_finding());
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::FindingEvent::SNAPSHOT);
  EXPECT_TRUE(event.staleness().stale());

  staleness_.Set(false, absl::Milliseconds(300));
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::FindingEvent::STALENESS);
  EXPECT_FALSE(event.staleness().stale());

  // No event while nothing changes: the next is the finding resolving.
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(findings_->Update({}, clock_.Now(), "rate").ok());
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::FindingEvent::RESOLVED);
  EXPECT_FALSE(event.staleness().stale());
  context.TryCancel();
  reader->Finish().IgnoreError();
}

// A client that does not ask (one that knows no STALENESS kind) gets none.
TEST_F(FindingsStalenessTest, WatchSendsNoStalenessEventUnlessAsked) {
  staleness_.Set(true, absl::Seconds(6));
  std::unique_ptr<v1::Collector::Stub> stub = Serve();
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::FindingEvent>> reader =
      stub->WatchFindings(&context, v1::WatchFindingsRequest());
  v1::FindingEvent event;
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::FindingEvent::SNAPSHOT);
  EXPECT_TRUE(event.staleness().stale());
  staleness_.Set(false, absl::ZeroDuration());
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(findings_->Update({}, clock_.Now(), "rate").ok());
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::FindingEvent::RESOLVED);
  context.TryCancel();
  reader->Finish().IgnoreError();
}

TEST_F(FindingsStalenessTest, FindingsJsonCarriesTheStaleness) {
  std::vector<HttpRoute> routes = WebRoutes(
      {findings_.get(), registry_.get(), [] { return nullptr; },
       FabricScope::kFabric, &clock_, &topology_, staleness_.Source()});
  auto get = [&routes] {
    HttpRequest request;
    request.method = "GET";
    request.path = "/api/v1/findings";
    for (const HttpRoute& r : routes) {
      if (r.path == request.path) {
        return nlohmann::ordered_json::parse(r.handler(request).body);
      }
    }
    ADD_FAILURE() << "no route";
    return nlohmann::ordered_json();
  };
  nlohmann::ordered_json current = get();
  EXPECT_EQ(current["staleness"]["stale"], false);
  EXPECT_EQ(current["active"].size(), 1u);

  staleness_.Set(true, absl::Milliseconds(42500));
  nlohmann::ordered_json stale = get();
  EXPECT_EQ(stale["staleness"]["stale"], true);
  EXPECT_DOUBLE_EQ(stale["staleness"]["age_seconds"].get<double>(), 42.5);
  EXPECT_EQ(stale["active"].size(), 1u);
}

// A lone collector's routes are built without a source: never stale.
TEST_F(FindingsStalenessTest, ALoneCollectorIsNeverStale) {
  WebSources sources{
      findings_.get(),      registry_.get(), [] { return nullptr; },
      FabricScope::kFabric, &clock_,         &topology_};
  EXPECT_FALSE(sources.staleness().stale);
  EXPECT_EQ(sources.staleness().age, absl::ZeroDuration());
  EXPECT_FALSE(QueryService::Options().staleness().stale);
}

TEST(FindingsStalenessMetricsTest, GaugesForTheCollector) {
  std::string out;
  AppendFindingsStalenessMetrics({true, absl::Milliseconds(7250)}, "col-b",
                                 &out);
  EXPECT_THAT(out, HasSubstr("# TYPE fabricdiag_cluster_findings_stale gauge\n"
                             "fabricdiag_cluster_findings_stale{collector_id="
                             "\"col-b\"} 1\n"));
  EXPECT_THAT(out, HasSubstr("fabricdiag_cluster_findings_age_seconds{"
                             "collector_id=\"col-b\"} 7.25\n"));
  std::string current;
  AppendFindingsStalenessMetrics({false, absl::Milliseconds(300)}, "col-b",
                                 &current);
  EXPECT_THAT(current, HasSubstr("fabricdiag_cluster_findings_stale{"
                                 "collector_id=\"col-b\"} 0\n"));
  EXPECT_THAT(current, HasSubstr("fabricdiag_cluster_findings_age_seconds{"
                                 "collector_id=\"col-b\"} 0.3\n"));
  if (!testing::PromtoolInstalled()) {
    GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  }
  std::string lint;
  EXPECT_TRUE(testing::PromtoolAccepts(out, &lint)) << lint;
}

}  // namespace
}  // namespace fabricdiag::collector
