#include "bench/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace fabricdiag::agent {
namespace {

// Reaping is polled (waitpid WNOHANG) at this period until a deadline: a
// child has no descriptor to block on without pidfd_open (Linux 5.3+).
constexpr absl::Duration kReapPoll = absl::Milliseconds(2);

int ExitCodeOf(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    std::vector<std::string> argv, Options options) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  if (::access(argv[0].c_str(), X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat(argv[0], ": not executable: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string out =
      options.stdout_path.empty() ? "/dev/null" : options.stdout_path;
  const std::string err =
      options.stderr_path.empty() ? "/dev/null" : options.stderr_path;
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null",
                                   O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // The child must not inherit a blocked SIGTERM (our caller may block it).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attr,
                             cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("posix_spawn ", argv[0], ": ", std::strerror(rc)));
  }
  return std::unique_ptr<ChildProcess>(
      new ChildProcess(pid, std::move(options)));
}

ChildProcess::~ChildProcess() { Stop(); }

bool ChildProcess::TryReap() {
  if (exit_code_.has_value()) return true;
  int wstatus = 0;
  const pid_t r = waitpid(pid_, &wstatus, WNOHANG);
  if (r == pid_) {
    exit_code_ = ExitCodeOf(wstatus);
    return true;
  }
  if (r < 0 && errno == ECHILD) {  // reaped elsewhere; nothing to wait for
    exit_code_ = -1;
    return true;
  }
  return false;
}

bool ChildProcess::Running() { return !TryReap(); }

absl::StatusOr<int> ChildProcess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!TryReap()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("pid ", pid_, " still running after ",
                       absl::FormatDuration(timeout)));
    }
    absl::SleepFor(kReapPoll);
  }
  return *exit_code_;
}

void ChildProcess::Stop() {
  if (TryReap()) return;
  kill(pid_, SIGTERM);
  if (Wait(options_.stop_grace).ok()) return;
  kill(pid_, SIGKILL);
  // SIGKILL cannot be ignored; a blocking wait is bounded.
  int wstatus = 0;
  while (waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
  }
  exit_code_ = ExitCodeOf(wstatus);
}

}  // namespace fabricdiag::agent
