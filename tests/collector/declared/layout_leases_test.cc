#include "collector/declared/layout_leases.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collector/declared/layout_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;

// Keeps nothing: writes succeed at once, so that a test can publish
// thousands of snapshots a second (no file, no fsync).
class NullState final : public DeclaredState {
 public:
  std::string Describe() const override { return "nowhere"; }
  absl::StatusOr<uint64_t> WriteLayout(const v1::Layout&, absl::Time, uint64_t,
                                       absl::Time) override {
    return 0;
  }
  absl::Status RemoveLayout(absl::string_view, uint64_t, absl::Time) override {
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<DeclaredLayout>> ReadLayouts() override {
    return std::vector<DeclaredLayout>();
  }
  absl::StatusOr<uint64_t> WriteTopology(const v1::Topology&, absl::Time,
                                         uint64_t, absl::Time) override {
    return 0;
  }
  absl::StatusOr<std::optional<DeclaredTopology>> ReadTopology() override {
    return std::nullopt;
  }
  void Reject(absl::string_view, absl::string_view) override {}
  void Watch(std::function<void(const DeclaredChange&)>) override {}
  void StopWatching() override {}
  std::vector<std::string> problems() const override { return {}; }
};

// 8 ranks on one host, with a lease of `lease_seconds` declared at `now`.
v1::Layout LeasedLayout(const std::string& job, absl::Time now) {
  v1::Layout layout;
  layout.set_job(job);
  layout.set_gpus_per_node(8);
  layout.mutable_parallelism()->set_tp(8);
  layout.mutable_parallelism()->set_pp(1);
  layout.mutable_parallelism()->set_dp(1);
  layout.add_hosts(absl::StrFormat("%s-h0", job));
  *layout.mutable_declaration() = NewDeclaration("http", "", 3600, now);
  return layout;
}

// The periodic lease check and the metrics walk every layout while renewals
// (and declarations) replace the registry's snapshot: each walk must hold
// the snapshot it walks. Walking a temporary's map (the snapshot released
// as soon as the loop began) read freed memory once a renewal published
// the next one: the collector aborted with std::bad_alloc or crashed after
// a few hundred renewals of 1,000 jobs (bench/RESULTS.md). Under
// FABRICDIAG_SANITIZE this fails at the first such walk; without, it
// crashed within the second this test runs.
TEST(LayoutLeasesTest, ChecksAndMetricsWalkASnapshotRenewalsDoNotFree) {
  FakeClock clock;
  NullState state;
  LayoutRegistry registry(&state, &clock);
  ASSERT_TRUE(registry.Load().ok());
  LayoutLeases leases(&registry, &clock, nullptr);
  constexpr int kJobs = 1000;
  std::vector<std::string> jobs;
  for (int i = 0; i < kJobs; ++i) {
    jobs.push_back(absl::StrFormat("job-%04d", i));
    ASSERT_TRUE(registry.Apply(LeasedLayout(jobs.back(), clock.Now())).ok());
  }

  std::atomic<bool> stop{false};
  std::atomic<int> renewals{0};
  std::thread renewer([&] {
    for (int k = 0; !stop.load(); ++k) {
      absl::StatusOr<v1::LayoutDeclaration> renewed =
          leases.Renew(jobs[k % kJobs], std::nullopt);
      if (!renewed.ok()) {
        ADD_FAILURE() << renewed.status();
        return;
      }
      ++renewals;
    }
  });
  const absl::Time end = absl::Now() + absl::Seconds(1);
  int walks = 0;
  while (absl::Now() < end) {
    EXPECT_EQ(leases.ExpireDue(), 0);
    std::string metrics;
    leases.AppendMetrics(&metrics);
    EXPECT_THAT(metrics, HasSubstr(absl::StrCat("\nfabricdiag_layouts_leased ",
                                                kJobs, "\n")));
    ++walks;
  }
  stop = true;
  renewer.join();
  EXPECT_GT(walks, 0);
  EXPECT_GT(renewals.load(), 0);
  EXPECT_EQ(registry.NumLayouts(), static_cast<size_t>(kJobs));
}

}  // namespace
}  // namespace fabricdiag::collector
