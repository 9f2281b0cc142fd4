// `fabricdiag nodes forget` on a real QueryService on loopback: what the
// collector keeps of the node (its series, its facts) goes, unless its
// agent reports now, here or to another collector of a cluster.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collector/api/query_service.h"
#include "collector/declared/node_facts_memory.h"
#include "collector/runner/feature_exchange.h"
#include "collector/store/series_store.h"
#include "gtest/gtest.h"
#include "proto/collector.grpc.pb.h"
#include "tests/collector/api/served_query_service.h"

namespace fabricdiag::collector {
namespace {

v1::NodeFacts Facts(const std::string& node) {
  v1::NodeFacts f;
  f.set_node(node);
  f.set_lldp_source("lldpd");
  v1::LldpNeighbor* n = f.add_lldp_neighbors();
  n->set_local_port("eth0");
  n->set_system_name("leaf-0");
  n->set_port_id("swp1");
  return f;
}

class ForgetNodeTest : public ServedQueryServiceTest {
 protected:
  void SetUp() override {
    ServedQueryServiceTest::SetUp();
    if (HasFatalFailure()) return;
    QueryService::Options options;
    options.facts_store = &facts_;
    options.collector_id = "col-a";
    options.fabric_nodes = [this] {
      return std::make_shared<const std::vector<NodeFacts>>(fabric_);
    };
    std::shared_ptr<grpc::Channel> channel = Serve(std::move(options));
    ASSERT_NE(channel, nullptr);
    stub_ = v1::Collector::NewStub(channel);
  }

  grpc::Status Forget(const std::string& node) {
    v1::ForgetNodeRequest request;
    request.set_node(node);
    v1::ForgetNodeResponse response;
    return stub_->ForgetNode(Context().get(), request, &response);
  }

  // A node that reported here and whose agent's stream is open now.
  void Streaming(const std::string& node) {
    ASSERT_TRUE(
        series_.OpenNode(node)
            ->BeginStream("boot-1", 1000, 7, "ipv4:10.0.0.7:5000", clock_.Now())
            .ok());
  }

  bool HasFacts(const std::string& node) const {
    return facts_.Snapshot()->contains(node);
  }

  MemoryNodeFacts facts_;
  std::vector<NodeFacts> fabric_;
  std::unique_ptr<v1::Collector::Stub> stub_;
};

TEST_F(ForgetNodeTest, DropsTheSeriesAndFactsOfASilentNode) {
  Streaming("gpu-001");
  Streaming("gpu-002");
  ASSERT_TRUE(facts_.Put(Facts("gpu-001")).ok());
  ASSERT_TRUE(facts_.Put(Facts("gpu-002")).ok());
  series_.FindNode("gpu-001")->EndStream(7);  // its agent died

  const grpc::Status s = Forget("gpu-001");
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(series_.FindNode("gpu-001"), nullptr);
  EXPECT_FALSE(HasFacts("gpu-001"));
  // Not on /metrics either: the fabricdiag_agent_* families list the store.
  for (const NodeStatus& n : series_.ListNodes(absl::Seconds(3))) {
    EXPECT_NE(n.info.node, "gpu-001");
  }
  // The other node keeps everything.
  EXPECT_NE(series_.FindNode("gpu-002"), nullptr);
  EXPECT_TRUE(HasFacts("gpu-002"));
  // Forgotten, it is unknown now: a second forget finds nothing.
  EXPECT_EQ(Forget("gpu-001").error_code(), grpc::StatusCode::NOT_FOUND);

  // It reports again: a new node, whole with its agent's next inventory.
  Streaming("gpu-001");
  ASSERT_TRUE(facts_.Put(Facts("gpu-001")).ok());
  EXPECT_NE(series_.FindNode("gpu-001"), nullptr);
  EXPECT_TRUE(HasFacts("gpu-001"));
}

TEST_F(ForgetNodeTest, ANodeWhoseAgentStreamsHereKeepsWhatItReported) {
  Streaming("gpu-001");
  ASSERT_TRUE(facts_.Put(Facts("gpu-001")).ok());
  ASSERT_TRUE(Forget("gpu-001").ok());
  EXPECT_NE(series_.FindNode("gpu-001"), nullptr);
  EXPECT_TRUE(HasFacts("gpu-001"));

  // Its stream still open but silent beyond 3 of its intervals (and the
  // 3 s floor): the agent is gone, its leftovers go.
  clock_.Advance(absl::Seconds(4));
  ASSERT_TRUE(Forget("gpu-001").ok());
  EXPECT_EQ(series_.FindNode("gpu-001"), nullptr);
  EXPECT_FALSE(HasFacts("gpu-001"));
}

TEST_F(ForgetNodeTest, ANodeUpAtAnotherCollectorKeepsItsFacts) {
  NodeFacts elsewhere;
  elsewhere.liveness.node = "gpu-007";
  elsewhere.liveness.last_report = clock_.Now() - absl::Seconds(1);
  elsewhere.liveness.interval = absl::Seconds(1);
  elsewhere.liveness.ever_reported = true;
  elsewhere.collector = "col-b";
  fabric_ = {elsewhere};
  ASSERT_TRUE(facts_.Put(Facts("gpu-007")).ok());
  const grpc::Status first = Forget("gpu-007");
  ASSERT_TRUE(first.ok()) << first.error_message();
  EXPECT_TRUE(HasFacts("gpu-007"));

  // Silent at col-b since: forgotten everywhere.
  clock_.Advance(absl::Seconds(60));
  const grpc::Status again = Forget("gpu-007");
  ASSERT_TRUE(again.ok()) << again.error_message();
  EXPECT_FALSE(HasFacts("gpu-007"));
}

}  // namespace
}  // namespace fabricdiag::collector
