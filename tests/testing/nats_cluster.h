// Real NATS JetStream servers on loopback for tests and benchmarks of the
// collector cluster: N `nats-server` processes (Debian's package) routed
// into one cluster, each with its own free client and cluster ports and its
// own store directory, stopped (SIGKILL) when the object goes away. Secured,
// the servers accept only a user with a password and only over TLS, with
// certificates of a throwaway CA (test_pki.h) made at Start.
//
//   testing::NatsCluster nats(3);
//   ASSERT_TRUE(nats.Start().ok());        // JetStream ready on all three
//   flag = "--nats=" + nats.urls();         // "nats://127.0.0.1:P1,..."
//   nats.Kill(0);                           // kill -9 of the first server
//   nats.Restart(0);                        // same ports, same store
//
//   testing::NatsCluster secured(3, testing::NatsCluster::kSecured);
//   ASSERT_TRUE(secured.Start().ok());
//   argv += secured.ClientFlags();          // --nats_user=..., --nats_tls_ca=
//
// Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::testing {

// A TCP port on 127.0.0.1 that nothing listens on right now.
int FreeLoopbackPort();

// True when `nats-server` is installed (scripts/install-deps.sh installs it).
bool HaveNatsServer();

// One nats-server without JetStream (no -js) on 127.0.0.1:`port`, ready to
// serve when this returns (killed with the result); FailedPrecondition when
// nats-server is missing, Aborted with its log when it did not start.
absl::StatusOr<std::unique_ptr<Subprocess>> StartServerWithoutJetStream(
    int port);

class NatsCluster {
 public:
  enum Security {
    kOpen,     // anyone connects, in the clear
    kSecured,  // user and password, TLS only (clients; routes in the clear)
    kJwt,      // decentralized JWT authentication (a .creds file), TLS only
    // kJwt in the clear: what clients send can be read on the way (a test
    // proxy's RefuseLogins).
    kJwtPlain,
  };
  // The user kSecured servers accept.
  static constexpr char kUser[] = "fabricdiag";

  explicit NatsCluster(int servers, Security security = kOpen);
  ~NatsCluster();
  NatsCluster(const NatsCluster&) = delete;
  NatsCluster& operator=(const NatsCluster&) = delete;

  // Starts every server and waits until each answers and knows JetStream's
  // meta leader; starts over on fresh ports and stores (3 attempts within
  // `timeout` in all) when a server dies or misses the election.
  absl::Status Start(absl::Duration timeout = absl::Seconds(60));

  // Before Start(): the servers do not tell clients the other servers'
  // URLs (`no_advertise`), so a client given one URL knows that server
  // alone, as one cut off from the others would (NATS clients otherwise
  // reconnect to the servers they learned of).
  void StopAdvertising();

  // Comma-separated client URLs of every server, for --nats.
  std::string urls() const;
  std::string url(int i) const;
  // kSecured: the files a client needs (after Start): the CA of the
  // servers' certificates, a file holding kUser's password (mode 0600),
  // and another CA's certificate, which signed none of the servers'.
  std::string ca_cert() const { return ca_cert_; }
  std::string password_file() const { return password_file_; }
  std::string other_ca_cert() const { return other_ca_cert_; }
  // kJwt, kJwtPlain: the .creds file of a user of the trusted account
  // (mode 0600).
  std::string creds_file() const { return creds_file_; }
  // The collector's flags to connect (--nats_user, --nats_password_file,
  // --nats_tls_ca; kJwt: --nats_creds, --nats_tls_ca; kJwtPlain:
  // --nats_creds); none for kOpen.
  std::vector<std::string> ClientFlags() const;
  // Server i's client port on 127.0.0.1.
  int port(int i) const { return servers_[i].client_port; }
  int size() const { return static_cast<int>(servers_.size()); }

  void Kill(int i);  // SIGKILL, reaped
  // SIGSTOP, and waits until every thread of the server has stopped.
  void Pause(int i);
  void Resume(int i);  // SIGCONT
  // Starts server i again with its ports and store (after Kill).
  absl::Status Restart(int i);
  // The server's log (stderr), for failure messages.
  std::string Log(int i) const;

 private:
  bool jwt() const { return security_ == kJwt || security_ == kJwtPlain; }

  struct Server {
    int client_port = 0;
    int cluster_port = 0;
    std::string config;
    std::unique_ptr<Subprocess> process;
  };
  // kSecured: the PKI and the password file, once.
  absl::Status MakeSecrets();
  // Picks free ports and writes every server's configuration.
  void Configure();
  // Aborted when a server exited while starting (its port was taken).
  absl::Status StartOnce(absl::Duration timeout);
  absl::Status StartServer(int i);

  TempDir dir_;
  Security security_;
  std::string ca_cert_;
  std::string other_ca_cert_;
  std::string server_cert_;
  std::string server_key_;
  std::string password_;
  std::string password_file_;
  std::string creds_file_;
  std::string jwt_config_;  // kJwt*: the server's trust, for its config
  std::vector<Server> servers_;
  int attempt_ = 0;
  bool advertise_ = true;
};

}  // namespace fabricdiag::testing
