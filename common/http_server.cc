#include "common/http_server.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/gzip.h"
#include "common/http_tls.h"
#include "common/log.h"

namespace fabricdiag {
namespace {

// Bodies smaller than this are sent as they are: gzip's header and the CPU
// are not worth it.
constexpr size_t kMinGzipBytes = 1024;

timeval Timeval(absl::Duration d) {
  return absl::ToTimeval(std::max(d, absl::Milliseconds(1)));
}

std::string PeerAddress(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
  } else if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

// Status line and headers of a response.
std::string ResponseHead(const HttpResponse& r, size_t body_bytes, bool gzip,
                         bool keep_alive, int minor_version) {
  std::string head =
      absl::StrCat("HTTP/1.1 ", r.status, " ", HttpStatusText(r.status),
                   "\r\nContent-Type: ", r.content_type,
                   "\r\nContent-Length: ", body_bytes, "\r\n");
  if (gzip) absl::StrAppend(&head, "Content-Encoding: gzip\r\n");
  if (r.compressible) absl::StrAppend(&head, "Vary: Accept-Encoding\r\n");
  for (const auto& [name, value] : r.headers) {
    absl::StrAppend(&head, name, ": ", value, "\r\n");
  }
  if (!keep_alive) {
    absl::StrAppend(&head, "Connection: close\r\n");
  } else if (minor_version == 0) {
    absl::StrAppend(&head, "Connection: keep-alive\r\n");
  }
  absl::StrAppend(&head, "\r\n");
  return head;
}

// "ADDR:PORT" or "[V6]:PORT" with a port in 0..65535 (0: any free port;
// libevent's own parser refuses 0).
bool ParseListenAddress(const std::string& listen, sockaddr_storage* addr,
                        int* addr_len) {
  const size_t colon = listen.rfind(':');
  uint32_t port = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(absl::string_view(listen).substr(colon + 1), &port) ||
      port > 65535) {
    return false;
  }
  const std::string with_port = absl::StrCat(listen.substr(0, colon), ":1");
  if (evutil_parse_sockaddr_port(with_port.c_str(),
                                 reinterpret_cast<sockaddr*>(addr),
                                 addr_len) != 0) {
    return false;
  }
  const uint16_t net_port = htons(static_cast<uint16_t>(port));
  if (addr->ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(addr)->sin6_port = net_port;
  } else {
    reinterpret_cast<sockaddr_in*>(addr)->sin_port = net_port;
  }
  return true;
}

HttpResponse ErrorResponse(int status, absl::string_view why) {
  HttpResponse r;
  r.status = status;
  r.body = absl::StrCat(status, " ", HttpStatusText(status), ": ", why, "\n");
  r.compressible = false;
  return r;
}

}  // namespace

