// Shared fixture pieces for the CLI unit tests: captured streams, a fake
// clock, temporary files and a valid layout.
#pragma once

#include <sstream>
#include <string>

#include "cli/commands.h"
#include "common/clock.h"

namespace fabricdiag::cli::testing {

// 2026-11-22T03:00:00Z, the time of docs/findings.md's example finding.
inline constexpr int64_t kExampleUnixSeconds = 1795316400;

// 16 ranks: tp=2 dp=8 ep=4 (docs/layout-format.md's worked example), 2 hosts.
inline constexpr char kValidLayoutYaml[] = R"(job: moe-train-42
gpus_per_node: 8
parallelism:
  tp: 2
  pp: 1
  dp: 8
  ep: 4
hosts: [gpu-000, gpu-001]
rails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7]
)";

struct TestEnv {
  TestEnv();
  std::istringstream in;
  std::ostringstream out;
  std::ostringstream err;
  FakeClock clock;
  CommandEnv env;
};

// A path for the running test's file `name`, in a directory of this
// process's own that is removed, with everything in it, once the tests ran.
std::string TempPath(const std::string& name);
// Writes `content` (mode 0600) to TempPath(name); returns the path.
std::string WriteTempFile(const std::string& name, const std::string& content);

}  // namespace fabricdiag::cli::testing
