#include "tests/testing/nats_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "tests/testing/loopback.h"
#include "tests/testing/nats_jwt.h"
#include "tests/testing/test_pki.h"

namespace fabricdiag::testing {
namespace {

constexpr char kNatsServer[] = "/usr/sbin/nats-server";

// Whether every thread of process `pid` is stopped: state T (or t) in
// each /proc/PID/task/TID/stat (proc(5)), which follows the command name in
// parentheses (the last ')').
bool EveryThreadStopped(pid_t pid) {
  std::error_code error;
  std::filesystem::directory_iterator tasks(
      absl::StrCat("/proc/", pid, "/task"), error);
  if (error) return true;  // gone: stopped enough
  bool any = false;
  for (const std::filesystem::directory_entry& task : tasks) {
    std::ifstream in(task.path() / "stat");
    const std::string stat((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) return false;
    const char state = stat[close + 2];
    if (state != 'T' && state != 't') return false;
    any = true;
  }
  return any;
}

bool Connects(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr = LoopbackAddress(port);
  const bool ok =
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr = LoopbackAddress(0);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

bool HaveNatsServer() { return ::access(kNatsServer, X_OK) == 0; }

absl::StatusOr<std::unique_ptr<Subprocess>> StartServerWithoutJetStream(
    int port) {
  if (!HaveNatsServer()) {
    return absl::FailedPreconditionError(
        absl::StrCat(kNatsServer, " is missing: run scripts/install-deps.sh"));
  }
  auto server = std::make_unique<Subprocess>(std::vector<std::string>{
      kNatsServer, "-a", "127.0.0.1", "-p", absl::StrCat(port)});
  if (absl::Status s = server->Start(); !s.ok()) return s;
  if (!server->WaitForStderr("Server is ready", nullptr, absl::Seconds(20))) {
    return absl::AbortedError(
        absl::StrCat("nats-server did not start: ", server->Stderr()));
  }
  return server;
}

NatsCluster::NatsCluster(int servers, Security security)
    : security_(security), servers_(servers) {
  Configure();
}

absl::Status NatsCluster::MakeSecrets() {
  if (security_ == kOpen || !password_file_.empty()) return absl::OkStatus();
  for (const char* sub : {"/pki", "/other"}) {
    ::mkdir((dir_.path() + sub).c_str(), 0700);
  }
  absl::StatusOr<TestPki> pki = MakeTestPki(dir_.path() + "/pki", {});
  if (!pki.ok()) return pki.status();
  absl::StatusOr<TestPki> other = MakeTestPki(dir_.path() + "/other", {});
  if (!other.ok()) return other.status();
  ca_cert_ = pki->ca_cert;
  server_cert_ = pki->server.cert;
  server_key_ = pki->server.key;
  other_ca_cert_ = other->ca_cert;
  std::random_device random;
  password_ = absl::StrCat("pw-", random(), "-", random());
  password_file_ = dir_.path() + "/nats-password";
  std::ofstream(password_file_) << password_ << "\n";
  ::chmod(password_file_.c_str(), 0600);
  if (jwt()) {
    absl::StatusOr<NatsJwtAuth> auth = MakeNatsJwtAuth("fabricdiag");
    if (!auth.ok()) return auth.status();
    jwt_config_ = NatsJwtServerConfig(*auth);
    creds_file_ = dir_.path() + "/collector.creds";
    std::ofstream(creds_file_) << auth->user_creds;
    ::chmod(creds_file_.c_str(), 0600);
  }
  Configure();
  return absl::OkStatus();
}

std::vector<std::string> NatsCluster::ClientFlags() const {
  if (security_ == kOpen) return {};
  if (security_ == kJwt) {
    return {"--nats_creds=" + creds_file_, "--nats_tls_ca=" + ca_cert_};
  }
  if (security_ == kJwtPlain) return {"--nats_creds=" + creds_file_};
  return {absl::StrCat("--nats_user=", kUser),
          "--nats_password_file=" + password_file_,
          "--nats_tls_ca=" + ca_cert_};
}

void NatsCluster::Configure() {
  const int servers = size();
  for (Server& s : servers_) {
    s.client_port = FreeLoopbackPort();
    s.cluster_port = FreeLoopbackPort();
  }
  for (int i = 0; i < servers; ++i) {
    std::vector<std::string> routes;
    routes.reserve(servers);
    for (int j = 0; j < servers; ++j) {
      if (j != i) {
        routes.push_back(
            absl::StrCat("nats-route://127.0.0.1:", servers_[j].cluster_port));
      }
    }
    Server& s = servers_[i];
    s.config = absl::StrCat(dir_.path(), "/n", i, ".conf");
    std::ofstream conf(s.config);
    // A fresh store per attempt: a failed start leaves raft state behind.
    conf << "server_name: n" << i << "\n"
         << "listen: 127.0.0.1:" << s.client_port << "\n"
         << "jetstream { store_dir: \"" << dir_.path() << "/store" << i << "-"
         << attempt_ << "\" }\n";
    if (security_ != kOpen && !password_.empty()) {
      if (jwt()) {
        conf << jwt_config_;
      } else {
        conf << "authorization { users = [ {user: " << kUser << ", password: \""
             << password_ << "\"} ] }\n";
      }
      if (security_ != kJwtPlain) {
        conf << "tls {\n  cert_file: \"" << server_cert_ << "\"\n  key_file: \""
             << server_key_ << "\"\n  timeout: 2\n}\n";
      }
    }
    if (servers > 1) {
      conf << "cluster {\n  name: fabricdiag-test\n  listen: 127.0.0.1:"
           << s.cluster_port << "\n  routes: [" << absl::StrJoin(routes, ", ")
           << "]\n"
           << (advertise_ ? "" : "  no_advertise: true\n") << "}\n";
    }
  }
}

NatsCluster::~NatsCluster() = default;

void NatsCluster::StopAdvertising() {
  advertise_ = false;
  Configure();
}

std::string NatsCluster::url(int i) const {
  return absl::StrCat("nats://127.0.0.1:", servers_[i].client_port);
}

std::string NatsCluster::urls() const {
  std::vector<std::string> all;
  all.reserve(servers_.size());
  for (int i = 0; i < size(); ++i) all.push_back(url(i));
  return absl::StrJoin(all, ",");
}

absl::Status NatsCluster::StartServer(int i) {
  Server& s = servers_[i];
  s.process = std::make_unique<Subprocess>(
      std::vector<std::string>{kNatsServer, "-c", s.config});
  return s.process->Start();
}

absl::Status NatsCluster::Start(absl::Duration timeout) {
  if (!HaveNatsServer()) {
    return absl::FailedPreconditionError(
        absl::StrCat(kNatsServer, " is missing: run scripts/install-deps.sh"));
  }
  if (absl::Status s = MakeSecrets(); !s.ok()) return s;
  // A port found free can be taken by another test before the server binds
  // it (then that server exits at once), and on a loaded machine a server
  // of a cluster that forms its routes all at once can miss the election of
  // the meta leader for good (seen with nats-server 2.9.10). Either way the
  // cluster starts over on fresh ports and stores.
  const absl::Duration per_attempt = timeout / 3;
  absl::Status status;
  for (attempt_ = 0; attempt_ < 3; ++attempt_) {
    if (attempt_ > 0) {
      for (int i = 0; i < size(); ++i) Kill(i);
      Configure();
    }
    status = StartOnce(per_attempt);
    if (status.ok()) return status;
  }
  return status;
}

absl::Status NatsCluster::StartOnce(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  // One after the other, each listening for routes before the next starts:
  // fewer duplicate routes to sort out than when all dial at once.
  for (int i = 0; i < size(); ++i) {
    if (absl::Status s = StartServer(i); !s.ok()) return s;
    std::string line;
    while (!servers_[i].process->WaitForStderr("Server is ready", &line,
                                               absl::Milliseconds(100))) {
      if (!servers_[i].process->Running() || absl::Now() > deadline) {
        return absl::AbortedError(
            absl::StrCat("nats-server n", i, " did not start: ", Log(i)));
      }
    }
  }
  for (int i = 0; i < size(); ++i) {
    // JetStream is usable once a server logs that it found the meta leader
    // (or, alone, that it is ready).
    const char* ready = size() > 1 ? "metadata leader" : "Server is ready";
    std::string line;
    while (!servers_[i].process->WaitForStderr(ready, &line,
                                               absl::Milliseconds(200)) ||
           !Connects(servers_[i].client_port)) {
      for (int j = 0; j < size(); ++j) {
        if (!servers_[j].process->Running()) {
          return absl::AbortedError(
              absl::StrCat("nats-server n", j, " exited: ", Log(j)));
        }
      }
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat("nats-server n", i, " not ready in ",
                         absl::FormatDuration(timeout), ": ", Log(i)));
      }
    }
  }
  return absl::OkStatus();
}

void NatsCluster::Kill(int i) {
  if (servers_[i].process == nullptr) return;
  servers_[i].process->Signal(SIGKILL);
  servers_[i].process->Wait(absl::Seconds(5));
}

void NatsCluster::Pause(int i) {
  servers_[i].process->Signal(SIGSTOP);
  // kill() returns before the server's threads have stopped: on busy cores
  // one may run on for a while and acknowledge a write made after Pause()
  // (seen once under ASan with both cores busy: a write to the paused
  // cluster acknowledged after 1 ms).
  const pid_t pid = servers_[i].process->pid();
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (!EveryThreadStopped(pid) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
}
void NatsCluster::Resume(int i) { servers_[i].process->Signal(SIGCONT); }

absl::Status NatsCluster::Restart(int i) {
  Kill(i);
  return StartServer(i);
}

std::string NatsCluster::Log(int i) const {
  return servers_[i].process == nullptr ? "" : servers_[i].process->Stderr();
}

}  // namespace fabricdiag::testing
