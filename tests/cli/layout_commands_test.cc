// layout and topology commands against the in-memory client.
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "analysis/layout_parse.h"
#include "cli/commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/test_env.h"
#include "tests/client/fake_collector_client.h"

namespace fabricdiag::cli {
namespace {

using client::testing::FakeCollectorClient;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::kValidLayoutYaml;
using ::testing::Not;
using testing::TestEnv;
using testing::WriteTempFile;

class LayoutCommandsTest : public ::testing::Test {
 protected:
  FakeCollectorClient client;
  TestEnv t;
  CommandOptions options;
};

TEST_F(LayoutCommandsTest, ApplyNewThenReplaced) {
  const std::string file = WriteTempFile("l.yaml", kValidLayoutYaml);
  EXPECT_EQ(LayoutApplyCommand(client, file, options, t.env), kExitOk);
  EXPECT_EQ(t.out.str(), "layout moe-train-42 applied (new)\n");
  ASSERT_EQ(client.layouts.count("moe-train-42"), 1u);
  EXPECT_EQ(client.layouts["moe-train-42"].parallelism().ep(), 4u);

  t.out.str("");
  EXPECT_EQ(LayoutApplyCommand(client, file, options, t.env), kExitOk);
  EXPECT_EQ(t.out.str(), "layout moe-train-42 applied (replaced)\n");
  EXPECT_THAT(t.err.str(), IsEmpty());
}

TEST_F(LayoutCommandsTest, ApplyPrintsFindingsRaisedAtOnce) {
  v1::Finding f;
  f.set_kind("tp_cross_node");
  f.set_severity(v1::SEVERITY_WARNING);
  f.set_group("tp:3");
  f.set_node("gpu-001");
  f.set_summary("tp:3 spans gpu-000 and gpu-001");
  client.apply_findings.push_back(f);
  const std::string file = WriteTempFile("l.yaml", kValidLayoutYaml);
  EXPECT_EQ(LayoutApplyCommand(client, file, options, t.env), kExitOk);
  EXPECT_THAT(t.out.str(),
              AllOf(HasSubstr("layout moe-train-42 applied (new)\n"),
                    HasSubstr("1 finding raised from the layout:"),
                    HasSubstr("tp_cross_node"), HasSubstr("tp:3 spans")));
}

TEST_F(LayoutCommandsTest, ApplyJsonReportsReplacedAndFindings) {
  options.json = true;
  const std::string file = WriteTempFile(
      "l.json",
      analysis::LayoutToJson(*analysis::ParseLayout(kValidLayoutYaml)));
  EXPECT_EQ(LayoutApplyCommand(client, file, options, t.env), kExitOk);
  const nlohmann::json j = nlohmann::json::parse(t.out.str());
  EXPECT_EQ(j["job"], "moe-train-42");
  EXPECT_EQ(j["replaced"], false);
  EXPECT_TRUE(j["findings"].is_array());
}

TEST_F(LayoutCommandsTest, ApplyReadsStdin) {
  t.in.str(kValidLayoutYaml);
  EXPECT_EQ(LayoutApplyCommand(client, "-", options, t.env), kExitOk);
  EXPECT_EQ(client.layouts.count("moe-train-42"), 1u);
}

TEST_F(LayoutCommandsTest, InvalidLayoutNamesTheFieldAndSendsNothing) {
  struct Case {
    std::string from, to, field;
  };
  const Case cases[] = {
      {"ep: 4", "ep: 3", "parallelism.ep"},        // does not divide dp*cp
      {"tp: 2", "tp: \"two\"", "parallelism.tp"},  // not an integer
      {"job: moe-train-42", "job: \"bad job!\"", "job"},
      {"  pp: 1\n", "  pp: 1\n  zz: 1\n", "parallelism.zz"},  // unknown key
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.to);
    TestEnv local;
    const std::string file = WriteTempFile(
        "bad.yaml", absl::StrReplaceAll(kValidLayoutYaml, {{c.from, c.to}}));
    EXPECT_EQ(LayoutApplyCommand(client, file, options, local.env),
              kExitInvalid);
    EXPECT_THAT(local.err.str(),
                AllOf(HasSubstr(absl::StrCat("fabricdiag: ", file, ": ")),
                      HasSubstr(c.field)));
    EXPECT_THAT(local.out.str(), IsEmpty());
  }
  EXPECT_EQ(client.apply_calls, 0);
}

TEST_F(LayoutCommandsTest, HostileFilesAreInvalidInput) {
  const std::string inputs[] = {
      "",                             // empty
      "[1, 2, 3]",                    // not a mapping
      "job: [",                       // broken YAML
      std::string("job: a\0b\n", 9),  // NUL
      std::string(100000, '['),       // deep nesting
  };
  for (const std::string& input : inputs) {
    TestEnv local;
    const std::string file = WriteTempFile("hostile.yaml", input);
    EXPECT_EQ(LayoutApplyCommand(client, file, options, local.env),
              kExitInvalid)
        << input.substr(0, 20);
    EXPECT_THAT(local.err.str(), HasSubstr("fabricdiag: "));
  }
  EXPECT_EQ(client.apply_calls, 0);
}

TEST_F(LayoutCommandsTest, MissingFileIsInvalidInputNamingIt) {
  EXPECT_EQ(LayoutApplyCommand(client, "/nonexistent/l.yaml", options, t.env),
            kExitInvalid);
  EXPECT_EQ(t.err.str(),
            "fabricdiag: /nonexistent/l.yaml: cannot read: No such file or "
            "directory\n");
  EXPECT_EQ(client.calls, 0);
}

TEST_F(LayoutCommandsTest, DirectoryIsInvalidInput) {
  EXPECT_EQ(LayoutApplyCommand(client, ::testing::TempDir(), options, t.env),
            kExitInvalid);
  EXPECT_THAT(t.err.str(), HasSubstr("cannot read"));
}

TEST_F(LayoutCommandsTest, CollectorFailureIsExitOneWithItsMessage) {
  client.fail = absl::UnavailableError(
      "cannot reach collector fake:9811: connection refused");
  const std::string file = WriteTempFile("l.yaml", kValidLayoutYaml);
  EXPECT_EQ(LayoutApplyCommand(client, file, options, t.env), kExitCollector);
  EXPECT_EQ(t.err.str(),
            "fabricdiag: cannot reach collector fake:9811: connection "
            "refused\n");
}

TEST_F(LayoutCommandsTest, CollectorRejectingInputIsExitTwo) {
  client.fail = absl::InvalidArgumentError(
      "collector fake:9811: invalid argument: hosts[1]: unknown host");
  const std::string file = WriteTempFile("l.yaml", kValidLayoutYaml);
  EXPECT_EQ(LayoutApplyCommand(client, file, options, t.env), kExitInvalid);
  EXPECT_THAT(t.err.str(), HasSubstr("hosts[1]"));
}

// --if_revision=N goes with the request; the collector's refusal
// (FAILED_PRECONDITION: not at N; ABORTED: changed through another
// collector meanwhile) is exit 4 with its message, and only then.
TEST_F(LayoutCommandsTest, ApplyIfRevisionRefusedIsExitFour) {
  const std::string file = WriteTempFile("l.yaml", kValidLayoutYaml);
  options.if_revision = "17";
  client.apply_revision = 18;
  EXPECT_EQ(LayoutApplyCommand(client, file, options, t.env), kExitOk);
  ASSERT_TRUE(client.last_apply.has_if_revision());
  EXPECT_EQ(client.last_apply.if_revision(), 17u);
  EXPECT_EQ(t.out.str(), "layout moe-train-42 applied (new, revision 18)\n");

  for (absl::Status refusal :
       {absl::FailedPreconditionError(
            "collector fake:9811: failed precondition: the layout of job "
            "\"moe-train-42\" is at revision 18, not 17; nothing written"),
        absl::AbortedError("collector fake:9811: aborted: changed")}) {
    TestEnv env;
    client.fail = refusal;
    EXPECT_EQ(LayoutApplyCommand(client, file, options, env.env), kExitStale)
        << refusal;
    EXPECT_THAT(env.err.str(), HasSubstr(std::string(refusal.message())));
  }
  // Without the flag the same codes are collector errors, as before.
  options.if_revision.clear();
  TestEnv env;
  EXPECT_EQ(LayoutApplyCommand(client, file, options, env.env), kExitCollector);
  EXPECT_FALSE(client.last_apply.has_if_revision());

  options.if_revision = "0";
  client.fail = absl::OkStatus();
  EXPECT_EQ(LayoutApplyCommand(client, file, options, env.env), kExitOk);
  EXPECT_TRUE(client.last_apply.has_if_revision());
  EXPECT_EQ(client.last_apply.if_revision(), 0u);
}

TEST_F(LayoutCommandsTest, BadIfRevisionIsInvalidInputAndSendsNothing) {
  const std::string file = WriteTempFile("l.yaml", kValidLayoutYaml);
  for (const char* bad : {"x", "-1", "1.5", "18446744073709551616", " "}) {
    TestEnv env;
    options.if_revision = bad;
    EXPECT_EQ(LayoutApplyCommand(client, file, options, env.env), kExitInvalid)
        << bad;
    EXPECT_THAT(env.err.str(), HasSubstr("--if_revision")) << bad;
  }
  EXPECT_EQ(client.apply_calls, 0);
}

TEST_F(LayoutCommandsTest, ListTableSortedAndJson) {
  v1::Layout a = *analysis::ParseLayout(kValidLayoutYaml);
  v1::Layout b = a;
  b.set_job("dense-7b");
  client.layouts[a.job()] = a;
  client.layouts[b.job()] = b;
  client.applied_unix_nanos =
      absl::ToUnixNanos(absl::FromUnixSeconds(testing::kExampleUnixSeconds));
  EXPECT_EQ(LayoutListCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(t.out.str(),
            "JOB           RANKS  HOSTS  PARALLELISM     SOURCE  OWNER  "
            "APPLIED               AGE  EXPIRES\n"
            "dense-7b      16     2      tp=2 pp=1 dp=8  -       -      "
            "2026-11-22T03:00:00Z  65s  never\n"
            "moe-train-42  16     2      tp=2 pp=1 dp=8  -       -      "
            "2026-11-22T03:00:00Z  65s  never\n");

  TestEnv json_env;
  options.json = true;
  EXPECT_EQ(LayoutListCommand(client, options, json_env.env), kExitOk);
  const nlohmann::json j = nlohmann::json::parse(json_env.out.str());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["job"], "dense-7b");
  EXPECT_EQ(j[1]["ranks"], 16);
  EXPECT_EQ(j[1]["applied"], "2026-11-22T03:00:00Z");
}

TEST_F(LayoutCommandsTest, ListShowsLabelsOnlyWhenALayoutHasThem) {
  v1::Layout a = *analysis::ParseLayout(kValidLayoutYaml);
  v1::Layout b = a;
  b.set_job("dense-7b");
  (*a.mutable_labels())["team"] = "ml-infra";
  (*a.mutable_labels())["project"] = "llama";
  client.layouts[a.job()] = a;
  client.layouts[b.job()] = b;
  client.applied_unix_nanos =
      absl::ToUnixNanos(absl::FromUnixSeconds(testing::kExampleUnixSeconds));
  EXPECT_EQ(LayoutListCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(
      t.out.str(),
      "JOB           RANKS  HOSTS  PARALLELISM     SOURCE  OWNER  "
      "APPLIED               AGE  EXPIRES  LABELS\n"
      "dense-7b      16     2      tp=2 pp=1 dp=8  -       -      "
      "2026-11-22T03:00:00Z  65s  never    -\n"
      "moe-train-42  16     2      tp=2 pp=1 dp=8  -       -      "
      "2026-11-22T03:00:00Z  65s  never    project=llama,team=ml-infra\n");

  TestEnv json_env;
  options.json = true;
  EXPECT_EQ(LayoutListCommand(client, options, json_env.env), kExitOk);
  const nlohmann::json j = nlohmann::json::parse(json_env.out.str());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["labels"], nlohmann::json::object());
  EXPECT_EQ(j[1]["labels"],
            nlohmann::json({{"project", "llama"}, {"team", "ml-infra"}}));
}

TEST_F(LayoutCommandsTest, ApplyWithLeaseSourceOwnerAndWarnings) {
  client.applied_unix_nanos =
      absl::ToUnixNanos(absl::FromUnixSeconds(testing::kExampleUnixSeconds));
  client.apply_warnings = {
      "hosts: host \"gpu-000.example\" is reported by "
      "no agent"};
  options.lease = absl::Minutes(10) - absl::Milliseconds(500);
  options.owner = "alice";
  const std::string file = WriteTempFile("l.yaml", kValidLayoutYaml);
  EXPECT_EQ(LayoutApplyCommand(client, file, options, t.env), kExitOk);
  EXPECT_EQ(client.last_apply.lease_seconds(), 600u);  // rounded up
  EXPECT_EQ(client.last_apply.source(), "cli");
  EXPECT_EQ(client.last_apply.owner(), "alice");
  EXPECT_EQ(t.err.str(),
            "warning: hosts: host \"gpu-000.example\" is reported by no "
            "agent\n");

  TestEnv list;
  EXPECT_EQ(LayoutListCommand(client, options, list.env), kExitOk);
  EXPECT_EQ(list.out.str(),
            "JOB           RANKS  HOSTS  PARALLELISM     SOURCE  OWNER  "
            "APPLIED               AGE  EXPIRES\n"
            "moe-train-42  16     2      tp=2 pp=1 dp=8  cli     alice  "
            "2026-11-22T03:00:00Z  65s  2026-11-22T03:10:00Z\n");
  TestEnv json;
  options.json = true;
  EXPECT_EQ(LayoutListCommand(client, options, json.env), kExitOk);
  const nlohmann::json j = nlohmann::json::parse(json.out.str());
  EXPECT_EQ(j[0]["source"], "cli");
  EXPECT_EQ(j[0]["owner"], "alice");
  EXPECT_EQ(j[0]["expires"], "2026-11-22T03:10:00Z");
}

TEST_F(LayoutCommandsTest, BadLeaseIsInvalidInputAndSendsNothing) {
  const std::string file = WriteTempFile("l.yaml", kValidLayoutYaml);
  for (absl::Duration lease : {absl::Seconds(-1), absl::Hours(169)}) {
    TestEnv e;
    options.lease = lease;
    EXPECT_EQ(LayoutApplyCommand(client, file, options, e.env), kExitInvalid);
    EXPECT_THAT(e.err.str(), HasSubstr("--lease: "));
  }
  EXPECT_EQ(client.apply_calls, 0);
}

TEST_F(LayoutCommandsTest, ListEmpty) {
  EXPECT_EQ(LayoutListCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(t.out.str(), "no layouts\n");
}

TEST_F(LayoutCommandsTest, ShowYamlAndJsonReadBack) {
  const v1::Layout layout = *analysis::ParseLayout(kValidLayoutYaml);
  client.layouts[layout.job()] = layout;
  EXPECT_EQ(LayoutShowCommand(client, "moe-train-42", options, t.env), kExitOk);
  EXPECT_THAT(t.out.str(), AllOf(HasSubstr("job: moe-train-42\n"),
                                 HasSubstr("hosts: [gpu-000, gpu-001]"),
                                 HasSubstr("parallelism:\n  tp: 2\n")));
  // What `show` prints is a valid layout file again.
  absl::StatusOr<v1::Layout> back = analysis::ParseLayout(t.out.str());
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << t.out.str();
  EXPECT_EQ(back->SerializeAsString(), layout.SerializeAsString());

  TestEnv json_env;
  options.json = true;
  EXPECT_EQ(LayoutShowCommand(client, "moe-train-42", options, json_env.env),
            kExitOk);
  back = analysis::ParseLayout(json_env.out.str());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), layout.SerializeAsString());
  EXPECT_EQ(nlohmann::json::parse(json_env.out.str())["job"], "moe-train-42");
}

