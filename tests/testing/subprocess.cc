#include "tests/testing/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace fabricdiag::testing {
namespace {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Where the output directory goes; the same choice as TempDir.
std::string TempBase() {
  const char* base = getenv("TEST_TMPDIR");
  if (base == nullptr) base = getenv("TMPDIR");
  if (base == nullptr) base = "/tmp";
  return base;
}

}  // namespace

Subprocess::Subprocess(std::vector<std::string> argv)
    : argv_(std::move(argv)) {}

Subprocess::~Subprocess() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    Wait(absl::Seconds(10));
  }
  if (!dir_.empty()) {
    ::unlink((dir_ + "/stdout").c_str());
    ::unlink((dir_ + "/stderr").c_str());
    ::rmdir(dir_.c_str());
  }
}

absl::Status Subprocess::Start() {
  std::string tmpl = absl::StrCat(TempBase(), "/subprocessXXXXXX");
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
  }
  dir_ = tmpl;
  std::vector<char*> args;
  for (std::string& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  const std::string out = dir_ + "/stdout";
  const std::string err = dir_ + "/stderr";
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid_ == 0) {
    // Killed with the test process even when that crashes before the
    // destructor runs (a segfault, an abort, a ctest timeout): no server
    // is left behind. (The signal follows the forking thread; every caller
    // starts children from the test's main thread.)
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);  // the parent died first
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int n = ::open("/dev/null", O_RDONLY);
    if (o < 0 || e < 0 || n < 0) ::_exit(126);
    ::dup2(n, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    // The child must not inherit a blocked signal (the parent may block
    // SIGTERM); exec keeps the mask.
    sigset_t empty;
    sigemptyset(&empty);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return absl::OkStatus();
}

void Subprocess::Signal(int signo) {
  if (running()) ::kill(pid_, signo);
}

bool Subprocess::Running() {
  return pid_ > 0 && !Wait(absl::ZeroDuration()).has_value();
}

std::optional<int> Subprocess::Wait(absl::Duration timeout) {
  if (exit_code_.has_value()) return exit_code_;
  if (pid_ <= 0) return std::nullopt;
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ =
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    if (absl::Now() > deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(10));
  }
}

std::string Subprocess::Stdout() const {
  return ReadWholeFile(dir_ + "/stdout");
}
std::string Subprocess::Stderr() const {
  return ReadWholeFile(dir_ + "/stderr");
}

bool Subprocess::WaitForStderr(const std::string& needle, std::string* line,
                               absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    for (absl::string_view l : absl::StrSplit(Stderr(), '\n')) {
      if (absl::StrContains(l, needle)) {
        if (line != nullptr) *line = std::string(l);
        return true;
      }
    }
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

RunResult RunCommand(std::vector<std::string> argv, absl::Duration timeout) {
  Subprocess p(std::move(argv));
  RunResult result;
  if (!p.Start().ok()) return result;
  std::optional<int> code = p.Wait(timeout);
  result.exit_code = code.value_or(-1);
  result.out = p.Stdout();
  result.err = p.Stderr();
  return result;
}

int PortFromLog(const std::string& line, const std::string& what) {
  std::smatch m;
  int port = 0;
  if (std::regex_search(line, m, std::regex(what + " on port ([0-9]+)"))) {
    (void)absl::SimpleAtoi(m[1].str(), &port);
  }
  return port;
}

}  // namespace fabricdiag::testing
