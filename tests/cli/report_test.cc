// report: the runbook's advice, the three renderers on fixed input, and the
// command against the in-memory client.
#include "cli/report.h"

#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/finding.h"
#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"
#include "analysis/traffic_model.h"
#include "cli/commands.h"
#include "cli/report_advice.h"
#include "cli/report_rates.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/finding_fixtures.h"
#include "tests/cli/test_env.h"
#include "tests/client/fake_collector_client.h"

namespace fabricdiag::cli {
namespace {

using client::testing::FakeCollectorClient;
using testing::At;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MakeFinding;
using ::testing::Not;
using testing::TempPath;
using testing::TestEnv;

constexpr char kDoc[] = R"(# Findings

## pfc_storm

**What to do.** Act on the source.

1. Source on a host NIC: reset it.

Make sure watchdogs are on.

---

## pfc_storm_extra

**What to do.** Not this one.

## link_flap

Nothing to do here.

## congestion

**What to do.** Find the queue.
## agent_down
)";

TEST(WhatToDoTest, TakesTheKindsParagraphAndWhatFollowsUpToTheRule) {
  EXPECT_EQ(WhatToDoIn(kDoc, "pfc_storm"),
            "Act on the source.\n\n1. Source on a host NIC: reset it.\n\n"
            "Make sure watchdogs are on.");
  EXPECT_EQ(WhatToDoIn(kDoc, "pfc_storm_extra"), "Not this one.");
  // Ends at the next heading too.
  EXPECT_EQ(WhatToDoIn(kDoc, "congestion"), "Find the queue.");
}

TEST(WhatToDoTest, NothingForAMissingSectionOrParagraph) {
  EXPECT_EQ(WhatToDoIn(kDoc, "link_flap"), "");
  EXPECT_EQ(WhatToDoIn(kDoc, "agent_down"), "");
  EXPECT_EQ(WhatToDoIn(kDoc, "no_such_kind"), "");
  EXPECT_EQ(WhatToDoIn(kDoc, "pfc"), "");
}

// The runbook compiled in has advice for every kind the analyzers raise: a
// kind added without its "What to do" in docs/findings.md fails here.
TEST(WhatToDoTest, TheRunbookAdvisesOnEveryKnownKind) {
  for (const char* kind : analysis::kKnownFindingKinds) {
    EXPECT_THAT(WhatToDo(kind), Not(IsEmpty())) << kind;
  }
  const std::string pfc = WhatToDo("pfc_storm");
  EXPECT_THAT(pfc, ::testing::StartsWith("Act on the source"));
  EXPECT_THAT(pfc, HasSubstr("PFC watchdogs"));
  EXPECT_THAT(pfc, Not(HasSubstr("---")));
}

TEST(ReportFormatTest, ParsesTheThreeFormats) {
  EXPECT_EQ(*ParseReportFormat(""), ReportFormat::kMarkdown);
  EXPECT_EQ(*ParseReportFormat("md"), ReportFormat::kMarkdown);
  EXPECT_EQ(*ParseReportFormat("html"), ReportFormat::kHtml);
  EXPECT_EQ(*ParseReportFormat("json"), ReportFormat::kJson);
  absl::StatusOr<ReportFormat> pdf = ParseReportFormat("pdf");
  EXPECT_TRUE(absl::IsInvalidArgument(pdf.status()));
  EXPECT_THAT(pdf.status().message(),
              HasSubstr("--format: unknown format \"pdf\" (one of md, html, "
                        "json)"));
}

TEST(ReportDurationTest, TwoLargestUnits) {
  EXPECT_EQ(ReportDuration(-5), "0s");
  EXPECT_EQ(ReportDuration(0), "0s");
  EXPECT_EQ(ReportDuration(59), "59s");
  EXPECT_EQ(ReportDuration(60), "1m");
  EXPECT_EQ(ReportDuration(61), "1m 1s");
  EXPECT_EQ(ReportDuration(3 * 3600 + 12 * 60 + 5), "3h 12m");
  EXPECT_EQ(ReportDuration(2 * 86400 + 4 * 3600), "2d 4h");
}

v1::Layout ExampleLayout() {
  absl::StatusOr<v1::Layout> layout =
      analysis::ParseLayout(testing::kValidLayoutYaml);
  EXPECT_TRUE(layout.ok()) << layout.status();
  v1::LayoutDeclaration* d = layout->mutable_declaration();
  d->set_source("slurm");
  d->set_owner("alice");
  d->set_declared_unix_nanos(At(-3600));
  d->set_revision(3);
  return *layout;
}

// A resolved, acknowledged finding and an active, silenced one.
ReportInput ExampleInput() {
  ReportInput in;
  in.job = "moe-train-42";
  in.collector = "fake:9811";
  in.generated_unix_nanos = At(600);
  in.layout = ExampleLayout();
  in.parallelism = "tp=2 pp=1 dp=8 ep=4";
  v1::Finding storm =
      MakeFinding("f-000002", "pfc_storm", v1::SEVERITY_CRITICAL, 300);
  storm.set_node("gpu-001");
  storm.set_nodes(0, "gpu-001");
  storm.set_group("dp:0");
  storm.set_summary("PFC storm from gpu-001 mlx5_2");
  (*storm.mutable_evidence())["pause_fraction"] = 0.5;
  (*storm.mutable_evidence_text())["priority"] = "3";
  storm.set_last_seen_unix_nanos(At(590));
  storm.add_silenced_by("s-1");
  v1::Finding flap =
      MakeFinding("f-000001", "link_flap", v1::SEVERITY_WARNING, 0);
  flap.set_state(v1::FINDING_STATE_RESOLVED);
  flap.set_node("gpu-000");
  flap.clear_nodes();
  flap.set_device("mlx5_0");
  flap.set_summary("link flapped");
  flap.set_last_seen_unix_nanos(At(100));
  flap.set_resolved_unix_nanos(At(125));
  flap.mutable_acked()->set_who("bob");
  flap.mutable_acked()->set_at_unix_nanos(At(60));
  flap.mutable_acked()->set_comment("cable swap");
  in.findings = {storm, flap};
  v1::Silence used;
  used.set_id("s-1");
  v1::SilenceMatcher* m = used.add_matchers();
  m->set_key("node");
  m->set_value("gpu-001");
  used.set_who("carol");
  used.set_created_unix_nanos(At(200));
  used.set_ends_unix_nanos(At(7400));
  used.set_comment("RMA");
  v1::Silence unrelated = used;
  unrelated.set_id("s-2");
  in.silences = {used, unrelated};
  return in;
}

TEST(BuildReportTest, OrdersFindingsAndDerivesGroupsDurationsAndAdvice) {
  const JobReport r = BuildReport(ExampleInput());
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].finding.id(), "f-000001");  // opened first
  EXPECT_EQ(r.findings[0].duration_seconds, 125);
  EXPECT_EQ(r.findings[1].duration_seconds, 300);  // active: to generated
  EXPECT_EQ(r.active, 1);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].name, "dp:0");
  EXPECT_EQ(r.groups[0].hosts,
            (std::vector<std::string>{"gpu-000", "gpu-001"}));
  ASSERT_EQ(r.silences.size(), 1u);  // only the one marking a finding
  EXPECT_EQ(r.silences[0].id(), "s-1");
  ASSERT_EQ(r.advice.size(), 2u);
  EXPECT_EQ(r.advice[0].kind, "link_flap");
  EXPECT_EQ(r.advice[1].what_to_do, WhatToDo("pfc_storm"));
  ASSERT_EQ(r.dimensions.size(), 3u);  // tp, dp, ep: pp and cp are 1
  EXPECT_EQ(r.dimensions[0].dim, "tp");
  EXPECT_EQ(r.dimensions[0].degree, 2u);
  EXPECT_EQ(r.dimensions[0].groups, 8u);
  EXPECT_EQ(r.dimensions[2].dim, "ep");
  EXPECT_EQ(r.dimensions[2].groups, 4u);
  EXPECT_EQ(r.until_unix_nanos, At(600));
  EXPECT_FALSE(r.until_given);
}

