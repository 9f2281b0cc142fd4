#include "collector/state/findings_log.h"

#include <string>
#include <vector>

#include "common/crc32c.h"
#include "common/little_endian.h"
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

// A finding record as releases before terms wrote it: type 'F', the source
// name and the finding.
std::string OldFindingRecord(const StoredFinding& stored) {
  std::string body = "F";
  PutU32(&body, static_cast<uint32_t>(stored.source.size()));
  body += stored.source;
  body += stored.finding.SerializeAsString();
  std::string record;
  PutU32(&record, static_cast<uint32_t>(body.size()));
  PutU32(&record, Crc32c(body));
  return record + body;
}

TEST(ReplayFindingsLogTest, AVersionWithoutATermIsTheOldRecordAndReadsAsZero) {
  const StoredFinding old = Finding("f-000001", "pfc_storm");
  EXPECT_EQ(EncodeFindingRecords({old}), OldFindingRecord(old));
  const FindingsReplay replay =
      ReplayFindingsLog(EncodeFindingsLog({}, 1) + OldFindingRecord(old));
  EXPECT_TRUE(replay.damage.empty());
  ASSERT_THAT(Ids(replay.loaded), ::testing::ElementsAre("f-000001"));
  EXPECT_EQ(replay.loaded.findings[0].term, 0u);
  EXPECT_EQ(replay.loaded.findings[0].source, "pfc_storm");
}

TEST(ReplayFindingsLogTest, TheWritersTermSurvivesBesideOldRecords) {
  StoredFinding termed = Finding("f-000002", "pfc_storm");
  termed.term = 1ull << 40;
  const std::string log =
      EncodeFindingsLog({Finding("f-000001", "pfc_storm"), termed}, 3);
  const FindingsReplay replay = ReplayFindingsLog(log);
  EXPECT_TRUE(replay.damage.empty());
  ASSERT_THAT(Ids(replay.loaded),
              ::testing::ElementsAre("f-000001", "f-000002"));
  EXPECT_EQ(replay.loaded.findings[0].term, 0u);
  EXPECT_EQ(replay.loaded.findings[1].term, 1ull << 40);
  EXPECT_EQ(replay.loaded.findings[1].source, "pfc_storm");
  EXPECT_EQ(replay.loaded.findings[1].finding.kind(), "pfc_storm");
}

TEST(ReplayFindingsLogTest, ATermRecordTooShortForItsSourceIsDamage) {
  StoredFinding termed = Finding("f-000002", "pfc_storm");
  termed.term = 7;
  std::string bad = EncodeFindingRecords({termed});
  // The record is type 'T' at byte 8; its source length (after the term)
  // now claims more than the record holds, with a checksum to match.
  std::string body = bad.substr(8);
  ASSERT_EQ(body[0], 'T');
  body.replace(9, 4, std::string("\x3f\0\0\0", 4));
  std::string record;
  PutU32(&record, static_cast<uint32_t>(body.size()));
  PutU32(&record, Crc32c(body));
  const FindingsReplay replay = ReplayFindingsLog(
      EncodeFindingsLog({Finding("f-000001", "pfc_storm")}, 2) + record +
      EncodeFindingRecords({Finding("f-000003", "pfc_storm")}));
  EXPECT_THAT(Ids(replay.loaded),
              ::testing::ElementsAre("f-000001", "f-000003"));
  EXPECT_THAT(replay.damage, HasSubstr("damaged bytes"));
}

}  // namespace
}  // namespace fabricdiag::collector
