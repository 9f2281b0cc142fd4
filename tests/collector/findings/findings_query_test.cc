#include "collector/findings/findings_query.h"

#include <memory>
#include <string>
#include <vector>

#include "collector/findings/findings_request.h"
#include "collector/findings/findings_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const absl::Time kNow = absl::FromUnixSeconds(1'795'000'000);

TEST(ParseQueryTimeTest, DurationsAgoAndRfc3339) {
  EXPECT_EQ(*ParseQueryTime("since", "2h", kNow), kNow - absl::Hours(2));
  EXPECT_EQ(*ParseQueryTime("since", "30m", kNow), kNow - absl::Minutes(30));
  EXPECT_EQ(*ParseQueryTime("since", "7d", kNow), kNow - absl::Hours(24 * 7));
  EXPECT_EQ(*ParseQueryTime("since", "1h30m", kNow), kNow - absl::Minutes(90));
  EXPECT_EQ(*ParseQueryTime("until", "2026-11-29T10:00:00Z", kNow),
            absl::FromCivil(absl::CivilSecond(2026, 11, 29, 10, 0, 0),
                            absl::UTCTimeZone()));
  EXPECT_EQ(*ParseQueryTime("until", "2026-11-29T12:00:00+02:00", kNow),
            absl::FromCivil(absl::CivilSecond(2026, 11, 29, 10, 0, 0),
                            absl::UTCTimeZone()));
}

TEST(ParseQueryTimeTest, MalformedNamesTheField) {
  for (const char* bad : {"", "yesterday", "2", "2x", "-2h", "0s", "d", "+3d",
                          "2026-11-29", "2026-13-01T00:00:00Z", "99999999d"}) {
    absl::StatusOr<absl::Time> t = ParseQueryTime("--since", bad, kNow);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(t.status().message()), StartsWith("--since: "))
        << bad;
  }
  EXPECT_THAT(
      std::string(ParseQueryDuration("retention", "0d").status().message()),
      HasSubstr("not a positive duration"));
}

TEST(ParseSeverityTest, KnownNamesOnly) {
  EXPECT_EQ(*ParseSeverity("severity", "info"), v1::SEVERITY_INFO);
  EXPECT_EQ(*ParseSeverity("severity", "warning"), v1::SEVERITY_WARNING);
  EXPECT_EQ(*ParseSeverity("severity", "critical"), v1::SEVERITY_CRITICAL);
  absl::StatusOr<v1::Severity> bad = ParseSeverity("severity", "Critical");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "severity: unknown severity \"Critical\" (one of info, warning, "
            "critical)");
}

TEST(CheckFindingKindTest, ATypoListsTheKnownKinds) {
  EXPECT_TRUE(CheckFindingKind("--kind", "").ok());
  EXPECT_TRUE(CheckFindingKind("--kind", "pfc_storm").ok());
  absl::Status typo = CheckFindingKind("--kind", "pfc_strom");
  EXPECT_EQ(typo.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(typo.message()),
      StartsWith("--kind: unknown finding kind \"pfc_strom\"; known "
                 "kinds: agent_down, agent_missing, cabling_mismatch, "));
  EXPECT_THAT(std::string(typo.message()), HasSubstr(", pfc_storm, "));
}

TEST(FindingsPageTokenTest, RoundTripsAndRefusesGarbage) {
  EXPECT_EQ(*ParseFindingsPageToken("page_token", ""), 0u);
  EXPECT_EQ(*ParseFindingsPageToken("page_token", FindingsPageToken(1234)),
            1234u);
  for (const char* bad : {"garbage", "v1.", "v1.x", "v1.0", "v1.-5", "1234",
                          "v2.12", "v1.99999999999999999999999"}) {
    absl::StatusOr<uint64_t> n = ParseFindingsPageToken("page_token", bad);
    ASSERT_FALSE(n.ok()) << bad;
    EXPECT_THAT(std::string(n.status().message()), StartsWith("page_token: "))
        << bad;
  }
}