TEST(RenderReportMarkdownTest, LayoutTimelineFindingsMarksAndAdvice) {
  const std::string md = RenderReportMarkdown(BuildReport(ExampleInput()));
  EXPECT_THAT(md, HasSubstr("# Report: job moe-train-42\n"));
  EXPECT_THAT(md, HasSubstr("Range: the job's whole recorded history to "
                            "2026-11-22T03:10:00Z (now)."));
  EXPECT_THAT(md, HasSubstr("**2 finding(s)**, 1 still active."));
  EXPECT_THAT(md, HasSubstr("| Parallelism | tp=2 pp=1 dp=8 ep=4 |\n"));
  EXPECT_THAT(md, HasSubstr("| Declared | 2026-11-22T02:00:00Z by alice via "
                            "slurm, revision 3 |\n"));
  EXPECT_THAT(md, HasSubstr("| tp | 2 | 8 |\n"));
  EXPECT_THAT(md, HasSubstr("- dp:0: gpu-000, gpu-001\n"));
  EXPECT_THAT(md, HasSubstr("## Per-group rates\n\nNo per-group rates: this "
                            "collector holds no rates of the job's NICs"));
  EXPECT_THAT(
      md, HasSubstr("| f-000001 | link\\_flap | warning | "
                    "2026-11-22T03:00:00Z | 2026-11-22T03:01:40Z | "
                    "2026-11-22T03:02:05Z | 2m 5s | acked by bob |\n"
                    "| f-000002 | pfc\\_storm | critical | "
                    "2026-11-22T03:05:00Z | 2026-11-22T03:09:50Z | active | "
                    "5m | silenced by s-1 |\n"));
  EXPECT_THAT(md, HasSubstr("- Acknowledged by bob at 2026-11-22T03:01:00Z: "
                            "cable swap\n"));
  EXPECT_THAT(md, HasSubstr("  - pause\\_fraction=0.5\n  - priority=3\n"));
  EXPECT_THAT(md, HasSubstr("| s-1 | node=gpu-001 | carol | "
                            "2026-11-22T03:03:20Z | 2026-11-22T05:03:20Z | "
                            "RMA |\n"));
  EXPECT_THAT(md, HasSubstr("### pfc\\_storm\n\n" + WhatToDo("pfc_storm")));
}

TEST(RenderReportMarkdownTest, NoLayoutAndNoFindingsSaySo) {
  ReportInput in;
  in.job = "gone";
  in.collector = "fake:9811";
  in.generated_unix_nanos = At(600);
  in.since_unix_nanos = At(0);
  in.until_unix_nanos = At(300);
  const std::string md = RenderReportMarkdown(BuildReport(in));
  EXPECT_THAT(md, HasSubstr("Range: from 2026-11-22T03:00:00Z to "
                            "2026-11-22T03:05:00Z.\n"));
  EXPECT_THAT(md, HasSubstr("The job has no layout now"));
  EXPECT_THAT(md, HasSubstr("No finding touched the job in this range."));
  EXPECT_THAT(md, Not(HasSubstr("## What to do")));
}

ReportInput HostileInput() {
  ReportInput in = ExampleInput();
  v1::Finding& f = in.findings[0];
  f.set_summary(
      "a | b\n# fake heading <script>alert(1)</script> "
      "[x](javascript:alert(1))");
  (*f.mutable_evidence_text())["link_partner"] =
      "\"><img src=x onerror=alert(1)>";
  f.mutable_acked()->set_who("<b>eve</b>");
  f.mutable_acked()->set_at_unix_nanos(At(400));
  f.set_id("f-<i>");
  return in;
}

