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
#include "google/protobuf/stubs/common.h"

namespace fabricdiag::cluster {
namespace {

using ::testing::HasSubstr;

PartNews Sample() {
  PartNews news;
  news.collector_id = "col-b";
  news.published = absl::FromUnixSeconds(1764547200) + absl::Milliseconds(250);
  news.excuses.congestion = {{"gpu-001", "mlx5_2"}, {"gpu-002", "mlx5_0"}};
  news.excuses.ecmp = {"gpu-001", "leaf-0"};
  news.excuses.straggler = {{"gpu-041", "mlx5_5"}};
  for (int i = 0; i < 500; ++i) news.congestion.hosts.Add(300 + i % 37);
  for (int i = 0; i < 20; ++i) news.congestion.hosts.Add(0);
  news.congestion.hosts.Add(101389);
  news.congestion.switches.Add(12.5);
  news.congestion.switches.Add(1e-300);  // a subnormal-range bucket
  news.congestion.switches.Add(1.7e308);
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
  EXPECT_EQ(read->excuses.congestion, sent.excuses.congestion);
  EXPECT_EQ(read->excuses.ecmp, sent.excuses.ecmp);
  EXPECT_EQ(read->excuses.straggler, sent.excuses.straggler);
  EXPECT_EQ(read->congestion.hosts.zeros(), 20u);
  EXPECT_EQ(read->congestion.hosts.buckets(), sent.congestion.hosts.buckets());
  EXPECT_EQ(read->congestion.switches.buckets(),
            sent.congestion.switches.buckets());
  EXPECT_EQ(read->congestion.hosts.Baseline().ports, 521u);
  EXPECT_EQ(read->congestion.hosts.Baseline().median,
            sent.congestion.hosts.Baseline().median);
  // Small: 521 host values fall in a few dozen buckets.
  EXPECT_LT(wire.ByteSizeLong(), 400u) << wire.ByteSizeLong();
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
    news.congestion.hosts = own;
    absl::StatusOr<PartNews> read = FromProto(ToProto(news));
    ASSERT_TRUE(read.ok()) << read.status();
    merged.Merge(read->congestion.hosts);
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
           [](v1::PartNews* n) { n->add_congestion_excused_node("gpu-9"); },
           "congestion_excused: 3 nodes but 2 devices"},
          {"an empty device",
           [](v1::PartNews* n) { n->set_straggler_excused_device(0, ""); },
           "straggler_excused"},
          {"an overlong switch name",
           [](v1::PartNews* n) { n->add_ecmp_excused(std::string(300, 'x')); },
           "ecmp_excused: a name of 300 bytes"},
          {"buckets out of order",
           [](v1::PartNews* n) {
             auto* h = n->mutable_host_congestion();
             std::swap(*h->mutable_bucket()->Mutable(0),
                       *h->mutable_bucket()->Mutable(1));
           },
           "host_congestion: bucket"},
          {"a bucket twice",
           [](v1::PartNews* n) {
             auto* h = n->mutable_switch_congestion();
             h->set_bucket(1, h->bucket(0));
           },
           "buckets ascend, each once"},
          {"a bucket without a count",
           [](v1::PartNews* n) {
             n->mutable_host_congestion()->add_bucket(9999);
           },
           "buckets but"},
          {"an empty bucket",
           [](v1::PartNews* n) {
             n->mutable_host_congestion()->set_count(0, 0);
           },
           "a count of 0"},
          {"counts past any fabric",
           [](v1::PartNews* n) {
             n->mutable_host_congestion()->set_count(0, uint64_t{1} << 62);
           },
           "too many values in all"},
          {"zeros past any fabric",
           [](v1::PartNews* n) {
             n->mutable_switch_congestion()->set_zeros(~uint64_t{0});
           },
           "switch_congestion"},
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
  const google::protobuf::LogSilencer quiet;  // names broken UTF-8
  const std::string bytes = good.SerializeAsString();
  std::mt19937 rng(5);
  int parsed = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string b = bytes;
    for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    v1::PartNews n;
    if (!n.ParseFromString(b)) continue;
    ++parsed;
    absl::StatusOr<PartNews> read = FromProto(n);
    if (read.ok()) (void)read->congestion.hosts.Baseline();
  }
  EXPECT_GT(parsed, 100);
}

}  // namespace
}  // namespace fabricdiag::cluster
