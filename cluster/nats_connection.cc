#include "cluster/nats_connection.h"

#include <string.h>  // strndup

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cluster/callback_closures.h"
#include "cluster/nats_creds.h"
#include "common/files.h"
#include "common/log.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace fabricdiag::cluster {

absl::StatusOr<std::vector<std::string>> ParseNatsUrls(absl::string_view flag) {
  std::vector<std::string> urls;
  absl::flat_hash_set<std::string> seen;
  for (absl::string_view raw : absl::StrSplit(flag, ',')) {
    absl::string_view url = absl::StripAsciiWhitespace(raw);
    absl::string_view host_port = url;
    if (!absl::ConsumePrefix(&host_port, "nats://") &&
        !absl::ConsumePrefix(&host_port, "tls://")) {
      return absl::InvalidArgumentError(
          absl::StrCat("--nats: ", QuoteForMessage(RedactNatsUrl(url)),
                       " is not nats://HOST:PORT (or tls://HOST:PORT)"));
    }
    // USER:PASSWORD@ or TOKEN@ before the host, as libnats reads it.
    if (const size_t at = host_port.rfind('@'); at != absl::string_view::npos) {
      host_port.remove_prefix(at + 1);
    }
    const size_t colon = host_port.rfind(':');
    uint32_t port = 0;
    if (colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(host_port.substr(colon + 1), &port) || port == 0 ||
        port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("--nats: ", QuoteForMessage(RedactNatsUrl(url)),
                       " is not nats://HOST:PORT with a port in 1..65535"));
    }
    if (!seen.insert(std::string(url)).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--nats: ", QuoteForMessage(RedactNatsUrl(url)), " is listed twice"));
    }
    urls.emplace_back(url);
  }
  return urls;
}

std::string RedactNatsUrl(absl::string_view url) {
  const size_t scheme = url.find("://");
  const size_t at = url.rfind('@');
  if (scheme == absl::string_view::npos || at == absl::string_view::npos ||
      at < scheme) {
    return std::string(url);
  }
  const absl::string_view userinfo = url.substr(scheme + 3, at - scheme - 3);
  const size_t colon = userinfo.find(':');
  // USER:PASSWORD keeps the user (which the servers' logs show anyway); a
  // lone TOKEN is all secret.
  return absl::StrCat(
      url.substr(0, scheme + 3),
      colon == absl::string_view::npos ? "" : userinfo.substr(0, colon + 1),
      "***", url.substr(at));
}

namespace {

// Connections in a row whose login was not sent (a nonce whose signature
// would have gone out empty: 1 in 256, cluster/nats_creds.h) before the
// start counts the attempt as failed: a good file fails that way once in
// 2^64.
constexpr int kUnsentLoginTries = 8;

// The .creds file at `path`, read again (it may have been rotated).
absl::StatusOr<NatsCreds> ReadCreds(const std::string& path) {
  absl::StatusOr<std::string> text =
      ReadSecretFile("--nats_creds", path, 64 << 10);
  if (!text.ok()) return absl::InvalidArgumentError(text.status().message());
  absl::StatusOr<NatsCreds> creds = ParseNatsCreds(*text);
  WipeSecret(&*text);
  if (!creds.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nats_creds=", path,
                     ": not a NATS .creds file: ", creds.status().message()));
  }
  return creds;
}

// `message` in memory libnats frees.
char* LibnatsText(absl::string_view message) {
  return strndup(message.data(), message.size());
}

// NatsSecurity's files, read and checked.
struct LoadedSecurity {
  std::string password;
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
};

