#include "cli/cli.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "cli/command_util.h"
#include "cli/text_output.h"

namespace fabricdiag::cli {
namespace {

using Args = absl::Span<const std::string>;
using Run = int (*)(CollectorClient* client, Args args,
                    const CommandOptions& options, const CommandEnv& env);

// One row per command: the words that name it, its argument names, whether
// it needs the collector, and how to run it. The table is the single source
// of dispatch and of the usage text.
struct CommandSpec {
  std::vector<std::string> words;
  std::vector<std::string> arg_names;
  const char* help;
  bool needs_collector;
  Run run;
};

const std::vector<CommandSpec>& Commands() {
  static const auto* const kCommands = new std::vector<CommandSpec>{
      {{"layout", "apply"},
       {"FILE"},
       "declare or replace a job's layout (YAML or JSON; - = stdin) "
       "[--lease=10m] [--if_revision=N]",
       true,
       [](CollectorClient* c, Args a, const CommandOptions& o,
          const CommandEnv& e) { return LayoutApplyCommand(*c, a[0], o, e); }},
      {{"layout", "list"},
       {},
       "list the declared layouts [--json]",
       true,
       [](CollectorClient* c, Args, const CommandOptions& o,
          const CommandEnv& e) { return LayoutListCommand(*c, o, e); }},
      {{"layout", "show"},
       {"JOB"},
       "print a job's layout as YAML [--json]",
       true,
       [](CollectorClient* c, Args a, const CommandOptions& o,
          const CommandEnv& e) { return LayoutShowCommand(*c, a[0], o, e); }},
      {{"layout", "check"},
       {"JOB"},
       "the job's hosts and NICs no agent reports, and the reported names "
       "that look alike; exit 3 when any [--json]",
       true,
       [](CollectorClient* c, Args a, const CommandOptions& o,
          const CommandEnv& e) { return LayoutCheckCommand(*c, a[0], o, e); }},
      {{"layout", "delete"},
       {"JOB"},
       "forget a job's layout",
       true,
       [](CollectorClient* c, Args a, const CommandOptions& o,
          const CommandEnv& e) { return LayoutDeleteCommand(*c, a[0], o, e); }},
      {{"topology", "apply"},
       {"FILE"},
       "declare the fabric topology (YAML or JSON; - = stdin)",
       true,
       [](CollectorClient* c, Args a, const CommandOptions& o,
          const CommandEnv& e) {
         return TopologyApplyCommand(*c, a[0], o, e);
       }},
      {{"topology", "show"},
       {},
       "print the declared topology as YAML [--discovered|--effective] "
       "[--json]",
       true,
       [](CollectorClient* c, Args, const CommandOptions& o,
          const CommandEnv& e) { return TopologyShowCommand(*c, o, e); }},
      {{"topology", "diff"},
       {},
       "declared vs discovered cabling: missing, extra, moved; exit 3 when "
       "they differ [--json]",
       true,
       [](CollectorClient* c, Args, const CommandOptions& o,
          const CommandEnv& e) { return TopologyDiffCommand(*c, o, e); }},
      {{"topology", "adopt"},
       {},
       "declare the discovered topology (compare-and-set) and print it "
       "[--json]",
       true,
       [](CollectorClient* c, Args, const CommandOptions& o,
          const CommandEnv& e) { return TopologyAdoptCommand(*c, o, e); }},
      {{"findings"},
       {},
       "active findings [--job=JOB] [--kind=KIND] [--node=N] [--device=D] "
       "[--severity=S] [--since=2h|TIME] [--until=TIME] [--all] [--json]",
       true,
       [](CollectorClient* c, Args, const CommandOptions& o,
          const CommandEnv& e) { return FindingsCommand(*c, o, e); }},
      {{"watch"},
       {},
       "stream findings as they change, until Ctrl-C [--job=JOB] [--json]",
       true,
       [](CollectorClient* c, Args, const CommandOptions& o,
          const CommandEnv& e) { return WatchCommand(*c, o, e); }},
      {{"nodes", "forget"},
       {"NODE"},
       "end a node's agent_down and forget it until it reports again",
       true,
       [](CollectorClient* c, Args a, const CommandOptions& o,
          const CommandEnv& e) { return NodesForgetCommand(*c, a[0], o, e); }},
      {{"nodes"},
       {},
       "every agent seen: up/down, last report [--json]",
       true,
       [](CollectorClient* c, Args, const CommandOptions& o,
          const CommandEnv& e) { return NodesCommand(*c, o, e); }},
      {{"ack"},
       {"ID"},
       "acknowledge an active finding until it resolves [--comment=TEXT]",
       true,
       [](CollectorClient* c, Args a, const CommandOptions& o,
          const CommandEnv& e) { return AckCommand(*c, a[0], o, e); }},
      {{"silence", "expire"},
       {"ID"},
       "end a silence now",
       true,
       [](CollectorClient* c, Args a, const CommandOptions& o,
          const CommandEnv& e) {
         return SilenceExpireCommand(*c, a[0], o, e);
       }},
      {{"silence"},
       {},
       "mark matching findings silenced --matcher=KEY=VALUE[,KEY=VALUE] "
       "--for=4h --comment=TEXT (keys: kind job node device group severity)",
       true,
       [](CollectorClient* c, Args, const CommandOptions& o,
          const CommandEnv& e) { return SilenceCommand(*c, o, e); }},
      {{"maintenance"},
       {},
       "silence one node --node=NODE --for=2h [--comment=TEXT]",
       true,
       [](CollectorClient* c, Args, const CommandOptions& o,
          const CommandEnv& e) { return MaintenanceCommand(*c, o, e); }},
      {{"silences"},
       {},
       "every silence, active and expired [--json]",
       true,
       [](CollectorClient* c, Args, const CommandOptions& o,
          const CommandEnv& e) { return SilencesCommand(*c, o, e); }},
      {{"report"},
       {},
       "a job's incident report: layout, findings with timelines, marks, "
       "what to do --job=JOB [--since=2h|TIME] [--until=TIME] "
       "[--format=md|html|json] [--output=FILE]",
       true,
       [](CollectorClient* c, Args, const CommandOptions& o,
          const CommandEnv& e) { return ReportCommand(*c, o, e); }},
      {{"plan"},
       {"FILE"},
       "offline: groups, NVLink crossings, traffic per step [--json]",
       false,
       [](CollectorClient*, Args a, const CommandOptions& o,
          const CommandEnv& e) { return PlanCommand(a[0], o, e); }},
  };
  return *kCommands;
}

bool Matches(const CommandSpec& spec, const std::vector<std::string>& args) {
  if (args.size() < spec.words.size()) return false;
  for (size_t i = 0; i < spec.words.size(); ++i) {
    if (args[i] != spec.words[i]) return false;
  }
  return true;
}

std::string Synopsis(const CommandSpec& spec) {
  std::string s = absl::StrJoin(spec.words, " ");
  for (const std::string& a : spec.arg_names) absl::StrAppend(&s, " ", a);
  return s;
}

int UsageError(absl::string_view message, const CommandEnv& env) {
  *env.err << "fabricdiag: " << message << "\n\n" << Usage();
  return kExitInvalid;
}

}  // namespace

std::string Usage() {
  std::string s =
      "usage: fabricdiag [--collector=HOST:PORT[,HOST:PORT...]] "
      "[--token_file=F] [--tls_ca=F] [--tls_server_name=NAME]\n"
      "                  [--tls_cert=F --tls_key=F] "
      "[--timeout=10s] COMMAND ...\n\n"
      "commands:\n";
  size_t width = 0;
  for (const CommandSpec& spec : Commands()) {
    width = std::max(width, Synopsis(spec).size());
  }
  for (const CommandSpec& spec : Commands()) {
    std::string synopsis = Synopsis(spec);
    synopsis.resize(width, ' ');
    absl::StrAppend(&s, "  ", synopsis, "  ", spec.help, "\n");
  }
  absl::StrAppend(
      &s, "\nflags may appear anywhere; the collector defaults to ",
      client::kDefaultCollector,
      " (with a list, each command uses the first that answers)"
      ".\nexit status: 0 success, 1 the collector cannot be reached or "
      "failed, 2 invalid input, 3 not found (no such layout, topology, "
      "finding, silence, node or reported job; or what layout check and "
      "topology diff found).\n");
  return s;
}

int RunCli(const std::vector<std::string>& args, const CliOptions& options,
           const ClientFactory& make_client, const CommandEnv& env) {
  if (args.empty()) return UsageError("no command given", env);
  if (args[0] == "help") {
    *env.out << Usage();
    return kExitOk;
  }
  const CommandSpec* spec = nullptr;
  for (const CommandSpec& candidate : Commands()) {
    if (Matches(candidate, args)) {
      spec = &candidate;
      break;
    }
  }
  if (spec == nullptr) {
    std::vector<std::string> shown(
        args.begin(), args.begin() + std::min<size_t>(2, args.size()));
    return UsageError(absl::StrCat("unknown command \"",
                                   Printable(absl::StrJoin(shown, " ")), "\""),
                      env);
  }
  const Args rest = Args(args).subspan(spec->words.size());
  if (rest.size() != spec->arg_names.size()) {
    return UsageError(
        absl::StrCat(absl::StrJoin(spec->words, " "), ": expected ",
                     spec->arg_names.empty()
                         ? std::string("no arguments")
                         : absl::StrJoin(spec->arg_names, " "),
                     ", got ", rest.size(),
                     rest.size() == 1 ? " argument" : " arguments",
                     " (usage: fabricdiag ", Synopsis(*spec), ")"),
        env);
  }
  if (!spec->needs_collector) {
    return spec->run(nullptr, rest, options.command, env);
  }
  absl::StatusOr<ClientConfig> config =
      client::LoadClientConfig(options.client);
  if (!config.ok()) return ReportError(config.status(), env);
  std::shared_ptr<CollectorClient> client = make_client(*config);
  CommandEnv with_collectors = env;
  with_collectors.collectors = config->addresses;
  with_collectors.connect = [&make_client,
                             &config](const std::string& address) {
    ClientConfig one = *config;
    one.address = address;
    one.addresses = {address};
    return make_client(one);
  };
  return spec->run(client.get(), rest, options.command, with_collectors);
}

}  // namespace fabricdiag::cli
