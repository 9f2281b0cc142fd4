#include "analysis/layout_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace fabricdiag::analysis {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

using Lists = std::vector<std::vector<uint32_t>>;

// A layout of `hosts` hosts named gpu-000, gpu-001, ...
v1::Layout MakeLayout(uint32_t gpus_per_node, uint32_t hosts, uint32_t tp,
                      uint32_t pp, uint32_t dp) {
  v1::Layout layout;
  layout.set_job("job-1");
  layout.set_gpus_per_node(gpus_per_node);
  layout.mutable_parallelism()->set_tp(tp);
  layout.mutable_parallelism()->set_pp(pp);
  layout.mutable_parallelism()->set_dp(dp);
  for (uint32_t h = 0; h < hosts; ++h) {
    layout.add_hosts(absl::StrCat("gpu-",
                                  h < 10    ? "00"
                                  : h < 100 ? "0"
                                            : "",
                                  h));
  }
  return layout;
}

// docs/layout-format.md's worked example: 16 ranks, tp=2 dp=8 ep=4 pp=1.
v1::Layout WorkedExample() {
  v1::Layout layout = MakeLayout(8, 2, 2, 1, 8);
  layout.mutable_parallelism()->set_ep(4);
  for (int i = 0; i < 8; ++i) layout.add_rails(absl::StrCat("mlx5_", i));
  layout.mutable_model()->set_experts(64);
  return layout;
}

Lists AllGroups(const LayoutModel& m, Dim dim) {
  Lists out;
  for (uint32_t g = 0; g < m.NumGroups(dim); ++g) {
    auto span = m.Group(dim, g);
    out.emplace_back(span.begin(), span.end());
  }
  return out;
}

std::vector<uint32_t> Seq(uint32_t begin, uint32_t step, uint32_t count) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < count; ++i) out.push_back(begin + i * step);
  return out;
}

