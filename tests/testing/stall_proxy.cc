#include "tests/testing/stall_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/testing/loopback.h"

namespace fabricdiag::testing {
namespace {

// How often the loop looks at HoldReplies/Release/stop without traffic.
constexpr int kPollMillis = 10;
constexpr size_t kReadSize = size_t{64} * 1024;

bool SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

// One client connection and the proxy's connection to the server.
struct Pair {
  int client = -1;
  int server = -1;
  std::string to_client;
  std::string to_server;
  // The last bytes passed on to the server: a marker may span two reads.
  std::string sent_tail;
  // Refused as a NATS server refuses a login (StallProxy::RefuseLogins).
  bool refuse_login = false;
  // The refusal was sent and the proxy's side shut: what the client still
  // sends is read and dropped until it closes. Closing at once, with its
  // PING unread, would reset the connection, and a client that reads the
  // reset before the refusal sees a lost connection, not a refused login.
  bool refused = false;
  // Put in place of the nonce of the server's greeting (ReplaceNonces);
  // what the server sends waits until the greeting is whole.
  std::string nonce;
  bool greeting_done = false;
  bool login_seen = false;
  bool closed = false;

  ~Pair() {
    if (client >= 0) close(client);
    if (server >= 0) close(server);
  }
};

// Appends what `fd` has to `out`; false at end of stream or on an error.
bool ReadInto(int fd, std::string* out, size_t* read_bytes) {
  char buf[kReadSize];
  const ssize_t n = read(fd, buf, sizeof(buf));
  if (n > 0) {
    out->append(buf, static_cast<size_t>(n));
    *read_bytes = static_cast<size_t>(n);
    return true;
  }
  *read_bytes = 0;
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

// How much of what was sent is kept to find a marker spanning two reads.
constexpr size_t kTailSize = 256;

// Writes as much of `data` as `fd` takes now, keeping the last bytes
// written in `tail` (if not null); false on an error.
bool Flush(int fd, std::string* data, std::string* tail) {
  while (!data->empty()) {
    const ssize_t n = write(fd, data->data(), data->size());
    if (n < 0) {
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    }
    if (tail != nullptr) {
      tail->append(*data, 0, static_cast<size_t>(n));
      if (tail->size() > kTailSize) tail->erase(0, tail->size() - kTailSize);
    }
    data->erase(0, static_cast<size_t>(n));
  }
  return true;
}

// A NATS server's answer to a CONNECT whose credentials it refuses.
constexpr char kAuthorizationViolation[] = "-ERR 'Authorization Violation'\r\n";

// Answers `p`'s CONNECT, once its client sent it whole, as a server that
// refuses the login: nothing of it reaches the server; true once answered.
bool RefusedLogin(Pair& p) {
  const size_t connect = p.to_server.find("CONNECT ");
  if (connect == std::string::npos ||
      p.to_server.find("\r\n", connect) == std::string::npos) {
    return false;
  }
  p.to_server.clear();
  // A few bytes to a fresh socket: taken at once.
  const ssize_t n = write(p.client, kAuthorizationViolation,
                          sizeof(kAuthorizationViolation) - 1);
  (void)n;
  return true;
}

// Puts `p.nonce` in place of the nonce of the server's greeting once it
// is whole (its first line, `INFO {...}`); true once done.
bool ReplacedNonce(Pair& p) {
  const size_t end = p.to_client.find("\r\n");
  if (end == std::string::npos) return false;
  const std::string field = "\"nonce\":\"";
  const size_t key = p.to_client.find(field);
  if (key != std::string::npos && key < end) {
    const size_t value = key + field.size();
    const size_t close = p.to_client.find('"', value);
    if (close != std::string::npos && close < end) {
      p.to_client.replace(value, close - value, p.nonce);
    }
  }
  return true;
}

// Whether `marker` is in what `p`'s client sent from `p.to_server[new_from]`
// on, counting a marker that starts in the bytes before.
bool SawMarker(const std::string& marker, const Pair& p, size_t new_from) {
  if (marker.empty()) return false;
  const std::string sent = p.sent_tail + p.to_server;
  const size_t new_start = p.sent_tail.size() + new_from;
  const size_t from =
      new_start >= marker.size() - 1 ? new_start - (marker.size() - 1) : 0;
  return sent.find(marker, from) != std::string::npos;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StallProxy>> StallProxy::Start(int target_port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("stall proxy: socket");
  sockaddr_in addr = LoopbackAddress(0);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      !SetNonBlocking(fd)) {
    absl::Status error = ErrnoError("stall proxy: listening on 127.0.0.1");
    close(fd);
    return error;
  }
  std::unique_ptr<StallProxy> proxy(
      new StallProxy(fd, ntohs(addr.sin_port), target_port));
  proxy->thread_ = std::thread(&StallProxy::Run, proxy.get());
  return proxy;
}

StallProxy::StallProxy(int listen_fd, int port, int target_port)
    : listen_fd_(listen_fd), port_(port), target_port_(target_port) {}

StallProxy::~StallProxy() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
}

void StallProxy::HoldRepliesFrom(std::string marker) {
  absl::MutexLock lock(&mu_);
  marker_ = std::move(marker);
  marker_holds_requests_ = false;
}

void StallProxy::HoldRequestsFrom(std::string marker) {
  absl::MutexLock lock(&mu_);
  marker_ = std::move(marker);
  marker_holds_requests_ = true;
}

void StallProxy::Release() {
  absl::MutexLock lock(&mu_);
  marker_.clear();
  holding_requests_.store(false);
  holding_.store(false);
}

void StallProxy::RefuseLogins(int n) { refuse_logins_.store(n); }

void StallProxy::ReplaceNonces(std::vector<std::string> nonces) {
  absl::MutexLock lock(&mu_);
  nonces_.assign(nonces.begin(), nonces.end());
}

void StallProxy::CutConnections() {
  cut_.store(true);
  // Cut by the proxy's loop within a poll.
  while (cut_.load()) absl::SleepFor(absl::Milliseconds(1));
}

void StallProxy::Run() {
  std::vector<std::unique_ptr<Pair>> pairs;
  std::vector<pollfd> fds;
  while (!stopping_.load()) {
    bool holding = holding_.load();
    bool holding_requests = holding_requests_.load();
    // Replies are held only in the mode that holds them.
    bool holding_replies = holding && !holding_requests;
    fds.clear();
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const std::unique_ptr<Pair>& p : pairs) {
      const bool deliver = !holding_replies && !p->to_client.empty();
      const bool pass_on = !holding_requests && !p->to_server.empty();
      fds.push_back(
          {p->client, static_cast<short>(POLLIN | (deliver ? POLLOUT : 0)), 0});
      fds.push_back(
          {p->server, static_cast<short>(POLLIN | (pass_on ? POLLOUT : 0)), 0});
    }
    if (poll(fds.data(), fds.size(), kPollMillis) < 0 && errno != EINTR) {
      return;
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
      Pair& p = *pairs[i];
      const short client_events = fds[1 + 2 * i].revents;
      const short server_events = fds[2 + 2 * i].revents;
      size_t n = 0;
      if ((client_events & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const size_t before = p.to_server.size();
        if (!ReadInto(p.client, &p.to_server, &n)) p.closed = true;
        if (p.refused) {
          p.to_server.clear();
        } else if (p.refuse_login && RefusedLogin(p)) {
          p.refused = true;
          shutdown(p.client, SHUT_WR);
        }
        // Decided before the request is passed on: it, or its answer, is
        // held.
        if (n > 0 && !holding) {
          absl::MutexLock lock(&mu_);
          if (SawMarker(marker_, p, before)) {
            marker_.clear();
            held_bytes_.store(0);
            holding = true;
            holding_requests = marker_holds_requests_;
            holding_replies = !holding_requests;
            holding_requests_.store(holding_requests);
            holding_.store(true);
          }
        }
      }
      if ((server_events & (POLLIN | POLLHUP | POLLERR)) != 0) {
        if (!ReadInto(p.server, &p.to_client, &n)) p.closed = true;
        if (holding_replies) held_bytes_.fetch_add(n);
      }
      if (!p.greeting_done) p.greeting_done = ReplacedNonce(p);
      // The client sends its CONNECT (with PING) in one write.
      if (!p.login_seen && !p.refuse_login &&
          p.to_server.find("CONNECT ") != std::string::npos) {
        p.login_seen = true;
        logins_.fetch_add(1);
      }
      // A login to refuse sends the server nothing, not even the start of
      // its CONNECT.
      if (!holding_requests && !p.refuse_login &&
          !Flush(p.server, &p.to_server, &p.sent_tail)) {
        p.closed = true;
      }
      if (p.refused) p.to_client.clear();  // nothing more after the refusal
      if (!holding_replies && p.greeting_done &&
          !Flush(p.client, &p.to_client, nullptr)) {
        p.closed = true;
      }
    }
    if (cut_.load()) {
      pairs.clear();
      cut_.store(false);
    }
    if (holding_requests) {
      size_t held = 0;
      for (const std::unique_ptr<Pair>& p : pairs) held += p->to_server.size();
      held_bytes_.store(held);
    }
    pairs.erase(std::remove_if(
                    pairs.begin(), pairs.end(),
                    [](const std::unique_ptr<Pair>& p) { return p->closed; }),
                pairs.end());
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int client =
        accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) continue;
    connections_.fetch_add(1);
    auto pair = std::make_unique<Pair>();
    pair->client = client;
    {
      absl::MutexLock lock(&mu_);
      if (!nonces_.empty()) {
        pair->nonce = std::move(nonces_.front());
        nonces_.pop_front();
      }
    }
    pair->greeting_done = pair->nonce.empty();
    for (int left = refuse_logins_.load(); left > 0;) {
      if (refuse_logins_.compare_exchange_weak(left, left - 1)) {
        pair->refuse_login = true;
        break;
      }
    }
    pair->server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in target = LoopbackAddress(target_port_);
    // A blocking connect: the server is on loopback.
    if (pair->server < 0 ||
        connect(pair->server, reinterpret_cast<const sockaddr*>(&target),
                sizeof(target)) != 0 ||
        !SetNonBlocking(pair->server)) {
      continue;  // the client sees its connection closed
    }
    pairs.push_back(std::move(pair));
  }
}

}  // namespace fabricdiag::testing
