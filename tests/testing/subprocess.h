// Runs a real binary as a child process for end-to-end tests and benchmarks
// (our agent, collector and CLI, Debian's prometheus-node-exporter).
//
// stdout and stderr go to files in a temporary directory (under
// $TEST_TMPDIR, $TMPDIR or /tmp) so that a test can read them at any time;
// the child is killed (SIGKILL) and reaped when the Subprocess is destroyed,
// and by the kernel when the test process dies without destroying it (a
// crash), so no test leaves a process behind. No gtest dependency: the
// benchmarks use it too.
//
//   Subprocess agent({agent_path, "--listen=127.0.0.1:0", "--sysfs_root=" +
//   root}); ASSERT_TRUE(agent.Start().ok()); std::string line;
//   ASSERT_TRUE(agent.WaitForStderr("serving /metrics on port", &line));
//   agent.Signal(SIGTERM);
//   EXPECT_EQ(agent.Wait(absl::Seconds(10)), 0);
//
// Not thread-safe.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace fabricdiag::testing {

class Subprocess {
 public:
  explicit Subprocess(std::vector<std::string> argv);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  absl::Status Start();
  pid_t pid() const { return pid_; }
  // True while the child has not been seen to exit (no system call).
  bool running() const { return pid_ > 0 && !exit_code_.has_value(); }
  // True while the child has not exited; reaps it when it has, so that a
  // poll loop notices a server that died on startup.
  bool Running();

  void Signal(int signo);
  // Waits for the child to exit; returns its exit code (128+N for a signal),
  // or nullopt on timeout.
  std::optional<int> Wait(absl::Duration timeout);

  std::string Stdout() const;
  std::string Stderr() const;
  // Polls stderr until a line containing `needle` appears; copies the line.
  bool WaitForStderr(const std::string& needle, std::string* line,
                     absl::Duration timeout = absl::Seconds(20)) const;

 private:
  std::vector<std::string> argv_;
  std::string dir_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

// RunCommand runs argv to completion (at most `timeout`) and returns {exit
// code, stdout, stderr}; exit code -1 on timeout.
struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
RunResult RunCommand(std::vector<std::string> argv,
                     absl::Duration timeout = absl::Seconds(60));

// The port a server logged as "<what> on port N" in `line` (our collector:
// "gRPC on port 9811, HTTP on port 9812"); 0 when absent.
int PortFromLog(const std::string& line, const std::string& what);

}  // namespace fabricdiag::testing
