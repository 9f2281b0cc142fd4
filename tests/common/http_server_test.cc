// The HTTP server on real loopback sockets: routing, keep-alive, gzip, bad
// requests, and the point of it all: slow and idle clients never keep
// /healthz or /metrics from answering.
#include "common/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/gzip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A blocking TCP client with deadlines, from a chosen loopback address (the
// server counts connections per client address).
class Client {
 public:
  explicit Client(int port, const char* from = "127.0.0.1") {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    inet_pton(AF_INET, from, &local.sin_addr);
    bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    connected_ =
        connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Client() {
    if (fd_ >= 0) close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }

  bool Send(absl::string_view data) {
    return send(fd_, data.data(), data.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(data.size());
  }

  // Reads one response (head and Content-Length body); "" on timeout or
  // when the server closed first.
  std::string ReadResponse(absl::Duration timeout = absl::Seconds(5)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (true) {
      const size_t end = buf_.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t length = 0;
        const size_t at = buf_.find("Content-Length: ");
        if (at != std::string::npos && at < end) {
          const size_t eol = buf_.find("\r\n", at);
          (void)absl::SimpleAtoi(buf_.substr(at + 16, eol - at - 16), &length);
        }
        const bool head_only = absl::StartsWith(last_method_, "HEAD");
        const size_t total = end + 4 + (head_only ? 0 : length);
        if (buf_.size() >= total) {
          std::string response = buf_.substr(0, total);
          buf_.erase(0, total);
          return response;
        }
      }
      if (!Fill(deadline)) return "";
    }
  }

  // Whether the server closed the connection within `timeout`.
  bool ClosedWithin(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (Fill(deadline)) {
    }
    return closed_;
  }

  std::string Get(const std::string& path, const std::string& extra = "") {
    last_method_ = "GET";
    if (!Send(absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: x\r\n", extra,
                           "\r\n"))) {
      return "";
    }
    return ReadResponse();
  }
  void set_method(std::string m) { last_method_ = std::move(m); }

 private:
  bool Fill(absl::Time deadline) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <=
        0) {
      return false;
    }
    char chunk[65536];
    const ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    buf_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
  std::string buf_;
  std::string last_method_ = "GET";
};

