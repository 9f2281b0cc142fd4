// The operator's marks on findings: ack, silence, maintenance, silences,
// silence expire, nodes forget (docs/cli.md, "Acknowledge, silence,
// maintenance"). Bad input is caught here, before anything is sent, with
// the same checks the collector applies (collector/findings/
// silence_matchers.h).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/findings_table.h"
#include "cli/text_output.h"
#include "collector/findings/finding_json.h"
#include "collector/findings/silence_matchers.h"

namespace fabricdiag::cli {
namespace {

// NotFound (an unknown finding, silence or node) is exit 3; the rest as
// every command reports it.
int ReportMarkError(const absl::Status& status, const CommandEnv& env) {
  if (absl::IsNotFound(status)) {
    *env.err << "fabricdiag: " << Printable(status.message()) << "\n";
    return kExitNotFound;
  }
  return ReportError(status, env);
}

int Silence(CollectorClient& client, std::vector<v1::SilenceMatcher> matchers,
            absl::string_view duration, const std::string& comment,
            const CommandOptions& options, const CommandEnv& env) {
  absl::StatusOr<absl::Duration> d =
      collector::ParseSilenceDuration(duration, "--for");
  if (!d.ok()) return ReportError(d.status(), env);
  if (absl::StripAsciiWhitespace(comment).empty()) {
    return ReportError(absl::InvalidArgumentError(
                           "--comment: required (say why, e.g. a ticket)"),
                       env);
  }
  v1::CreateSilenceRequest request;
  for (v1::SilenceMatcher& m : matchers) {
    *request.add_matchers() = std::move(m);
  }
  request.set_duration_seconds(absl::ToInt64Seconds(*d));
  request.set_comment(comment);
  request.set_who(options.owner);
  absl::StatusOr<v1::Silence> silence = client.CreateSilence(request);
  if (!silence.ok()) return ReportMarkError(silence.status(), env);
  if (options.json) {
    *env.out << collector::SilenceToJson(*silence).dump() << "\n";
    return kExitOk;
  }
  *env.out << "silence " << silence->id() << " until "
           << collector::FormatRfc3339(silence->ends_unix_nanos()) << "\n";
  return kExitOk;
}

}  // namespace

int AckCommand(CollectorClient& client, absl::string_view id,
               const CommandOptions& options, const CommandEnv& env) {
  v1::AckFindingRequest request;
  request.set_id(std::string(id));
  request.set_comment(options.comment);
  request.set_who(options.owner);
  absl::StatusOr<v1::AckFindingResponse> acked = client.AckFinding(request);
  if (!acked.ok()) return ReportMarkError(acked.status(), env);
  if (options.json) {
    *env.out << collector::FindingToJson(acked->finding()).dump() << "\n";
    return kExitOk;
  }
  *env.out << "finding " << Printable(id) << " acknowledged by "
           << Printable(acked->finding().acked().who()) << "\n";
  return kExitOk;
}

int SilenceCommand(CollectorClient& client, const CommandOptions& options,
                   const CommandEnv& env) {
  absl::StatusOr<std::vector<v1::SilenceMatcher>> matchers =
      collector::ParseMatchers(options.matcher);
  if (!matchers.ok()) return ReportError(matchers.status(), env);
  return Silence(client, *std::move(matchers), options.for_duration,
                 options.comment, options, env);
}

int MaintenanceCommand(CollectorClient& client, const CommandOptions& options,
                       const CommandEnv& env) {
  if (absl::StripAsciiWhitespace(options.node).empty()) {
    return ReportError(
        absl::InvalidArgumentError("--node: missing (the node under work)"),
        env);
  }
  std::vector<v1::SilenceMatcher> matchers(1);
  matchers[0].set_key("node");
  matchers[0].set_value(options.node);
  const std::string comment =
      options.comment.empty() ? std::string("maintenance") : options.comment;
  return Silence(client, std::move(matchers), options.for_duration, comment,
                 options, env);
}

int SilencesCommand(CollectorClient& client, const CommandOptions& options,
                    const CommandEnv& env) {
  absl::StatusOr<v1::ListSilencesResponse> list = client.ListSilences();
  if (!list.ok()) return ReportMarkError(list.status(), env);
  if (options.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const v1::Silence& s : list->silences()) {
      j.push_back(collector::SilenceToJson(s));
    }
    *env.out << j.dump() << "\n";
    return kExitOk;
  }
  if (list->silences().empty()) {
    *env.out << "no silences\n";
    return kExitOk;
  }
  Table table({"ID", "STATE", "MATCHERS", "WHO", "UNTIL", "COMMENT"});
  for (const v1::Silence& s : list->silences()) {
    table.AddRow({s.id(), s.expired() ? "expired" : "active",
                  SilenceMatchersText(s), s.who(),
                  collector::FormatRfc3339(s.ends_unix_nanos()), s.comment()});
  }
  table.Print(*env.out);
  return kExitOk;
}

int SilenceExpireCommand(CollectorClient& client, absl::string_view id,
                         const CommandOptions& options, const CommandEnv& env) {
  v1::ExpireSilenceRequest request;
  request.set_id(std::string(id));
  request.set_who(options.owner);
  absl::StatusOr<v1::Silence> silence = client.ExpireSilence(request);
  if (!silence.ok()) return ReportMarkError(silence.status(), env);
  *env.out << "silence " << Printable(id) << " expired\n";
  return kExitOk;
}

int NodesForgetCommand(CollectorClient& client, absl::string_view node,
                       const CommandOptions& options, const CommandEnv& env) {
  v1::ForgetNodeRequest request;
  request.set_node(std::string(node));
  request.set_who(options.owner);
  absl::StatusOr<v1::ForgetNodeResponse> forgot = client.ForgetNode(request);
  if (!forgot.ok()) return ReportMarkError(forgot.status(), env);
  *env.out << "node " << Printable(node) << " forgotten";
  if (!forgot->resolved().empty()) {
    *env.out << "; resolving " << absl::StrJoin(forgot->resolved(), ", ");
  }
  *env.out << " (it comes back when its agent reports again)\n";
  return kExitOk;
}

}  // namespace fabricdiag::cli