// The revision the collector answers with is printed (what --if_revision
// compares); an older collector's 0 is not.
TEST_F(LayoutCommandsTest, ShowPrintsTheRevision) {
  v1::Layout layout = *analysis::ParseLayout(kValidLayoutYaml);
  layout.mutable_declaration()->set_revision(42);
  client.layouts[layout.job()] = layout;
  EXPECT_EQ(LayoutShowCommand(client, "moe-train-42", options, t.env), kExitOk);
  EXPECT_THAT(t.out.str(), HasSubstr("\nrevision: 42\n"));
  TestEnv json_env;
  options.json = true;
  EXPECT_EQ(LayoutShowCommand(client, "moe-train-42", options, json_env.env),
            kExitOk);
  EXPECT_EQ(nlohmann::json::parse(json_env.out.str())["revision"], 42);
}

TEST_F(LayoutCommandsTest, ShowLeavesOutTheNicOfRanksDeclaredWithout) {
  const v1::Layout layout = *analysis::ParseLayout(
      "job: ranked\ngpus_per_node: 2\nparallelism: {tp: 2, pp: 1, dp: 1}\n"
      "ranks:\n- {rank: 0, host: gpu-000, gpu: 0, nic: mlx5_3}\n"
      "- {rank: 1, host: gpu-000, gpu: 1}\n");
  client.layouts[layout.job()] = layout;
  EXPECT_EQ(LayoutShowCommand(client, "ranked", options, t.env), kExitOk);
  EXPECT_THAT(t.out.str(), HasSubstr("nic: mlx5_3"));
  EXPECT_THAT(t.out.str(), Not(HasSubstr("nic: \"\"")));
  EXPECT_THAT(t.out.str(), Not(HasSubstr("nic: ''")));
  absl::StatusOr<v1::Layout> back = analysis::ParseLayout(t.out.str());
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << t.out.str();
  EXPECT_EQ(back->SerializeAsString(), layout.SerializeAsString());
  ASSERT_EQ(back->ranks_size(), 2);
  EXPECT_EQ(back->ranks(0).nic(), "mlx5_3");
  EXPECT_EQ(back->ranks(1).nic(), "");
}

