// fabricdiag: the ops CLI. Flags -> CliOptions -> RunCli; for `watch`, a
// thread turns SIGINT/SIGTERM into a clean cancel of the stream (exit 0).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "cli/cli.h"
#include "client/collector_client.h"
#include "client/tls_flags.h"
#include "common/clock.h"
#include "common/program.h"
#include "common/version.h"

ABSL_FLAG(std::string, collector, fabricdiag::client::kDefaultCollector,
          "collector gRPC address, HOST:PORT, or a comma-separated list of a "
          "cluster's collectors: each command uses the first that answers");
ABSL_FLAG(std::string, token_file, "",
          "file holding the bearer token for write commands");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(10),
          "deadline of each request (not of watch)");
ABSL_FLAG(std::string, job, "", "findings, watch: only this job");
ABSL_FLAG(std::string, kind, "", "findings: only this finding kind");
ABSL_FLAG(bool, all, false, "findings: resolved ones too");
ABSL_FLAG(bool, json, false, "machine-readable output");
ABSL_FLAG(bool, discovered, false,
          "topology show: the topology discovered over LLDP");
ABSL_FLAG(bool, effective, false,
          "topology show: the effective topology (declared, else "
          "discovered), each link with its source");
ABSL_FLAG(absl::Duration, lease, absl::ZeroDuration(),
          "layout apply: the collector removes the layout this long after "
          "the apply unless renewed (0: never)");
ABSL_FLAG(std::string, if_revision, "",
          "layout apply: only when the job's layout is at this revision "
          "(layout show prints it; 0: only when the job has no layout), "
          "else exit 4 and nothing is written");
ABSL_FLAG(std::string, since, "",
          "findings: those active since this time (a duration ago: 2h, 30m, "
          "7d; or RFC 3339), resolved ones too");
ABSL_FLAG(std::string, until, "",
          "findings: those active until this time (as --since)");
ABSL_FLAG(std::string, node, "",
          "findings: only those involving this node; maintenance: the node "
          "under work");
ABSL_FLAG(std::string, device, "",
          "findings: only this device (RDMA device, netdev or switch port)");
ABSL_FLAG(std::string, severity, "",
          "findings: at least this severe (info, warning, critical)");
ABSL_FLAG(std::string, comment, "",
          "ack, silence, maintenance: why (required for silence)");
ABSL_FLAG(std::string, matcher, "",
          "silence: the findings it marks, KEY=VALUE[,KEY=VALUE] (keys: "
          "kind, job, node, device, group, severity)");
ABSL_FLAG(std::string, for, "",
          "silence, maintenance: how long (30m, 4h, 7d; at most 30d)");
ABSL_FLAG(std::string, format, "md", "report: md, html or json");
ABSL_FLAG(std::string, output, "",
          "report: write to this file instead of standard output");

namespace {

using fabricdiag::cli::kExitInvalid;

// absl::ParseCommandLine exits with status 1 on an unknown flag or a bad
// value, which the contract reserves for collector failures; check every
// flag first so that such input exits 2, naming the flag.
bool CheckFlags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    arg.remove_prefix(absl::StartsWith(arg, "--") ? 2 : 1);
    const size_t eq = arg.find('=');
    const absl::string_view name = arg.substr(0, eq);
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && absl::StartsWith(name, "no") && eq == arg.npos) {
      absl::CommandLineFlag* negated =
          absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) continue;
    }
    if (flag == nullptr) {
      std::cerr << "fabricdiag: unknown flag --" << name << "\n\n"
                << fabricdiag::cli::Usage();
      return false;
    }
    std::string value;
    if (eq != arg.npos) {
      value = std::string(arg.substr(eq + 1));
    } else if (flag->IsOfType<bool>()) {
      continue;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::cerr << "fabricdiag: --" << name << ": missing value\n";
      return false;
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      std::cerr << "fabricdiag: --" << name << ": " << error << "\n";
      return false;
    }
  }
  return true;
}

bool WantsHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "-h" || arg == "--help" || arg == "-help" ||
        arg == "--helpfull") {
      return true;
    }
  }
  return false;
}

