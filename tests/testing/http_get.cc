#include "tests/testing/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/testing/loopback.h"

namespace fabricdiag::testing {
namespace {

constexpr absl::Duration kPollPeriod = absl::Milliseconds(20);
// How much of a non-200 body an error message quotes.
constexpr size_t kMaxErrorBody = 1024;

// Closes the descriptor on every path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Waits for `events` on `fd` until `deadline`.
absl::Status PollUntil(int fd, short events, absl::Time deadline) {
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError("HTTP request timed out");
    }
    pollfd p = {fd, events, 0};
    const int r =
        poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (r > 0) return absl::OkStatus();
    if (r < 0 && errno != EINTR) return ErrnoError("poll");
  }
}

}  // namespace

absl::StatusOr<int> PickFreeTcpPort() {
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return ErrnoError("socket");
  sockaddr_in addr = LoopbackAddress(0);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoError("bind 127.0.0.1:0");
  }
  socklen_t len = sizeof(addr);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return ErrnoError("getsockname");
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

absl::StatusOr<HttpResponse> HttpGetAnyStatus(int port, absl::string_view path,
                                              absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return ErrnoError("socket");
  sockaddr_in addr = LoopbackAddress(port);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
          0 &&
      errno != EINPROGRESS) {
    if (errno == ECONNREFUSED) {
      return absl::UnavailableError(
          absl::StrCat("127.0.0.1:", port, ": connection refused"));
    }
    return ErrnoError(absl::StrCat("connect 127.0.0.1:", port));
  }
  if (absl::Status s = PollUntil(fd.get(), POLLOUT, deadline); !s.ok()) {
    return s;
  }
  int so_error = 0;
  socklen_t so_len = sizeof(so_error);
  getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &so_len);
  if (so_error != 0) {
    if (so_error == ECONNREFUSED) {
      return absl::UnavailableError(
          absl::StrCat("127.0.0.1:", port, ": connection refused"));
    }
    return absl::InternalError(absl::StrCat("connect 127.0.0.1:", port, ": ",
                                            std::strerror(so_error)));
  }

  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1:", port,
                   "\r\nAccept: text/plain\r\n\r\n");
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(fd.get(), request.data() + sent,
                           request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (absl::Status s = PollUntil(fd.get(), POLLOUT, deadline); !s.ok()) {
        return s;
      }
    } else {
      return ErrnoError("send");
    }
  }

  std::string response;
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = recv(fd.get(), buf, sizeof(buf), 0);
    if (n > 0) {
      response.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno == EAGAIN || errno == EINTR) {
      if (absl::Status s = PollUntil(fd.get(), POLLIN, deadline); !s.ok()) {
        return s;
      }
    } else {
      return ErrnoError("recv");
    }
  }

  const size_t header_end = response.find("\r\n\r\n");
  const size_t line_end = response.find("\r\n");
  if (header_end == std::string::npos || line_end == std::string::npos) {
    return absl::InternalError(
        absl::StrCat("malformed HTTP response of ", response.size(), " bytes"));
  }
  HttpResponse out;
  out.status_line = response.substr(0, line_end);
  // "HTTP/1.x 200 OK"
  const size_t sp = out.status_line.find(' ');
  if (sp == std::string::npos ||
      !absl::SimpleAtoi(absl::string_view(out.status_line).substr(sp + 1, 3),
                        &out.code)) {
    return absl::InternalError(absl::StrCat("malformed status line: ",
                                            out.status_line.substr(0, 128)));
  }
  out.body = response.substr(header_end + 4);
  return out;
}

absl::StatusOr<std::string> HttpGet(int port, absl::string_view path,
                                    absl::Duration timeout) {
  absl::StatusOr<HttpResponse> r = HttpGetAnyStatus(port, path, timeout);
  if (!r.ok()) return r.status();
  if (r->code != 200) {
    return absl::InternalError(
        absl::StrCat("GET ", path, ": ", r->status_line.substr(0, 128), "\n",
                     absl::string_view(r->body).substr(0, kMaxErrorBody)));
  }
  return std::move(r->body);
}

absl::StatusOr<std::string> WaitForHttpBody(
    int port, absl::string_view path, absl::Duration timeout,
    const std::function<bool(absl::string_view body)>& ready,
    const std::function<bool()>& alive) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status last = absl::UnavailableError("no attempt");
  while (absl::Now() < deadline) {
    if (!alive()) {
      return absl::AbortedError(
          absl::StrCat("the server on port ", port,
                       " exited; last attempt: ", last.ToString()));
    }
    absl::StatusOr<std::string> body = HttpGet(port, path, absl::Seconds(5));
    if (body.ok() && ready(*body)) return body;
    last = body.ok() ? absl::UnavailableError("body not ready yet")
                     : body.status();
    absl::SleepFor(kPollPeriod);
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "port ", port, path, " not ready after ", absl::FormatDuration(timeout),
      "; last attempt: ", last.ToString()));
}

}  // namespace fabricdiag::testing