TEST(CheckListFindingsRequestTest, NamesTheFieldAtFault) {
  v1::ListFindingsRequest request;
  EXPECT_TRUE(CheckListFindingsRequest(request).ok());
  request.set_since_unix_nanos(2'000);
  request.set_until_unix_nanos(1'000);
  EXPECT_THAT(std::string(CheckListFindingsRequest(request).message()),
              StartsWith("until: 1970-01-01T00:00:00Z is before since"));
  request.set_until_unix_nanos(2'000);  // an instant is a window
  EXPECT_TRUE(CheckListFindingsRequest(request).ok());
  request.set_kind("nope");
  EXPECT_THAT(std::string(CheckListFindingsRequest(request).message()),
              StartsWith("kind: "));
  request.set_kind("");
  request.set_min_severity(static_cast<v1::Severity>(42));
  EXPECT_THAT(std::string(CheckListFindingsRequest(request).message()),
              StartsWith("min_severity: "));
  request.set_min_severity(v1::SEVERITY_UNSPECIFIED);
  request.set_page_token("garbage");
  EXPECT_THAT(std::string(CheckListFindingsRequest(request).message()),
              StartsWith("page_token: "));
}

// The collector's side: jobs checked against layouts and findings, pages
// with a token to follow.
class AnswerListFindingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<StateStore>> state =
        StateStore::Open(tmp_.path() + "/state", &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    findings_ =
        std::make_unique<FindingsStore>(state_.get(), FindingsStoreOptions{});
    ASSERT_TRUE(findings_->Load().ok());
    // Only the job names count here.
    layouts_.layouts["declared-job"] = nullptr;
  }

  void Open(int count, const std::string& job) {
    std::vector<analysis::Finding> reports;
    for (int i = 0; i < count; ++i) {
      analysis::Finding r;
      r.kind = "link_errors";
      r.job = job;
      r.node = "gpu-" + std::to_string(i);
      reports.push_back(r);
    }
    clock_.Advance(absl::Seconds(1));
    ASSERT_TRUE(findings_->Update(reports, clock_.Now(), "links").ok());
  }

  ::fabricdiag::testing::TempDir tmp_;
  FakeClock clock_;
  std::unique_ptr<StateStore> state_;
  std::unique_ptr<FindingsStore> findings_;
  RegistrySnapshot layouts_;
};

TEST_F(AnswerListFindingsTest, AnUnknownJobListsTheKnownOnes) {
  Open(1, "finding-job");
  v1::ListFindingsRequest request;
  for (const char* known : {"declared-job", "finding-job"}) {
    request.set_job(known);
    EXPECT_TRUE(AnswerListFindings(request, *findings_, layouts_).ok())
        << known;
  }
  request.set_job("typo");
  absl::StatusOr<v1::ListFindingsResponse> r =
      AnswerListFindings(request, *findings_, layouts_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "job: unknown job \"typo\" (no layout and no finding names it); "
            "known jobs: declared-job, finding-job");
}

TEST_F(AnswerListFindingsTest, PagesBeyondTheDefaultLimit) {
  Open(2'500, "big");
  v1::ListFindingsRequest request;
  std::vector<std::string> ids;
  int pages = 0;
  for (;;) {
    absl::StatusOr<v1::ListFindingsResponse> r =
        AnswerListFindings(request, *findings_, layouts_);
    ASSERT_TRUE(r.ok()) << r.status();
    ++pages;
    for (const v1::Finding& f : r->findings()) ids.push_back(f.id());
    if (r->next_page_token().empty()) break;
    request.set_page_token(r->next_page_token());
  }
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(ids.size(), 2'500u);
  EXPECT_EQ(ids.front(), "f-002500");
  EXPECT_EQ(ids.back(), "f-000001");
  EXPECT_TRUE(std::is_sorted(ids.rbegin(), ids.rend()));
}

TEST_F(AnswerListFindingsTest, AWindowListsResolvedFindingsToo) {
  Open(1, "");
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(findings_->Update({}, clock_.Now(), "links").ok());
  v1::ListFindingsRequest request;
  EXPECT_EQ(AnswerListFindings(request, *findings_, layouts_)->findings_size(),
            0);
  request.set_since_unix_nanos(
      absl::ToUnixNanos(clock_.Now() - absl::Hours(1)));
  EXPECT_EQ(AnswerListFindings(request, *findings_, layouts_)->findings_size(),
            1);
  request.set_page_token("garbage");
  EXPECT_EQ(AnswerListFindings(request, *findings_, layouts_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fabricdiag::collector