TEST_F(LayoutCommandsTest, ShowSaysWhereEachRanksNicComesFrom) {
  const v1::Layout layout = *analysis::ParseLayout(
      "job: paired\ngpus_per_node: 2\nparallelism: {tp: 2, pp: 1, dp: 1}\n"
      "hosts: [gpu-000]\n");
  client.layouts[layout.job()] = layout;
  v1::Layout resolved = layout;
  v1::RankPlacement* r0 = resolved.add_ranks();
  r0->set_rank(0);
  r0->set_host("gpu-000");
  r0->set_nic("mlx5_0");
  r0->set_nic_source("agent");
  r0->set_nic_distance("root_port");
  v1::RankPlacement* r1 = resolved.add_ranks();
  r1->set_rank(1);
  r1->set_host("gpu-000");
  r1->set_gpu(1);
  r1->set_nic_source("unknown");
  client.resolved_layouts[layout.job()] = resolved;

  EXPECT_EQ(LayoutShowCommand(client, "paired", options, t.env), kExitOk);
  EXPECT_THAT(
      t.out.str(),
      AllOf(HasSubstr("hosts: [gpu-000]\n"),
            HasSubstr("nic_sources:\n  rank: 0\n  rails: 0\n  agent: 1\n  "
                      "unknown: 1\n"),
            HasSubstr("nics:\n  - {rank: 0, host: gpu-000, gpu: 0, nic: "
                      "mlx5_0, source: agent, distance: root_port}\n"
                      "  - {rank: 1, host: gpu-000, gpu: 1, source: "
                      "unknown}\n")));
  // The declared layout is printed as declared: no ranks.
  EXPECT_THAT(t.out.str(), HasSubstr("ranks: []\n"));

  TestEnv json_env;
  options.json = true;
  EXPECT_EQ(LayoutShowCommand(client, "paired", options, json_env.env),
            kExitOk);
  const nlohmann::json j = nlohmann::json::parse(json_env.out.str());
  EXPECT_TRUE(j["ranks"].empty());
  EXPECT_EQ(j["nic_sources"]["agent"], 1);
  EXPECT_EQ(j["nics"][0]["nic"], "mlx5_0");
  EXPECT_EQ(j["nics"][0]["distance"], "root_port");
  EXPECT_FALSE(j["nics"][1].contains("nic"));
  EXPECT_EQ(j["nics"][1]["source"], "unknown");
}