absl::StatusOr<LoadedSecurity> LoadSecurity(const NatsSecurity& security) {
  LoadedSecurity loaded;
  if (security.user.empty() != security.password_file.empty()) {
    return absl::InvalidArgumentError(
        "--nats_user and --nats_password_file go together");
  }
  if (!security.user.empty() && !security.creds_file.empty()) {
    return absl::InvalidArgumentError(
        "--nats_creds and --nats_user are two ways to authenticate: pass "
        "one");
  }
  if (security.tls_cert.empty() != security.tls_key.empty()) {
    return absl::InvalidArgumentError(
        "--nats_tls_cert and --nats_tls_key go together");
  }
  if (!security.password_file.empty()) {
    ASSIGN_OR_RETURN(loaded.password, ReadTokenFile("--nats_password_file",
                                                    security.password_file, 1));
  }
  if (!security.creds_file.empty()) {
    // Read again at every login; read here first so that a readable-by-all
    // seed or a wrong file stops the start.
    RETURN_IF_ERROR(ReadCreds(security.creds_file).status());
  }
  if (!security.tls_ca.empty()) {
    ASSIGN_OR_RETURN(loaded.ca_pem,
                     ReadPemFile("--nats_tls_ca", security.tls_ca, false));
  }
  if (!security.tls_cert.empty()) {
    ASSIGN_OR_RETURN(loaded.cert_pem,
                     ReadPemFile("--nats_tls_cert", security.tls_cert, false));
    ASSIGN_OR_RETURN(loaded.key_pem,
                     ReadPemFile("--nats_tls_key", security.tls_key, true));
  }
  return loaded;
}

// Hands `security` (read into `loaded`) to the client's options; `tls`:
// a tls:// URL was listed. libnats 3.4 reads no TLS wish from the scheme
// and would connect in the clear to a server that offers no TLS.
absl::Status ApplySecurity(natsOptions* o, const NatsSecurity& security,
                           const LoadedSecurity& loaded, bool tls) {
  natsStatus s = NATS_OK;
  if (!security.user.empty()) {
    s = natsOptions_SetUserInfo(o, security.user.c_str(),
                                loaded.password.c_str());
    if (s != NATS_OK) return NatsError(s, "--nats_user");
  }
  if (tls || !loaded.ca_pem.empty() || !loaded.cert_pem.empty()) {
    s = natsOptions_SetSecure(o, true);
    if (s != NATS_OK) return NatsError(s, "asking for TLS");
  }
  if (!loaded.ca_pem.empty()) {
    s = natsOptions_SetCATrustedCertificates(o, loaded.ca_pem.c_str());
    if (s != NATS_OK) {
      return absl::InvalidArgumentError(
          NatsError(s, absl::StrCat("--nats_tls_ca=", security.tls_ca,
                                    ": no CA certificate in it"))
              .message());
    }
  }
  if (!loaded.cert_pem.empty()) {
    s = natsOptions_SetCertificatesChain(o, loaded.cert_pem.c_str(),
                                         loaded.key_pem.c_str());
    if (s != NATS_OK) {
      return absl::InvalidArgumentError(
          NatsError(s, absl::StrCat("--nats_tls_cert=", security.tls_cert,
                                    " with --nats_tls_key=", security.tls_key))
              .message());
    }
  }
  return absl::OkStatus();
}

// libnats' detail of the last failed call without the source location it
// starts with ("(conn.c:733): SSL handshake error: ..." -> "SSL handshake
// error: ...").
std::string LastErrorDetail() {
  natsStatus last = NATS_OK;
  const char* text = nats_GetLastError(&last);
  absl::string_view detail = text == nullptr ? "" : text;
  if (absl::StartsWith(detail, "(")) {
    const size_t end = detail.find("): ");
    if (end != absl::string_view::npos) detail.remove_prefix(end + 3);
  }
  return std::string(detail);
}

