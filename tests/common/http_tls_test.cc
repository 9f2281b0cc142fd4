// HTTPS on the HTTP server, with certificates made by the openssl command
// at test time and a real OpenSSL client on loopback: the TLS files'
// errors, requests over TLS (with keep-alive and a body), a plain-HTTP
// client on the HTTPS port refused without harm to later clients, and the
// failed handshakes counted.
#include "common/http_tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/http_server.h"
#include "common/http_server_metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_pki.h"

namespace fabricdiag {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{5, 0};  // every read and write is bounded
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A blocking TLS client that verifies the server against `ca_file` and its
// name 127.0.0.1.
class TlsClient {
 public:
  TlsClient(int port, const std::string& ca_file) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr) != 1) {
      return;
    }
    fd_ = Connect(port);
    if (fd_ < 0) return;
    ssl_ = SSL_new(ctx_);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    SSL_set_fd(ssl_, fd_);
    connected_ = SSL_connect(ssl_) == 1;
    ERR_clear_error();
  }
  ~TlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) close(fd_);
    SSL_CTX_free(ctx_);
  }
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  bool connected() const { return connected_; }

  // Sends `request` and reads one response (head and Content-Length body);
  // "" when the server closed or a deadline passed first.
  std::string Exchange(const std::string& request) {
    if (SSL_write(ssl_, request.data(), static_cast<int>(request.size())) <=
        0) {
      return "";
    }
    while (true) {
      const size_t end = buf_.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t length = 0;
        const size_t at = buf_.find("Content-Length: ");
        if (at != std::string::npos && at < end) {
          const size_t eol = buf_.find("\r\n", at);
          (void)absl::SimpleAtoi(buf_.substr(at + 16, eol - at - 16), &length);
        }
        if (buf_.size() >= end + 4 + length) {
          std::string response = buf_.substr(0, end + 4 + length);
          buf_.erase(0, end + 4 + length);
          return response;
        }
      }
      char chunk[16384];
      const int n = SSL_read(ssl_, chunk, sizeof(chunk));
      if (n <= 0) return "";
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

// What a plain-HTTP client gets from the port: everything until the server
// closes (or 5 s pass).
std::string PlainExchange(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "connect failed";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string got;
  char chunk[4096];
  ssize_t n = 0;
  while ((n = recv(fd, chunk, sizeof(chunk), 0)) > 0) {
    got.append(chunk, static_cast<size_t>(n));
  }
  close(fd);
  return got;
}

// The server counts a failure on its loop thread when it reads what the
// client sent, which may be after the client has given up: waits (at most
// 5 s) for the count to reach `want`, and returns the last count seen.
uint64_t AwaitHandshakeFailures(const HttpServer& server, uint64_t want) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  uint64_t got = server.stats().tls_handshake_failures;
  while (got < want && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
    got = server.stats().tls_handshake_failures;
  }
  return got;
}

// The value of the metric `name` in HttpServerMetrics, or -1 when absent.
double MetricValue(const HttpServer::Stats& stats, const std::string& name) {
  for (const HttpServerMetric& m : HttpServerMetrics(stats)) {
    if (name == m.name) return m.value;
  }
  return -1;
}

class HttpTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<testing::TestPki> pki = Pki("a");
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = *pki;
  }

  // A fresh CA and server certificate in their own directory.
  absl::StatusOr<testing::TestPki> Pki(const std::string& name) {
    const std::string dir = absl::StrCat(dir_.path(), "/", name);
    mkdir(dir.c_str(), 0700);
    return testing::MakeTestPki(dir, {});
  }

  void StartServer() {
    HttpServerOptions options;
    options.listen = "127.0.0.1:0";
    options.tls_cert_file = pki_.server.cert;
    options.tls_key_file = pki_.server.key;
    std::vector<HttpRoute> routes;
    routes.push_back({"/metrics", [](const HttpRequest&) {
                        HttpResponse r;
                        r.body = "fabricdiag_up 1\n";
                        return r;
                      }});
    HttpRoute put;
    put.path = "/api/v1/jobs/";
    put.methods = {"PUT"};
    put.max_body_bytes = 100;
    put.handler = [](const HttpRequest& req) {
      HttpResponse r;
      r.status = 201;
      r.body = absl::StrCat(req.path, " [", req.body, "] ", req.authorization);
      return r;
    };
    routes.push_back(std::move(put));
    absl::StatusOr<std::unique_ptr<HttpServer>> s =
        HttpServer::Start(options, std::move(routes));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }

  testing::TempDir dir_;
  testing::TestPki pki_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpTlsTest, ServesRequestsOverTlsWithKeepAliveAndBodies) {
  StartServer();
  TlsClient c(server_->port(), pki_.ca_cert);
  ASSERT_TRUE(c.connected());
  std::string r = c.Exchange("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(r, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(r, HasSubstr("fabricdiag_up 1\n"));
  // Same connection, a request with a body and a token.
  r = c.Exchange(
      "PUT /api/v1/jobs/moe-42 HTTP/1.1\r\nHost: x\r\n"
      "Authorization: Bearer s3cret\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
  EXPECT_THAT(r, StartsWith("HTTP/1.1 201 Created\r\n"));
  EXPECT_THAT(r, HasSubstr("/api/v1/jobs/moe-42 [{\"a\":1}] Bearer s3cret"));
}

TEST_F(HttpTlsTest, PlainHttpOnTheTlsPortIsClosedAndLaterClientsAreServed) {
  StartServer();
  const std::string got = PlainExchange(
      server_->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  // No HTTP answer (and certainly not the page) in clear text.
  EXPECT_THAT(got, ::testing::Not(HasSubstr("fabricdiag_up")));
  EXPECT_THAT(got, ::testing::Not(StartsWith("HTTP/1.1 200")));
  TlsClient c(server_->port(), pki_.ca_cert);
  ASSERT_TRUE(c.connected());
  EXPECT_THAT(c.Exchange("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
              StartsWith("HTTP/1.1 200 OK\r\n"));
}

TEST_F(HttpTlsTest, AClientThatDoesNotTrustTheCertificateFails) {
  StartServer();
  absl::StatusOr<testing::TestPki> other = Pki("b");
  ASSERT_TRUE(other.ok()) << other.status();
  TlsClient c(server_->port(), other->ca_cert);
  EXPECT_FALSE(c.connected());
  TlsClient trusted(server_->port(), pki_.ca_cert);
  EXPECT_TRUE(trusted.connected());
}

TEST_F(HttpTlsTest, FailedHandshakesAreCountedAndExported) {
  StartServer();
  EXPECT_TRUE(server_->stats().tls);
  EXPECT_EQ(MetricValue(server_->stats(),
                        "fabricdiag_http_tls_handshake_failures_total"),
            0);
  // Plain HTTP on the HTTPS port.
  PlainExchange(server_->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(AwaitHandshakeFailures(*server_, 1), 1u);
  // A TLS record header announcing a client hello, then garbage.
  PlainExchange(server_->port(), std::string("\x16\x03\x01\x00\x10", 5) +
                                     std::string(16, '\xff'));
  EXPECT_EQ(AwaitHandshakeFailures(*server_, 2), 2u);
  // A client that rejects the server's certificate.
  absl::StatusOr<testing::TestPki> other = Pki("b");
  ASSERT_TRUE(other.ok()) << other.status();
  { TlsClient untrusting(server_->port(), other->ca_cert); }
  EXPECT_EQ(AwaitHandshakeFailures(*server_, 3), 3u);
  // Good clients are not failures.
  TlsClient c(server_->port(), pki_.ca_cert);
  ASSERT_TRUE(c.connected());
  EXPECT_THAT(c.Exchange("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
              StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_EQ(server_->stats().tls_handshake_failures, 3u);
  EXPECT_EQ(MetricValue(server_->stats(),
                        "fabricdiag_http_tls_handshake_failures_total"),
            3);
}

TEST_F(HttpTlsTest, AClientThatConnectsAndLeavesIsNotAHandshakeFailure) {
  StartServer();
  // A TCP health check: connect, send nothing, close. Wait until the
  // server has closed its side too.
  close(Connect(server_->port()));
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while ((server_->stats().connections < 1 ||
          server_->stats().open_connections > 0) &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(server_->stats().connections, 1u);
  ASSERT_EQ(server_->stats().open_connections, 0u);
  EXPECT_EQ(server_->stats().tls_handshake_failures, 0u);
  // The same server does count a client that tries and fails.
  PlainExchange(server_->port(), "GET / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(AwaitHandshakeFailures(*server_, 1), 1u);
}

TEST(HttpServerTlsMetricTest, APlainHttpServerHasNoHandshakeFamily) {
  HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<HttpServer>> s =
      HttpServer::Start(options, {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE((*s)->stats().tls);
  EXPECT_EQ(MetricValue((*s)->stats(),
                        "fabricdiag_http_tls_handshake_failures_total"),
            -1);
  EXPECT_EQ(MetricValue((*s)->stats(), "fabricdiag_http_requests_total"), 0);
}

TEST_F(HttpTlsTest, StartRefusesACertificateWithoutKeyAndTheOtherWayRound) {
  HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  options.tls_cert_file = pki_.server.cert;
  EXPECT_EQ(HttpServer::Start(options, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.tls_cert_file.clear();
  options.tls_key_file = pki_.server.key;
  EXPECT_EQ(HttpServer::Start(options, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(HttpTlsTest, LoadNamesTheFileAtFault) {
  const std::string missing = dir_.path() + "/missing.pem";
  absl::StatusOr<std::unique_ptr<HttpTlsContext>> tls =
      HttpTlsContext::Load(missing, pki_.server.key);
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tls.status().message(),
              HasSubstr(absl::StrCat(missing, ": cannot read")));

  const std::string junk = dir_.path() + "/junk.pem";
  std::ofstream(junk) << "not a certificate\n";
  tls = HttpTlsContext::Load(junk, pki_.server.key);
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tls.status().message(), HasSubstr("not a PEM certificate"));
  tls = HttpTlsContext::Load(pki_.server.cert, junk);
  EXPECT_THAT(tls.status().message(), HasSubstr("not a PEM private key"));

  absl::StatusOr<testing::TestPki> other = Pki("b");
  ASSERT_TRUE(other.ok()) << other.status();
  tls = HttpTlsContext::Load(pki_.server.cert, other->server.key);
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tls.status().message(),
              HasSubstr("does not belong to the certificate"));

  EXPECT_TRUE(HttpTlsContext::Load(pki_.server.cert, pki_.server.key).ok());
}

}  // namespace
}  // namespace fabricdiag