TEST_F(LayoutCommandsTest, ShowUnknownJobIsNotFoundAndBadNameIsInput) {
  EXPECT_EQ(LayoutShowCommand(client, "nope", options, t.env), kExitNotFound);
  EXPECT_THAT(t.err.str(), HasSubstr("not found"));
  TestEnv bad;
  EXPECT_EQ(LayoutShowCommand(client, "../etc", options, bad.env),
            kExitInvalid);
  EXPECT_THAT(bad.err.str(), HasSubstr("JOB: \"../etc\" is not a job name"));
  EXPECT_EQ(client.calls, 1);
}

TEST_F(LayoutCommandsTest, Delete) {
  client.layouts["moe-train-42"] = *analysis::ParseLayout(kValidLayoutYaml);
  EXPECT_EQ(LayoutDeleteCommand(client, "moe-train-42", options, t.env),
            kExitOk);
  EXPECT_EQ(t.out.str(), "layout moe-train-42 deleted\n");
  EXPECT_TRUE(client.layouts.empty());
  // Deleting it again: what was asked for holds, so success, with a note.
  TestEnv again;
  EXPECT_EQ(LayoutDeleteCommand(client, "moe-train-42", options, again.env),
            kExitOk);
  EXPECT_EQ(again.out.str(), "");
  EXPECT_EQ(again.err.str(),
            "fabricdiag: layout moe-train-42 was not declared; nothing to "
            "delete\n");
  // Any other failure is still one.
  TestEnv down;
  client.fail = absl::UnavailableError("cannot reach collector fake:9811");
  EXPECT_EQ(LayoutDeleteCommand(client, "moe-train-42", options, down.env),
            kExitCollector);
}

