// What a collector's analysis parts tell the others survives the wire, and
// a damaged or hostile message is refused whole.
#include "cluster/part_news.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/testing/corrupted_bytes.h"

namespace fabricdiag::cluster {
namespace {

using ::testing::HasSubstr;

PartNews Sample() {
  PartNews news;
  news.collector_id = "col-b";
  news.published = absl::FromUnixSeconds(1764547200) + absl::Milliseconds(250);
  ViewNews& w = news.window;
  w.excuses.congestion = {{"gpu-001", "mlx5_2"}, {"gpu-002", "mlx5_0"}};
  w.excuses.ecmp = {"gpu-001", "leaf-0"};
  w.excuses.straggler = {{"gpu-041", "mlx5_5"}};
  for (int i = 0; i < 500; ++i) w.congestion.hosts.Add(300 + i % 37);
  for (int i = 0; i < 20; ++i) w.congestion.hosts.Add(0);
  w.congestion.hosts.Add(101389);
  w.congestion.switches.Add(12.5);
  w.congestion.switches.Add(1e-300);  // a subnormal-range bucket
  w.congestion.switches.Add(1.7e308);
  // The newest samples: the hot NIC alone.
  ViewNews& r = news.recent.emplace();
  r.excuses.congestion = {{"gpu-001", "mlx5_2"}};
  r.congestion.hosts.Add(98000);
  // A job shard's job whose TP groups 1 and 3 cross nodes: one measured
  // with its links' rate, one without.
  news.tp_loads.push_back({"llm-70b",
                           {{1, 3.1e9, 12.5e9, 8, 0x9e3779b97f4a7c15u},
                            {3, 2e8, analysis::kAbsent, 2, 1}}});
  return news;
}

TEST(PartNewsTest, WhatIsSentIsWhatIsRead) {
  const PartNews sent = Sample();
  const v1::PartNews wire = ToProto(sent);
  v1::PartNews parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire.SerializeAsString()));
  absl::StatusOr<PartNews> read = FromProto(parsed);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->collector_id, "col-b");
  EXPECT_EQ(read->published, sent.published);
  const ViewNews& w = read->window;
  EXPECT_EQ(w.excuses.congestion, sent.window.excuses.congestion);
  EXPECT_EQ(w.excuses.ecmp, sent.window.excuses.ecmp);
  EXPECT_EQ(w.excuses.straggler, sent.window.excuses.straggler);
  EXPECT_EQ(w.congestion.hosts.zeros(), 20u);
  EXPECT_EQ(w.congestion.hosts.buckets(),
            sent.window.congestion.hosts.buckets());
  EXPECT_EQ(w.congestion.switches.buckets(),
            sent.window.congestion.switches.buckets());
  EXPECT_EQ(w.congestion.hosts.Baseline().ports, 521u);
  EXPECT_EQ(w.congestion.hosts.Baseline().median,
            sent.window.congestion.hosts.Baseline().median);
  ASSERT_TRUE(read->recent.has_value());
  EXPECT_EQ(read->recent->excuses.congestion, sent.recent->excuses.congestion);
  EXPECT_EQ(read->recent->congestion.hosts.count(), 1u);
  EXPECT_TRUE(read->recent->excuses.straggler.empty());
  // A pass without a recent view sends none.
  PartNews window_only = sent;
  window_only.recent.reset();
  absl::StatusOr<PartNews> no_recent = FromProto(ToProto(window_only));
  ASSERT_TRUE(no_recent.ok()) << no_recent.status();
  EXPECT_FALSE(no_recent->recent.has_value());
  ASSERT_EQ(read->tp_loads.size(), 1u);
  EXPECT_EQ(read->tp_loads[0].job, "llm-70b");
  ASSERT_EQ(read->tp_loads[0].groups.size(), 2u);
  const analysis::TpGroupLoad& g1 = read->tp_loads[0].groups[0];
  const analysis::TpGroupLoad& g3 = read->tp_loads[0].groups[1];
  EXPECT_EQ(g1.group, 1u);
  EXPECT_EQ(g1.tx, 3.1e9);
  EXPECT_EQ(g1.link_rate, 12.5e9);
  EXPECT_EQ(g1.nics, 8);
  EXPECT_EQ(g3.group, 3u);
  EXPECT_EQ(g3.tx, 2e8);
  EXPECT_TRUE(std::isnan(g3.link_rate));
  EXPECT_EQ(g3.nics, 2);
  EXPECT_EQ(g1.members, 0x9e3779b97f4a7c15u);
  EXPECT_EQ(g3.members, 1u);
  // A publisher before the members: its loads are read, of no members.
  v1::PartNews older = wire;
  older.mutable_tp_loads(0)->clear_members();
  absl::StatusOr<PartNews> old_read = FromProto(older);
  ASSERT_TRUE(old_read.ok()) << old_read.status();
  EXPECT_EQ(old_read->tp_loads[0].groups[0].members, 0u);
  EXPECT_EQ(old_read->tp_loads[0].groups[1].nics, 2);
  // Small: 521 host values fall in a few dozen buckets.
  EXPECT_LT(wire.ByteSizeLong(), 480u) << wire.ByteSizeLong();
}