TEST(RenderReportMarkdownTest, CollectorTextCannotBreakOut) {
  const std::string md = RenderReportMarkdown(BuildReport(HostileInput()));
  EXPECT_THAT(md, HasSubstr("a \\| b?\\# fake heading \\<script\\>alert(1)"
                            "\\</script\\> \\[x\\](javascript:alert(1))"));
  EXPECT_THAT(md, Not(HasSubstr("\n# fake")));
  // Every '<' of the collector's text is escaped (the runbook's advice at
  // the end is the doc's own Markdown).
  const std::string collector_part = md.substr(0, md.find("## What to do"));
  for (size_t at = collector_part.find('<'); at != std::string::npos;
       at = collector_part.find('<', at + 1)) {
    EXPECT_EQ(collector_part[at - 1], '\\') << collector_part.substr(at, 20);
  }
  EXPECT_THAT(md, HasSubstr("link\\_partner=\"\\>\\<img src=x"));
}

TEST(RenderReportHtmlTest, StandsAloneWithTimeline) {
  const std::string html = RenderReportHtml(BuildReport(ExampleInput()));
  EXPECT_THAT(html, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("<svg id=\"timeline\""));
  EXPECT_THAT(html, HasSubstr("<g class=\"row\" data-finding=\"f-000001\">"));
  EXPECT_THAT(html, HasSubstr("<rect class=\"bar critical\""));
  EXPECT_THAT(html, HasSubstr("<circle class=\"ack\""));
  EXPECT_THAT(html, HasSubstr("<section class=\"finding\" id=\"f-000002\">"));
  EXPECT_THAT(html, HasSubstr("<style>"));
  // Nothing to run, nothing to fetch.
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("url(")));
  EXPECT_THAT(html, HasSubstr("default-src 'none'"));
  // The runbook's code spans survive as code.
  EXPECT_THAT(html, HasSubstr("<code>mlxlink</code>"));
}

// The timeline's bars are placed by time: the resolved finding's bar covers
// the first 125 of the 600 seconds, the active one runs to the end.
TEST(RenderReportHtmlTest, TimelineBarsAreScaledToTheRange) {
  const std::string html = RenderReportHtml(BuildReport(ExampleInput()));
  // 640 px for 600 s from x=120: 0..125 s is x 120, width 133.
  EXPECT_THAT(html, HasSubstr("class=\"bar warning\" x=\"120\" y=\"11\" "
                              "width=\"133\""));
  // 300..600 s: x 440, width 320.
  EXPECT_THAT(html, HasSubstr("class=\"bar critical\" x=\"440\" y=\"31\" "
                              "width=\"320\""));
}