constexpr char kTopologyYaml[] = R"(switches:
  - name: leaf-0
    uplinks: [swp49, swp50]
links:
  - {host: gpu-000, nic: mlx5_0, switch: leaf-0, port: swp1}
  - {host: gpu-001, nic: mlx5_0, switch: leaf-0, port: swp2}
)";

TEST_F(LayoutCommandsTest, TopologyApplyAndShow) {
  const std::string file = WriteTempFile("t.yaml", kTopologyYaml);
  EXPECT_EQ(TopologyApplyCommand(client, file, options, t.env), kExitOk);
  EXPECT_EQ(t.out.str(), "topology applied (1 switch, 2 links)\n");
  ASSERT_EQ(client.topology.links_size(), 2);

  TestEnv show;
  EXPECT_EQ(TopologyShowCommand(client, options, show.env), kExitOk);
  EXPECT_THAT(
      show.out.str(),
      AllOf(HasSubstr("name: leaf-0"), HasSubstr("uplinks: [swp49, swp50]"),
            HasSubstr("- {host: gpu-000, nic: mlx5_0, switch: leaf-0, "
                      "port: swp1}")));
  absl::StatusOr<v1::Topology> back = analysis::ParseTopology(show.out.str());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), client.topology.SerializeAsString());
}

TEST_F(LayoutCommandsTest, InvalidTopologyNamesTheField) {
  const std::string file = WriteTempFile(
      "t.yaml", absl::StrReplaceAll(kTopologyYaml, {{"switch: leaf-0, port: "
                                                     "swp2",
                                                     "switch: leaf-9, port: "
                                                     "swp2"}}));
  EXPECT_EQ(TopologyApplyCommand(client, file, options, t.env), kExitInvalid);
  EXPECT_THAT(t.err.str(), HasSubstr("links[1].switch"));
  EXPECT_EQ(client.calls, 0);
}