TEST(PartNewsTest, TheHistogramsMedianIsWithinHalfAPercent) {
  std::mt19937 rng(3);
  std::lognormal_distribution<double> cnp(6, 2);  // ~400/s, wide
  analysis::CongestionHistogram merged;
  std::vector<double> all;
  for (int collector = 0; collector < 3; ++collector) {
    analysis::CongestionHistogram own;
    for (int i = 0; i < 1001 + collector; ++i) {
      const double v = i % 9 == 0 ? 0 : cnp(rng);
      own.Add(v);
      all.push_back(v);
    }
    // Through the wire, as the others' arrive.
    PartNews news;
    news.collector_id = absl::StrCat("col-", collector);
    news.window.congestion.hosts = own;
    absl::StatusOr<PartNews> read = FromProto(ToProto(news));
    ASSERT_TRUE(read.ok()) << read.status();
    merged.Merge(read->window.congestion.hosts);
  }
  std::sort(all.begin(), all.end());
  const size_t mid = all.size() / 2;
  const double exact =
      all.size() % 2 == 1 ? all[mid] : (all[mid - 1] + all[mid]) / 2;
  const analysis::CongestionBaselines::Of baseline = merged.Baseline();
  EXPECT_EQ(baseline.ports, all.size());
  EXPECT_NEAR(baseline.median, exact, exact * 0.005);
  // Not what is ignored.
  merged.Add(-1);
  merged.Add(std::nan(""));
  merged.Add(std::numeric_limits<double>::infinity());
  EXPECT_EQ(merged.count(), all.size());
}

TEST(PartNewsTest, DamagedNewsIsRefusedWhole) {
  const v1::PartNews good = ToProto(Sample());
  const std::vector<
      std::tuple<std::string, std::function<void(v1::PartNews*)>, std::string>>
      damages = {
          {"no collector", [](v1::PartNews* n) { n->clear_collector_id(); },
           "collector_id"},
          {"a node without a device",
           [](v1::PartNews* n) {
             n->mutable_window()->add_congestion_excused_node("gpu-9");
           },
           "window.congestion_excused: 3 nodes but 2 devices"},
          {"an empty device",
           [](v1::PartNews* n) {
             n->mutable_window()->set_straggler_excused_device(0, "");
           },
           "window.straggler_excused"},
          {"an overlong switch name",
           [](v1::PartNews* n) {
             n->mutable_window()->add_ecmp_excused(std::string(300, 'x'));
           },
           "window.ecmp_excused: a name of 300 bytes"},
          {"buckets out of order",
           [](v1::PartNews* n) {
             auto* h = n->mutable_window()->mutable_host_congestion();
             std::swap(*h->mutable_bucket()->Mutable(0),
                       *h->mutable_bucket()->Mutable(1));
           },
           "window.host_congestion: bucket"},
          {"a bucket twice",
           [](v1::PartNews* n) {
             auto* h = n->mutable_window()->mutable_switch_congestion();
             h->set_bucket(1, h->bucket(0));
           },
           "buckets ascend, each once"},
          {"a bucket without a count",
           [](v1::PartNews* n) {
             n->mutable_recent()->mutable_host_congestion()->add_bucket(9999);
           },
           "recent.host_congestion: 2 buckets but 1 counts"},
          {"an empty bucket",
           [](v1::PartNews* n) {
             n->mutable_window()->mutable_host_congestion()->set_count(0, 0);
           },
           "a count of 0"},
          {"counts past any fabric",
           [](v1::PartNews* n) {
             n->mutable_window()->mutable_host_congestion()->set_count(
                 0, uint64_t{1} << 62);
           },
           "too many values in all"},
          {"zeros past any fabric",
           [](v1::PartNews* n) {
             n->mutable_window()->mutable_switch_congestion()->set_zeros(
                 ~uint64_t{0});
           },
           "window.switch_congestion"},
          {"a TP load of no job",
           [](v1::PartNews* n) { n->mutable_tp_loads(0)->clear_job(); },
           "tp_loads.job"},
          {"a TP group without its rate",
           [](v1::PartNews* n) { n->mutable_tp_loads(0)->add_group(7); },
           "tp_loads of job llm-70b: 3 groups but 2 rates"},
          {"TP groups out of order",
           [](v1::PartNews* n) { n->mutable_tp_loads(0)->set_group(1, 0); },
           "groups ascend, each once"},
          {"a negative TP rate",
           [](v1::PartNews* n) {
             n->mutable_tp_loads(0)->set_tx_bytes_per_second(0, -1);
           },
           "group 1 sends -1 bytes/s"},
          {"an infinite TP rate",
           [](v1::PartNews* n) {
             n->mutable_tp_loads(0)->set_tx_bytes_per_second(
                 1, std::numeric_limits<double>::infinity());
           },
           "group 3 sends inf bytes/s"},
          {"a zero link rate",
           [](v1::PartNews* n) { n->mutable_tp_loads(0)->set_link_rate(0, 0); },
           "group 1 has a link rate of 0"},
          {"a TP group of no NIC",
           [](v1::PartNews* n) { n->mutable_tp_loads(0)->set_nics(1, 0); },
           "group 3 measured over 0 NICs"},
          {"TP members of no group",
           [](v1::PartNews* n) { n->mutable_tp_loads(0)->add_members(5); },
           "2 groups but 3 members"},
      };
  for (const auto& [name, damage, says] : damages) {
    v1::PartNews bad = good;
    damage(&bad);
    absl::StatusOr<PartNews> read = FromProto(bad);
    ASSERT_FALSE(read.ok()) << name;
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(read.status().message()), HasSubstr(says)) << name;
  }

  // Bytes flipped at random: refused or read, never a crash.
  const int parsed = testing::ForEachCorruptedParse<v1::PartNews>(
      good.SerializeAsString(), 2000, [](const v1::PartNews& n) {
        absl::StatusOr<PartNews> read = FromProto(n);
        if (read.ok()) (void)read->window.congestion.hosts.Baseline();
      });
  EXPECT_GT(parsed, 100);
}

}  // namespace
}  // namespace fabricdiag::cluster
