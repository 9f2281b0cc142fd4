// `fabricdiag nodes` on a collector of a cluster: the nodes of the other
// collectors come from the merged features, with their liveness only.
#include <string>
#include <vector>

#include "analysis/agent_down.h"
#include "collector/api/query_service.h"
#include "collector/runner/agent_liveness.h"
#include "collector/runner/feature_exchange.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::collector {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1795000000);

NodeFacts Facts(const std::string& node, absl::Duration silent,
                const std::string& collector) {
  NodeFacts f;
  f.liveness.node = node;
  f.liveness.last_report = kNow - silent;
  f.liveness.interval = absl::Seconds(1);
  f.liveness.ever_reported = true;
  f.collector = collector;
  return f;
}

// A node of this collector, as ListNodes lists it from the series store.
void AddLocal(const std::string& node, absl::Duration silent,
              v1::ListNodesResponse* response, LocalNodes* local) {
  (*local)[node] = {response->nodes_size(), kNow - silent};
  v1::NodeStatus* n = response->add_nodes();
  n->set_node(node);
  n->set_up(silent < absl::Seconds(10));
  n->set_series(150);
  n->set_collector("col-a");
}

TEST(ClusterNodesTest, OtherCollectorsNodesAreListedWithTheirLiveness) {
  v1::ListNodesResponse response;
  LocalNodes local;
  AddLocal("gpu-2", absl::Seconds(1), &response, &local);
  const std::vector<NodeFacts> fabric = {
      Facts("gpu-1", absl::Seconds(1), "col-b"),
      Facts("gpu-2", absl::Seconds(1), "col-a"),
      Facts("gpu-3", absl::Seconds(30), "col-c")};
  AddOtherCollectorsNodes(fabric, "col-a",
                          AgentUpRule(analysis::AgentDownConfig{}), kNow, local,
                          &response);
  ASSERT_EQ(response.nodes_size(), 3);
  // Sorted by node.
  const v1::NodeStatus& one = response.nodes(0);
  EXPECT_EQ(one.node(), "gpu-1");
  EXPECT_TRUE(one.up());
  EXPECT_TRUE(one.remote());
  EXPECT_EQ(one.collector(), "col-b");
  EXPECT_EQ(one.interval_ms(), 1000u);
  EXPECT_EQ(one.last_report_unix_nanos(),
            absl::ToUnixNanos(kNow - absl::Seconds(1)));
  EXPECT_EQ(one.series(), 0u);  // col-b's to tell
  // This collector's own node is left as the series store listed it.
  EXPECT_EQ(response.nodes(1).node(), "gpu-2");
  EXPECT_FALSE(response.nodes(1).remote());
  EXPECT_EQ(response.nodes(1).series(), 150u);
  // Silent for 30 of its 1 s intervals: down, by agent_down's rule.
  EXPECT_EQ(response.nodes(2).node(), "gpu-3");
  EXPECT_FALSE(response.nodes(2).up());
  EXPECT_TRUE(response.nodes(2).remote());
}

TEST(ClusterNodesTest, AnAgentThatMovedIsListedWhereItReportedLast) {
  v1::ListNodesResponse response;
  LocalNodes local;
  // gpu-1 left this collector 20 s ago for col-b; gpu-2 came here from
  // col-c, which still remembers it.
  AddLocal("gpu-1", absl::Seconds(20), &response, &local);
  AddLocal("gpu-2", absl::Seconds(1), &response, &local);
  const std::vector<NodeFacts> fabric = {
      Facts("gpu-1", absl::Seconds(1), "col-b"),
      Facts("gpu-2", absl::Seconds(15), "col-c")};
  AddOtherCollectorsNodes(fabric, "col-a",
                          AgentUpRule(analysis::AgentDownConfig{}), kNow, local,
                          &response);
  ASSERT_EQ(response.nodes_size(), 2);
  EXPECT_EQ(response.nodes(0).node(), "gpu-1");
  EXPECT_TRUE(response.nodes(0).up());
  EXPECT_EQ(response.nodes(0).collector(), "col-b");
  EXPECT_TRUE(response.nodes(0).remote());
  EXPECT_EQ(response.nodes(1).node(), "gpu-2");
  EXPECT_EQ(response.nodes(1).collector(), "col-a");
  EXPECT_FALSE(response.nodes(1).remote());
}

