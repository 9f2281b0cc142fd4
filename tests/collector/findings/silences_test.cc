#include "collector/findings/silences.h"

#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/finding.h"
#include "collector/findings/finding_json.h"
#include "collector/findings/findings_metrics.h"
#include "collector/findings/findings_store.h"
#include "collector/state/object_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

using ScopedTempDir = ::fabricdiag::testing::TempDir;

v1::Finding Active(const std::string& id, const std::string& kind,
                   const std::string& node) {
  v1::Finding f;
  f.set_id(id);
  f.set_kind(kind);
  f.set_node(node);
  f.set_device("mlx5_1");
  f.set_job("moe-42");
  f.set_group("ep:3");
  f.set_severity(v1::SEVERITY_CRITICAL);
  f.set_state(v1::FINDING_STATE_ACTIVE);
  return f;
}

v1::CreateSilenceRequest Request(const std::string& matchers, int64_t seconds,
                                 const std::string& comment = "RMA 4711") {
  v1::CreateSilenceRequest request;
  absl::StatusOr<std::vector<v1::SilenceMatcher>> parsed =
      ParseMatchers(matchers);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  for (const v1::SilenceMatcher& m :
       parsed.value_or(std::vector<v1::SilenceMatcher>{})) {
    *request.add_matchers() = m;
  }
  request.set_duration_seconds(seconds);
  request.set_comment(comment);
  return request;
}

// --- matchers -------------------------------------------------------------

TEST(SilenceMatchersTest, ParsesKeysAndValues) {
  absl::StatusOr<std::vector<v1::SilenceMatcher>> m =
      ParseMatchers(" kind=pfc_storm , node=leaf-3,severity=critical");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 3u);
  EXPECT_EQ((*m)[0].key(), "kind");
  EXPECT_EQ((*m)[0].value(), "pfc_storm");
  EXPECT_EQ((*m)[1].key(), "node");
  EXPECT_EQ((*m)[1].value(), "leaf-3");
  EXPECT_EQ((*m)[2].value(), "critical");
}

TEST(SilenceMatchersTest, BadInputNamesTheFlagAndWhatIsWrong) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {"", "missing"},
           {"kind", "is not KEY=VALUE"},
           {"kind=pfc_storm,rack=r1", "unknown key \"rack\""},
           {"node=", "node has an empty value"},
           {"node=a,node=b", "node is given twice"},
           {"severity=page", "severity must be info, warning or critical"},
       }) {
    absl::StatusOr<std::vector<v1::SilenceMatcher>> m = ParseMatchers(c.text);
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << c.text;
    EXPECT_THAT(m.status().message(), HasSubstr("--matcher: ")) << c.text;
    EXPECT_THAT(m.status().message(), HasSubstr(c.says)) << c.text;
  }
}

TEST(SilenceMatchersTest, EveryMatcherMustMatch) {
  v1::Silence s;
  *s.mutable_matchers() = Request("kind=pfc_storm,node=leaf-3", 60).matchers();
  EXPECT_TRUE(SilenceMatches(s, Active("f-1", "pfc_storm", "leaf-3")));
  EXPECT_FALSE(SilenceMatches(s, Active("f-2", "pfc_storm", "leaf-4")));
  EXPECT_FALSE(SilenceMatches(s, Active("f-3", "link_errors", "leaf-3")));

  v1::Silence by_severity;
  *by_severity.mutable_matchers() =
      Request("severity=warning,group=ep:3", 60).matchers();
  v1::Finding warning = Active("f-4", "congestion", "gpu-1");
  EXPECT_FALSE(SilenceMatches(by_severity, warning));  // critical
  warning.set_severity(v1::SEVERITY_WARNING);
  EXPECT_TRUE(SilenceMatches(by_severity, warning));

  v1::Silence empty;  // never written, never matches everything
  EXPECT_FALSE(SilenceMatches(empty, warning));
}

// --- Marks ----------------------------------------------------------------

class MarksTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    marks_.reset();
    file_.reset();
    state_.reset();
    absl::StatusOr<std::unique_ptr<StateStore>> state =
        StateStore::Open(tmp_.path(), &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    file_ = std::make_unique<FileMarkState>(state_.get());
    marks_ = std::make_unique<Marks>(file_.get(), clock_);
    ASSERT_TRUE(marks_->Load().ok());
  }

  v1::Finding Marked(v1::Finding f) const {
    marks_->Mark(&f);
    return f;
  }

  ScopedTempDir tmp_;
  FakeClock clock_;
  std::unique_ptr<StateStore> state_;
  std::unique_ptr<FileMarkState> file_;
  std::unique_ptr<Marks> marks_;
};

