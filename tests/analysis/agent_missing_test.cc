#include "analysis/agent_missing.h"

#include <string>
#include <vector>

#include "analysis/analysis_config.h"
#include "analysis/finding.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::analysis {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

const absl::Time kNow = absl::FromUnixSeconds(1795000000);

ExpectedHost Host(const std::string& name, absl::Duration unheard,
                  bool open = false) {
  ExpectedHost h;
  h.node = name;
  h.links = 1;
  h.switches = {"leaf-0"};
  h.unheard_since = kNow - unheard;
  h.open = open;
  return h;
}

TEST(AgentMissingTest, MissingOnceUnheardForAfterSeconds) {
  const std::vector<ExpectedHost> hosts = {Host("gpu-1", absl::Seconds(119)),
                                           Host("gpu-2", absl::Seconds(120)),
                                           Host("gpu-3", absl::Hours(30))};
  std::vector<Finding> found = AgentMissingFindings(hosts, {}, kNow);
  ASSERT_THAT(found, SizeIs(2));
  EXPECT_EQ(found[0].node, "gpu-2");
  EXPECT_EQ(found[0].kind, "agent_missing");
  EXPECT_EQ(found[0].severity, Severity::kWarning);
  EXPECT_EQ(found[0].nodes, std::vector<std::string>{"gpu-2"});
  EXPECT_EQ(found[0].job, "");
  EXPECT_EQ(found[0].device, "");
  EXPECT_EQ(found[0].summary,
            "gpu-2 is in the topology (1 link, cabled to leaf-0) but no "
            "fabricdiag agent has reported from it for 2 min: its NICs are "
            "not being watched. Start fabricdiag-agent on gpu-2 (its --node "
            "must be gpu-2 and its --collector this cluster's), or remove "
            "the host from the topology.");
  EXPECT_EQ(found[0].evidence.at("unheard_seconds"), 120);
  EXPECT_EQ(found[0].evidence.at("links"), 1);
  EXPECT_EQ(found[0].evidence_text.at("unheard_since"), "2026-11-18T11:04:40Z");
  EXPECT_EQ(found[0].evidence_text.at("switches"), "leaf-0");
  EXPECT_EQ(found[1].node, "gpu-3");
  EXPECT_THAT(found[1].summary, HasSubstr("for 1 d 6 h:"));
}

TEST(AgentMissingTest, AnOpenFindingHoldsWithoutWaitingAgain) {
  std::vector<Finding> found = AgentMissingFindings(
      {Host("gpu-1", absl::ZeroDuration(), /*open=*/true)}, {}, kNow);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].evidence.at("unheard_seconds"), 0);
}

TEST(AgentMissingTest, OffWhenAfterSecondsIsZero) {
  AgentMissingConfig off;
  off.after_seconds = 0;
  EXPECT_THAT(AgentMissingFindings({Host("gpu-1", absl::Hours(1), true)}, {},
                                   kNow, off),
              IsEmpty());
}

TEST(AgentMissingTest, AnAgentReportingUnderANearNameIsNamed) {
  const std::vector<std::string> reporting = {"gpu-10", "GPU-1.dc1.example",
                                              "leaf-9"};
  std::vector<Finding> found = AgentMissingFindings(
      {Host("gpu-1", absl::Hours(1)), Host("gpu-2", absl::Hours(1))}, reporting,
      kNow);
  ASSERT_THAT(found, SizeIs(2));
  EXPECT_THAT(found[0].summary,
              HasSubstr("An agent reports as GPU-1.dc1.example, which the "
                        "topology does not list: give that agent "
                        "--node=gpu-1, or name the host GPU-1.dc1.example in "
                        "the topology."));
  EXPECT_EQ(found[0].evidence_text.at("reporting_as"), "GPU-1.dc1.example");
  // gpu-10 is another host, not gpu-1 with a typo.
  EXPECT_THAT(found[1].summary, Not(HasSubstr("reports as")));
  EXPECT_EQ(found[1].evidence_text.count("reporting_as"), 0u);
}

// A topology host name with a domain matches an agent without one.
TEST(AgentMissingTest, TheTopologysDomainIsNotNeededEither) {
  std::vector<Finding> found = AgentMissingFindings(
      {Host("gpu-1.dc1.example", absl::Hours(1))}, {"gpu-1"}, kNow);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].evidence_text.at("reporting_as"), "gpu-1");
}

}  // namespace
}  // namespace fabricdiag::analysis
