// ack, silence, maintenance, silences, silence expire, nodes forget against
// the in-memory client: what is sent, what is printed, every bad input.
#include <string>
#include <vector>

#include "cli/commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/test_env.h"
#include "tests/client/fake_collector_client.h"

namespace fabricdiag::cli {
namespace {

using client::testing::FakeCollectorClient;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::TestEnv;

class MarkCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options.owner = "alice";
    client.silence_answer.set_id("s-00000000000000aa");
    client.silence_answer.set_ends_unix_nanos(
        absl::ToUnixNanos(absl::FromUnixSeconds(testing::kExampleUnixSeconds)));
  }

  FakeCollectorClient client;
  CommandOptions options;
  TestEnv t;
};

TEST_F(MarkCommandsTest, SilenceSendsMatchersDurationCommentAndWho) {
  options.matcher = "kind=pfc_storm,node=leaf-3";
  options.for_duration = "4h";
  options.comment = "RMA 4711";
  EXPECT_EQ(SilenceCommand(client, options, t.env), kExitOk) << t.err.str();
  ASSERT_EQ(client.mark_requests.size(), 1u);
  EXPECT_THAT(client.mark_requests[0],
              HasSubstr("matchers { key: \"kind\" value: \"pfc_storm\" } "
                        "matchers { key: \"node\" value: \"leaf-3\" } "
                        "duration_seconds: 14400 comment: \"RMA 4711\" "
                        "who: \"alice\""));
  EXPECT_EQ(t.out.str(),
            "silence s-00000000000000aa until 2026-11-22T03:00:00Z\n");
}

TEST_F(MarkCommandsTest, MaintenanceIsASilenceOnTheNodeForWholeDays) {
  options.node = "gpu-017";
  options.for_duration = "2d";
  EXPECT_EQ(MaintenanceCommand(client, options, t.env), kExitOk) << t.err.str();
  ASSERT_EQ(client.mark_requests.size(), 1u);
  EXPECT_THAT(client.mark_requests[0],
              HasSubstr("matchers { key: \"node\" value: \"gpu-017\" } "
                        "duration_seconds: 172800 comment: \"maintenance\""));
}

TEST_F(MarkCommandsTest, BadInputIsExit2NamingTheFlagAndSendsNothing) {
  struct Case {
    std::string matcher, for_duration, comment, says;
  };
  for (const Case& c : std::vector<Case>{
           {"", "4h", "x", "--matcher: missing"},
           {"kind", "4h", "x", "--matcher: \"kind\" is not KEY=VALUE"},
           {"rack=r1", "4h", "x", "--matcher: unknown key \"rack\""},
           {"node=a,node=b", "4h", "x", "--matcher: node is given twice"},
           {"node=a", "", "x", "--for: missing"},
           {"node=a", "-1h", "x", "--for: must be positive"},
           {"node=a", "0s", "x", "--for: must be positive"},
           {"node=a", "31d", "x", "--for: at most 30 days"},
           {"node=a", "soon", "x", "--for: not a duration"},
           {"node=a", "4h", "", "--comment: required"},
       }) {
    TestEnv env;
    CommandOptions o = options;
    o.matcher = c.matcher;
    o.for_duration = c.for_duration;
    o.comment = c.comment;
    EXPECT_EQ(SilenceCommand(client, o, env.env), kExitInvalid) << c.says;
    EXPECT_THAT(env.err.str(), HasSubstr("fabricdiag: " + c.says));
  }
  TestEnv env;
  options.for_duration = "1h";
  EXPECT_EQ(MaintenanceCommand(client, options, env.env), kExitInvalid);
  EXPECT_THAT(env.err.str(), HasSubstr("--node: missing"));
  EXPECT_THAT(client.mark_requests, IsEmpty());
}

TEST_F(MarkCommandsTest, AckPrintsWhoAndUnknownIdsAreExit3) {
  options.comment = "intended";
  EXPECT_EQ(AckCommand(client, "f-000123", options, t.env), kExitOk);
  EXPECT_THAT(client.mark_requests,
              ElementsAre("id: \"f-000123\" comment: \"intended\" "
                          "who: \"alice\""));
  EXPECT_EQ(t.out.str(), "finding f-000123 acknowledged by alice\n");

  client.fail = absl::NotFoundError(
      "collector fake:9811: not found: no active finding \"f-9\"");
  TestEnv missing;
  EXPECT_EQ(AckCommand(client, "f-9", options, missing.env), kExitNotFound);
  EXPECT_THAT(missing.err.str(), HasSubstr("no active finding"));
  TestEnv expire;
  EXPECT_EQ(SilenceExpireCommand(client, "s-1", options, expire.env),
            kExitNotFound);
  TestEnv forget;
  EXPECT_EQ(NodesForgetCommand(client, "gpu-9", options, forget.env),
            kExitNotFound);
  // Unreachable is still 1.
  client.fail = absl::UnavailableError("cannot reach collector fake:9811");
  TestEnv down;
  EXPECT_EQ(AckCommand(client, "f-9", options, down.env), kExitCollector);
}

TEST_F(MarkCommandsTest, SilencesListsActiveAndExpired) {
  v1::Silence* s = client.silences.add_silences();
  s->set_id("s-1");
  s->set_who("alice");
  s->set_comment("RMA");
  s->set_ends_unix_nanos(
      absl::ToUnixNanos(absl::FromUnixSeconds(testing::kExampleUnixSeconds)));
  v1::SilenceMatcher* m = s->add_matchers();
  m->set_key("node");
  m->set_value("leaf-3");
  v1::Silence* old = client.silences.add_silences();
  *old = *s;
  old->set_id("s-0");
  old->set_expired(true);
  EXPECT_EQ(SilencesCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(t.out.str(),
            "ID   STATE    MATCHERS     WHO    UNTIL                 COMMENT\n"
            "s-1  active   node=leaf-3  alice  2026-11-22T03:00:00Z  RMA\n"
            "s-0  expired  node=leaf-3  alice  2026-11-22T03:00:00Z  RMA\n");

  TestEnv json;
  options.json = true;
  EXPECT_EQ(SilencesCommand(client, options, json.env), kExitOk);
  EXPECT_THAT(json.out.str(),
              HasSubstr("{\"id\":\"s-1\",\"matchers\":{\"node\":\"leaf-3\"},"
                        "\"who\":\"alice\""));
  EXPECT_THAT(json.out.str(), HasSubstr("\"expired\":true"));
}

TEST_F(MarkCommandsTest, ForgetSaysWhatResolves) {
  client.forget_answer.add_resolved("f-000321");
  EXPECT_EQ(NodesForgetCommand(client, "gpu-017", options, t.env), kExitOk);
  EXPECT_THAT(client.mark_requests,
              ElementsAre("node: \"gpu-017\" who: \"alice\""));
  EXPECT_EQ(t.out.str(),
            "node gpu-017 forgotten; resolving f-000321 (it comes back when "
            "its agent reports again)\n");
}

}  // namespace
}  // namespace fabricdiag::cli