TEST_F(MarksTest, ASilenceMarksWhatItMatchesUntilItEnds) {
  absl::StatusOr<v1::Silence> s = marks_->CreateSilence(
      Request("kind=pfc_storm,node=leaf-3", 4 * 3600), "alice");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->id(), ::testing::StartsWith("s-"));
  EXPECT_EQ(s->who(), "alice");
  EXPECT_EQ(s->ends_unix_nanos() - s->created_unix_nanos(),
            absl::ToInt64Nanoseconds(absl::Hours(4)));

  EXPECT_THAT(Marked(Active("f-1", "pfc_storm", "leaf-3")).silenced_by(),
              ElementsAre(s->id()));
  EXPECT_THAT(Marked(Active("f-2", "pfc_storm", "leaf-4")).silenced_by(),
              IsEmpty());
  // A resolved finding is never marked: its history reads as it happened.
  v1::Finding resolved = Active("f-3", "pfc_storm", "leaf-3");
  resolved.set_state(v1::FINDING_STATE_RESOLVED);
  EXPECT_THAT(Marked(resolved).silenced_by(), IsEmpty());

  clock_.Advance(absl::Hours(4) - absl::Seconds(1));
  EXPECT_TRUE(marks_->Silenced(Active("f-1", "pfc_storm", "leaf-3")));
  clock_.Advance(absl::Seconds(1));
  // Expired on its own: listed as expired, applied no more.
  EXPECT_FALSE(marks_->Silenced(Active("f-1", "pfc_storm", "leaf-3")));
  std::vector<v1::Silence> listed = marks_->ListSilences();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].expired());
  // Dropped from the list a week after it ended.
  clock_.Advance(kKeepExpiredSilences + absl::Seconds(1));
  EXPECT_THAT(marks_->ListSilences(), IsEmpty());
}

TEST_F(MarksTest, ExpireEndsASilenceNowAndUnknownIdsAreNotFound) {
  absl::StatusOr<v1::Silence> s =
      marks_->CreateSilence(Request("node=gpu-017", 7200), "alice");
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(marks_->Silenced(Active("f-1", "agent_down", "gpu-017")));
  clock_.Advance(absl::Minutes(5));
  absl::StatusOr<v1::Silence> expired = marks_->ExpireSilence(s->id(), "bob");
  ASSERT_TRUE(expired.ok()) << expired.status();
  EXPECT_TRUE(expired->expired());
  EXPECT_EQ(expired->expired_by(), "bob");
  EXPECT_EQ(expired->ends_unix_nanos(), absl::ToUnixNanos(clock_.Now()));
  EXPECT_FALSE(marks_->Silenced(Active("f-1", "agent_down", "gpu-017")));
  EXPECT_TRUE(marks_->ListSilences()[0].expired());

  absl::StatusOr<v1::Silence> unknown = marks_->ExpireSilence("s-nope", "bob");
  EXPECT_TRUE(absl::IsNotFound(unknown.status())) << unknown.status();
}

TEST_F(MarksTest, BadSilencesNameTheFieldAndWriteNothing) {
  struct Case {
    v1::CreateSilenceRequest request;
    const char* says;
  };
  v1::CreateSilenceRequest no_matchers = Request("node=a", 60);
  no_matchers.clear_matchers();
  v1::CreateSilenceRequest unknown_key = Request("node=a", 60);
  unknown_key.mutable_matchers(0)->set_key("rack");
  for (const Case& c : std::vector<Case>{
           {no_matchers, "--matcher: missing"},
           {unknown_key, "--matcher: unknown key"},
           {Request("node=a", 0), "--for: missing or not positive"},
           {Request("node=a", -60), "--for: missing or not positive"},
           {Request("node=a", 30 * 24 * 3600 + 1), "--for: at most"},
           {Request("node=a", 60, "  "), "--comment: required"},
           {Request("node=a", 60, std::string(2000, 'x')), "--comment: longer"},
       }) {
    absl::StatusOr<v1::Silence> s = marks_->CreateSilence(c.request, "alice");
    ASSERT_FALSE(s.ok()) << c.says;
    EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
    EXPECT_THAT(s.status().message(), HasSubstr(c.says));
  }
  EXPECT_THAT(marks_->ListSilences(), IsEmpty());
  // 30 days exactly is the cap, accepted.
  EXPECT_TRUE(
      marks_->CreateSilence(Request("node=a", 30 * 24 * 3600), "alice").ok());
}