TEST(RenderReportHtmlTest, CollectorTextIsEscaped) {
  const std::string html = RenderReportHtml(BuildReport(HostileInput()));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  EXPECT_THAT(html, Not(HasSubstr("<b>eve")));
  EXPECT_THAT(html, Not(HasSubstr("<i>")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("link_partner=&quot;&gt;&lt;img src=x "
                              "onerror=alert(1)&gt;"));
  EXPECT_THAT(html, HasSubstr("data-finding=\"f-&lt;i&gt;\""));
}

TEST(RenderReportJsonTest, TheDocumentedObject) {
  const nlohmann::json j =
      nlohmann::json::parse(RenderReportJson(BuildReport(ExampleInput())));
  EXPECT_EQ(j["report_version"], 1);
  EXPECT_EQ(j["job"], "moe-train-42");
  EXPECT_EQ(j["since"], nullptr);
  EXPECT_EQ(j["until"], "2026-11-22T03:10:00Z");
  EXPECT_EQ(j["stale_seconds"], nullptr);
  EXPECT_EQ(j["layout"]["parallelism"], "tp=2 pp=1 dp=8 ep=4");
  EXPECT_EQ(j["layout"]["hosts"],
            nlohmann::json::array({"gpu-000", "gpu-001"}));
  EXPECT_EQ(j["layout"]["owner"], "alice");
  EXPECT_EQ(j["layout"]["revision"], 3);
  EXPECT_EQ(j["layout"]["dimensions"][0],
            nlohmann::json({{"dim", "tp"}, {"degree", 2}, {"groups", 8}}));
  EXPECT_EQ(j["groups"][0]["group"], "dp:0");
  EXPECT_EQ(j["group_rates"], nullptr);
  EXPECT_EQ(j["active"], 1);
  ASSERT_EQ(j["findings"].size(), 2u);
  EXPECT_EQ(j["findings"][0]["id"], "f-000001");
  EXPECT_EQ(j["findings"][0]["duration_seconds"], 125);
  EXPECT_EQ(j["findings"][0]["acked"]["who"], "bob");
  EXPECT_EQ(j["findings"][1]["silenced_by"], nlohmann::json::array({"s-1"}));
  ASSERT_EQ(j["silences"].size(), 1u);
  EXPECT_EQ(j["silences"][0]["comment"], "RMA");
  EXPECT_EQ(j["what_to_do"]["pfc_storm"], WhatToDo("pfc_storm"));
}

TEST(RenderReportJsonTest, NoLayoutIsNull) {
  ReportInput in;
  in.job = "gone";
  in.generated_unix_nanos = At(0);
  const nlohmann::json j =
      nlohmann::json::parse(RenderReportJson(BuildReport(in)));
  EXPECT_EQ(j["layout"], nullptr);
  EXPECT_TRUE(j["findings"].empty());
}

// ---- Per-group rates -------------------------------------------------------

std::vector<v1::SeriesPoint> Points(
    std::initializer_list<std::pair<int, double>> points) {
  std::vector<v1::SeriesPoint> out;
  for (const auto& [at, rate] : points) {
    v1::SeriesPoint p;
    p.set_unix_nanos(At(at));
    p.set_rate(rate);
    out.push_back(p);
  }
  return out;
}

analysis::LayoutModel ExampleModel(bool with_plan) {
  v1::Layout layout = ExampleLayout();
  if (with_plan) {
    v1::ModelSpec* m = layout.mutable_model();
    m->set_params(1.4e11);
    m->set_hidden(8192);
    m->set_layers(80);
    m->set_seq_len(4096);
    m->set_micro_batch(1);
    m->set_micro_batches(16);
    m->set_dtype_bytes(2);
    m->set_experts(64);
    m->set_top_k(2);
  }
  absl::StatusOr<analysis::LayoutModel> model =
      analysis::LayoutModel::Build(layout);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// Every NIC of the example layout receives 9 then 11 GB/s (80 Gb/s on
// average, 88 at peak) and sends 1 GB/s; gpu-001's mlx5_2 and mlx5_3, the
// NICs of tp:5 (ranks 10 and 11), receive 1 GB/s.
std::vector<NicRates> ExampleRates(const analysis::LayoutModel& model) {
  std::vector<NicRates> nics = LayoutNics(model);
  for (NicRates& n : nics) {
    const bool slow =
        n.host == "gpu-001" && (n.nic == "mlx5_2" || n.nic == "mlx5_3");
    n.rx =
        slow ? Points({{10, 1e9}, {20, 1e9}}) : Points({{10, 9e9}, {20, 11e9}});
    n.tx = Points({{10, 1e9}, {20, 1e9}});
  }
  return nics;
}

constexpr analysis::Dim kTpDp[] = {analysis::Dim::kTp, analysis::Dim::kDp};

TEST(GroupRatesTest, LayoutNicsAreEveryHostsNicsByName) {
  const std::vector<NicRates> nics = LayoutNics(ExampleModel(false));
  ASSERT_EQ(nics.size(), 16u);
  EXPECT_EQ(nics[0].host, "gpu-000");
  EXPECT_EQ(nics[0].nic, "mlx5_0");
  EXPECT_EQ(nics[15].host, "gpu-001");
  EXPECT_EQ(nics[15].nic, "mlx5_7");
}

TEST(GroupRatesTest, WithoutAPlanAGroupIsHeldAgainstTheMedianGroup) {
  const analysis::LayoutModel model = ExampleModel(false);
  const GroupRatesResult r = BuildGroupRates(
      model, nullptr, kTpDp, ExampleRates(model), At(0), At(600));
  ASSERT_TRUE(r.rates.has_value()) << r.note;
  EXPECT_EQ(r.rates->basis, "median");
  EXPECT_EQ(r.rates->nics, 16u);
  EXPECT_EQ(r.rates->reporting, 16u);
  EXPECT_EQ(r.rates->from_unix_nanos, At(10));
  EXPECT_EQ(r.rates->to_unix_nanos, At(20));
  ASSERT_EQ(r.rates->dimensions.size(), 2u);
  const DimensionRates& tp = r.rates->dimensions[0];
  EXPECT_EQ(tp.dim, "tp");
  EXPECT_EQ(tp.groups, 8u);
  EXPECT_EQ(tp.far_off, 1u);
  ASSERT_EQ(tp.shown.size(), 8u);
  // The far-off group first.
  EXPECT_EQ(tp.shown[0].group, "tp:5");
  EXPECT_TRUE(tp.shown[0].far_off);
  EXPECT_DOUBLE_EQ(*tp.shown[0].mean_gbps, 8.0);
  EXPECT_DOUBLE_EQ(*tp.shown[0].expected_gbps, 80.0);
  EXPECT_EQ(FarOffText(tp.shown[0]), "far off: 0.10x");
  EXPECT_EQ(tp.shown[1].group, "tp:0");
  EXPECT_FALSE(tp.shown[1].far_off);
  EXPECT_DOUBLE_EQ(*tp.shown[1].mean_gbps, 80.0);
  EXPECT_DOUBLE_EQ(*tp.shown[1].peak_gbps, 88.0);
  EXPECT_EQ(tp.shown[1].nics, 2u);
  EXPECT_EQ(tp.shown[1].reporting, 2u);
  // The slow NICs are 2 of dp:0's 8: not enough to be far off.
  const DimensionRates& dp = r.rates->dimensions[1];
  EXPECT_EQ(dp.groups, 2u);
  EXPECT_EQ(dp.far_off, 0u);
  EXPECT_THAT(r.note, HasSubstr("held against the median group"));
  // The range starts before the oldest rate held.
  EXPECT_THAT(r.note, HasSubstr("cover the range from 2026-11-22T03:00:10Z "
                                "only: the oldest the collector still holds"));
}

TEST(GroupRatesTest, ThePlanGivesTheShapeAndTheCountersThePace) {
  const analysis::LayoutModel model = ExampleModel(true);
  absl::StatusOr<analysis::TrafficModel> traffic =
      analysis::TrafficModel::Predict(model, analysis::LinkParams{});
  ASSERT_TRUE(traffic.ok());
  std::vector<NicRates> uniform = LayoutNics(model);
  for (NicRates& n : uniform) n.rx = Points({{10, 9e9}, {20, 11e9}});
  GroupRatesResult r =
      BuildGroupRates(model, &*traffic, kTpDp, uniform, At(0), At(600));
  ASSERT_TRUE(r.rates.has_value()) << r.note;
  EXPECT_EQ(r.rates->basis, "plan");
  // Every NIC of this layout is predicted the same bytes: at a uniform
  // measured rate nothing is off and each group is expected at its mean.
  for (const DimensionRates& d : r.rates->dimensions) {
    EXPECT_EQ(d.far_off, 0u) << d.dim;
    for (const GroupRate& g : d.shown) {
      EXPECT_NEAR(*g.expected_gbps, 80.0, 1e-6) << g.group;
    }
  }
  EXPECT_THAT(r.note, Not(HasSubstr("median")));

  r = BuildGroupRates(model, &*traffic, kTpDp, ExampleRates(model), At(0),
                      At(600));
  ASSERT_TRUE(r.rates.has_value());
  EXPECT_EQ(r.rates->dimensions[0].far_off, 1u);
  EXPECT_EQ(r.rates->dimensions[0].shown[0].group, "tp:5");
  // The pace is the measured total over the predicted one: (14 x 80 + 2 x
  // 8) / 16 Gb/s per NIC.
  EXPECT_NEAR(*r.rates->dimensions[0].shown[0].expected_gbps, 71.0, 1e-6);
}

TEST(GroupRatesTest, PointsOutsideTheRangeAreLeftOut) {
  const analysis::LayoutModel model = ExampleModel(false);
  std::vector<NicRates> nics = ExampleRates(model);
  // Before the range and after it: neither counts, the oldest is held.
  nics[0].rx.insert(nics[0].rx.begin(), Points({{-30, 400e9}})[0]);
  nics[0].rx.push_back(Points({{700, 400e9}})[0]);
  const GroupRatesResult r =
      BuildGroupRates(model, nullptr, kTpDp, nics, At(0), At(600));
  ASSERT_TRUE(r.rates.has_value());
  EXPECT_EQ(r.rates->from_unix_nanos, At(0));
  EXPECT_EQ(r.rates->to_unix_nanos, At(20));
  EXPECT_DOUBLE_EQ(*r.rates->dimensions[0].shown[1].peak_gbps, 88.0);
  EXPECT_THAT(r.note, Not(HasSubstr("cover the range")));
}

TEST(GroupRatesTest, NothingToShowSaysWhy) {
  const analysis::LayoutModel model = ExampleModel(false);
  // A range that ended before the oldest rate the collector holds.
  GroupRatesResult r = BuildGroupRates(model, nullptr, kTpDp,
                                       ExampleRates(model), At(-600), At(0));
  EXPECT_FALSE(r.rates.has_value());
  EXPECT_THAT(r.note, HasSubstr("the collector no longer holds rates of this "
                                "range; the oldest it holds is from "
                                "2026-11-22T03:00:10Z (the collector keeps "
                                "the newest --window_samples rates"));
  // A range after the newest.
  r = BuildGroupRates(model, nullptr, kTpDp, ExampleRates(model), At(60),
                      At(600));
  EXPECT_FALSE(r.rates.has_value());
  EXPECT_THAT(r.note,
              HasSubstr("none in this range; the newest the "
                        "collector holds is from 2026-11-22T03:00:20Z"));
  // Nothing held at all.
  r = BuildGroupRates(model, nullptr, kTpDp, LayoutNics(model), At(0), At(600));
  EXPECT_FALSE(r.rates.has_value());
  EXPECT_THAT(r.note, HasSubstr("holds no rates of the job's NICs"));
  // A layout naming no NICs.
  v1::Layout no_rails = ExampleLayout();
  no_rails.clear_rails();
  absl::StatusOr<analysis::LayoutModel> bare =
      analysis::LayoutModel::Build(no_rails);
  ASSERT_TRUE(bare.ok());
  r = BuildGroupRates(*bare, nullptr, kTpDp, {}, At(0), At(600));
  EXPECT_FALSE(r.rates.has_value());
  EXPECT_THAT(r.note, HasSubstr("the layout names no NICs"));
}

TEST(GroupRatesTest, ANicWithoutRatesIsCountedNotGuessed) {
  const analysis::LayoutModel model = ExampleModel(false);
  std::vector<NicRates> nics = ExampleRates(model);
  nics[0].rx.clear();  // gpu-000 mlx5_0: tp:0's first NIC
  nics[0].tx.clear();
  const GroupRatesResult r =
      BuildGroupRates(model, nullptr, kTpDp, nics, At(0), At(600));
  ASSERT_TRUE(r.rates.has_value());
  EXPECT_EQ(r.rates->reporting, 15u);
  const GroupRate& tp0 = r.rates->dimensions[0].shown[1];
  EXPECT_EQ(tp0.group, "tp:0");
  EXPECT_EQ(tp0.reporting, 1u);
  EXPECT_DOUBLE_EQ(*tp0.mean_gbps, 80.0);
  EXPECT_THAT(r.note, HasSubstr("1 of the 16 NICs of the layout have no rate "
                                "in the range."));
}

TEST(GroupRatesTest, ManyGroupsShowTheFarOffOnesFirst) {
  // 8 hosts, tp=2: 32 TP groups; the last one, on gpu-007's mlx5_6 and
  // mlx5_7, is slow.
  v1::Layout layout = ExampleLayout();
  layout.clear_hosts();
  for (int h = 0; h < 8; ++h) layout.add_hosts(absl::StrCat("gpu-00", h));
  layout.mutable_parallelism()->set_dp(32);
  absl::StatusOr<analysis::LayoutModel> model =
      analysis::LayoutModel::Build(layout);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<NicRates> nics = LayoutNics(*model);
  for (NicRates& n : nics) {
    const bool slow =
        n.host == "gpu-007" && (n.nic == "mlx5_6" || n.nic == "mlx5_7");
    n.rx = Points({{10, slow ? 1e9 : 10e9}});
  }
  const GroupRatesResult r =
      BuildGroupRates(*model, nullptr, kTpDp, nics, At(0), At(600));
  ASSERT_TRUE(r.rates.has_value());
  const DimensionRates& tp = r.rates->dimensions[0];
  EXPECT_EQ(tp.groups, 32u);
  ASSERT_EQ(tp.shown.size(), kRateGroupsShown);
  EXPECT_EQ(tp.shown[0].group, "tp:31");
  EXPECT_EQ(tp.shown[1].group, "tp:0");
  JobReport report = BuildReport(ExampleInput());
  report.group_rates = r.rates;
  EXPECT_THAT(RenderReportMarkdown(report),
              HasSubstr("\n8 more groups not shown.\n"));
  EXPECT_THAT(RenderReportHtml(report),
              HasSubstr("<p class=\"note\">8 more groups not shown.</p>"));
}

JobReport ReportWithRates() {
  ReportInput in = ExampleInput();
  in.since_unix_nanos = At(0);
  in.nic_rates = ExampleRates(ExampleModel(false));
  return BuildReport(in);
}

TEST(RenderGroupRatesTest, MarkdownTablePerDimension) {
  const std::string md = RenderReportMarkdown(ReportWithRates());
  EXPECT_THAT(md, HasSubstr("## Per-group rates\n\nMeans and peaks in Gb/s "
                            "of 16 of 16 NICs from 2026-11-22T03:00:10Z to "
                            "2026-11-22T03:00:20Z"));
  EXPECT_THAT(md, HasSubstr("### tp (8 groups, 1 far off)\n\n| Group | NICs "
                            "reporting | Mean | Peak | Expected | |\n"));
  EXPECT_THAT(md, HasSubstr("| tp:5 | 2/2 | 8.0 | 8.0 | 80.0 | **far off: "
                            "0.10x** |\n| tp:0 | 2/2 | 80.0 | 88.0 | 80.0 |  "
                            "|\n"));
  EXPECT_THAT(md, HasSubstr("### ep (4 groups"));
}

TEST(RenderGroupRatesTest, HtmlTableWithBars) {
  const std::string html = RenderReportHtml(ReportWithRates());
  EXPECT_THAT(html, HasSubstr("<table class=\"rates\" data-dim=\"tp\">"));
  EXPECT_THAT(html, HasSubstr("<tr data-group=\"tp:5\"><td>tp:5</td><td>2/2"
                              "</td><td>8.0</td><td>8.0</td><td>80.0</td>"));
  // Scaled to the dimension's largest value, 88 Gb/s: 200 px.
  EXPECT_THAT(html, HasSubstr("<rect class=\"mean far\" x=\"0\" y=\"2\" "
                              "width=\"18\""));
  EXPECT_THAT(html, HasSubstr("<line class=\"expected\" x1=\"182\""));
  EXPECT_THAT(html, HasSubstr("<td class=\"far\">far off: 0.10x</td>"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
}

TEST(RenderGroupRatesTest, JsonObject) {
  const nlohmann::json j =
      nlohmann::json::parse(RenderReportJson(ReportWithRates()));
  const nlohmann::json& rates = j["group_rates"];
  EXPECT_EQ(rates["basis"], "median");
  EXPECT_EQ(rates["from"], "2026-11-22T03:00:10Z");
  EXPECT_EQ(rates["to"], "2026-11-22T03:00:20Z");
  EXPECT_EQ(rates["nics"], 16);
  EXPECT_EQ(rates["nics_reporting"], 16);
  ASSERT_EQ(rates["dimensions"].size(), 3u);
  EXPECT_EQ(rates["dimensions"][0]["dim"], "tp");
  EXPECT_EQ(rates["dimensions"][0]["far_off"], 1);
  EXPECT_EQ(rates["dimensions"][0]["shown"][0],
            nlohmann::json({{"group", "tp:5"},
                            {"nics", 2},
                            {"nics_reporting", 2},
                            {"mean_gbps", 8.0},
                            {"peak_gbps", 8.0},
                            {"expected_gbps", 80.0},
                            {"far_off", true}}));
  EXPECT_THAT(j["group_rates_note"].get<std::string>(),
              HasSubstr("median group"));
}

class ReportCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    t.clock.Advance(absl::Seconds(600 - 65));
    const ReportInput in = ExampleInput();
    client.layouts["moe-train-42"] = *in.layout;
    client.findings = in.findings;
    client.silences.add_silences()->CopyFrom(in.silences[0]);
    client.check_jobs = true;
    options.job = "moe-train-42";
  }
  FakeCollectorClient client;
  TestEnv t;
  CommandOptions options;
};

TEST_F(ReportCommandTest, MarkdownOnStdoutFromEveryPage) {
  client.findings_page_size = 1;
  ASSERT_EQ(ReportCommand(client, options, t.env), kExitOk) << t.err.str();
  EXPECT_EQ(client.findings_calls, 2);
  EXPECT_TRUE(client.last_findings_request.all());
  EXPECT_EQ(client.last_findings_request.job(), "moe-train-42");
  EXPECT_EQ(client.last_findings_request.since_unix_nanos(), 0);
  EXPECT_THAT(t.out.str(), HasSubstr("| f-000001 | link\\_flap |"));
  EXPECT_THAT(t.out.str(), HasSubstr("| f-000002 | pfc\\_storm |"));
  EXPECT_THAT(t.out.str(), HasSubstr("| Parallelism | tp=2 pp=1 dp=8 |"));
  EXPECT_THAT(t.out.str(), HasSubstr("| s-1 | node=gpu-001 | carol |"));
  EXPECT_THAT(t.err.str(), IsEmpty());
}

TEST_F(ReportCommandTest, RangeGoesToTheCollector) {
  options.since = "5m";
  options.until = "2026-11-22T03:09:00Z";
  options.format = "json";
  ASSERT_EQ(ReportCommand(client, options, t.env), kExitOk) << t.err.str();
  EXPECT_EQ(client.last_findings_request.since_unix_nanos(), At(300));
  EXPECT_EQ(client.last_findings_request.until_unix_nanos(), At(540));
  const nlohmann::json j = nlohmann::json::parse(t.out.str());
  EXPECT_EQ(j["since"], "2026-11-22T03:05:00Z");
  EXPECT_EQ(j["until"], "2026-11-22T03:09:00Z");
}

TEST_F(ReportCommandTest, HtmlToAFile) {
  options.format = "html";
  options.output = TempPath("report.html");
  ASSERT_EQ(ReportCommand(client, options, t.env), kExitOk) << t.err.str();
  EXPECT_THAT(t.out.str(), IsEmpty());
  EXPECT_THAT(t.err.str(), HasSubstr("written to " + options.output));
  std::ifstream in(options.output);
  std::stringstream html;
  html << in.rdbuf();
  EXPECT_THAT(html.str(), HasSubstr("<svg id=\"timeline\""));
}

TEST_F(ReportCommandTest, JobWithFindingsButNoLayoutIsReported) {
  client.layouts.clear();
  ASSERT_EQ(ReportCommand(client, options, t.env), kExitOk) << t.err.str();
  EXPECT_THAT(t.out.str(), HasSubstr("The job has no layout now"));
  EXPECT_THAT(t.out.str(), HasSubstr("f-000002"));
}

TEST_F(ReportCommandTest, UnknownJobIsNotFoundNamingTheKnownJobs) {
  options.job = "typo";
  EXPECT_EQ(ReportCommand(client, options, t.env), kExitNotFound);
  EXPECT_THAT(t.err.str(), HasSubstr("unknown job \"typo\""));
  EXPECT_THAT(t.err.str(), HasSubstr("known jobs: moe-train-42"));
  EXPECT_THAT(t.out.str(), IsEmpty());
}

TEST_F(ReportCommandTest, BadFlagsAreExitTwoBeforeAnyCall) {
  struct Case {
    CommandOptions options;
    std::string message;
  };
  std::vector<Case> cases(5);
  cases[0].message = "--job: required";
  cases[1].options.job = "moe-train-42";
  cases[1].options.format = "pdf";
  cases[1].message = "--format: unknown format \"pdf\"";
  cases[2].options.job = "moe-train-42";
  cases[2].options.since = "yesterday";
  cases[2].message = "--since: \"yesterday\" is neither";
  cases[3].options.job = "moe-train-42";
  cases[3].options.since = "1h";
  cases[3].options.until = "2h";
  cases[3].message = "--until: 2h";
  cases[4].options.job = "moe-train-42";
  cases[4].options.output = "/nonexistent-dir/report.md";
  cases[4].message = "--output: cannot write /nonexistent-dir/report.md";
  for (size_t i = 0; i < cases.size(); ++i) {
    TestEnv e;
    EXPECT_EQ(ReportCommand(client, cases[i].options, e.env), kExitInvalid)
        << i;
    EXPECT_THAT(e.err.str(), HasSubstr(cases[i].message)) << i;
    EXPECT_THAT(e.out.str(), IsEmpty()) << i;
  }
  // Only --output is found out after the report was gathered.
  EXPECT_EQ(client.findings_calls, 1);
}

TEST_F(ReportCommandTest, CollectorDownIsExitOne) {
  client.fail = absl::UnavailableError(
      "cannot reach collector fake:9811: connection refused");
  EXPECT_EQ(ReportCommand(client, options, t.env), kExitCollector);
  EXPECT_EQ(t.err.str(),
            "fabricdiag: cannot reach collector fake:9811: connection "
            "refused\n");
  EXPECT_THAT(t.out.str(), IsEmpty());
}

TEST_F(ReportCommandTest, SilencesAreAskedForOnlyWhenAFindingIsSilenced) {
  client.findings[0].clear_silenced_by();
  client.fail = absl::OkStatus();
  ASSERT_EQ(ReportCommand(client, options, t.env), kExitOk);
  // GetLayout, ListLayouts, ListNodes, ListFindings, the rates: no
  // ListSilences.
  EXPECT_EQ(client.calls - client.series_requests.size(), 4u);
  EXPECT_THAT(t.out.str(), Not(HasSubstr("## Silences")));
}

// `node` reports every NIC's RDMA data counters, `points` each.
void AddSeries(FakeCollectorClient& client, const std::string& node,
               const std::vector<v1::SeriesPoint>& points) {
  for (int i = 0; i < 8; ++i) {
    for (const char* name : {"port_rcv_data", "port_xmit_data"}) {
      v1::SeriesRates s;
      s.set_subsystem("SUBSYSTEM_RDMA");
      s.set_device(absl::StrCat("mlx5_", i));
      s.set_port(1);
      s.set_name(name);
      s.set_unit("bytes");
      for (const v1::SeriesPoint& p : points) *s.add_points() = p;
      client.series[node].push_back(s);
    }
  }
}

// gpu-000 reports every NIC's RDMA data counters; gpu-001 is unknown to
// the collector.
void AddSeries(FakeCollectorClient& client) {
  AddSeries(client, "gpu-000", Points({{540, 5e9}, {590, 5e9}}));
}

// The node as ListNodes lists it: its agent streams to `collector`, this
// one when `remote` is false.
void ListNode(FakeCollectorClient& client, const std::string& node,
              const std::string& collector, bool remote) {
  v1::NodeStatus* n = client.nodes.add_nodes();
  n->set_node(node);
  n->set_up(true);
  n->set_collector(collector);
  n->set_remote(remote);
}

TEST_F(ReportCommandTest, RatesOfTheLayoutsNicsFromGetSeries) {
  AddSeries(client);
  options.format = "json";
  ASSERT_EQ(ReportCommand(client, options, t.env), kExitOk) << t.err.str();
  // gpu-000: RX and TX of 8 NICs; gpu-001: one NotFound, then no more.
  ASSERT_EQ(client.series_requests.size(), 17u);
  const v1::GetSeriesRequest& first = client.series_requests[0];
  EXPECT_EQ(first.node(), "gpu-000");
  EXPECT_EQ(first.device(), "mlx5_0");
  EXPECT_EQ(first.name(), "port_rcv_data");
  EXPECT_EQ(first.last_seconds(), 3600u);
  EXPECT_EQ(client.series_requests[1].name(), "port_xmit_data");
  EXPECT_EQ(client.series_requests[16].node(), "gpu-001");
  const nlohmann::json j = nlohmann::json::parse(t.out.str());
  EXPECT_EQ(j["group_rates"]["nics"], 16);
  EXPECT_EQ(j["group_rates"]["nics_reporting"], 8);
  EXPECT_EQ(j["group_rates"]["dimensions"][0]["shown"][0]["mean_gbps"], 40.0);
  EXPECT_THAT(j["group_rates_note"].get<std::string>(),
              HasSubstr("8 of the 16 NICs of the layout have no rate"));
}

TEST_F(ReportCommandTest, ARangeOlderThanTheCollectorServesAsksForNoRates) {
  AddSeries(client);
  options.since = "2026-11-22T00:00:00Z";
  options.until = "2026-11-22T01:00:00Z";
  ASSERT_EQ(ReportCommand(client, options, t.env), kExitOk) << t.err.str();
  EXPECT_THAT(client.series_requests, IsEmpty());
  EXPECT_THAT(t.out.str(),
              HasSubstr("No per-group rates: the range ended at "
                        "2026-11-22T01:00:00Z, 7800 s before the report, and "
                        "the collector keeps the newest --window\\_samples"));
}

TEST_F(ReportCommandTest, RatesTheCollectorRefusesAreANoteNotAFailure) {
  client.series_fail = absl::PermissionDeniedError(
      "token \"ci\" lacks scope read for GetSeries");
  ASSERT_EQ(ReportCommand(client, options, t.env), kExitOk) << t.err.str();
  EXPECT_EQ(client.series_requests.size(), 1u);
  EXPECT_THAT(t.out.str(),
              HasSubstr("No per-group rates: reading them from the collector "
                        "failed: token \"ci\" lacks scope read"));
  EXPECT_THAT(t.out.str(), HasSubstr("| f-000002 | pfc\\_storm |"));
}

// A cluster: gpu-001 streams to col-b (col-a lists it as remote), and
// streamed to col-c before, which still holds its older points. The report
// asked of col-a reads gpu-001's rates from both, each point once, and asks
// col-a for gpu-000's alone.
TEST_F(ReportCommandTest, RatesOfNodesOnOtherCollectorsAreReadThere) {
  AddSeries(client);
  ListNode(client, "gpu-000", "col-a", false);
  ListNode(client, "gpu-001", "col-b", true);
  FakeCollectorClient b("b:9811");
  ListNode(b, "gpu-000", "col-a", true);
  ListNode(b, "gpu-001", "col-b", false);
  AddSeries(b, "gpu-001", Points({{560, 2e9}, {590, 2e9}}));
  FakeCollectorClient c("c:9811");
  ListNode(c, "gpu-001", "col-c", false);
  AddSeries(c, "gpu-001", Points({{530, 2e9}, {560, 2e9}}));
  t.env.collectors = {"fake:9811", "b:9811", "c:9811"};
  std::vector<std::string> connected;
  t.env.connect = [&](const std::string& address) {
    connected.push_back(address);
    FakeCollectorClient* which = address == "b:9811" ? &b : &c;
    // Not owned: the test's clients outlive the command.
    return std::shared_ptr<CollectorClient>(which, [](CollectorClient*) {});
  };
  options.format = "json";
  ASSERT_EQ(ReportCommand(client, options, t.env), kExitOk) << t.err.str();
  EXPECT_THAT(connected, ElementsAre("b:9811", "c:9811"));
  for (const v1::GetSeriesRequest& r : client.series_requests) {
    EXPECT_EQ(r.node(), "gpu-000");
  }
  EXPECT_EQ(client.series_requests.size(), 16u);
  EXPECT_EQ(b.series_requests.size(), 16u);
  EXPECT_EQ(c.series_requests.size(), 16u);
  const nlohmann::json j = nlohmann::json::parse(t.out.str());
  EXPECT_EQ(j["group_rates"]["nics"], 16);
  EXPECT_EQ(j["group_rates"]["nics_reporting"], 16);
  // From col-c's oldest point: its points count too.
  EXPECT_EQ(j["group_rates"]["from"],
            absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixNanos(At(530)),
                             absl::UTCTimeZone()));
  EXPECT_THAT(j["group_rates_note"].get<std::string>(),
              Not(HasSubstr("not in this report")));
}

// A node whose collector --collector does not list, and a listed collector
// that cannot be reached: the report says whose rates are missing and why,
// and shows the rest.
TEST_F(ReportCommandTest, RatesOnCollectorsNotAskedAreNamedNotGuessed) {
  AddSeries(client);
  ListNode(client, "gpu-000", "col-a", false);
  ListNode(client, "gpu-001", "col-b", true);
  FakeCollectorClient down("c:9811");
  down.fail = absl::UnavailableError("cannot reach collector c:9811");
  t.env.collectors = {"fake:9811", "c:9811"};
  t.env.connect = [&](const std::string&) {
    return std::shared_ptr<CollectorClient>(&down, [](CollectorClient*) {});
  };
  ASSERT_EQ(ReportCommand(client, options, t.env), kExitOk) << t.err.str();
  EXPECT_THAT(
      t.out.str(),
      HasSubstr("The rates of 1 host (gpu-001) are not in this report: their "
                "agents stream to collector col-b, which no address of "
                "--collector answered for"));
  EXPECT_THAT(t.out.str(),
              HasSubstr("No rates could be read from collector c:9811 "
                        "(cannot reach collector c:9811)."));
  EXPECT_THAT(t.out.str(), HasSubstr("8 of the 16 NICs"));
}

// A collector that listed its nodes and then stopped answering is asked
// once, not once per NIC (each a --timeout): its hosts have no rates, the
// note says why, the rest of the report stands.
TEST_F(ReportCommandTest, ACollectorThatStopsAnsweringIsAskedOnce) {
  AddSeries(client);
  ListNode(client, "gpu-000", "col-a", false);
  ListNode(client, "gpu-001", "col-b", true);
  FakeCollectorClient b("b:9811");
  ListNode(b, "gpu-001", "col-b", false);
  AddSeries(b, "gpu-001", Points({{560, 2e9}, {590, 2e9}}));
  b.series_fail = absl::DeadlineExceededError("no answer within 10s");
  t.env.collectors = {"fake:9811", "b:9811"};
  t.env.connect = [&](const std::string&) {
    return std::shared_ptr<CollectorClient>(&b, [](CollectorClient*) {});
  };
  ASSERT_EQ(ReportCommand(client, options, t.env), kExitOk) << t.err.str();
  EXPECT_EQ(b.series_requests.size(), 1u);
  EXPECT_THAT(t.out.str(),
              HasSubstr("No rates could be read from collector b:9811 (no "
                        "answer within 10s); the hosts it holds have no "
                        "rates here."));
  EXPECT_THAT(t.out.str(), HasSubstr("8 of the 16 NICs"));
}

}  // namespace
}  // namespace fabricdiag::cli
