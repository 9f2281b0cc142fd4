// ChildProcess: runs another program (the real agent binary, Debian's
// prometheus-node-exporter) for benchmarks and black-box tests, and makes
// sure it is gone when the owner is.
//
// The child is started with posix_spawn (safe in a multi-threaded parent).
// Its stdout and stderr go to files (or /dev/null), so a test can read what
// `fabricdiag-agent --once` printed and show a server's log when it failed.
// The destructor sends SIGTERM, waits up to a grace period and then sends
// SIGKILL, so every exit path of a test (including a failed ASSERT) reaps
// the child.
//
//   absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start(
//       {"/usr/bin/prometheus-node-exporter", "--path.sysfs=/tmp/sys"}, {});
//   if (!child.ok()) ...;
//   pid_t pid = (*child)->pid();
//   absl::StatusOr<int> code = (*child)->Wait(absl::Seconds(10));
//
// Thread safety: not thread-safe; one owner drives the process.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace fabricdiag::agent {

class ChildProcess {
 public:
  struct Options {
    std::string stdout_path;  // empty: /dev/null
    std::string stderr_path;  // empty: /dev/null
    // How long Stop() waits after SIGTERM before SIGKILL.
    absl::Duration stop_grace = absl::Seconds(5);
  };

  // `argv[0]` is the path of the program (no PATH search). kNotFound when it
  // is not an executable file; kInternal when spawning fails.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      std::vector<std::string> argv, Options options);

  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  // True while the child has not exited. Reaps it when it has.
  bool Running();

  // Waits for the child to exit by itself. Returns its exit code (128+N for
  // death by signal N); kDeadlineExceeded when it is still running after
  // `timeout` (it is left running).
  absl::StatusOr<int> Wait(absl::Duration timeout);

  // SIGTERM, then SIGKILL after `stop_grace`; reaps the child. Idempotent.
  void Stop();

  // Exit code once the child has been reaped.
  std::optional<int> exit_code() const { return exit_code_; }

 private:
  ChildProcess(pid_t pid, Options options)
      : pid_(pid), options_(std::move(options)) {}
  // Non-blocking reap; true when the child is gone.
  bool TryReap();

  const pid_t pid_;
  const Options options_;
  std::optional<int> exit_code_;
};

}  // namespace fabricdiag::agent