TEST_F(MarksTest, AnAckMarksItsFindingOnly) {
  v1::Finding f = Active("f-000007", "tp_cross_node", "gpu-1");
  absl::StatusOr<v1::FindingAck> ack = marks_->Ack(f, "intended", "alice");
  ASSERT_TRUE(ack.ok()) << ack.status();
  v1::Finding marked = Marked(f);
  ASSERT_TRUE(marked.has_acked());
  EXPECT_EQ(marked.acked().who(), "alice");
  EXPECT_EQ(marked.acked().comment(), "intended");
  EXPECT_FALSE(
      Marked(Active("f-000008", "tp_cross_node", "gpu-1")).has_acked());
  // Ends when the finding resolves.
  f.set_state(v1::FINDING_STATE_RESOLVED);
  EXPECT_FALSE(Marked(f).has_acked());
  EXPECT_FALSE(marks_->Acked(f));
}

TEST_F(MarksTest, MarksSurviveARestartFromTheStateDir) {
  absl::StatusOr<v1::Silence> s =
      marks_->CreateSilence(Request("kind=pfc_storm", 3600), "alice");
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(
      marks_->Ack(Active("f-000009", "pfc_storm", "gpu-2"), "seen", "bob")
          .ok());
  ASSERT_TRUE(marks_->Forget("gpu-099", "carol").ok());

  Open();  // a new collector process on the same --state_dir

  v1::Finding f = Marked(Active("f-000009", "pfc_storm", "gpu-2"));
  EXPECT_THAT(f.silenced_by(), ElementsAre(s->id()));
  ASSERT_TRUE(f.has_acked());
  EXPECT_EQ(f.acked().who(), "bob");
  EXPECT_EQ(marks_->ForgottenAt("gpu-099"), clock_.Now());
  EXPECT_EQ(marks_->ForgottenAt("gpu-098"), std::nullopt);
  ASSERT_EQ(marks_->ListSilences().size(), 1u);
  EXPECT_EQ(marks_->ListSilences()[0].comment(), "RMA 4711");
}

TEST_F(MarksTest, ADamagedMarksFileIsMovedAsideAndMarksStartEmpty) {
  ASSERT_TRUE(
      marks_->CreateSilence(Request("kind=pfc_storm", 3600), "alice").ok());
  marks_.reset();
  file_.reset();
  state_.reset();
  ASSERT_TRUE(WriteObjectFile(absl::StrCat(tmp_.path(), "/marks.pb"),
                              "\xff\xff not a protobuf", clock_.Now())
                  .ok());
  Open();
  EXPECT_THAT(marks_->ListSilences(), IsEmpty());
  ASSERT_EQ(state_->problems().size(), 1u);
  EXPECT_THAT(state_->problems()[0], HasSubstr("marks.pb"));
}

// A write that fails (a full disk; here a directory where the new file is
// written first) is an error to the operator, logged and counted:
// marks.pb keeps the marks before it, the marks served stay as they were,
// and the next write that fits writes them all.
TEST_F(MarksTest, AFailedWriteKeepsTheFileAndTheMarksAsTheyWere) {
  absl::StatusOr<v1::Silence> kept =
      marks_->CreateSilence(Request("kind=pfc_storm", 3600), "alice");
  ASSERT_TRUE(kept.ok());
  const std::string blocker = absl::StrCat(tmp_.path(), "/marks.pb.tmp");
  ASSERT_EQ(mkdir(blocker.c_str(), 0700), 0);
  ASSERT_EQ(state_->write_errors(), 0u);

  absl::StatusOr<v1::Silence> refused =
      marks_->CreateSilence(Request("node=leaf-3", 3600), "bob");
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("marks.pb.tmp"));
  EXPECT_FALSE(
      marks_->Ack(Active("f-000009", "pfc_storm", "gpu-2"), "", "bob").ok());
  EXPECT_FALSE(marks_->Forget("gpu-099", "bob").ok());
  EXPECT_EQ(state_->write_errors(), 3u);
  EXPECT_FALSE(state_->last_write_status().ok());  // /healthz: 503
  // Served as before: the first silence, nothing refused.
  ASSERT_EQ(marks_->ListSilences().size(), 1u);
  EXPECT_EQ(marks_->ListSilences()[0].id(), kept->id());
  EXPECT_FALSE(Marked(Active("f-000009", "pfc_storm", "gpu-2")).has_acked());
  EXPECT_EQ(marks_->ForgottenAt("gpu-099"), std::nullopt);

  // Room again: the next mark is written with every one before it.
  ASSERT_EQ(rmdir(blocker.c_str()), 0);
  ASSERT_TRUE(marks_->Forget("gpu-099", "bob").ok());
  EXPECT_TRUE(state_->last_write_status().ok());
  Open();  // what a restart reads
  ASSERT_EQ(marks_->ListSilences().size(), 1u);
  EXPECT_EQ(marks_->ListSilences()[0].id(), kept->id());
  EXPECT_EQ(marks_->ForgottenAt("gpu-099"), clock_.Now());
}