// What a failed connect says that waiting cannot mend: the error to end the
// start with, naming the servers and the fix; OkStatus for the rest (no
// server answered yet: retried).
absl::Status ConnectRefused(natsStatus status, const NatsSecurity& security,
                            const std::string& servers) {
  const std::string what = absl::StrCat("connecting to NATS (", servers, ")");
  std::string refused;
  if (!security.creds_file.empty()) {
    refused = absl::StrCat(
        "the servers refused this collector's .creds file (--nats_creds=",
        security.creds_file,
        "): check that they trust the operator that signed its account "
        "(the `operator` and resolver of their configuration) and that the "
        "user is not revoked or expired");
  } else if (!security.user.empty()) {
    refused =
        "the servers refused this collector's user and password "
        "(--nats_user, --nats_password_file): check them against the "
        "servers' authorization block";
  } else if (absl::StrContains(servers, "@")) {
    refused =
        "the servers refused the user and password of the NATS URL: check "
        "them against the servers' authorization block";
  } else {
    refused =
        "the servers require credentials: pass --nats_user with "
        "--nats_password_file, or --nats_creds";
  }
  switch (status) {
    case NATS_CONNECTION_AUTH_FAILED:
      return absl::PermissionDeniedError(
          absl::StrCat(what, ": authorization violation: ", refused,
                       " (see docs/cluster.md#securing-nats)"));
    case NATS_SSL_ERROR:
      return absl::FailedPreconditionError(absl::StrCat(
          what, ": the TLS handshake failed (", LastErrorDetail(), "): ",
          security.tls_ca.empty()
              ? "pass the CA that signed the servers' certificates with "
                "--nats_tls_ca"
              : absl::StrCat("the server's certificate must be signed by "
                             "--nats_tls_ca=",
                             security.tls_ca, " and name the host of its URL"),
          "; a server that verifies its clients also needs --nats_tls_cert "
          "and --nats_tls_key"));
    case NATS_SECURE_CONNECTION_WANTED:
      return absl::FailedPreconditionError(absl::StrCat(
          what,
          ": TLS was asked for (--nats_tls_ca, --nats_tls_cert or a tls:// "
          "URL) but the server offers none (no tls block in its "
          "configuration)"));
    default:
      return absl::OkStatus();
  }
}

}  // namespace

absl::Status ValidateNatsSecurity(const NatsSecurity& security) {
  return LoadSecurity(security).status();
}

bool PauseBeforeRetry(const NatsConnection& nats, absl::Duration pause,
                      absl::Time deadline) {
  if (nats.closed() || absl::Now() + pause > deadline) return false;
  absl::SleepFor(pause);
  return true;
}

absl::Status NatsError(natsStatus status, absl::string_view what) {
  natsStatus last = NATS_OK;
  const char* detail = nats_GetLastError(&last);
  std::string message = absl::StrCat(what, ": ", natsStatus_GetText(status));
  if (detail != nullptr && *detail != '\0' &&
      !absl::StrContains(message, detail)) {
    absl::StrAppend(&message, " (", detail, ")");
  }
  switch (status) {
    case NATS_TIMEOUT:
    case NATS_NO_SERVER:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_NOT_YET_CONNECTED:
    case NATS_NO_RESPONDERS:
    case NATS_STALE_CONNECTION:
    case NATS_IO_ERROR:
      return absl::UnavailableError(message);
    case NATS_NOT_FOUND:
      return absl::NotFoundError(message);
    case NATS_MAX_PAYLOAD:
      return absl::ResourceExhaustedError(message);
    default:
      if (absl::StrContains(message, "maximum payload") ||
          absl::StrContains(message, "message size exceeds")) {
        return absl::ResourceExhaustedError(message);
      }
      // A JetStream cluster between leaders answers "JetStream system
      // temporarily unavailable" or "no suitable peers": retryable.
      // Right after the servers (re)started, a lookup of the stream behind
      // a subject (a watcher's) finds none until the meta leader knows the
      // streams again.
      if (absl::StrContains(message, "temporarily unavailable") ||
          absl::StrContains(message, "no suitable peers") ||
          absl::StrContains(message, "no stream matches subject") ||
          absl::StrContains(message, "timeout")) {
        return absl::UnavailableError(message);
      }
      return absl::InternalError(message);
  }
}

absl::Status JetStreamProblem(natsStatus status, jsErrCode code,
                              absl::string_view server, size_t servers) {
  if (code == JSNotEnabledForAccountErr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "NATS server ", server,
        ": JetStream is not enabled for this connection's account; enable "
        "it for the account in the server's configuration (see "
        "docs/cluster.md)"));
  }
  // libnats reports a request to the JetStream API that nobody subscribes
  // to as "no responders" with the code for "JetStream not enabled".
  if (status == NATS_NO_RESPONDERS || code == JSNotEnabledErr) {
    const std::string hint = absl::StrCat(
        "NATS server ", server,
        " does not run JetStream (no responder on its JetStream API): start "
        "nats-server with -js, or add `jetstream {}` to its configuration "
        "(see docs/cluster.md)");
    if (servers <= 1) return absl::FailedPreconditionError(hint);
    return absl::UnavailableError(absl::StrCat(
        hint, "; waiting in case other servers of the cluster do"));
  }
  return NatsError(status, "asking JetStream for the account's state");
}

