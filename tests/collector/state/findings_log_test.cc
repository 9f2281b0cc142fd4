#include "collector/state/findings_log.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;

StoredFinding Finding(const std::string& id, const std::string& source) {
  StoredFinding stored;
  stored.finding.set_id(id);
  stored.finding.set_kind("pfc_storm");
  stored.source = source;
  return stored;
}

std::vector<std::string> Ids(const LoadedFindings& loaded) {
  std::vector<std::string> ids;
  for (const StoredFinding& f : loaded.findings) ids.push_back(f.finding.id());
  return ids;
}

TEST(ReplayFindingsLogTest, AnEmptyLogHoldsNoFindings) {
  const FindingsReplay replay = ReplayFindingsLog("");
  EXPECT_TRUE(replay.loaded.findings.empty());
  EXPECT_EQ(replay.loaded.next_id, 1u);
  EXPECT_TRUE(replay.damage.empty());
}

TEST(ReplayFindingsLogTest, TheLastVersionWinsAndNextIdSurvivesCompaction) {
  StoredFinding resolved = Finding("f-000002", "");
  resolved.finding.set_kind("link_flap");
  const std::string log =
      EncodeFindingsLog({Finding("f-000001", "pfc_storm")}, 40) +
      EncodeFindingRecords({Finding("f-000002", "pfc_storm"), resolved});
  const FindingsReplay replay = ReplayFindingsLog(log);
  EXPECT_TRUE(replay.damage.empty());
  EXPECT_FALSE(replay.loaded.dropped_torn_record);
  EXPECT_THAT(Ids(replay.loaded),
              ::testing::ElementsAre("f-000001", "f-000002"));
  EXPECT_EQ(replay.loaded.findings[1].finding.kind(), "link_flap");
  EXPECT_EQ(replay.loaded.findings[1].source, "");
  EXPECT_EQ(replay.loaded.next_id, 40u);
  EXPECT_EQ(replay.good_end, log.size());
}

TEST(ReplayFindingsLogTest, ATornLastRecordIsDroppedNotDamage) {
  const std::string whole =
      EncodeFindingsLog({Finding("f-000001", "pfc_storm")}, 2);
  const std::string torn =
      EncodeFindingRecords({Finding("f-000002", "pfc_storm")});
  const FindingsReplay replay =
      ReplayFindingsLog(whole + torn.substr(0, torn.size() - 3));
  EXPECT_TRUE(replay.damage.empty());
  EXPECT_TRUE(replay.loaded.dropped_torn_record);
  EXPECT_THAT(Ids(replay.loaded), ::testing::ElementsAre("f-000001"));
  EXPECT_EQ(replay.good_end, whole.size());
}

TEST(ReplayFindingsLogTest, DamageInTheMiddleCostsOnlyTheDamagedRecord) {
  const std::string head =
      EncodeFindingsLog({Finding("f-000001", "pfc_storm")}, 2);
  std::string bad = EncodeFindingRecords({Finding("f-000002", "pfc_storm")});
  bad[bad.size() - 1] ^= 0x55;  // the checksum no longer matches
  const std::string tail =
      EncodeFindingRecords({Finding("f-000003", "pfc_storm")});
  const FindingsReplay replay = ReplayFindingsLog(head + bad + tail);
  EXPECT_FALSE(replay.loaded.dropped_torn_record);
  EXPECT_THAT(Ids(replay.loaded),
              ::testing::ElementsAre("f-000001", "f-000003"));
  EXPECT_THAT(replay.damage,
              HasSubstr("the first at byte " + std::to_string(head.size())));
  EXPECT_EQ(replay.loaded.next_id, 4u);
}

TEST(ReplayFindingsLogTest, ABadHeaderIsDamage) {
  std::string log = EncodeFindingsLog({Finding("f-000001", "pfc_storm")}, 2);
  log[0] = 'X';
  const FindingsReplay replay = ReplayFindingsLog(log);
  EXPECT_THAT(replay.damage, HasSubstr("bad header"));
  // The records after it are still read.
  EXPECT_THAT(Ids(replay.loaded), ::testing::ElementsAre("f-000001"));
}

}  // namespace
}  // namespace fabricdiag::collector