const char* HttpStatusText(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Unknown";
  }
}

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, std::vector<HttpRoute> routes)
      : options_(std::move(options)), routes_(std::move(routes)) {}

  ~Impl() { Stop(); }

  absl::Status Start() {
    static const int kThreads = [] {
      // SIGPIPE would kill the process when a client disconnects while its
      // response is being written; the write error is handled instead.
      signal(SIGPIPE, SIG_IGN);
      return evthread_use_pthreads();
    }();
    if (kThreads != 0) return absl::InternalError("libevent has no threads");
    if (options_.tls_cert_file.empty() != options_.tls_key_file.empty()) {
      return absl::InvalidArgumentError(
          "a TLS certificate needs its key, and a key its certificate");
    }
    if (!options_.tls_cert_file.empty()) {
      absl::StatusOr<std::unique_ptr<HttpTlsContext>> tls =
          HttpTlsContext::Load(options_.tls_cert_file, options_.tls_key_file);
      if (!tls.ok()) return tls.status();
      tls_ = *std::move(tls);
    }

    sockaddr_storage addr{};
    int addr_len = sizeof(addr);
    if (!ParseListenAddress(options_.listen, &addr, &addr_len)) {
      return absl::InvalidArgumentError(absl::StrCat(
          options_.listen, ": expected ADDR:PORT with a port in 0..65535"));
    }
    base_ = event_base_new();
    if (base_ == nullptr) return absl::InternalError("event_base_new failed");
    // SO_REUSEADDR only: no SO_REUSEPORT, so a second process cannot bind
    // the same port and silently take half of the connections.
    listener_ = evconnlistener_new_bind(
        base_, &Impl::OnAccept, this,
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE, 128,
        reinterpret_cast<sockaddr*>(&addr), addr_len);
    if (listener_ == nullptr) {
      return absl::UnavailableError(absl::StrCat(
          "cannot listen on ", options_.listen, ": ", std::strerror(errno)));
    }
    sockaddr_storage bound{};
    socklen_t bound_len = sizeof(bound);
    if (getsockname(evconnlistener_get_fd(listener_),
                    reinterpret_cast<sockaddr*>(&bound), &bound_len) == 0) {
      port_ = ntohs(bound.ss_family == AF_INET6
                        ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    }
    wake_ = event_new(base_, -1, 0, &Impl::OnWake, this);
    for (int i = 0; i < std::max(1, options_.worker_threads); ++i) {
      workers_.emplace_back([this] { WorkerLoop(); });
    }
    loop_ = std::thread([this] { event_base_dispatch(base_); });
    return absl::OkStatus();
  }

  int port() const { return port_; }

  Stats stats() const {
    Stats s;
    s.connections = connections_.load();
    s.rejected_connections = rejected_.load();
    s.requests = requests_.load();
    s.bad_requests = bad_requests_.load();
    s.timeouts = timeouts_.load();
    s.overloaded = overloaded_.load();
    s.tls = tls_ != nullptr;
    s.tls_handshake_failures = tls_handshake_failures_.load();
    s.open_connections = open_.load();
    return s;
  }

 private:
  enum class State {
    kHead,     // waiting for (the rest of) a request head
    kBody,     // waiting for (the rest of) a request body
    kIdle,     // keep-alive, between requests
    kBusy,     // a worker is running the handler
    kWriting,  // the response is being sent
  };

  struct Connection {
    Impl* impl = nullptr;
    uint64_t id = 0;
    bufferevent* bev = nullptr;
    event* timer = nullptr;
    std::string peer;
    State state = State::kHead;
    bool handshake_done = false;  // HTTPS: BEV_EVENT_CONNECTED was seen

    bool keep_alive = false;   // after the response being written
    bool close_after = false;  // the client closed its side
    // kBody: the request whose body is arriving, and its route.
    HttpRequest pending;
    const HttpRoute* pending_route = nullptr;
  };

  struct Job {
    uint64_t id = 0;
    HttpRequest request;
    const HttpRoute* route = nullptr;
  };

  struct Done {
    uint64_t id = 0;
    std::string bytes;
    bool keep_alive = false;
  };

  // ---- accepting ----------------------------------------------------------

  static void OnAccept(evconnlistener*, evutil_socket_t fd, sockaddr* sa, int,
                       void* arg) {
    static_cast<Impl*>(arg)->Accept(fd, sa);
  }

  void Accept(evutil_socket_t fd, sockaddr* sa) {
    std::string peer = PeerAddress(sa);
    size_t& from_peer = per_client_[peer];
    if (conns_.size() >= options_.max_connections ||
        from_peer >= options_.max_connections_per_client) {
      if (from_peer == 0) per_client_.erase(peer);
      ++rejected_;
      evutil_closesocket(fd);
      return;
    }
    ++from_peer;
    ++connections_;
    auto conn = std::make_unique<Connection>();
    conn->impl = this;
    conn->id = ++next_id_;
    conn->peer = std::move(peer);
    evutil_make_socket_nonblocking(fd);
    conn->bev = NewBufferevent(fd);
    conn->timer = evtimer_new(base_, &Impl::OnTimer, conn.get());
    if (conn->bev == nullptr || conn->timer == nullptr) {
      if (conn->bev == nullptr) evutil_closesocket(fd);
      Release(conn.get());
      return;
    }
    bufferevent_setcb(conn->bev, &Impl::OnRead, &Impl::OnWritten,
                      &Impl::OnEvent, conn.get());
    bufferevent_enable(conn->bev, EV_READ | EV_WRITE);
    // A client that connects and sends nothing gets the head deadline too.
    Arm(conn.get(), options_.header_timeout);
    open_.store(conns_.size() + 1);
    conns_.emplace(conn->id, std::move(conn));
  }

  // A plain socket's bufferevent, or, for HTTPS, one that runs the server
  // side of the handshake first. nullptr (fd left open) on failure.
  bufferevent* NewBufferevent(evutil_socket_t fd) {
    if (tls_ == nullptr) {
      return bufferevent_socket_new(base_, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    SSL* ssl = SSL_new(tls_->get());
    if (ssl == nullptr) {
      ERR_clear_error();
      return nullptr;
    }
    bufferevent* bev = bufferevent_openssl_socket_new(
        base_, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev == nullptr) {
      SSL_free(ssl);
      return nullptr;
    }
    // Clients often close without TLS's close_notify once they have the
    // whole response (its Content-Length says where it ends): that is an
    // end of stream, as on a plain socket, not an error.
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
  }

  // ---- reading and parsing -------------------------------------------------

  static void OnRead(bufferevent*, void* arg) {
    auto* c = static_cast<Connection*>(arg);
    c->impl->Read(c);
  }

  void Read(Connection* c) {
    if (c->state == State::kBusy || c->state == State::kWriting) return;
    evbuffer* in = bufferevent_get_input(c->bev);
    if (evbuffer_get_length(in) == 0) return;
    if (c->state == State::kBody) {
      ReadBody(c);
      return;
    }
    if (c->state == State::kIdle) {
      c->state = State::kHead;
      Arm(c, options_.header_timeout);
    }
    evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, nullptr);
    if (end.pos < 0) {
      if (evbuffer_get_length(in) > options_.max_header_bytes) {
        Fail(c, 431, "the request head is too large");
      }
      return;  // wait for more, within the deadline
    }
    if (static_cast<size_t>(end.pos) > options_.max_header_bytes) {
      Fail(c, 431, "the request head is too large");
      return;
    }
    std::string head(static_cast<size_t>(end.pos), '\0');
    evbuffer_remove(in, head.data(), head.size());
    evbuffer_drain(in, 4);
    ++requests_;
    absl::StatusOr<HttpRequest> request = ParseRequestHead(head);
    if (!request.ok()) {
      Fail(c, 400, request.status().message());
      return;
    }
    const HttpRoute* route = Find(request->path, request->method);
    const bool get = request->method == "GET" || request->method == "HEAD";
    if (route == nullptr && !get) {
      std::string allow = AllowedMethods(request->path);
      HttpResponse r = ErrorResponse(
          405, absl::StrCat(request->method, " is not served here (", allow,
                            " are)"));
      r.headers.emplace_back("Allow", std::move(allow));
      ++bad_requests_;
      Send(c, r, *request, /*keep_alive=*/false);
      return;
    }
    if (request->has_body) {
      if (route == nullptr || route->max_body_bytes == 0) {
        Fail(c, 413, "requests with a body are not served");
        return;
      }
      if (request->chunked) {
        Fail(c, 411, "a request body needs a Content-Length");
        return;
      }
      if (request->content_length > route->max_body_bytes) {
        Fail(c, 413,
             absl::StrCat("the body is larger than ", route->max_body_bytes,
                          " bytes"));
        return;
      }
      // The rest of the body must come within the head's deadline, now
      // counted from the end of the head.
      c->state = State::kBody;
      c->pending = *std::move(request);
      c->pending_route = route;
      Arm(c, options_.header_timeout);
      if (c->pending.expect_continue) {
        static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        evbuffer_add(bufferevent_get_output(c->bev), kContinue,
                     sizeof(kContinue) - 1);
      }
      ReadBody(c);
      return;
    }
    Dispatch(c, *std::move(request), route);
  }

  // Dispatches the pending request once its whole body arrived.
  void ReadBody(Connection* c) {
    evbuffer* in = bufferevent_get_input(c->bev);
    const size_t want = static_cast<size_t>(c->pending.content_length);
    if (evbuffer_get_length(in) < want) return;  // within the deadline
    c->pending.body.resize(want);
    evbuffer_remove(in, c->pending.body.data(), want);
    c->state = State::kHead;
    HttpRequest request = std::move(c->pending);
    c->pending = HttpRequest{};
    Dispatch(c, std::move(request), c->pending_route);
  }

  static bool Serves(const HttpRoute& r, const std::string& method) {
    if (r.methods.empty()) return method == "GET" || method == "HEAD";
    return std::find(r.methods.begin(), r.methods.end(), method) !=
           r.methods.end();
  }

  static bool Matches(const HttpRoute& r, const std::string& path) {
    const bool prefix = r.path.size() > 1 && r.path.back() == '/';
    return prefix ? path.compare(0, r.path.size(), r.path) == 0
                  : path == r.path;
  }

  // The longest route matching `path` that serves `method`.
  const HttpRoute* Find(const std::string& path,
                        const std::string& method) const {
    const HttpRoute* best = nullptr;
    for (const HttpRoute& r : routes_) {
      if (Matches(r, path) && Serves(r, method) &&
          (best == nullptr || r.path.size() > best->path.size())) {
        best = &r;
      }
    }
    return best;
  }

  // "GET, HEAD, PUT": what the routes matching `path` serve.
  std::string AllowedMethods(const std::string& path) const {
    std::vector<std::string> methods = {"GET", "HEAD"};
    for (const HttpRoute& r : routes_) {
      if (!Matches(r, path)) continue;
      for (const std::string& m : r.methods) {
        if (std::find(methods.begin(), methods.end(), m) == methods.end()) {
          methods.push_back(m);
        }
      }
    }
    return absl::StrJoin(methods, ", ");
  }

  void Dispatch(Connection* c, HttpRequest request, const HttpRoute* route) {
    if (route == nullptr) {
      Send(c, ErrorResponse(404, "no such page"), request, request.keep_alive);
      return;
    }
    if (route->inline_handler) {
      Send(c, route->handler(request), request, request.keep_alive);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (jobs_.size() >= options_.max_queued_requests) {
        ++overloaded_;
        HttpResponse busy = ErrorResponse(503, "busy, try again");
        busy.headers.emplace_back("Retry-After", "1");
        Send(c, busy, request, request.keep_alive);
        return;
      }
      jobs_.push_back({c->id, std::move(request), route});
    }
    c->state = State::kBusy;
    event_del(c->timer);
    cv_.notify_one();
  }

  // ---- workers -------------------------------------------------------------

  void WorkerLoop() {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      HttpResponse response = job.route->handler(job.request);
      Done done;
      done.id = job.id;
      done.keep_alive = job.request.keep_alive;
      done.bytes = Serialize(response, job.request, done.keep_alive);
      {
        std::lock_guard<std::mutex> lock(mu_);
        done_.push_back(std::move(done));
      }
      event_active(wake_, 0, 0);
    }
  }

  // The response as bytes on the wire, compressed when worth it.
  std::string Serialize(const HttpResponse& r, const HttpRequest& request,
                        bool keep_alive) const {
    std::string compressed;
    bool gzip = false;
    if (request.accepts_gzip && !r.gzip_body.empty()) {
      compressed = r.gzip_body;
      gzip = true;
    } else if (r.compressible && request.accepts_gzip &&
               r.body.size() >= kMinGzipBytes) {
      absl::StatusOr<std::string> z = GzipCompress(r.body, options_.gzip_level);
      if (z.ok()) {
        compressed = *std::move(z);
        gzip = true;
      }
    }
    const std::string& body = gzip ? compressed : r.body;
    std::string out =
        ResponseHead(r, body.size(), gzip, keep_alive, request.minor_version);
    if (request.method != "HEAD") out.append(body);
    return out;
  }

  static void OnWake(evutil_socket_t, short, void* arg) {
    static_cast<Impl*>(arg)->Wake();
  }

  void Wake() {
    std::deque<Done> done;
    bool stop = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done.swap(done_);
      stop = stopping_;
    }
    if (stop) {
      event_base_loopbreak(base_);
      return;
    }
    for (Done& d : done) {
      auto it = conns_.find(d.id);
      if (it == conns_.end()) continue;  // the client left meanwhile
      Write(it->second.get(), d.bytes, d.keep_alive);
    }
  }

  // ---- writing -------------------------------------------------------------

  void Send(Connection* c, const HttpResponse& r, const HttpRequest& request,
            bool keep_alive) {
    Write(c, Serialize(r, request, keep_alive), keep_alive);
  }

  void Fail(Connection* c, int status, absl::string_view why) {
    ++bad_requests_;
    HttpRequest request;  // as much as is known
    Write(c, Serialize(ErrorResponse(status, why), request, false), false);
  }

  void Write(Connection* c, const std::string& bytes, bool keep_alive) {
    c->state = State::kWriting;
    c->keep_alive = keep_alive && !c->close_after;
    event_del(c->timer);
    const timeval write_timeout = Timeval(options_.write_timeout);
    bufferevent_set_timeouts(c->bev, nullptr, &write_timeout);
    bufferevent_disable(c->bev, EV_READ);
    evbuffer_add(bufferevent_get_output(c->bev), bytes.data(), bytes.size());
  }

  static void OnWritten(bufferevent*, void* arg) {
    auto* c = static_cast<Connection*>(arg);
    c->impl->Written(c);
  }

  void Written(Connection* c) {
    if (c->state != State::kWriting) return;
    if (!c->keep_alive) {
      Close(c);
      return;
    }
    c->state = State::kIdle;
    bufferevent_set_timeouts(c->bev, nullptr, nullptr);
    Arm(c, options_.idle_timeout);
    bufferevent_enable(c->bev, EV_READ);
    // A pipelined request may be waiting already.
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0) Read(c);
  }

  // ---- timeouts, errors, closing
  // ---------------------------------------------

  void Arm(Connection* c, absl::Duration d) {
    const timeval tv = Timeval(d);
    event_add(c->timer, &tv);
  }

  static void OnTimer(evutil_socket_t, short, void* arg) {
    auto* c = static_cast<Connection*>(arg);
    ++c->impl->timeouts_;
    c->impl->Close(c);
  }

  static void OnEvent(bufferevent*, short what, void* arg) {
    auto* c = static_cast<Connection*>(arg);
    c->impl->Event(c, what);
  }

  // Whether OpenSSL refused what the client sent during the handshake
  // (drains the connection's OpenSSL errors): an error of an OpenSSL
  // library ("http request", "wrong version number", an alert). A client
  // that closed or reset before sending anything (a TCP health check) is
  // not refused: libevent then queues only SSL_get_error()'s code (library
  // 0), or OpenSSL 3's SSL_R_UNEXPECTED_EOF_WHILE_READING.
  static bool HandshakeRefused(bufferevent* bev) {
    bool refused = false;
    while (const unsigned long e = bufferevent_get_openssl_error(bev)) {
      if (ERR_GET_LIB(e) == 0) continue;
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
      if (ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) continue;
#endif
      refused = true;
    }
    return refused;
  }

  void Event(Connection* c, short what) {
    // HTTPS: the handshake is done; the request comes as data.
    if ((what & BEV_EVENT_CONNECTED) != 0) {
      c->handshake_done = true;
      return;
    }
    if (tls_ != nullptr && !c->handshake_done &&
        (what & BEV_EVENT_ERROR) != 0 && HandshakeRefused(c->bev)) {
      ++tls_handshake_failures_;
    }
    if ((what & BEV_EVENT_TIMEOUT) != 0) {
      ++timeouts_;
      Close(c);
      return;
    }
    if ((what & BEV_EVENT_EOF) != 0 && (what & BEV_EVENT_READING) != 0 &&
        (c->state == State::kBusy || c->state == State::kWriting)) {
      // The client closed its sending side after its request: answer it,
      // then close.
      c->close_after = true;
      c->keep_alive = false;
      return;
    }
    Close(c);
  }

  void Close(Connection* c) {
    auto it = conns_.find(c->id);
    if (it == conns_.end()) return;
    std::unique_ptr<Connection> owned = std::move(it->second);
    conns_.erase(it);
    open_.store(conns_.size());
    Release(owned.get());
  }

  void Release(Connection* c) {
    if (c->timer != nullptr) event_free(c->timer);
    if (c->bev != nullptr) bufferevent_free(c->bev);
    auto p = per_client_.find(c->peer);
    if (p != per_client_.end() && --p->second == 0) per_client_.erase(p);
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    if (loop_.joinable()) {
      event_active(wake_, 0, 0);
      loop_.join();
    }
    for (auto& [id, c] : conns_) Release(c.get());
    conns_.clear();
    if (wake_ != nullptr) event_free(wake_);
    if (listener_ != nullptr) evconnlistener_free(listener_);
    if (base_ != nullptr) event_base_free(base_);
  }

  const HttpServerOptions options_;
  const std::vector<HttpRoute> routes_;
  std::unique_ptr<HttpTlsContext> tls_;  // nullptr: plain HTTP
  event_base* base_ = nullptr;
  evconnlistener* listener_ = nullptr;
  event* wake_ = nullptr;
  int port_ = 0;
  std::thread loop_;
  std::vector<std::thread> workers_;

  // Loop thread only.
  uint64_t next_id_ = 0;
  absl::flat_hash_map<uint64_t, std::unique_ptr<Connection>> conns_;
  absl::flat_hash_map<std::string, size_t> per_client_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;   // guarded by mu_
  std::deque<Done> done_;  // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  bool stopped_ = false;   // guarded by mu_

  std::atomic<uint64_t> connections_{0}, rejected_{0}, requests_{0},
      bad_requests_{0}, timeouts_{0}, overloaded_{0},
      tls_handshake_failures_{0};
  std::atomic<size_t> open_{0};
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() = default;

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    HttpServerOptions options, std::vector<HttpRoute> routes) {
  for (const HttpRoute& r : routes) {
    if (r.path.empty() || r.path[0] != '/' || !r.handler) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad route \"", r.path, "\""));
    }
  }
  auto impl = std::make_unique<Impl>(std::move(options), std::move(routes));
  absl::Status started = impl->Start();
  if (!started.ok()) return started;
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int HttpServer::port() const { return impl_->port(); }

HttpServer::Stats HttpServer::stats() const { return impl_->stats(); }

}  // namespace fabricdiag
