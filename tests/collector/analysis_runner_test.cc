// The analysis thread yields the CPU to ingest: it runs at a lower
// priority than the rest of the collector. A pass hands what the series
// store knows about each node to agent_down with the configured thresholds.
#include "collector/analysis_runner.h"

#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "collector/state_store.h"
#include "common/clock.h"
#include "tests/testing/fake_sysfs.h"

namespace fabricdiag::collector {
namespace {

// Niceness of every thread of this process, from /proc/self/task/*/stat.
std::vector<int> ThreadNiceness() {
  std::vector<int> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (struct dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/stat");
    std::stringstream text;
    text << in.rdbuf();
    const std::string stat = text.str();
    // Fields after the ")" that ends the command name: state is field 3,
    // nice field 19.
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::vector<std::string> fields =
        absl::StrSplit(stat.substr(paren + 2), ' ', absl::SkipEmpty());
    if (fields.size() > 16) out.push_back(std::stoi(fields[16]));
  }
  closedir(dir);
  return out;
}

int Count(const std::vector<int>& v, int x) {
  int n = 0;
  for (int y : v) n += y == x;
  return n;
}

TEST(AnalysisRunnerTest, AnalysisThreadRunsBelowIngest) {
  const int base = getpriority(PRIO_PROCESS, 0);
  if (base + 10 > 19) GTEST_SKIP() << "already running at nice " << base;
  agent::ScopedTempDir tmp;
  SystemClock clock;
  auto state = StateStore::Open(tmp.path(), &clock);
  ASSERT_TRUE(state.ok()) << state.status();
  LayoutRegistry registry(state->get(), &clock);
  FindingsStore findings(state->get(), FindingsStoreOptions{});
  SeriesStore series(SeriesStore::Options{}, clock);
  AnalysisStats stats;
  AnalysisRunner::Options options;
  options.interval = absl::Milliseconds(10);
  AnalysisRunner runner(&series, &registry, &findings, &stats, clock, options);
  const int before = Count(ThreadNiceness(), base + 10);
  runner.Start();
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (Count(ThreadNiceness(), base + 10) == before &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(Count(ThreadNiceness(), base + 10), before + 1);
  // The test's own thread keeps the process's priority.
  EXPECT_EQ(getpriority(PRIO_PROCESS, 0), base);
  runner.Stop();
}

TEST(AnalysisRunnerTest, AgentDownFollowsTheAnalysisConfig) {
  agent::ScopedTempDir tmp;
  FakeClock clock(absl::FromUnixSeconds(1795000000));
  auto state = StateStore::Open(tmp.path(), &clock);
  ASSERT_TRUE(state.ok()) << state.status();
  LayoutRegistry registry(state->get(), &clock);
  FindingsStore findings(state->get(), FindingsStoreOptions{});
  ASSERT_TRUE(findings.Load().ok());
  SeriesStore series(SeriesStore::Options{}, clock);
  // An agent with a 1 s interval reports once and goes silent.
  std::shared_ptr<NodeSeries> node = series.OpenNode("gpu-1");
  ASSERT_TRUE(
      node->BeginStream("boot-a", 1000, 1, "ipv4:127.0.0.1:1", clock.Now())
          .ok());
  v1::Schema schema;
  schema.set_schema_id(1);
  absl::StatusOr<std::vector<uint32_t>> slots = node->MapSchema(schema);
  ASSERT_TRUE(slots.ok()) << slots.status();
  ReportView report;
  report.seq = 1;
  report.wall_time_unix_nanos = absl::ToUnixNanos(clock.Now());
  uint64_t held = 0;
  ASSERT_EQ(node->Ingest("boot-a", report, *slots, clock.Now(), &held),
            NodeSeries::Outcome::kStored);
  node->EndStream(1);

  AnalysisStats stats;
  AnalysisRunner::Options options;
  options.analysis.agent_down.missed_intervals = 5;
  AnalysisRunner runner(&series, &registry, &findings, &stats, clock, options);
  clock.Advance(absl::Seconds(4));
  runner.RunOnce();
  EXPECT_THAT(findings.Active(), ::testing::IsEmpty())
      << "down after 4 intervals of the configured 5";
  clock.Advance(absl::Seconds(1));
  runner.RunOnce();
  std::vector<v1::Finding> active = findings.Active();
  ASSERT_THAT(active, ::testing::SizeIs(1));
  EXPECT_EQ(active[0].kind(), "agent_down");
  EXPECT_EQ(active[0].node(), "gpu-1");
  EXPECT_EQ(active[0].evidence().at("missed_intervals"), 5);
}

}  // namespace
}  // namespace fabricdiag::collector
