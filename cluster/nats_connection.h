// A collector's connection to the NATS JetStream servers of its cluster
// (--nats=URL[,URL...]), over the C client (libnats): connect, reconnect
// forever, and say whether the cluster is reachable now. It proves who it is
// (a user and password, or a .creds file) and checks who the servers are
// (TLS with a CA of the operator's) as NatsSecurity says
// (docs/cluster.md#securing-nats).
//
// The client's defaults suit a chat application, not a monitoring cluster:
// a server that stops answering (SIGSTOP, a hung machine) is noticed only
// after two minutes of pings. Here pings go every second and three missed
// ones count as a lost connection, so the client moves to another server
// within a few seconds; reconnects never give up (a collector that lost
// NATS reports unhealthy and keeps trying).
//
//   ASSIGN_OR_RETURN(std::vector<std::string> urls, ParseNatsUrls(flag));
//   ASSIGN_OR_RETURN(std::unique_ptr<NatsConnection> nats,
//                    NatsConnection::Connect({urls, "collector-a"}));
//   kvStore_Get(&entry, kv, key) ... NatsError(status, "reading key")
//
// Thread-safe (libnats connections are).
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace fabricdiag::cluster {

// "nats://h1:4222,nats://h2:4222" -> each URL; InvalidArgument naming the bad
// entry (empty, not nats://HOST:PORT or tls://HOST:PORT, a duplicate). A URL
// may carry USER:PASSWORD@ (libnats' form); --nats_password_file keeps the
// password off the command line.
absl::StatusOr<std::vector<std::string>> ParseNatsUrls(absl::string_view flag);

// `url` as it may be logged: a password in it replaced by "***"
// ("nats://u:***@h:4222"), a token alone ("nats://t@h:4222") likewise.
std::string RedactNatsUrl(absl::string_view url);

// How a collector proves who it is to the NATS servers and checks who they
// are: the --nats_* security flags, each a file (a secret never travels on
// the command line, where `ps` shows it).
struct NatsSecurity {
  // A NATS .creds file (user JWT and NKey seed, as `nsc` writes it), for
  // servers that use decentralized JWT authentication (--nats_creds).
  std::string creds_file;
  // A user of the servers' `authorization { users = [...] }` (--nats_user)
  // and the file holding its password (--nats_password_file).
  std::string user;
  std::string password_file;
  // A PEM bundle of the CAs the servers' certificates must chain to
  // (--nats_tls_ca); when set, every connection is TLS and a server
  // without TLS is refused.
  std::string tls_ca;
  // A client certificate and its key, for servers that verify their
  // clients' certificates (--nats_tls_cert, --nats_tls_key).
  std::string tls_cert;
  std::string tls_key;
};

// InvalidArgument naming the flag at fault: a flag without its partner
// (--nats_user and --nats_password_file, --nats_tls_cert and
// --nats_tls_key), both a user and a .creds file, a file that is missing
// or not what it should be, a secret (password, key, .creds) that its
// group or others may read (common/files.h). Reads the files, never the
// network.
absl::Status ValidateNatsSecurity(const NatsSecurity& security);

// The absl::Status for a failed libnats call: `what` failed, with the
// client's text and its last error detail. Timeouts and lost connections
// map to Unavailable (worth retrying), NATS_NOT_FOUND to NotFound, payload
// limits to ResourceExhausted, the rest to Internal.
absl::Status NatsError(natsStatus status, absl::string_view what);

// What a failed JetStream API request says about JetStream itself, for the
// server at `server` (one of `servers` URLs): FailedPrecondition naming the
// server and the fix when JetStream is not enabled there (the API has no
// responder: nats-server runs without -js / `jetstream {}`) and `servers`
// is 1, or when the account has no JetStream; Unavailable with the same
// hint when other servers are listed (a cluster that is partly enabled, or
// whose JetStream servers are still starting, can serve later); otherwise
// NatsError's mapping of `status`.
absl::Status JetStreamProblem(natsStatus status, jsErrCode code,
                              absl::string_view server, size_t servers);

// How long a starting collector waits for its NATS servers to answer and
// for JetStream to serve its buckets and stream, in all
// (--nats_startup_timeout's default). A JetStream cluster whose servers all
// just (re)started answers "no responders", times out or knows no stream
// until its servers elected a meta leader and every stream a leader, which
// takes seconds after the last server needed for a quorum is up.
inline constexpr absl::Duration kDefaultStartupTimeout = absl::Seconds(60);

class NatsConnection;

// One step of a collector's startup retried until the connection's startup
// deadline (NatsConnection::startup_deadline()): pauses between attempts
// grow from 250 ms to 2 s, and what it waits for is logged at the first
// failure and every 10 s after.
//
//   StartupRetry retry(nats);
//   while (true) {
//     absl::Status s = Try();
//     if (s.ok() || !absl::IsUnavailable(s)) return s;
//     if (!retry.Pause(s)) return retry.GiveUp(s);
//   }
class StartupRetry {
 public:
  explicit StartupRetry(const NatsConnection& nats);
  // False when the deadline would pass during the pause (give up);
  // otherwise logs `error` (saying what failed) when due and sleeps.
  bool Pause(const absl::Status& error);
  // Unavailable: `error`, for how long it was retried, and the servers.
  absl::Status GiveUp(const absl::Status& error) const;

 private:
  const NatsConnection& nats_;
  absl::Time start_;
  absl::Duration pause_ = absl::Milliseconds(250);
  absl::Time next_log_ = absl::InfinitePast();
};

// Binds the key-value bucket `config.Bucket`, creating it with `config` when
// it does not exist, retrying until the connection's startup deadline:
// another collector may be creating it at the same moment, or the
// JetStream cluster may still be electing its leaders. Unavailable naming
// the bucket and the servers when it gives up; FailedPrecondition at once
// when the server cannot ever hold `config.Replicas` replicas (a single
// server asked for more than one).
absl::StatusOr<kvStore*> BindOrCreateBucket(const NatsConnection& nats,
                                            kvConfig config);

// The last sequence of a key-value bucket's stream: the newest revision of
// any of its keys; 0 when the stream holds no message (all expired).
absl::StatusOr<uint64_t> BucketLastRevision(jsCtx* js,
                                            const std::string& bucket);
// The same, but the stream's last sequence even when it holds no message:
// the newest revision the bucket ever had.
absl::StatusOr<uint64_t> BucketLastSequence(jsCtx* js,
                                            const std::string& bucket);

// For the thread of a key-value watcher that gave nothing for a while
// (kvWatcher_Next timed out): a watcher is a consumer on one NATS server,
// and when that server dies it can go quiet without an error while the
// cluster takes many seconds to place a new one. Counts in *behind the
// consecutive quiet checks during which the bucket held revisions after
// `delivered`; from the second one on, returns the bucket's last revision:
// the caller stops waiting for the watcher and recreates it.
std::optional<uint64_t> WatcherFellBehind(jsCtx* js, const std::string& bucket,
                                          uint64_t delivered, int* behind);
// The same, given the bucket's last revision the caller read
// (BucketLastRevision), for a caller that wants it too.
std::optional<uint64_t> WatcherFellBehind(const absl::StatusOr<uint64_t>& last,
                                          uint64_t delivered, int* behind);

class NatsConnection {
 public:
  struct Options {
    std::vector<std::string> urls;
    std::string name;  // shown by the servers' monitoring (connz)
    // How long Connect, then opening the buckets and streams
    // (BindOrCreateBucket, StartupRetry), keep trying, in all.
    absl::Duration startup_timeout = kDefaultStartupTimeout;
    // How long one JetStream request (a write, a lookup) waits for its
    // answer. Callers retry within their own deadline: right after a server
    // dies, the first request can time out while the stream elects a leader.
    absl::Duration request_timeout = absl::Seconds(3);
    NatsSecurity security{};
  };

  // Connects, then waits until JetStream answers (its account info).
  // Unavailable naming the URLs when no server answered in time;
  // FailedPrecondition at once when the only server listed runs without
  // JetStream (JetStreamProblem); with several servers listed, that hint
  // is logged while retrying and ends the final error. What retrying cannot
  // mend ends it at once: PermissionDenied when a server refuses the
  // credentials ("authorization violation"), FailedPrecondition when the
  // TLS handshake fails (a server certificate the CA did not sign) or TLS
  // is wanted and the server has none; InvalidArgument for a bad
  // NatsSecurity (ValidateNatsSecurity).
  static absl::StatusOr<std::unique_ptr<NatsConnection>> Connect(
      const Options& options);

  NatsConnection(const NatsConnection&) = delete;
  NatsConnection& operator=(const NatsConnection&) = delete;
  ~NatsConnection();

  jsCtx* js() const { return js_; }
  // For plain (non-JetStream) subscriptions.
  natsConnection* nc() const { return nc_; }
  // The servers listed, as they may be logged (RedactNatsUrl).
  const std::vector<std::string>& urls() const { return urls_; }
  absl::Duration request_timeout() const { return request_timeout_; }
  // When the startup steps stop retrying: Connect's start plus
  // Options::startup_timeout.
  absl::Time startup_deadline() const { return startup_deadline_; }

  // Closes the connection for good: requests fail from now on (what a
  // collector cut off from NATS sees). Idempotent.
  void Close();

  // True while connected to one of the servers.
  bool connected() const;
  // True once Close() ran (or the client gave up reconnecting): no call on
  // the connection can succeed any more, so retry loops stop. Never waits
  // (see link_up()).
  bool closed() const;
  // Not empty once the client closed the connection itself, not Close():
  // it gave up reconnecting (libnats does when a server refused the same
  // credentials twice in a row); why, with the client's last error. The
  // connection cannot come back: the collector exits for its supervisor
  // to start it again.
  std::string GaveUp() const;
  // False from the client's report that the connection was lost until its
  // report that it is back (its disconnected and reconnected callbacks).
  // Unlike connected(), never waits for the connection's lock, which the
  // client's reconnect thread holds up to 1 s per attempt at a stopped
  // server: a caller with a deadline asks this before sending (a request
  // sent meanwhile would wait for the lock, then sit in the client's
  // reconnect buffer).
  bool link_up() const;
  // How long link_up() has been false without a break (the monotonic
  // clock); zero while it is true. A server that stops answering is found
  // by the client's pings (3 missed, 1 s apart), so a stopped or cut-off
  // server counts from some 3 s after it stopped.
  absl::Duration link_down_for() const;
  // The server now used ("nats://127.0.0.1:4222", RedactNatsUrl), empty
  // when disconnected.
  std::string connected_url() const;
  // Times the connection was lost and re-established since Connect.
  uint64_t reconnects() const;

 private:
  NatsConnection() = default;

  // What the client's callbacks report. Their closure is an id of
  // CallbackClosures (cluster/callback_closures.h), removed when this
  // object is destroyed: a callback delivered after that (libnats may post
  // an error behind its closed callback) finds nothing and does nothing.
  struct Link {
    std::atomic<bool> up{false};
    std::atomic<bool> closed{false};
    // Close() ran: the closed callback that follows is not the client
    // giving up.
    std::atomic<bool> closing{false};
    // MonotonicNanos() when up last turned false; 0 while up.
    std::atomic<int64_t> down_since{0};
    // When OnError last logged (Unix ns): at most one line a second.
    std::atomic<int64_t> last_error_log_ns{0};
    // NatsSecurity::creds_file, read at every login (a rotated file is
    // used from the next one); empty without one.
    std::string creds_file;
    // Logins not sent because their nonce's signature would have gone out
    // empty (cluster/nats_creds.h): the client connected again.
    std::atomic<uint64_t> unsent_logins{0};
    void Down();
    // True at most once a second (last_error_log_ns): whether to log.
    bool MayLog();
    void Up();
  };
  static int64_t MonotonicNanos();
  static void OnDisconnected(natsConnection* nc, void* closure);
  static void OnReconnected(natsConnection* nc, void* closure);
  static void OnClosed(natsConnection* nc, void* closure);
  // Logs what the servers report outside any call: a refused publish or
  // subscription (the user's permissions lack a subject), credentials
  // refused on a reconnect.
  static void OnError(natsConnection* nc, natsSubscription* sub,
                      natsStatus status, void* closure);
  // A login with Link::creds_file: its user JWT, and the server's nonce
  // signed with its seed (libnats frees what they return).
  static natsStatus OnUserJwt(char** jwt, char** error_text, void* closure);
  static natsStatus OnSignNonce(char** error_text, unsigned char** signature,
                                int* length, const char* nonce, void* closure);

  std::vector<std::string> urls_;
  absl::Duration request_timeout_;
  absl::Time startup_deadline_;
  natsOptions* options_ = nullptr;
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  std::shared_ptr<Link> link_ = std::make_shared<Link>();
  // The callbacks' closure: link_'s id in CallbackClosures<Link>.
  void* closure_ = nullptr;
};

// Between the attempts of a write or read retried while the cluster elects
// a leader: sleeps `pause` and returns true, or returns false at once when
// the connection is closed for good or the pause would end past `deadline`
// (the caller then returns its last error).
bool PauseBeforeRetry(const NatsConnection& nats, absl::Duration pause,
                      absl::Time deadline);

}  // namespace fabricdiag::cluster