// A MarkState whose watcher the test drives, as a cluster's bucket would.
class WatchedMarkState final : public MarkState {
 public:
  std::string Describe() const override { return "test"; }
  absl::Status Put(const v1::OperatorMark&) override {
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<v1::OperatorMark>> ReadAll() override {
    return std::vector<v1::OperatorMark>{};
  }
  void Watch(std::function<void(const v1::OperatorMark&)> apply) override {
    apply_ = std::move(apply);
  }
  void StopWatching() override {}
  void Deliver(const v1::OperatorMark& mark) { apply_(mark); }

 private:
  std::function<void(const v1::OperatorMark&)> apply_;
};

TEST(MarksWatchTest, ForgetsOfOtherCollectorsReachTheHook) {
  FakeClock clock;
  WatchedMarkState state;
  Marks marks(&state, clock);
  ASSERT_TRUE(marks.Load().ok());
  std::vector<std::string> forgotten;
  marks.OnWatchedForget([&](const v1::NodeForget& f) {
    // Called outside the marks' lock: the marks can be read.
    EXPECT_TRUE(marks.ForgottenAt(f.node()).has_value());
    forgotten.push_back(f.node());
  });
  v1::OperatorMark forget;
  forget.mutable_forget()->set_node("gpu-017");
  forget.mutable_forget()->set_at_unix_nanos(absl::ToUnixNanos(clock.Now()));
  state.Deliver(forget);
  v1::OperatorMark ack;
  ack.mutable_ack()->set_finding_id("f-000001");
  state.Deliver(ack);
  EXPECT_THAT(forgotten, ElementsAre("gpu-017"));

  marks.OnWatchedForget(nullptr);
  forget.mutable_forget()->set_node("gpu-018");
  state.Deliver(forget);
  EXPECT_THAT(forgotten, ElementsAre("gpu-017"));
  EXPECT_TRUE(marks.ForgottenAt("gpu-018").has_value());
}

// --- the surfaces: the store's listings, JSON and /metrics -----------------

TEST_F(MarksTest, TheStoreListsMarkedFindingsAndMetricsLabelThem) {
  FindingsStore findings(state_.get(), FindingsStoreOptions{});
  ASSERT_TRUE(findings.Load().ok());
  findings.SetMarks(marks_.get());
  analysis::Finding storm;
  storm.kind = "pfc_storm";
  storm.severity = analysis::Severity::kCritical;
  storm.node = "leaf-3";
  storm.device = "swp7";
  storm.summary = "pause storm";
  analysis::Finding other = storm;
  other.node = "leaf-4";
  ASSERT_TRUE(findings.Update({storm, other}, clock_.Now(), "pfc").ok());
  ASSERT_TRUE(
      marks_->CreateSilence(Request("node=leaf-3", 3600), "alice").ok());

  FindingsFilter filter;
  std::vector<v1::Finding> listed = findings.List(filter);
  ASSERT_EQ(listed.size(), 2u);
  for (const v1::Finding& f : listed) {
    EXPECT_EQ(f.silenced_by_size(), f.node() == "leaf-3" ? 1 : 0) << f.node();
    const nlohmann::ordered_json j = FindingToJson(f);
    EXPECT_EQ(j.contains("silenced_by"), f.node() == "leaf-3");
    EXPECT_FALSE(j.contains("acked"));
  }

  FindingsMetrics metrics(&findings, nullptr, nullptr);
  const std::string text =
      prometheus::TextSerializer().Serialize(metrics.Collect());
  EXPECT_THAT(text, HasSubstr("node=\"leaf-3\",device=\"swp7\","
                              "silenced=\"true\",acked=\"false\",id="));
  EXPECT_THAT(text, HasSubstr("node=\"leaf-4\",device=\"swp7\","
                              "silenced=\"false\",acked=\"false\",id="));
}

TEST(FindingJsonMarksTest, AckedAndSilencedByOnlyWhenTheyApply) {
  v1::Finding f = Active("f-000001", "pfc_storm", "gpu-1");
  nlohmann::ordered_json plain = FindingToJson(f);
  EXPECT_FALSE(plain.contains("acked"));
  EXPECT_FALSE(plain.contains("silenced_by"));
  f.mutable_acked()->set_who("alice");
  f.mutable_acked()->set_comment("known");
  f.mutable_acked()->set_at_unix_nanos(
      absl::ToUnixNanos(absl::FromUnixSeconds(1795000000)));
  f.add_silenced_by("s-01");
  nlohmann::ordered_json j = FindingToJson(f);
  EXPECT_EQ(j["acked"]["who"], "alice");
  EXPECT_EQ(j["acked"]["comment"], "known");
  EXPECT_EQ(j["acked"]["at"], "2026-11-18T11:06:40Z");
  EXPECT_EQ(j["silenced_by"], nlohmann::ordered_json::array({"s-01"}));
}

}  // namespace
}  // namespace fabricdiag::collector