// A layout is read up to 16 MiB, a topology up to 64 MiB: a 17 MiB
// topology (a comment padding a valid one) is applied, a 17 MiB layout and a
// topology over 64 MiB are refused before parsing, naming the bound.
TEST_F(LayoutCommandsTest, FileSizeBoundsAreThoseOfTheirKind) {
  const std::string padding =
      "#" + std::string(analysis::kMaxDocumentBytes, 'x') + "\n";
  const std::string big_topology =
      WriteTempFile("big.yaml", padding + kTopologyYaml);
  EXPECT_EQ(TopologyApplyCommand(client, big_topology, options, t.env), kExitOk)
      << t.err.str();
  EXPECT_EQ(client.topology.links_size(), 2);

  TestEnv layout;
  EXPECT_EQ(LayoutApplyCommand(client, big_topology, options, layout.env),
            kExitInvalid);
  EXPECT_THAT(layout.err.str(),
              HasSubstr(absl::StrCat("larger than ",
                                     analysis::kMaxDocumentBytes, " bytes")));

  TestEnv huge;
  const std::string huge_topology = WriteTempFile(
      "huge.yaml", std::string(analysis::kMaxTopologyBytes + 1, ' '));
  EXPECT_EQ(TopologyApplyCommand(client, huge_topology, options, huge.env),
            kExitInvalid);
  EXPECT_THAT(huge.err.str(),
              HasSubstr(absl::StrCat("larger than ",
                                     analysis::kMaxTopologyBytes, " bytes")));
  // Only the first topology reached the collector.
  EXPECT_EQ(client.calls, 1);
}

}  // namespace
}  // namespace fabricdiag::cli