// Holds the client so that the signal thread can cancel its watch.
class LiveClient {
 public:
  void Set(std::shared_ptr<fabricdiag::cli::CollectorClient> client) {
    absl::MutexLock lock(&mu_);
    client_ = std::move(client);
  }
  void CancelWatch() {
    std::shared_ptr<fabricdiag::cli::CollectorClient> client;
    {
      absl::MutexLock lock(&mu_);
      client = client_;
    }
    if (client != nullptr) client->CancelWatch();
  }

 private:
  absl::Mutex mu_;
  std::shared_ptr<fabricdiag::cli::CollectorClient> client_
      ABSL_GUARDED_BY(mu_);
};

// Shared with the detached signal thread, which may outlive main's locals:
// allocated once and never destroyed (globals are roots, not leaks).
absl::Notification* const g_interrupted = new absl::Notification;
LiveClient* const g_live = new LiveClient;

}  // namespace

int main(int argc, char** argv) {
  fabricdiag::InitProgram("fabricdiag",
                          "The fabricdiag ops CLI: layouts, topology, "
                          "findings, nodes and offline plans.");
  if (WantsHelp(argc, argv)) {
    std::cout << fabricdiag::cli::Usage();
    return 0;
  }
  if (argc == 2 && absl::string_view(argv[1]) == "--version") {
    std::cout << "fabricdiag " << fabricdiag::kVersion << "\n";
    return 0;
  }
  if (!CheckFlags(argc, argv)) return kExitInvalid;
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  std::vector<std::string> args(positional.begin() + 1, positional.end());

  fabricdiag::cli::CliOptions options;
  options.client.address = absl::GetFlag(FLAGS_collector);
  options.client.token_file = absl::GetFlag(FLAGS_token_file);
  // --tls_ca, --tls_cert, --tls_key, --tls_server_name: client/tls_flags.h.
  options.client.tls = fabricdiag::client::TlsFlagsFromCommandLine();
  options.client.timeout = absl::GetFlag(FLAGS_timeout);
  options.command.job = absl::GetFlag(FLAGS_job);
  options.command.kind = absl::GetFlag(FLAGS_kind);
  options.command.all = absl::GetFlag(FLAGS_all);
  options.command.json = absl::GetFlag(FLAGS_json);
  options.command.lease = absl::GetFlag(FLAGS_lease);
  options.command.if_revision = absl::GetFlag(FLAGS_if_revision);
  options.command.discovered = absl::GetFlag(FLAGS_discovered);
  options.command.effective = absl::GetFlag(FLAGS_effective);
  options.command.since = absl::GetFlag(FLAGS_since);
  options.command.until = absl::GetFlag(FLAGS_until);
  options.command.node = absl::GetFlag(FLAGS_node);
  options.command.device = absl::GetFlag(FLAGS_device);
  options.command.severity = absl::GetFlag(FLAGS_severity);
  options.command.comment = absl::GetFlag(FLAGS_comment);
  options.command.matcher = absl::GetFlag(FLAGS_matcher);
  options.command.for_duration = absl::GetFlag(FLAGS_for);
  options.command.format = absl::GetFlag(FLAGS_format);
  options.command.output = absl::GetFlag(FLAGS_output);
  if (const char* user = std::getenv("USER"); user != nullptr) {
    options.command.owner = user;
  }

  fabricdiag::SystemClock clock;
  fabricdiag::cli::CommandEnv env;
  env.in = &std::cin;
  env.out = &std::cout;
  env.err = &std::cerr;
  env.clock = &clock;
  env.interrupted = g_interrupted;

  // Only `watch` runs until interrupted; every other command keeps the
  // default disposition, so Ctrl-C simply ends it.
  if (!args.empty() && args[0] == "watch") {
    // Blocked before gRPC starts threads, so every thread inherits the mask
    // and the signals reach only the sigwait below.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
      int signo = 0;
      sigwait(&set, &signo);
      g_interrupted->Notify();
      g_live->CancelWatch();
      // A second signal means "now": do not wait for a stuck cancel.
      sigwait(&set, &signo);
      _exit(128 + signo);
    }).detach();
  }

  const int status = fabricdiag::cli::RunCli(
      args, options,
      [](const fabricdiag::cli::ClientConfig& config) {
        std::shared_ptr<fabricdiag::cli::CollectorClient> client =
            fabricdiag::client::MakeCollectorClient(config);
        g_live->Set(client);
        return client;
      },
      env);
  g_live->Set(nullptr);
  std::cout.flush();
  return status;
}
