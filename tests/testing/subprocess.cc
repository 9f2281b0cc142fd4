#include "tests/testing/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace fabricdiag::testing {
namespace {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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
  std::string tmpl = absl::StrCat(::testing::TempDir(), "/subprocessXXXXXX");
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
  }
  dir_ = tmpl;
  std::vector<char*> args;
  for (std::string& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  const std::string out = dir_ + "/stdout";
  const std::string err = dir_ + "/stderr";
  pid_ = ::fork();
  if (pid_ < 0) {
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid_ == 0) {
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int n = ::open("/dev/null", O_RDONLY);
    if (o < 0 || e < 0 || n < 0) ::_exit(126);
    ::dup2(n, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    // Die with the test, even if it is killed.
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return absl::OkStatus();
}

void Subprocess::Signal(int signo) {
  if (running()) ::kill(pid_, signo);
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

absl::StatusOr<std::string> HttpGet(int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(std::strerror(errno));
  struct timeval tv = {10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::string err = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError(
        absl::StrCat("connect 127.0.0.1:", port, ": ", err));
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  if (::write(fd, request.data(), request.size()) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return absl::UnavailableError("short write");
  }
  std::string response;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos)
    return absl::UnavailableError("no HTTP response");
  if (!absl::StartsWith(response, "HTTP/1.1 200") &&
      !absl::StartsWith(response, "HTTP/1.0 200")) {
    // The status line and the body: a 503 says why in its body.
    return absl::UnavailableError(
        absl::StrCat(response.substr(0, response.find("\r\n")), "\n",
                     response.substr(body + 4)));
  }
  return response.substr(body + 4);
}

}  // namespace fabricdiag::testing