StartupRetry::StartupRetry(const NatsConnection& nats)
    : nats_(nats), start_(absl::Now()) {}

bool StartupRetry::Pause(const absl::Status& error) {
  const absl::Time now = absl::Now();
  if (now >= nats_.startup_deadline()) return false;
  if (now >= next_log_) {
    LogWarning(absl::StrCat(
        "waiting for NATS JetStream (", absl::StrJoin(nats_.urls(), ","),
        "): ", error.message(), "; retrying for up to ",
        absl::FormatDuration(absl::Trunc(nats_.startup_deadline() - now,
                                         absl::Milliseconds(100))),
        " more"));
    next_log_ = now + absl::Seconds(10);
  }
  absl::SleepFor(std::min(pause_, nats_.startup_deadline() - now));
  pause_ = std::min(2 * pause_, absl::Seconds(2));
  return true;
}

absl::Status StartupRetry::GiveUp(const absl::Status& error) const {
  return absl::UnavailableError(absl::StrCat(
      error.message(), " (retried for ",
      absl::FormatDuration(
          absl::Trunc(absl::Now() - start_, absl::Milliseconds(100))),
      ", --nats_startup_timeout; servers ", absl::StrJoin(nats_.urls(), ","),
      ")"));
}

absl::StatusOr<kvStore*> BindOrCreateBucket(const NatsConnection& nats,
                                            kvConfig config) {
  StartupRetry retry(nats);
  while (true) {
    kvStore* kv = nullptr;
    natsStatus s = js_KeyValue(&kv, nats.js(), config.Bucket);
    if (s == NATS_NOT_FOUND) s = js_CreateKeyValue(&kv, nats.js(), &config);
    if (s == NATS_OK) return kv;
    const absl::Status error =
        NatsError(s, absl::StrCat("opening bucket ", config.Bucket));
    // A single server never places more than one replica: waiting cannot
    // help, the flag must change.
    if (absl::StrContains(error.message(), "not supported in non-clustered")) {
      return absl::FailedPreconditionError(absl::StrCat(
          error.message(),
          ": the NATS server is not a cluster; run with "
          "--nats_replicas=1 or point --nats at a JetStream cluster of at "
          "least ",
          config.Replicas, " servers"));
    }
    if (!retry.Pause(error)) {
      // "insufficient resources": fewer JetStream servers up than replicas.
      const bool too_few = absl::StrContains(error.message(), "insufficient");
      return retry.GiveUp(absl::Status(
          error.code(),
          absl::StrCat(
              error.message(),
              too_few ? absl::StrCat("; the bucket needs ", config.Replicas,
                                     " JetStream servers up "
                                     "(--nats_replicas)")
                      : "")));
    }
  }
}

namespace {

struct StreamCounts {
  uint64_t messages = 0;
  uint64_t last_sequence = 0;
};

absl::StatusOr<StreamCounts> ReadBucketCounts(jsCtx* js,
                                              const std::string& bucket) {
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetStreamInfo(
      &info, js, absl::StrCat("KV_", bucket).c_str(), nullptr, &code);
  if (s != NATS_OK) return NatsError(s, "reading the bucket's state");
  const StreamCounts counts{info->State.Msgs, info->State.LastSeq};
  jsStreamInfo_Destroy(info);
  return counts;
}

}  // namespace

absl::StatusOr<uint64_t> BucketLastRevision(jsCtx* js,
                                            const std::string& bucket) {
  ASSIGN_OR_RETURN(const StreamCounts counts, ReadBucketCounts(js, bucket));
  // A stream whose messages all expired (a findings bucket written to by
  // nobody for its TTL) keeps its last sequence but has nothing to replay.
  return counts.messages == 0 ? 0 : counts.last_sequence;
}

absl::StatusOr<uint64_t> BucketLastSequence(jsCtx* js,
                                            const std::string& bucket) {
  ASSIGN_OR_RETURN(const StreamCounts counts, ReadBucketCounts(js, bucket));
  return counts.last_sequence;
}

std::optional<uint64_t> WatcherFellBehind(jsCtx* js, const std::string& bucket,
                                          uint64_t delivered, int* behind) {
  return WatcherFellBehind(BucketLastRevision(js, bucket), delivered, behind);
}

