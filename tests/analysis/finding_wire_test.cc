#include "analysis/finding_wire.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "analysis/finding.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace fabricdiag::analysis {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TEST(FindingWireTest, OneTableForSeveritiesAndTheirNames) {
  struct Row {
    Severity severity;
    v1::Severity wire;
    const char* name;
  };
  for (const Row& row :
       {Row{Severity::kInfo, v1::SEVERITY_INFO, "info"},
        Row{Severity::kWarning, v1::SEVERITY_WARNING, "warning"},
        Row{Severity::kCritical, v1::SEVERITY_CRITICAL, "critical"}}) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(SeverityToWire(row.severity), row.wire);
    EXPECT_EQ(SeverityFromWire(row.wire), row.severity);
    EXPECT_EQ(SeverityName(row.wire, "?"), row.name);
  }
  // What the table does not know: each caller says it its own way, and it
  // reads back as a warning.
  EXPECT_EQ(SeverityName(v1::SEVERITY_UNSPECIFIED, "unspecified"),
            "unspecified");
  EXPECT_EQ(SeverityName(static_cast<v1::Severity>(42), "unknown"), "unknown");
  EXPECT_EQ(SeverityFromWire(v1::SEVERITY_UNSPECIFIED), Severity::kWarning);
  EXPECT_EQ(SeverityFromWire(static_cast<v1::Severity>(42)),
            Severity::kWarning);
}

Finding PfcStorm() {
  Finding f;
  f.kind = "pfc_storm";
  f.severity = Severity::kCritical;
  f.job = "moe-42";
  f.node = "gpu-003";
  f.device = "mlx5_2";
  f.group = "ep:1";
  f.summary = "gpu-003 mlx5_2 has transmitted PFC pause for 94% of 5 s";
  f.evidence["tx_pause_fraction"] = 0.94;
  f.evidence["rx_bytes_per_second"] = std::nan("");
  f.evidence["cnp_per_second"] = std::numeric_limits<double>::infinity();
  f.evidence_text["victims"] = "gpu-004/mlx5_2";
  f.immediate = true;
  return f;
}

TEST(FindingWireTest, FillsEveryFieldAndDropsNonFiniteEvidence) {
  v1::Finding wire;
  wire.set_id("f-000007");
  wire.add_nodes("stale");
  wire.mutable_evidence()->insert({"stale", 1});
  FillWireFinding(PfcStorm(), &wire);
  EXPECT_EQ(wire.id(), "f-000007");  // identity is the store's
  EXPECT_EQ(wire.kind(), "pfc_storm");
  EXPECT_EQ(wire.severity(), v1::SEVERITY_CRITICAL);
  EXPECT_EQ(wire.job(), "moe-42");
  EXPECT_EQ(wire.node(), "gpu-003");
  EXPECT_THAT(wire.nodes(), ElementsAre("gpu-003"));  // [node] when empty
  EXPECT_EQ(wire.device(), "mlx5_2");
  EXPECT_EQ(wire.group(), "ep:1");
  EXPECT_EQ(wire.summary(), PfcStorm().summary);
  EXPECT_THAT(wire.evidence(),
              UnorderedElementsAre(Pair("tx_pause_fraction", 0.94)));
  EXPECT_THAT(wire.evidence_text(),
              UnorderedElementsAre(Pair("victims", "gpu-004/mlx5_2")));
}

TEST(FindingWireTest, ReadsBackWhatItWrote) {
  Finding f = PfcStorm();
  f.nodes = {"gpu-003", "gpu-004"};
  v1::Finding wire;
  FillWireFinding(f, &wire);
  Finding back = FindingFromWire(wire);
  // Every field FillWireFinding wrote (just tested) is read back: writing
  // what was read gives the same message.
  v1::Finding again;
  FillWireFinding(back, &again);
  EXPECT_TRUE(MessageDifferencer::Equals(wire, again))
      << wire.DebugString() << "\nvs\n"
      << again.DebugString();
  EXPECT_EQ(back.nodes, f.nodes);
  EXPECT_EQ(back.severity, Severity::kCritical);
  EXPECT_FALSE(back.immediate);  // not on the wire
}

}  // namespace
}  // namespace fabricdiag::analysis
