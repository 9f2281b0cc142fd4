#include "collector/findings/finding_json.h"

#include <cmath>
#include <limits>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace fabricdiag::collector {
namespace {

int64_t Nanos(const char* rfc3339) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) << err;
  return absl::ToUnixNanos(t);
}

// docs/findings.md, "The finding object", as a proto.
v1::Finding InterfacesExample() {
  v1::Finding f;
  f.set_id("f-000123");
  f.set_kind("pfc_storm");
  f.set_severity(v1::SEVERITY_CRITICAL);
  f.set_state(v1::FINDING_STATE_ACTIVE);
  f.set_job("moe-train-42");
  f.set_node("gpu-003");
  f.add_nodes("gpu-003");
  f.set_device("mlx5_2");
  f.set_summary(
      "gpu-003 mlx5_2 has transmitted PFC pause on priority 3 for 94% of the "
      "last 5 s ...");
  (*f.mutable_evidence())["tx_pause_fraction"] = 0.94;
  (*f.mutable_evidence())["priority"] = 3;
  // Sub-second parts must not leak into the second-precision output.
  f.set_first_seen_unix_nanos(Nanos("2026-11-22T03:00:00.250Z"));
  f.set_last_seen_unix_nanos(Nanos("2026-11-22T03:00:05.999Z"));
  return f;
}

TEST(FindingJsonTest, MatchesInterfacesExampleExactly) {
  // As documented in docs/findings.md; keys in the documented order, evidence
  // keys sorted.
  const nlohmann::ordered_json expected = nlohmann::ordered_json::parse(R"({
    "id": "f-000123", "kind": "pfc_storm", "severity": "critical",
    "state": "active", "job": "moe-train-42", "node": "gpu-003",
    "nodes": ["gpu-003"], "device": "mlx5_2", "group": "",
    "summary": "gpu-003 mlx5_2 has transmitted PFC pause on priority 3 for 94% of the last 5 s ...",
    "evidence": {"priority": 3, "tx_pause_fraction": 0.94},
    "first_seen": "2026-11-22T03:00:00Z", "last_seen": "2026-11-22T03:00:05Z"})");
  const nlohmann::ordered_json got = FindingToJson(InterfacesExample());
  EXPECT_EQ(got.dump(), expected.dump());
  // "priority": 3, not 3.0: scripts compare with ==.
  EXPECT_TRUE(got["evidence"]["priority"].is_number_integer());
  EXPECT_FALSE(got.contains("resolved_at"));
}

TEST(FindingJsonTest, JobLabelsFollowTheSummarySorted) {
  v1::Finding f = InterfacesExample();
  (*f.mutable_labels())["team"] = "ml-infra";
  (*f.mutable_labels())["project"] = "llama";
  const nlohmann::ordered_json j = FindingToJson(f);
  EXPECT_EQ(j["labels"].dump(), R"({"project":"llama","team":"ml-infra"})");
  auto summary = j.find("summary");
  EXPECT_EQ((++summary).key(), "labels");
}

TEST(FindingJsonTest, ResolvedFindingHasResolvedAt) {
  v1::Finding f = InterfacesExample();
  f.set_state(v1::FINDING_STATE_RESOLVED);
  f.set_resolved_unix_nanos(Nanos("2026-11-22T03:01:00Z"));
  const nlohmann::ordered_json j = FindingToJson(f);
  EXPECT_EQ(j["state"], "resolved");
  EXPECT_EQ(j["resolved_at"], "2026-11-22T03:01:00Z");
  // resolved_at is the last key.
  EXPECT_EQ((--j.end()).key(), "resolved_at");
}

TEST(FindingJsonTest, EvidenceMergesTextAndNumbersWin) {
  v1::Finding f;
  (*f.mutable_evidence())["rx_gbps"] = 312.5;
  (*f.mutable_evidence())["experts"] = 4;
  (*f.mutable_evidence())["bad"] = std::nan("");
  (*f.mutable_evidence())["huge"] = std::numeric_limits<double>::infinity();
  (*f.mutable_evidence_text())["experts"] = "8-15";
  (*f.mutable_evidence_text())["ranks"] = "8,9,10";
  const nlohmann::ordered_json e = FindingToJson(f)["evidence"];
  EXPECT_EQ(
      e.dump(),
      R"({"bad":null,"experts":4,"huge":null,"ranks":"8,9,10","rx_gbps":312.5})");
}

TEST(FindingJsonTest, UnsetTimesAndEnumsAreExplicit) {
  v1::Finding f;
  f.set_severity(static_cast<v1::Severity>(42));
  const nlohmann::ordered_json j = FindingToJson(f);
  EXPECT_TRUE(j["first_seen"].is_null());
  EXPECT_TRUE(j["last_seen"].is_null());
  EXPECT_EQ(j["severity"], "unknown");
  EXPECT_EQ(j["state"], "unknown");
  EXPECT_TRUE(j["nodes"].is_array());
  EXPECT_TRUE(j["evidence"].is_object());
}

TEST(FindingJsonTest, HostileTextIsEscapedNotRaw) {
  v1::Finding f;
  f.set_summary("line\nbreak \"quoted\" \x1b[2J");
  const std::string dumped = FindingToJson(f).dump();
  EXPECT_EQ(dumped.find('\n'), std::string::npos);
  EXPECT_EQ(dumped.find('\x1b'), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(dumped)["summary"], f.summary());
}

TEST(FormatTest, Rfc3339AndAge) {
  EXPECT_EQ(FormatRfc3339(Nanos("2026-11-22T03:00:00.999999999Z")),
            "2026-11-22T03:00:00Z");
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatAge(absl::Seconds(-5)), "0s");
  EXPECT_EQ(FormatAge(absl::Seconds(42)), "42s");
  EXPECT_EQ(FormatAge(absl::Minutes(5)), "5m");
  EXPECT_EQ(FormatAge(absl::Hours(3)), "3h");
  EXPECT_EQ(FormatAge(absl::Hours(72)), "3d");
}

TEST(FormatTest, EventKindNames) {
  EXPECT_EQ(EventKindName(v1::FindingEvent::SNAPSHOT), "SNAPSHOT");
  EXPECT_EQ(EventKindName(v1::FindingEvent::OPENED), "OPENED");
  EXPECT_EQ(EventKindName(v1::FindingEvent::UPDATED), "UPDATED");
  EXPECT_EQ(EventKindName(v1::FindingEvent::RESOLVED), "RESOLVED");
}

}  // namespace
}  // namespace fabricdiag::collector
