#include "cluster/finding_terms.h"

#include "gtest/gtest.h"

namespace fabricdiag::cluster {
namespace {

TEST(FindingTermsTest, ALowerTermThanTheFindingsHighestIsDropped) {
  FindingTerms terms;
  EXPECT_TRUE(terms.Admit("f-000001", 7, 10));
  EXPECT_TRUE(terms.Admit("f-000001", 9, 11));
  // The leader of term 7 resumes: its version lands last.
  EXPECT_FALSE(terms.Admit("f-000001", 7, 12));
  // Its revision is still the key's latest (the next write compares and
  // sets against it); the highest term stays.
  EXPECT_EQ(terms.Get("f-000001").revision, 12u);
  EXPECT_EQ(terms.Get("f-000001").term, 9u);
}

TEST(FindingTermsTest, EqualTermsAreOneLeadersVersions) {
  FindingTerms terms;
  EXPECT_TRUE(terms.Admit("f-000001", 7, 10));
  EXPECT_TRUE(terms.Admit("f-000001", 7, 11));
  EXPECT_TRUE(terms.Admit("f-000002", 7, 12));
}

TEST(FindingTermsTest, AFirstVersionLandingAfterANewerTermIsDropped) {
  FindingTerms terms;
  EXPECT_TRUE(terms.Admit("f-000001", 9, 10));
  // A deposed leader's open of a finding the new leader never wrote.
  EXPECT_FALSE(terms.Admit("f-000002", 7, 11));
  EXPECT_EQ(terms.Get("f-000002").term, 7u);
}

TEST(FindingTermsTest, TheMarkOfANewTermMakesLaterLowerTermsLate) {
  FindingTerms terms;
  EXPECT_TRUE(terms.Admit("f-000001", 7, 10));
  terms.NewTerm(9);  // the new leader wrote nothing else yet
  EXPECT_FALSE(terms.Admit("f-000002", 7, 12));
  terms.NewTerm(8);  // an older mark landing late lowers nothing
  EXPECT_FALSE(terms.Admit("f-000003", 8, 13));
  EXPECT_TRUE(terms.Admit("f-000004", 9, 14));
}

TEST(FindingTermsTest, AReplayStartsTheOrderOverButKeepsEachFindingsTerm) {
  FindingTerms terms;
  EXPECT_TRUE(terms.Admit("f-000002", 9, 20));
  terms.StartReplay();
  // Older findings come first in the bucket's order, with older terms.
  EXPECT_TRUE(terms.Admit("f-000001", 3, 5));
  EXPECT_TRUE(terms.Admit("f-000002", 9, 20));
  EXPECT_FALSE(terms.Admit("f-000002", 8, 21));
}

TEST(FindingTermsTest, VersionsWithoutATermAreTaken) {
  FindingTerms terms;
  EXPECT_TRUE(terms.Admit("f-000001", 9, 10));
  // Written before versions carried terms (term 0).
  EXPECT_TRUE(terms.Admit("f-000001", 0, 11));
  EXPECT_TRUE(terms.Admit("f-000002", 0, 12));
  EXPECT_EQ(terms.Get("f-000001").term, 9u);
}

TEST(FindingTermsTest, WhatTheWriterSawAndAKeyThatWentAway) {
  FindingTerms terms;
  EXPECT_EQ(terms.Get("f-000001").revision, 0u);
  terms.Saw("f-000001", 4, 30);
  EXPECT_EQ(terms.Get("f-000001").revision, 30u);
  terms.Saw("f-000001", 9, 31);
  terms.Saw("f-000001", 2, 32);  // read back: an older term's late write
  EXPECT_EQ(terms.Get("f-000001").term, 9u);
  EXPECT_EQ(terms.Get("f-000001").revision, 32u);
  terms.Gone("f-000001");
  EXPECT_EQ(terms.Get("f-000001").revision, 0u);
  EXPECT_EQ(terms.Get("f-000001").term, 9u);
}

TEST(FindingTermsTest, OwnersOfDifferentShardsWriteSideBySide) {
  FindingTerms terms;
  // The owner of jobs.1 took it at term 20, the owner of jobs.2 at 30; both
  // write, interleaved in the bucket's order.
  terms.NewTerm(20, "jobs.1");
  terms.NewTerm(30, "jobs.2");
  EXPECT_TRUE(terms.Admit("f-000001", 30, 10, "jobs.2"));
  EXPECT_TRUE(terms.Admit("f-000002", 20, 11, "jobs.1"));
  EXPECT_TRUE(terms.Admit("f-000002", 20, 12, "jobs.1"));
  // The analysis leader's term (lower than both) is not late either.
  EXPECT_TRUE(terms.Admit("f-000003", 15, 13));
}

TEST(FindingTermsTest, AShardsDeposedOwnerIsLateInItsShardAlone) {
  FindingTerms terms;
  EXPECT_TRUE(terms.Admit("f-000001", 20, 10, "jobs.1"));
  // jobs.1 moved: its new owner marked term 40 before writing anything.
  terms.NewTerm(40, "jobs.1");
  // The former owner's first version of a finding, landing after the mark.
  EXPECT_FALSE(terms.Admit("f-000002", 20, 12, "jobs.1"));
  // Another shard's writer with a term between the two is not late.
  EXPECT_TRUE(terms.Admit("f-000003", 30, 13, "jobs.2"));
  // The new owner's versions are taken, and a finding it wrote refuses the
  // former owner's version (the per-finding rule, whatever the shard).
  EXPECT_TRUE(terms.Admit("f-000001", 40, 14, "jobs.1"));
  EXPECT_FALSE(terms.Admit("f-000001", 20, 15, "jobs.1"));
  // A replay starts each shard's order over.
  terms.StartReplay();
  EXPECT_TRUE(terms.Admit("f-000004", 20, 3, "jobs.1"));
}

TEST(FindingTermsTest, AFindingThatMovesToAnotherShardTakesItsTerms) {
  FindingTerms terms;
  // A port finding written by col-c, whose own nodes' shard it took at 393;
  // its node's agent moves to col-a, which took its own at term 3.
  EXPECT_TRUE(terms.Admit("f-000001", 393, 10, "ports.col-c"));
  EXPECT_TRUE(terms.Admit("f-000001", 3, 11, "ports.col-a"));
  EXPECT_EQ(terms.Get("f-000001").term, 3u);
  EXPECT_EQ(terms.Get("f-000001").shard, "ports.col-a");
  // Within ports.col-a the per-finding rule holds again: a deposed
  // col-a (term 2) is late.
  EXPECT_FALSE(terms.Admit("f-000001", 2, 12, "ports.col-a"));
  // What a writer reads back moves it the same way.
  terms.Saw("f-000001", 400, 13, "ports.col-b");
  EXPECT_EQ(terms.Get("f-000001").term, 400u);
  EXPECT_EQ(terms.Get("f-000001").shard, "ports.col-b");
  EXPECT_EQ(terms.Get("f-000001").revision, 13u);
}

// The analysis leader at term 30 that owns shard jobs.1 at term 40.
class RoleForTest final : public collector::AnalysisRole {
 public:
  bool Leading() const override { return true; }
  uint64_t Term() const override { return 30; }
  uint64_t ShardTerm(absl::string_view shard) const override {
    return shard == "jobs.1" ? 40 : 0;
  }
};

collector::StoredFinding Written(const std::string& source, uint64_t term) {
  collector::StoredFinding v;
  v.finding.set_id("f-000001");
  v.source = source;
  v.term = term;
  return v;
}

TEST(ShardOfSourceTest, WhatFollowsTheLastAt) {
  EXPECT_EQ(collector::ShardOfSource("layout_analyzers@jobs.1"), "jobs.1");
  EXPECT_EQ(collector::ShardOfSource("a@b@jobs.2"), "jobs.2");
  EXPECT_EQ(collector::ShardOfSource("rate_analyzers"), "");
  EXPECT_EQ(collector::ShardOfSource("rate_analyzers@"), "");
  EXPECT_EQ(collector::ShardOfSource(""), "");
}

TEST(WrittenHereTest, TheWritersOwnVersionsOfWhatItWritesNow) {
  const RoleForTest role;
  EXPECT_TRUE(WrittenHere(role, Written("rate_analyzers", 30)));
  EXPECT_TRUE(WrittenHere(role, Written("layout@jobs.1", 40)));
  // A previous writer's, landed before this term's mark: taken over.
  EXPECT_FALSE(WrittenHere(role, Written("rate_analyzers", 20)));
  EXPECT_FALSE(WrittenHere(role, Written("layout@jobs.1", 35)));
  // Another shard's owner wrote it, whatever its term.
  EXPECT_FALSE(WrittenHere(role, Written("layout@jobs.2", 50)));
  EXPECT_FALSE(WrittenHere(role, Written("layout@jobs.2", 10)));
  const collector::AlwaysLeading alone;
  EXPECT_TRUE(WrittenHere(alone, Written("layout@jobs.2", 1)));
}

}  // namespace
}  // namespace fabricdiag::cluster
