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

}  // namespace
}  // namespace fabricdiag::cluster