// "HTTP/1.1 200 OK": the status line alone, so failures print briefly.
std::string StatusLine(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

std::string Body(const std::string& response) {
  const size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions options = {}) {
    options.listen = "127.0.0.1:0";
    std::vector<HttpRoute> routes;
    routes.push_back({"/healthz",
                      [](const HttpRequest&) {
                        HttpResponse r;
                        r.body = "ok\n";
                        return r;
                      },
                      /*inline_handler=*/true});
    routes.push_back({"/metrics", [this](const HttpRequest&) {
                        ++metrics_calls_;
                        if (slow_metrics_) absl::SleepFor(absl::Seconds(1));
                        HttpResponse r;
                        r.body = metrics_body_;
                        return r;
                      }});
    routes.push_back({"/", [](const HttpRequest&) {
                        HttpResponse r;
                        r.body = "root";
                        return r;
                      }});
    routes.push_back({"/api/v1/jobs/", [](const HttpRequest& req) {
                        HttpResponse r;
                        r.body = "job " + req.path.substr(13) + " " + req.query;
                        return r;
                      }});
    HttpRoute put;
    put.path = "/api/v1/jobs/";
    put.methods = {"PUT"};
    put.max_body_bytes = 100;
    put.handler = [](const HttpRequest& req) {
      HttpResponse r;
      r.status = 201;
      r.body = absl::StrCat(req.method, " ", req.path, " [", req.body, "] ",
                            req.authorization);
      return r;
    };
    routes.push_back(std::move(put));
    absl::StatusOr<std::unique_ptr<HttpServer>> s =
        HttpServer::Start(options, std::move(routes));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }

  std::string metrics_body_ = std::string(5000, 'm');
  std::atomic<bool> slow_metrics_{false};
  std::atomic<int> metrics_calls_{0};
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, RoutesKeepAliveAndPrefixes) {
  StartServer();
  Client c(server_->port());
  ASSERT_TRUE(c.connected());
  std::string r = c.Get("/healthz");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 200 OK");
  EXPECT_EQ(Body(r), "ok\n");
  // Same connection: keep-alive.
  r = c.Get("/api/v1/jobs/moe-42?x=1");
  EXPECT_EQ(Body(r), "job moe-42 x=1");
  r = c.Get("/nope");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 404 Not Found");
  // "/" is the root only, not a prefix of every path.
  r = c.Get("/");
  EXPECT_EQ(Body(r), "root");
  r = c.Get("/?x=1");
  EXPECT_EQ(Body(r), "root");
  r = c.Get("/metricsx");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 404 Not Found");
  r = c.Get("/metrics");
  EXPECT_EQ(Body(r).size(), metrics_body_.size());
  EXPECT_THAT(r, HasSubstr("Vary: Accept-Encoding\r\n"));
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer();
  Client c(server_->port());
  ASSERT_TRUE(c.Send(
      "GET /healthz HTTP/1.1\r\n\r\nGET /api/v1/jobs/a HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(Body(c.ReadResponse()), "ok\n");
  EXPECT_EQ(Body(c.ReadResponse()), "job a ");
}

TEST_F(HttpServerTest, GzipWhenTheClientAcceptsIt) {
  StartServer();
  Client c(server_->port());
  std::string r = c.Get("/metrics", "Accept-Encoding: deflate, gzip\r\n");
  EXPECT_THAT(r, HasSubstr("Content-Encoding: gzip\r\n"));
  absl::StatusOr<std::string> body = GzipDecompress(Body(r), 1 << 20);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, metrics_body_);
  EXPECT_LT(Body(r).size(), metrics_body_.size() / 10);
  // q=0 refuses gzip.
  r = c.Get("/metrics", "Accept-Encoding: gzip;q=0\r\n");
  EXPECT_THAT(r, ::testing::Not(HasSubstr("Content-Encoding")));
  EXPECT_EQ(Body(r), metrics_body_);
}

TEST_F(HttpServerTest, HeadAndHttp10) {
  StartServer();
  Client c(server_->port());
  c.set_method("HEAD");
  ASSERT_TRUE(c.Send("HEAD /metrics HTTP/1.1\r\n\r\n"));
  std::string r = c.ReadResponse();
  EXPECT_THAT(r, HasSubstr("Content-Length: 5000\r\n"));
  EXPECT_EQ(Body(r), "");
  Client old(server_->port());
  ASSERT_TRUE(old.Send("GET /healthz HTTP/1.0\r\n\r\n"));
  r = old.ReadResponse();
  EXPECT_THAT(r, HasSubstr("Connection: close\r\n"));
  EXPECT_TRUE(old.ClosedWithin(absl::Seconds(2)));
}

struct BadCase {
  const char* name;
  std::string request;
  const char* status;
};

TEST_F(HttpServerTest, BadRequestsAreRefusedAndClosed) {
  StartServer();
  const BadCase cases[] = {
      {"garbage", "\x01\x02\x03\r\n\r\n", "400"},
      {"no version", "GET /healthz\r\n\r\n", "400"},
      {"absolute target", "GET http://x/healthz HTTP/1.1\r\n\r\n", "400"},
      {"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "400"},
      {"folded header", "GET / HTTP/1.1\r\n folded\r\n\r\n", "400"},
      {"bad length", "GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", "400"},
      {"POST", "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "405"},
      {"body", "GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
       "413"},
      {"chunked", "GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
       "413"},
      {"huge head",
       "GET / HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n", "431"},
  };
  for (const BadCase& bad : cases) {
    Client c(server_->port());
    ASSERT_TRUE(c.Send(bad.request)) << bad.name;
    std::string r = c.ReadResponse();
    EXPECT_THAT(StatusLine(r),
                StartsWith(absl::StrCat("HTTP/1.1 ", bad.status)))
        << bad.name;
    EXPECT_TRUE(c.ClosedWithin(absl::Seconds(2))) << bad.name;
  }
  EXPECT_GE(server_->stats().bad_requests, 10u);
}

// A route that takes a body gets it whole, however it arrives; the same
// path still serves GET through its own route.
TEST_F(HttpServerTest, WriteRoutesReadBoundedBodies) {
  StartServer();
  Client c(server_->port());
  ASSERT_TRUE(c.connected());
  c.set_method("PUT");
  ASSERT_TRUE(
      c.Send("PUT /api/v1/jobs/moe HTTP/1.1\r\nContent-Length: 5\r\n"
             "Authorization: Bearer t\r\n\r\nhel"));
  ASSERT_TRUE(c.Send("lo"));
  std::string r = c.ReadResponse();
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 201 Created");
  EXPECT_EQ(Body(r), "PUT /api/v1/jobs/moe [hello] Bearer t");
  // Same connection: the GET route of the same path.
  r = c.Get("/api/v1/jobs/moe");
  EXPECT_EQ(Body(r), "job moe ");

  // curl's way with large bodies: it waits for 100 Continue.
  c.set_method("PUT");
  ASSERT_TRUE(
      c.Send("PUT /api/v1/jobs/x HTTP/1.1\r\nContent-Length: 2\r\n"
             "Expect: 100-continue\r\n\r\n"));
  r = c.ReadResponse();
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 100 Continue");
  ASSERT_TRUE(c.Send("ab"));
  r = c.ReadResponse();
  EXPECT_EQ(Body(r), "PUT /api/v1/jobs/x [ab] ");
}

TEST_F(HttpServerTest, BadWritesAreRefusedAndClosed) {
  StartServer();
  const BadCase cases[] = {
      {"too large",
       "PUT /api/v1/jobs/x HTTP/1.1\r\nContent-Length: 101\r\n\r\n", "413"},
      {"huge length",
       "PUT /api/v1/jobs/x HTTP/1.1\r\nContent-Length: "
       "99999999999999999999\r\n\r\n",
       "400"},
      {"chunked",
       "PUT /api/v1/jobs/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
       "411"},
      {"method not served", "DELETE /api/v1/jobs/x HTTP/1.1\r\n\r\n", "405"},
      {"PUT elsewhere", "PUT /metrics HTTP/1.1\r\nContent-Length: 1\r\n\r\nx",
       "405"},
      {"GET with a body",
       "GET /api/v1/jobs/x HTTP/1.1\r\nContent-Length: 1\r\n\r\nx", "413"},
  };
  for (const BadCase& bad : cases) {
    Client c(server_->port());
    ASSERT_TRUE(c.Send(bad.request)) << bad.name;
    std::string r = c.ReadResponse();
    EXPECT_THAT(StatusLine(r),
                StartsWith(absl::StrCat("HTTP/1.1 ", bad.status)))
        << bad.name;
    if (absl::string_view(bad.status) == "405") {
      EXPECT_THAT(r, HasSubstr("Allow: GET, HEAD"));
    }
    EXPECT_TRUE(c.ClosedWithin(absl::Seconds(2))) << bad.name;
  }
  Client c(server_->port());
  ASSERT_TRUE(c.Send("DELETE /api/v1/jobs/x HTTP/1.1\r\n\r\n"));
  EXPECT_THAT(c.ReadResponse(), HasSubstr("Allow: GET, HEAD, PUT\r\n"));
}

// A body that never comes is cut off at the head deadline.
TEST_F(HttpServerTest, BodyThatNeverArrivesTimesOut) {
  HttpServerOptions options;
  options.header_timeout = absl::Milliseconds(300);
  StartServer(options);
  Client c(server_->port());
  ASSERT_TRUE(
      c.Send("PUT /api/v1/jobs/x HTTP/1.1\r\nContent-Length: 50\r\n\r\nabc"));
  EXPECT_TRUE(c.ClosedWithin(absl::Seconds(5)));
  EXPECT_GE(server_->stats().timeouts, 1u);
}

TEST_F(HttpServerTest, APortInUseIsRefused) {
  StartServer();
  HttpServerOptions again;
  again.listen = absl::StrCat("127.0.0.1:", server_->port());
  absl::StatusOr<std::unique_ptr<HttpServer>> second =
      HttpServer::Start(again, {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("Address already in use"));
  HttpServerOptions bad;
  bad.listen = "not-an-address";
  EXPECT_EQ(HttpServer::Start(bad, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The slow-client attack: connections that trickle a header line now and
// then. They are cut off at the head deadline, and while they last every
// other client is served at once.
TEST_F(HttpServerTest, SlowClientsNeverStarveOthers) {
  HttpServerOptions options;
  options.header_timeout = absl::Milliseconds(1500);
  options.max_connections_per_client = 64;
  StartServer(options);
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < 60; ++i) {
    slow.push_back(std::make_unique<Client>(server_->port(), "127.0.0.3"));
    ASSERT_TRUE(slow.back()->Send("GET /metrics HTTP/1.1\r\n"));
  }
  // Meanwhile, from another address, many requests answer promptly.
  for (int i = 0; i < 10; ++i) {
    Client good(server_->port(), "127.0.0.2");
    const absl::Time start = absl::Now();
    EXPECT_EQ(Body(good.Get("/healthz")), "ok\n");
    EXPECT_EQ(Body(good.Get("/metrics")), metrics_body_);
    EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
    for (auto& s : slow) s->Send("X-Slow: 1\r\n");
    absl::SleepFor(absl::Milliseconds(50));
  }
  // Keeping them trickling does not keep them open past the deadline.
  for (auto& s : slow) {
    EXPECT_TRUE(s->ClosedWithin(absl::Seconds(3)));
  }
  EXPECT_GE(server_->stats().timeouts, 60u);
}

TEST_F(HttpServerTest, ConnectionsBeyondTheClientLimitAreClosed) {
  HttpServerOptions options;
  options.max_connections_per_client = 5;
  StartServer(options);
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 5; ++i) {
    idle.push_back(std::make_unique<Client>(server_->port(), "127.0.0.4"));
  }
  Client over(server_->port(), "127.0.0.4");
  EXPECT_TRUE(over.ClosedWithin(absl::Seconds(2)));
  // Other clients are unaffected.
  Client other(server_->port(), "127.0.0.5");
  EXPECT_EQ(Body(other.Get("/healthz")), "ok\n");
  EXPECT_GE(server_->stats().rejected_connections, 1u);
  // When one leaves, a new one is admitted.
  idle.pop_back();
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  std::string answer;
  while (answer.empty() && absl::Now() < deadline) {
    Client again(server_->port(), "127.0.0.4");
    answer = Body(again.Get("/healthz"));
  }
  EXPECT_EQ(answer, "ok\n");
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionsAreClosed) {
  HttpServerOptions options;
  options.idle_timeout = absl::Milliseconds(300);
  StartServer(options);
  Client c(server_->port());
  EXPECT_EQ(Body(c.Get("/healthz")), "ok\n");
  EXPECT_TRUE(c.ClosedWithin(absl::Seconds(2)));
}

// A slow /metrics never delays /healthz (inline on the loop), and when the
// workers' queue is full the answer is a prompt 503, not a wait.
TEST_F(HttpServerTest, BusyWorkersDoNotDelayHealthAndOverflowIs503) {
  HttpServerOptions options;
  options.worker_threads = 1;
  options.max_queued_requests = 2;
  StartServer(options);
  slow_metrics_ = true;
  std::vector<std::unique_ptr<Client>> scrapers;
  for (int i = 0; i < 3; ++i) {
    scrapers.push_back(std::make_unique<Client>(server_->port()));
    ASSERT_TRUE(scrapers.back()->Send("GET /metrics HTTP/1.1\r\n\r\n"));
    // The first is taken by the worker, the next two wait in the queue.
    while (i == 0 && metrics_calls_ == 0) absl::SleepFor(absl::Milliseconds(5));
  }
  absl::SleepFor(absl::Milliseconds(100));
  Client health(server_->port());
  const absl::Time start = absl::Now();
  EXPECT_EQ(Body(health.Get("/healthz")), "ok\n");
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(200));
  Client extra(server_->port());
  EXPECT_EQ(StatusLine(extra.Get("/metrics")),
            "HTTP/1.1 503 Service Unavailable");
  EXPECT_GE(server_->stats().overloaded, 1u);
  for (auto& s : scrapers) {
    EXPECT_EQ(StatusLine(s->ReadResponse(absl::Seconds(6))), "HTTP/1.1 200 OK");
  }
}

TEST_F(HttpServerTest, AClientThatLeavesDuringItsRequestIsForgotten) {
  StartServer();
  slow_metrics_ = true;
  {
    Client gone(server_->port());
    ASSERT_TRUE(gone.Send("GET /metrics HTTP/1.1\r\n\r\n"));
    absl::SleepFor(absl::Milliseconds(100));
  }
  absl::SleepFor(absl::Milliseconds(1200));
  slow_metrics_ = false;
  Client c(server_->port());
  EXPECT_EQ(Body(c.Get("/metrics")), metrics_body_);
  EXPECT_EQ(server_->stats().open_connections, 1u);
}

}  // namespace
}  // namespace fabricdiag