std::optional<uint64_t> WatcherFellBehind(const absl::StatusOr<uint64_t>& last,
                                          uint64_t delivered, int* behind) {
  *behind = last.ok() && *last > delivered ? *behind + 1 : 0;
  if (*behind < 2) return std::nullopt;
  return *last;
}

absl::StatusOr<std::unique_ptr<NatsConnection>> NatsConnection::Connect(
    const Options& options) {
  ASSIGN_OR_RETURN(const LoadedSecurity loaded, LoadSecurity(options.security));
  std::unique_ptr<NatsConnection> conn(new NatsConnection());
  bool tls = false;
  for (const std::string& url : options.urls) {
    conn->urls_.push_back(RedactNatsUrl(url));
    tls = tls || absl::StartsWith(url, "tls://");
  }
  conn->request_timeout_ = options.request_timeout;
  conn->startup_deadline_ = absl::Now() + options.startup_timeout;
  natsStatus s = natsOptions_Create(&conn->options_);
  std::vector<const char*> servers;
  servers.reserve(options.urls.size());
  for (const std::string& url : options.urls) servers.push_back(url.c_str());
  natsOptions* o = conn->options_;
  if (s == NATS_OK) {
    s = natsOptions_SetServers(o, servers.data(),
                               static_cast<int>(servers.size()));
  }
  if (s == NATS_OK) s = natsOptions_SetName(o, options.name.c_str());
  // Also how long the client's reconnect thread waits for a server's
  // greeting while holding the connection's lock: a stopped (SIGSTOP)
  // server of the list stalls every call on the connection, Close()
  // included, that long per attempt. A live server greets at once.
  if (s == NATS_OK) s = natsOptions_SetTimeout(o, 1000);
  if (s == NATS_OK) s = natsOptions_SetPingInterval(o, 1000);
  if (s == NATS_OK) s = natsOptions_SetMaxPingsOut(o, 3);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(o, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(o, 250);
  conn->closure_ = CallbackClosures<Link>::Add(conn->link_);
  if (s == NATS_OK) {
    s = natsOptions_SetDisconnectedCB(o, &OnDisconnected, conn->closure_);
  }
  if (s == NATS_OK) {
    s = natsOptions_SetReconnectedCB(o, &OnReconnected, conn->closure_);
  }
  if (s == NATS_OK) s = natsOptions_SetClosedCB(o, &OnClosed, conn->closure_);
  if (s == NATS_OK) {
    s = natsOptions_SetErrorHandler(o, &OnError, conn->closure_);
  }
  if (s == NATS_OK && !options.security.creds_file.empty()) {
    // Not natsOptions_SetUserCredentialsFromFiles: see cluster/nats_creds.h.
    conn->link_->creds_file = options.security.creds_file;
    s = natsOptions_SetUserCredentialsCallbacks(o, &OnUserJwt, conn->closure_,
                                                &OnSignNonce, conn->closure_);
  }
  if (s != NATS_OK) return NatsError(s, "setting up the NATS client");
  RETURN_IF_ERROR(ApplySecurity(o, options.security, loaded, tls));

  StartupRetry retry(*conn);
  int unsent_in_a_row = 0;
  while (true) {
    const uint64_t unsent_before = conn->link_->unsent_logins.load();
    s = natsConnection_Connect(&conn->nc_, o);
    if (s == NATS_OK) {
      conn->link_->Up();
      break;
    }
    // Every server's nonce of this attempt had a signature that would have
    // gone out empty: connect again, to new nonces.
    if (conn->link_->unsent_logins.load() != unsent_before &&
        ++unsent_in_a_row < kUnsentLoginTries) {
      continue;
    }
    unsent_in_a_row = 0;
    // Wrong credentials or certificates stay wrong: end the start now
    // (systemd restarts the unit) rather than retry for a minute.
    RETURN_IF_ERROR(
        ConnectRefused(s, options.security, absl::StrJoin(conn->urls_, ",")));
    const absl::Status error = NatsError(s, "connecting: no server answered");
    if (!retry.Pause(error)) return retry.GiveUp(error);
  }
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = absl::ToInt64Milliseconds(options.request_timeout);
  s = natsConnection_JetStream(&conn->js_, conn->nc_, &js_options);
  if (s != NATS_OK) return NatsError(s, "opening JetStream");
  // Asked once here so that a server without JetStream is named at once,
  // rather than by every bucket's retries until the startup deadline.
  while (true) {
    jsAccountInfo* info = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    s = js_GetAccountInfo(&info, conn->js_, nullptr, &code);
    if (s == NATS_OK) {
      jsAccountInfo_Destroy(info);
      return conn;
    }
    // Anything else (a timeout, a cluster between leaders answering
    // "temporarily unavailable") is waited for by the bucket steps, within
    // the same startup deadline.
    if (s != NATS_NO_RESPONDERS && code != JSNotEnabledErr &&
        code != JSNotEnabledForAccountErr) {
      return conn;
    }
    std::string server = conn->connected_url();
    if (server.empty()) server = absl::StrJoin(conn->urls_, ",");
    const absl::Status error =
        JetStreamProblem(s, code, server, conn->urls_.size());
    if (!absl::IsUnavailable(error)) return error;
    if (!retry.Pause(error)) return retry.GiveUp(error);
  }
}

int64_t NatsConnection::MonotonicNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void NatsConnection::Link::Down() {
  up.store(false);
  int64_t none = 0;
  down_since.compare_exchange_strong(none, MonotonicNanos());
}

bool NatsConnection::Link::MayLog() {
  const int64_t now = absl::ToUnixNanos(absl::Now());
  int64_t last = last_error_log_ns.load();
  return now - last >= absl::ToInt64Nanoseconds(absl::Seconds(1)) &&
         last_error_log_ns.compare_exchange_strong(last, now);
}

void NatsConnection::Link::Up() {
  up.store(true);
  down_since.store(0);
}

void NatsConnection::OnDisconnected(natsConnection* /*nc*/, void* closure) {
  if (std::shared_ptr<Link> link = CallbackClosures<Link>::Find(closure)) {
    link->Down();
  }
}

void NatsConnection::OnReconnected(natsConnection* /*nc*/, void* closure) {
  if (std::shared_ptr<Link> link = CallbackClosures<Link>::Find(closure)) {
    link->Up();
  }
}

void NatsConnection::OnError(natsConnection* nc, natsSubscription* /*sub*/,
                             natsStatus status, void* closure) {
  const std::shared_ptr<Link> link = CallbackClosures<Link>::Find(closure);
  // A publish the user may not make fails once per message: one line a
  // second says it.
  if (link == nullptr || !link->MayLog()) return;
  const char* text = nullptr;
  natsConnection_GetLastError(nc, &text);
  LogWarning(absl::StrCat(
      "NATS: ", natsStatus_GetText(status),
      text != nullptr && *text != '\0' ? absl::StrCat(": ", text) : "",
      status == NATS_NOT_PERMITTED
          ? " (the servers' permissions for this user lack a subject the "
            "collector uses: see docs/cluster.md#securing-nats)"
          : ""));
}

natsStatus NatsConnection::OnUserJwt(char** jwt, char** error_text,
                                     void* closure) {
  const std::shared_ptr<Link> link = CallbackClosures<Link>::Find(closure);
  if (link == nullptr) {
    *error_text = LibnatsText("the connection is closed");
    return NATS_CONNECTION_CLOSED;
  }
  absl::StatusOr<NatsCreds> creds = ReadCreds(link->creds_file);
  if (!creds.ok()) {
    // On a reconnect nothing else says why the client cannot log in (the
    // start reports it before connecting).
    if (link->MayLog()) {
      LogWarning(absl::StrCat("NATS: ", creds.status().message()));
    }
    *error_text = LibnatsText(creds.status().message());
    return NATS_ERR;
  }
  *jwt = LibnatsText(creds->jwt);
  return *jwt == nullptr ? NATS_NO_MEMORY : NATS_OK;
}

natsStatus NatsConnection::OnSignNonce(char** error_text,
                                       unsigned char** signature, int* length,
                                       const char* nonce, void* closure) {
  const std::shared_ptr<Link> link = CallbackClosures<Link>::Find(closure);
  if (link == nullptr) {
    *error_text = LibnatsText("the connection is closed");
    return NATS_CONNECTION_CLOSED;
  }
  if (nonce == nullptr || *nonce == '\0') {
    // The server asked for no proof: it takes no JWT logins. The login
    // goes without a signature, as libnats' own would; a server that wants
    // a user and password refuses it ("authorization violation").
    *signature = nullptr;
    *length = 0;
    return NATS_OK;
  }
  absl::StatusOr<NatsCreds> creds = ReadCreds(link->creds_file);
  absl::StatusOr<std::string> signed_nonce =
      creds.ok() ? SignNonce(creds->seed, nonce) : creds.status();
  if (!signed_nonce.ok()) {
    if (absl::IsUnavailable(signed_nonce.status())) {
      // No CONNECT goes out: libnats drops this connection as one that
      // failed, not as refused credentials, and connects again.
      link->unsent_logins.fetch_add(1);
      LogInfo(absl::StrCat("NATS: ", signed_nonce.status().message()));
    }
    *error_text = LibnatsText(signed_nonce.status().message());
    return NATS_ERR;
  }
  *signature = static_cast<unsigned char*>(std::malloc(signed_nonce->size()));
  if (*signature == nullptr) return NATS_NO_MEMORY;
  std::memcpy(*signature, signed_nonce->data(), signed_nonce->size());
  *length = static_cast<int>(signed_nonce->size());
  return NATS_OK;
}

void NatsConnection::OnClosed(natsConnection* /*nc*/, void* closure) {
  if (std::shared_ptr<Link> link = CallbackClosures<Link>::Find(closure)) {
    link->Down();
    link->closed.store(true);
  }
}

NatsConnection::~NatsConnection() {
  if (js_ != nullptr) jsCtx_Destroy(js_);
  if (nc_ != nullptr) {
    natsConnection_Close(nc_);
    natsConnection_Destroy(nc_);
  }
  if (options_ != nullptr) natsOptions_Destroy(options_);
  // Callbacks still on their way (libnats' threads outlive the calls
  // above) find no Link and do nothing.
  CallbackClosures<Link>::Remove(closure_);
}

void NatsConnection::Close() {
  link_->closing.store(true);
  link_->Down();
  link_->closed.store(true);
  if (nc_ != nullptr) natsConnection_Close(nc_);
}

bool NatsConnection::closed() const {
  return nc_ == nullptr || link_->closed.load();
}

std::string NatsConnection::GaveUp() const {
  if (nc_ == nullptr || !link_->closed.load() || link_->closing.load()) {
    return "";
  }
  const char* text = nullptr;
  const natsStatus status = natsConnection_GetLastError(nc_, &text);
  return absl::StrCat("the NATS client closed its connection to ",
                      absl::StrJoin(urls_, ","), " for good",
                      status == NATS_OK
                          ? std::string()
                          : absl::StrCat(" (", natsStatus_GetText(status),
                                         text != nullptr && *text != '\0'
                                             ? absl::StrCat(": ", text)
                                             : std::string(),
                                         ")"));
}

bool NatsConnection::link_up() const {
  return nc_ != nullptr && link_->up.load();
}

absl::Duration NatsConnection::link_down_for() const {
  if (nc_ == nullptr) return absl::ZeroDuration();
  const int64_t since = link_->down_since.load();
  if (since == 0) return absl::ZeroDuration();
  return absl::Nanoseconds(MonotonicNanos() - since);
}

bool NatsConnection::connected() const {
  return nc_ != nullptr &&
         natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED;
}

std::string NatsConnection::connected_url() const {
  if (!connected()) return "";
  char buffer[256] = {0};
  if (natsConnection_GetConnectedUrl(nc_, buffer, sizeof(buffer)) != NATS_OK) {
    return "";
  }
  return RedactNatsUrl(buffer);
}

uint64_t NatsConnection::reconnects() const {
  natsStatistics* stats = nullptr;
  uint64_t reconnects = 0;
  if (natsStatistics_Create(&stats) == NATS_OK &&
      natsConnection_GetStats(nc_, stats) == NATS_OK) {
    natsStatistics_GetCounts(stats, nullptr, nullptr, nullptr, nullptr,
                             &reconnects);
  }
  natsStatistics_Destroy(stats);
  return reconnects;
}

}  // namespace fabricdiag::cluster