TEST(ClusterNodesTest, ANodeWhoseCollectorWentQuietIsUnobservedNotDown) {
  v1::ListNodesResponse response;
  LocalNodes local;
  // col-b's last slice came 30 s ago, when gpu-1 had reported a second
  // before; gpu-2's agent was already silent then (for 20 intervals).
  const absl::Time last_slice = kNow - absl::Seconds(30);
  NodeFacts quiet = Facts("gpu-1", absl::Seconds(31), "col-b");
  quiet.unobserved = true;
  quiet.liveness.observed_until = last_slice;
  NodeFacts dead = Facts("gpu-2", absl::Seconds(50), "col-b");
  dead.unobserved = true;
  dead.liveness.observed_until = last_slice;
  // gpu-3's collector left long ago: judged now (observed_until infinite).
  NodeFacts gone = Facts("gpu-3", absl::Seconds(31), "col-c");
  AddOtherCollectorsNodes({quiet, dead, gone}, "col-a",
                          AgentUpRule(analysis::AgentDownConfig{}), kNow, local,
                          &response);
  ASSERT_EQ(response.nodes_size(), 3);
  const v1::NodeStatus& one = response.nodes(0);
  EXPECT_EQ(one.node(), "gpu-1");
  EXPECT_TRUE(one.unobserved());
  EXPECT_TRUE(one.up());  // as of col-b's last word, not down
  EXPECT_EQ(one.unobserved_since_unix_nanos(), absl::ToUnixNanos(last_slice));
  EXPECT_EQ(one.collector(), "col-b");
  EXPECT_TRUE(response.nodes(1).unobserved());
  EXPECT_FALSE(response.nodes(1).up());  // down before col-b went quiet
  EXPECT_FALSE(response.nodes(2).unobserved());
  EXPECT_FALSE(response.nodes(2).up());
  EXPECT_EQ(response.nodes(2).unobserved_since_unix_nanos(), 0);
}

// An agent a collector handed to another one, silent since (it waits out
// a pause, and its new collector has not published its arrival): listed
// unobserved, up as of its last report, with when it was handed off, on
// the collector it left (whose own series still say the rest) as on the
// others.
TEST(ClusterNodesTest, AnAgentHandedOffIsListedOnItsWay) {
  v1::ListNodesResponse response;
  LocalNodes local;
  AddLocal("gpu-1", absl::Seconds(20), &response, &local);
  response.mutable_nodes(0)->set_up(false);  // as the series store judges it
  AddLocal("gpu-3", absl::Seconds(20), &response, &local);
  response.mutable_nodes(1)->set_up(false);
  const absl::Time handed_off = kNow - absl::Seconds(19);
  const auto moving = [&](NodeFacts f) {
    f.unobserved = true;
    f.liveness.observed_until = f.liveness.last_report;
    f.handed_off = handed_off;
    return f;
  };
  NodeFacts mine = moving(Facts("gpu-1", absl::Seconds(20), "col-a"));
  NodeFacts theirs = moving(Facts("gpu-2", absl::Seconds(20), "col-b"));
  // gpu-3 left here without a hand-off: the store's word stands.
  NodeFacts silent = Facts("gpu-3", absl::Seconds(20), "col-a");
  AddOtherCollectorsNodes({mine, theirs, silent}, "col-a",
                          AgentUpRule(analysis::AgentDownConfig{}), kNow, local,
                          &response);
  ASSERT_EQ(response.nodes_size(), 3);
  for (int i : {0, 1}) {
    const v1::NodeStatus& n = response.nodes(i);
    SCOPED_TRACE(n.node());
    EXPECT_TRUE(n.unobserved());
    EXPECT_TRUE(n.up());
    EXPECT_EQ(n.unobserved_since_unix_nanos(),
              absl::ToUnixNanos(kNow - absl::Seconds(20)));
    EXPECT_EQ(n.handed_off_unix_nanos(), absl::ToUnixNanos(handed_off));
  }
  EXPECT_EQ(response.nodes(0).node(), "gpu-1");
  EXPECT_EQ(response.nodes(0).collector(), "col-a");
  EXPECT_FALSE(response.nodes(0).remote());
  EXPECT_EQ(response.nodes(0).series(), 150u);
  EXPECT_EQ(response.nodes(1).node(), "gpu-2");
  EXPECT_EQ(response.nodes(1).collector(), "col-b");
  EXPECT_TRUE(response.nodes(1).remote());
  const v1::NodeStatus& three = response.nodes(2);
  EXPECT_EQ(three.node(), "gpu-3");
  EXPECT_FALSE(three.unobserved());
  EXPECT_FALSE(three.up());
  EXPECT_EQ(three.handed_off_unix_nanos(), 0);
}

TEST(ClusterNodesTest, OneCollectorAddsNothing) {
  v1::ListNodesResponse response;
  LocalNodes local;
  AddLocal("gpu-1", absl::Seconds(1), &response, &local);
  // Facts without a collector: the embedded exchange.
  AddOtherCollectorsNodes({Facts("gpu-9", absl::Seconds(1), "")}, "",
                          AgentUpRule(analysis::AgentDownConfig{}), kNow, local,
                          &response);
  ASSERT_EQ(response.nodes_size(), 1);
  EXPECT_EQ(response.nodes(0).node(), "gpu-1");
}

}  // namespace
}  // namespace fabricdiag::collector