TEST(LayoutModelTest, WorkedExampleOfInterfaces) {
  auto m = LayoutModel::Build(WorkedExample());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->WorldSize(), 16u);
  EXPECT_EQ(AllGroups(*m, Dim::kTp), (Lists{{0, 1},
                                            {2, 3},
                                            {4, 5},
                                            {6, 7},
                                            {8, 9},
                                            {10, 11},
                                            {12, 13},
                                            {14, 15}}));
  EXPECT_EQ(AllGroups(*m, Dim::kDp), (Lists{Seq(0, 2, 8), Seq(1, 2, 8)}));
  EXPECT_EQ(AllGroups(*m, Dim::kPp).size(), 16u);  // pp = 1: singletons
  // Megatron-LM's list order: tp varies fastest among the group indices.
  EXPECT_EQ(
      AllGroups(*m, Dim::kEp),
      (Lists{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  // Expert data parallel: dp*cp/ep = 2 replicas of each expert shard.
  EXPECT_EQ(m->Degree(Dim::kEdp), 2u);
  EXPECT_THAT(m->Group(Dim::kEdp, 0), ElementsAre(0, 8));
  EXPECT_THAT(m->Group(Dim::kEdp, 3), ElementsAre(3, 11));
  // cp = 1: dp-cp is dp.
  EXPECT_EQ(AllGroups(*m, Dim::kDpCp), AllGroups(*m, Dim::kDp));

  // Rank 13: host 1, GPU 5, rails[5], tp rank 1, dp rank 6, ep rank 2.
  EXPECT_EQ(m->HostName(13), "gpu-001");
  EXPECT_EQ(m->Rank(13).gpu, 5u);
  EXPECT_EQ(m->NicName(13), "mlx5_5");
  EXPECT_EQ(m->RankIn(Dim::kTp, 13), 1u);
  EXPECT_EQ(m->RankIn(Dim::kDp, 13), 6u);
  EXPECT_EQ(m->GroupOf(Dim::kEp, 13), 3u);
  EXPECT_EQ(m->RankIn(Dim::kEp, 13), 2u);
  EXPECT_EQ(m->RankIn(Dim::kEdp, 13), 1u);
  // 64 experts over ep = 4: EP rank 2 holds [32, 48).
  auto experts = m->ExpertsOf(13);
  ASSERT_TRUE(experts.has_value());
  EXPECT_EQ(experts->begin, 32u);
  EXPECT_EQ(experts->end, 48u);
  EXPECT_THAT(m->TpGroupsCrossingNvlink(), IsEmpty());
  EXPECT_EQ(GroupName({Dim::kEp, 3}), "ep:3");
}

TEST(LayoutModelTest, DefaultsAreFilledIn) {
  v1::Layout in = MakeLayout(8, 2, 2, 1, 8);
  auto m = LayoutModel::Build(in);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->layout().parallelism().order(), "tp-cp-ep-dp-pp");
  EXPECT_EQ(m->layout().parallelism().cp(), 1u);
  EXPECT_EQ(m->layout().parallelism().ep(), 1u);
  EXPECT_EQ(m->NvlinkDomainSize(), 8u);
  EXPECT_EQ(m->NumNvlinkDomains(), 2u);
  EXPECT_FALSE(m->ExpertsOf(0).has_value());  // no model.experts
  EXPECT_EQ(m->NicName(0), "");               // no rails
}

TEST(LayoutModelTest, ThreeDimensionalTpPpDp) {
  v1::Layout in = MakeLayout(8, 1, 2, 2, 2);
  in.mutable_parallelism()->set_order("tp-pp-dp");
  auto m = LayoutModel::Build(in);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(AllGroups(*m, Dim::kTp), (Lists{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(AllGroups(*m, Dim::kPp), (Lists{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(AllGroups(*m, Dim::kDp), (Lists{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // The seed layout's formulas are this order.
  for (uint32_t r = 0; r < 8; ++r) {
    EXPECT_EQ(m->RankIn(Dim::kTp, r), r % 2) << r;
    EXPECT_EQ(m->RankIn(Dim::kPp, r), (r / 2) % 2) << r;
    EXPECT_EQ(m->RankIn(Dim::kDp, r), r / 4) << r;
  }
}

TEST(LayoutModelTest, FourDimensional2048Gpus) {
  // TP 8, PP 8, DP 32, EP 8 on 256 hosts of 8 GPUs, default order.
  v1::Layout in = MakeLayout(8, 256, 8, 8, 32);
  in.mutable_parallelism()->set_ep(8);
  in.mutable_model()->set_experts(256);
  auto m = LayoutModel::Build(in);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->WorldSize(), 2048u);

  struct Expect {
    Dim dim;
    uint32_t groups;
    uint32_t size;
  };
  for (const Expect& e : {Expect{Dim::kTp, 256, 8}, Expect{Dim::kPp, 256, 8},
                          Expect{Dim::kDp, 64, 32}, Expect{Dim::kCp, 2048, 1},
                          Expect{Dim::kDpCp, 64, 32}, Expect{Dim::kEp, 256, 8},
                          Expect{Dim::kEdp, 512, 4}}) {
    SCOPED_TRACE(DimName(e.dim));
    EXPECT_EQ(m->NumGroups(e.dim), e.groups);
    EXPECT_EQ(m->Degree(e.dim), e.size);
    // Every rank is in exactly one group, and the indexes agree.
    std::vector<int> seen(2048, 0);
    for (uint32_t g = 0; g < m->NumGroups(e.dim); ++g) {
      auto members = m->Group(e.dim, g);
      ASSERT_EQ(members.size(), e.size);
      for (uint32_t k = 0; k < members.size(); ++k) {
        ASSERT_LT(members[k], 2048u);
        ++seen[members[k]];
        EXPECT_EQ(m->GroupOf(e.dim, members[k]), g);
        EXPECT_EQ(m->RankIn(e.dim, members[k]), k);
      }
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 2048);
  }
  // By hand. Dense strides: tp 1, dp 8, pp 256. Expert strides: tp 1,
  // ep 8, edp 64, pp 256.
  EXPECT_THAT(m->Group(Dim::kTp, 5),
              ElementsAre(40, 41, 42, 43, 44, 45, 46, 47));
  EXPECT_EQ(std::vector<uint32_t>(m->Group(Dim::kDp, 0).begin(),
                                  m->Group(Dim::kDp, 0).end()),
            Seq(0, 8, 32));
  // dp:9 = tp rank 1, pp stage 1.
  EXPECT_EQ(std::vector<uint32_t>(m->Group(Dim::kDp, 9).begin(),
                                  m->Group(Dim::kDp, 9).end()),
            Seq(257, 8, 32));
  // pp:10 = tp rank 2, dp rank 1.
  EXPECT_THAT(m->Group(Dim::kPp, 10),
              ElementsAre(10, 266, 522, 778, 1034, 1290, 1546, 1802));
  // ep:9 = tp rank 1, expert-dp rank 1.
  EXPECT_THAT(m->Group(Dim::kEp, 9),
              ElementsAre(65, 73, 81, 89, 97, 105, 113, 121));
  EXPECT_THAT(m->Group(Dim::kEdp, 0), ElementsAre(0, 64, 128, 192));
  // Rank 1234 = 2 + 8*26 + 256*4: tp 2, dp 26, pp 4; ep (26 % 8) = 2.
  EXPECT_EQ(m->RankIn(Dim::kTp, 1234), 2u);
  EXPECT_EQ(m->RankIn(Dim::kDp, 1234), 26u);
  EXPECT_EQ(m->RankIn(Dim::kPp, 1234), 4u);
  EXPECT_EQ(m->RankIn(Dim::kEp, 1234), 2u);
  EXPECT_EQ(m->RankIn(Dim::kEdp, 1234), 3u);
  EXPECT_EQ(m->ExpertsOf(1234)->begin, 64u);
  EXPECT_EQ(m->ExpertsOf(1234)->end, 96u);
  EXPECT_EQ(m->HostName(1234), "gpu-154");
  // TP 8 on 8-GPU hosts stays inside NVLink; each DP group spans 32 hosts.
  EXPECT_THAT(m->TpGroupsCrossingNvlink(), IsEmpty());
  EXPECT_EQ(m->HostsSpanned(Dim::kDp, 0), 32u);
  EXPECT_EQ(m->HostsSpanned(Dim::kEp, 0), 8u);
}

TEST(LayoutModelTest, TpLargerThanANodeCrossesNvlinkDomains) {
  v1::Layout in = MakeLayout(8, 4, 16, 1, 2);
  auto m = LayoutModel::Build(in);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->TpGroupsCrossingNvlink(), ElementsAre(0, 1));
  EXPECT_EQ(m->DomainsSpanned(Dim::kTp, 0), 2u);
  EXPECT_EQ(m->HostsSpanned(Dim::kTp, 1), 2u);
}

TEST(LayoutModelTest, NvlinkDomainSmallerThanANode) {
  // Two 4-GPU NVLink islands per 8-GPU host: TP 8 leaves its island.
  v1::Layout in = MakeLayout(8, 2, 8, 1, 2);
  in.set_nvlink_domain(4);
  auto m = LayoutModel::Build(in);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->NumNvlinkDomains(), 4u);
  EXPECT_EQ(m->Rank(13).domain, 3u);
  EXPECT_THAT(m->TpGroupsCrossingNvlink(), ElementsAre(0, 1));
  EXPECT_EQ(m->HostsSpanned(Dim::kTp, 0), 1u);
}

TEST(LayoutModelTest, Nvl72RackSpansConsecutiveHosts) {
  // 4 GPUs per tray, 18 trays per NVL72 rack, 36 hosts = 2 racks. TP 16
  // covers 4 hosts; tp:4 covers hosts 16..19, straddling the racks.
  v1::Layout in = MakeLayout(4, 36, 16, 1, 9);
  in.set_nvlink_domain(72);
  auto m = LayoutModel::Build(in);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->NumNvlinkDomains(), 2u);
  EXPECT_EQ(m->Rank(71).domain, 0u);
  EXPECT_EQ(m->Rank(72).domain, 1u);
  EXPECT_THAT(m->TpGroupsCrossingNvlink(), ElementsAre(4));
  EXPECT_EQ(m->HostsSpanned(Dim::kTp, 0), 4u);
  EXPECT_EQ(m->DomainsSpanned(Dim::kTp, 0), 1u);
}

TEST(LayoutModelTest, RailsMapLocalGpusToNics) {
  auto m = LayoutModel::Build(WorkedExample());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->RanksOnNic("gpu-001", "mlx5_3"), ElementsAre(11));
  EXPECT_THAT(m->RanksOnNic("gpu-000", "mlx5_7"), ElementsAre(7));
  EXPECT_THAT(m->RanksOnNic("gpu-009", "mlx5_3"), IsEmpty());
  EXPECT_THAT(m->RanksOnNic("gpu-000", "mlx5_9"), IsEmpty());
  EXPECT_THAT(m->RanksOnHost(*m->HostIndex("gpu-001")),
              ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_FALSE(m->HostIndex("gpu-002").has_value());
  // ep:2 = {8, 10, 12, 14}: four NICs of gpu-001.
  const absl::Span<const NicRef> nics = m->GroupNics(Dim::kEp, 2);
  ASSERT_EQ(nics.size(), 4u);
  EXPECT_EQ(m->Hosts()[nics[1].host], "gpu-001");
  EXPECT_EQ(m->Nics()[nics[1].nic], "mlx5_2");
}

// Every (host, NIC) answers with exactly the ranks placed there, whatever
// the order the rails name the NICs in and where a host lacks one; indexes
// out of range answer empty.
TEST(LayoutModelTest, RanksOnNicAnswersForEveryHostAndNic) {
  v1::Layout in = MakeLayout(8, 0, 2, 1, 12);
  for (const char* nic : {"mlx5_3", "mlx5_3", "mlx5_0", "mlx5_1", "mlx5_0",
                          "mlx5_2", "mlx5_2", "mlx5_1"}) {
    in.add_rails(nic);
  }
  // gpu-002's ranks of rail mlx5_0 use mlx5_9: it has no mlx5_0.
  for (uint32_t r = 0; r < 24; ++r) {
    v1::RankPlacement* p = in.add_ranks();
    p->set_rank(r);
    p->set_host(absl::StrCat("gpu-00", r / 8));
    p->set_gpu(r % 8);
    if (r / 8 == 2 && (r % 8 == 2 || r % 8 == 4)) p->set_nic("mlx5_9");
  }
  auto m = LayoutModel::Build(in);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->Hosts().size(), 3u);
  ASSERT_EQ(m->Nics().size(), 5u);
  EXPECT_THAT(m->RanksOnNic("gpu-002", "mlx5_0"), IsEmpty());
  EXPECT_THAT(m->RanksOnNic("gpu-002", "mlx5_9"), ElementsAre(18, 20));
  size_t found = 0;
  for (uint32_t h = 0; h <= m->Hosts().size(); ++h) {
    for (uint32_t n = 0; n <= m->Nics().size(); ++n) {
      std::vector<uint32_t> expected;
      for (uint32_t r = 0; r < m->WorldSize(); ++r) {
        if (m->Rank(r).host == h && m->Rank(r).nic == n) expected.push_back(r);
      }
      EXPECT_THAT(m->RanksOnNic(h, n), ElementsAreArray(expected))
          << "host " << h << " nic " << n;
      found += expected.size();
    }
  }
  EXPECT_EQ(found, m->WorldSize());
  EXPECT_THAT(m->RanksOnNic(std::numeric_limits<uint32_t>::max(), 0),
              IsEmpty());
  EXPECT_THAT(m->RanksOnNic(0, std::numeric_limits<uint32_t>::max()),
              IsEmpty());
  EXPECT_THAT(m->RanksOnNic("gpu-002", "mlx5_2"), ElementsAre(21, 22));
}

TEST(LayoutModelTest, SharedRailsGroupRanksPerNic) {
  // Two GPUs per NIC.
  v1::Layout in = MakeLayout(4, 2, 2, 1, 4);
  for (const char* nic : {"mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1"}) {
    in.add_rails(nic);
  }
  auto m = LayoutModel::Build(in);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->RanksOnNic("gpu-001", "mlx5_1"), ElementsAre(6, 7));
  EXPECT_EQ(m->Nics().size(), 2u);
  EXPECT_EQ(m->GroupNics(Dim::kTp, 0).size(), 1u);
  // dp:0 = {0, 2, 4, 6}: both NICs of both hosts.
  EXPECT_EQ(m->GroupNics(Dim::kDp, 0).size(), 4u);
}

TEST(LayoutModelTest, ExplicitRanksOverrideHostsAndRails) {
  // 8 ranks, tp=2 dp=4, on 2 hosts of 4 GPUs, round-robin: rank r on host
  // r % 2, so every TP pair crosses hosts. Rank 5 names its own NIC.
  v1::Layout in = MakeLayout(4, 0, 2, 1, 4);
  for (const char* nic : {"r0", "r1", "r2", "r3"}) in.add_rails(nic);
  for (uint32_t r : {7u, 6u, 5u, 4u, 3u, 2u, 1u, 0u}) {  // any order
    v1::RankPlacement* p = in.add_ranks();
    p->set_rank(r);
    p->set_host(r % 2 == 0 ? "b-node" : "a-node");
    p->set_gpu(r / 2);
    if (r == 5) p->set_nic("mlx5_9");
  }
  auto m = LayoutModel::Build(in);
  ASSERT_TRUE(m.ok()) << m.status();
  // Host order is first appearance by rank: rank 0 is on b-node.
  EXPECT_THAT(m->Hosts(), ElementsAre("b-node", "a-node"));
  EXPECT_EQ(m->HostName(5), "a-node");
  EXPECT_EQ(m->Rank(5).gpu, 2u);
  EXPECT_EQ(m->NicName(5), "mlx5_9");
  EXPECT_EQ(m->NicName(4), "r2");
  EXPECT_THAT(m->RanksOnHost(1), ElementsAre(1, 3, 5, 7));
  EXPECT_THAT(m->RanksOnNic("a-node", "r2"), IsEmpty());
  EXPECT_THAT(m->RanksOnNic("a-node", "mlx5_9"), ElementsAre(5));
  EXPECT_THAT(m->TpGroupsCrossingNvlink(), ElementsAre(0, 1, 2, 3));
  // Groups do not depend on placement.
  EXPECT_THAT(m->Group(Dim::kTp, 2), ElementsAre(4, 5));
}

TEST(LayoutModelTest, ExplicitRanksFollowTheHostsListOrder) {
  v1::Layout in = MakeLayout(1, 0, 1, 1, 2);
  in.add_hosts("h-a");
  in.add_hosts("h-b");
  for (uint32_t r : {0u, 1u}) {
    v1::RankPlacement* p = in.add_ranks();
    p->set_rank(r);
    p->set_host(r == 0 ? "h-b" : "h-a");
    p->set_gpu(0);
  }
  auto m = LayoutModel::Build(in);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->Hosts(), ElementsAre("h-a", "h-b"));
  EXPECT_EQ(m->Rank(0).host, 1u);
}

TEST(LayoutModelTest, ContextParallelFoldsIntoExpertDataParallel) {
  // tp=2 cp=2 dp=2 ep=4: dense dp-cp groups have 4 ranks; expert-dp =
  // dp*cp/ep = 1.
  v1::Layout in = MakeLayout(8, 1, 2, 1, 2);
  in.mutable_parallelism()->set_cp(2);
  in.mutable_parallelism()->set_ep(4);
  auto m = LayoutModel::Build(in);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(AllGroups(*m, Dim::kCp), (Lists{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(AllGroups(*m, Dim::kDp), (Lists{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(AllGroups(*m, Dim::kDpCp), (Lists{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(AllGroups(*m, Dim::kEp), (Lists{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(m->Degree(Dim::kEdp), 1u);
}

TEST(GroupNameTest, RoundTrips) {
  for (Dim d : kAllDims) {
    auto id = ParseGroupName(GroupName({d, 12}));
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_TRUE(*id == (GroupId{d, 12}));
  }
  EXPECT_EQ(GroupName({Dim::kDpCp, 1}), "dp-cp:1");
  for (const char* bad :
       {"", "tp", "tp:", "xp:1", "tp:-1", "tp:1x", "tp:99999999999", ":1"}) {
    EXPECT_FALSE(ParseGroupName(bad).ok()) << bad;
  }
}

struct InvalidCase {
  const char* name;
  std::function<void(v1::Layout&)> mutate;
  const char* field;   // the message starts with "<field>: "
  const char* detail;  // and contains this
};

class InvalidLayoutTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidLayoutTest, IsRejectedNamingTheField) {
  const InvalidCase& c = GetParam();
  v1::Layout layout = WorkedExample();
  c.mutate(layout);
  auto m = LayoutModel::Build(layout);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(m.status().message()),
              StartsWith(absl::StrCat(c.field, ": ")));
  EXPECT_THAT(std::string(m.status().message()), HasSubstr(c.detail));
}

// Gives `layout` an explicit placement equal to hosts/rails, then lets
// `edit` break it.
std::function<void(v1::Layout&)> WithRanks(
    const std::function<void(v1::Layout&)>& edit) {
  return [edit](v1::Layout& layout) {
    for (uint32_t r = 0; r < 16; ++r) {
      v1::RankPlacement* p = layout.add_ranks();
      p->set_rank(r);
      p->set_host(layout.hosts(static_cast<int>(r / 8)));
      p->set_gpu(r % 8);
    }
    edit(layout);
  };
}

const InvalidCase kInvalidCases[] = {
    {"DegreesDoNotMultiplyToRanks",
     [](v1::Layout& l) { l.mutable_parallelism()->set_dp(16); }, "hosts",
     "2 hosts x 8 gpus = 16 ranks, but tp*cp*pp*dp = 32"},
    {"HostListTooShort", [](v1::Layout& l) { l.mutable_hosts()->RemoveLast(); },
     "hosts", "1 hosts x 8 gpus = 8 ranks, but tp*cp*pp*dp = 16"},
    {"NoHosts", [](v1::Layout& l) { l.clear_hosts(); }, "hosts",
     "required when ranks is not given"},
    {"DuplicateHost", [](v1::Layout& l) { l.set_hosts(1, "gpu-000"); },
     "hosts[1]", "\"gpu-000\" is listed twice (also hosts[0])"},
    {"BadHostName", [](v1::Layout& l) { l.set_hosts(1, "gpu 1"); }, "hosts[1]",
     "is not a valid host name"},
    {"EpDoesNotDivideDpCp",
     [](v1::Layout& l) { l.mutable_parallelism()->set_ep(3); },
     "parallelism.ep", "3 does not divide dp*cp = 8"},
    {"UnknownOrderLetters",
     [](v1::Layout& l) { l.mutable_parallelism()->set_order("tp-xp-dp"); },
     "parallelism.order", "unknown dimension \"xp\""},
    {"OrderLetterTwice",
     [](v1::Layout& l) { l.mutable_parallelism()->set_order("tp-dp-tp"); },
     "parallelism.order", "appears twice"},
    {"EmptyOrder",
     [](v1::Layout& l) { l.mutable_parallelism()->set_order(""); },
     "parallelism.order", "must not be empty"},
    {"OrderOmitsDp",
     [](v1::Layout& l) { l.mutable_parallelism()->set_order("tp-ep-pp"); },
     "parallelism.order", "omits dp, whose degree is 8"},
    {"OrderOmitsEp",
     [](v1::Layout& l) { l.mutable_parallelism()->set_order("tp-dp-pp"); },
     "parallelism.order", "omits ep, whose degree is 4 in the expert layout"},
    {"PipelineGroupsDifferForExperts",
     [](v1::Layout& l) {
       // tp=1 pp=2 dp=8 ep=4: pp before dp makes expert pp groups differ.
       l.mutable_parallelism()->set_tp(1);
       l.mutable_parallelism()->set_pp(2);
       l.mutable_parallelism()->set_order("tp-ep-pp-dp");
     },
     "parallelism.order", "different pipeline groups"},
    {"TpZero", [](v1::Layout& l) { l.mutable_parallelism()->set_tp(0); },
     "parallelism.tp", "must be at least 1"},
    {"PpAbsurd",
     [](v1::Layout& l) { l.mutable_parallelism()->set_pp(2000000); },
     "parallelism.pp", "2000000 exceeds the limit of 262144"},
    {"TooManyRanks",
     [](v1::Layout& l) {
       l.mutable_parallelism()->set_tp(1024);
       l.mutable_parallelism()->set_dp(1024);
     },
     "parallelism", "exceeds the limit of 262144 ranks"},
    {"CpZero", [](v1::Layout& l) { l.mutable_parallelism()->set_cp(0); },
     "parallelism.cp", "must be at least 1"},
    {"JobWithSpace", [](v1::Layout& l) { l.set_job("x y"); }, "job",
     "\"x y\" must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}"},
    // Stored as layouts/<job>.pb: no hidden files, no parent directory.
    {"JobDot", [](v1::Layout& l) { l.set_job("."); }, "job", "must match"},
    {"JobDotDot", [](v1::Layout& l) { l.set_job(".."); }, "job", "must match"},
    {"JobHidden", [](v1::Layout& l) { l.set_job(".job"); }, "job",
     "must match"},
    // No agent can report as a node whose name starts with '-'.
    {"HostLeadingDash", [](v1::Layout& l) { l.set_hosts(1, "-gpu"); },
     "hosts[1]", "is not a valid host name"},
    {"JobEmpty", [](v1::Layout& l) { l.set_job(""); }, "job", "must match"},
    {"JobTooLong", [](v1::Layout& l) { l.set_job(std::string(65, 'a')); },
     "job", "must match"},
    {"GpusPerNodeZero", [](v1::Layout& l) { l.set_gpus_per_node(0); },
     "gpus_per_node", "0 is out of range [1, 1024]"},
    {"NvlinkDomainNotAligned", [](v1::Layout& l) { l.set_nvlink_domain(6); },
     "nvlink_domain", "6 is neither a divisor nor a multiple of gpus_per_node"},
    {"NvlinkDomainZero", [](v1::Layout& l) { l.set_nvlink_domain(0); },
     "nvlink_domain", "must be at least 1"},
    {"RailsCount", [](v1::Layout& l) { l.mutable_rails()->RemoveLast(); },
     "rails", "7 NICs given, but gpus_per_node = 8"},
    {"BadRailName", [](v1::Layout& l) { l.set_rails(2, "mlx5 2"); }, "rails[2]",
     "is not a valid NIC name"},
    {"ExpertsNotDivisibleByEp",
     [](v1::Layout& l) { l.mutable_model()->set_experts(6); }, "model.experts",
     "6 is not divisible by parallelism.ep = 4"},
    {"TopKAboveExperts",
     [](v1::Layout& l) { l.mutable_model()->set_top_k(65); }, "model.top_k",
     "65 exceeds model.experts = 64"},
    {"DtypeBytesAbsurd",
     [](v1::Layout& l) { l.mutable_model()->set_dtype_bytes(16); },
     "model.dtype_bytes", "16 is out of range [1, 8]"},
    {"ParamsNegative", [](v1::Layout& l) { l.mutable_model()->set_params(-5); },
     "model.params", "out of range"},
    {"ParamsNaN",
     [](v1::Layout& l) { l.mutable_model()->set_params(std::nan("")); },
     "model.params", "out of range"},
    {"RanksDuplicate",
     WithRanks([](v1::Layout& l) { l.mutable_ranks(9)->set_rank(3); }),
     "ranks[9].rank", "rank 3 is placed twice (also ranks[3])"},
    {"RanksMissing",
     WithRanks([](v1::Layout& l) { l.mutable_ranks()->RemoveLast(); }), "ranks",
     "15 placements given, but tp*cp*pp*dp = 16"},
    {"RankOutOfRange",
     WithRanks([](v1::Layout& l) { l.mutable_ranks(4)->set_rank(99); }),
     "ranks[4].rank", "99 is out of range [0, 16)"},
    {"GpuUsedTwice",
     WithRanks([](v1::Layout& l) { l.mutable_ranks(5)->set_gpu(4); }),
     "ranks[5]", "gpu-000 gpu 4 is already used by rank 4"},
    {"GpuBeyondNode",
     WithRanks([](v1::Layout& l) { l.mutable_ranks(6)->set_gpu(8); }),
     "ranks[6].gpu", "8 is out of range for gpus_per_node = 8"},
    {"RankHostNotInHosts",
     WithRanks([](v1::Layout& l) { l.mutable_ranks(2)->set_host("gpu-077"); }),
     "ranks[2].host", "\"gpu-077\" is not in hosts"},
    {"RankHostInvalid", WithRanks([](v1::Layout& l) {
       l.clear_hosts();
       l.mutable_ranks(2)->set_host("bad/host");
     }),
     "ranks[2].host", "is not a valid host name"},
    {"RankNicInvalid",
     WithRanks([](v1::Layout& l) { l.mutable_ranks(2)->set_nic("a b"); }),
     "ranks[2].nic", "is not a valid NIC name"},
};

INSTANTIATE_TEST_SUITE_P(
    Cases, InvalidLayoutTest, ::testing::ValuesIn(kInvalidCases),
    [](const ::testing::TestParamInfo<InvalidCase>& param_info) {
      return std::string(param_info.param.name);
    });

TEST(LayoutModelTest, ExplicitRanksMatchingHostsAreValid) {
  // The WithRanks base (no edit) must build, or the cases above would pass
  // for the wrong reason.
  v1::Layout layout = WorkedExample();
  WithRanks([](v1::Layout&) {})(layout);
  auto m = LayoutModel::Build(layout);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->NicName(9), "mlx5_1");
}

TEST(LayoutModelTest, LargeLayoutBuildsQuickly) {
  // 131,072 ranks: TP 8, PP 16, DP 1024, EP 64 on 16,384 hosts.
  v1::Layout in = MakeLayout(8, 16384, 8, 16, 1024);
  in.mutable_parallelism()->set_ep(64);
  for (int i = 0; i < 8; ++i) in.add_rails(absl::StrCat("mlx5_", i));
  auto m = LayoutModel::Build(in);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->WorldSize(), 131072u);
  EXPECT_EQ(m->NumGroups(Dim::kEp), 2048u);
  EXPECT_THAT(m->RanksOnNic("gpu-16383", "mlx5_7"), ElementsAre(131071));
}

}  // namespace
}  // namespace fabricdiag::analysis
