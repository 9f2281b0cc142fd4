// findings, watch, nodes.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/findings_list.h"
#include "cli/findings_table.h"
#include "cli/text_output.h"
#include "collector/findings/finding_json.h"

namespace fabricdiag::cli {
namespace {

// Errors that retrying cannot fix: the watch stops at once.
bool IsPermanent(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kFailedPrecondition:
      return true;
    default:
      return false;
  }
}

// When the event happened, as far as the finding says.
int64_t EventTime(const v1::FindingEvent& event, const CommandEnv& env) {
  const v1::Finding& f = event.finding();
  if (event.kind() == v1::FindingEvent::RESOLVED &&
      f.resolved_unix_nanos() != 0) {
    return f.resolved_unix_nanos();
  }
  if (f.last_seen_unix_nanos() != 0) return f.last_seen_unix_nanos();
  return absl::ToUnixNanos(env.clock->Now());
}

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

// What the CLI says when the collector's findings are stale (a cluster's
// collector that cannot see the shared findings: docs/cluster.md).
std::string StaleLine(const v1::FindingsStaleness& staleness) {
  return absl::StrCat(
      "findings stale: this collector has not seen the cluster's findings "
      "for ",
      static_cast<int64_t>(staleness.age_seconds()),
      " s; what it shows may be out of date (its /healthz says why)");
}

// "2026-11-22T03:00:05Z STALE findings stale: ..." or "... CURRENT
// findings current again".
std::string StalenessEventLine(const v1::FindingEvent& event,
                               const CommandEnv& env) {
  return absl::StrCat(
      collector::FormatRfc3339(absl::ToUnixNanos(env.clock->Now())), " ",
      event.staleness().stale()
          ? absl::StrCat("STALE ", StaleLine(event.staleness()))
          : std::string("CURRENT findings current again: this collector "
                        "sees the cluster's findings"));
}

// "2026-11-22T03:00:05Z OPENED critical pfc_storm node=gpu-003
//  device=mlx5_2 job=moe-train-42 group=- f-000123: <summary>"
std::string EventLine(const v1::FindingEvent& event, const CommandEnv& env) {
  const v1::Finding& f = event.finding();
  return Printable(
      absl::StrCat(collector::FormatRfc3339(EventTime(event, env)), " ",
                   collector::EventKindName(event.kind()), " ",
                   collector::SeverityName(f.severity()), " ", OrDash(f.kind()),
                   " node=", OrDash(f.node()), " device=", OrDash(f.device()),
                   " job=", OrDash(f.job()), " group=", OrDash(f.group()), " ",
                   OrDash(f.id()), ": ", MarkPrefix(f), f.summary()));
}

// Human watch output for people reading a terminal: a finding's evidence
// changes every pass, so an UPDATED line is printed when its severity
// changes, or at most once per 30 s. --json prints every event.
class QuietUpdates {
 public:
  static constexpr int64_t kUpdateEveryNanos = 30'000'000'000;

  bool Show(const v1::FindingEvent& event, int64_t unix_nanos) {
    const v1::Finding& f = event.finding();
    switch (event.kind()) {
      case v1::FindingEvent::RESOLVED:
        shown_.erase(f.id());
        return true;
      case v1::FindingEvent::UPDATED: {
        auto it = shown_.find(f.id());
        if (it != shown_.end() && it->second.severity == f.severity() &&
            unix_nanos - it->second.unix_nanos < kUpdateEveryNanos) {
          return false;
        }
        break;
      }
      default:
        break;
    }
    shown_[f.id()] = {f.severity(), unix_nanos};
    return true;
  }

 private:
  struct Shown {
    v1::Severity severity;
    int64_t unix_nanos = 0;
  };
  absl::flat_hash_map<std::string, Shown> shown_;
};

// One node of `nodes --json`; times a node never reported are null.
nlohmann::ordered_json NodeJson(const v1::NodeStatus& n, absl::Time now) {
  nlohmann::ordered_json o;
  o["node"] = n.node();
  o["up"] = n.up();
  if (n.last_report_unix_nanos() == 0) {
    o["last_report"] = nullptr;
    o["last_report_age_seconds"] = nullptr;
  } else {
    o["last_report"] = collector::FormatRfc3339(n.last_report_unix_nanos());
    o["last_report_age_seconds"] = std::max<int64_t>(
        0, absl::ToInt64Seconds(
               now - absl::FromUnixNanos(n.last_report_unix_nanos())));
  }
  o["agent_version"] = n.agent_version();
  o["interval_ms"] = n.interval_ms();
  o["rdma_devices"] = std::vector<std::string>(n.rdma_devices().begin(),
                                               n.rdma_devices().end());
  o["netdevs"] =
      std::vector<std::string>(n.netdevs().begin(), n.netdevs().end());
  // A node of another collector of the cluster: only its liveness is
  // known here.
  o["collector"] = n.collector().empty()
                       ? nlohmann::ordered_json(nullptr)
                       : nlohmann::ordered_json(n.collector());
  o["remote"] = n.remote();
  // Its collector's features stopped arriving: `up` is as of then.
  o["unobserved"] = n.unobserved();
  o["unobserved_since"] = n.unobserved_since_unix_nanos() == 0
                              ? nlohmann::ordered_json(nullptr)
                              : nlohmann::ordered_json(collector::FormatRfc3339(
                                    n.unobserved_since_unix_nanos()));
  // ...or its collector handed its agent to another one then.
  o["handed_off"] = n.handed_off_unix_nanos() == 0
                        ? nlohmann::ordered_json(nullptr)
                        : nlohmann::ordered_json(collector::FormatRfc3339(
                              n.handed_off_unix_nanos()));
  if (n.remote()) {
    for (const char* unknown :
         {"series", "reports", "gaps", "peer", "duplicate_streams",
          "last_duplicate_peer", "last_duplicate"}) {
      o[unknown] = nullptr;
    }
    return o;
  }
  o["series"] = n.series();
  o["reports"] = n.reports();
  o["gaps"] = n.gaps();
  o["peer"] = n.peer();
  o["duplicate_streams"] = n.duplicate_streams();
  if (n.duplicate_streams() > 0) {
    o["last_duplicate_peer"] = n.last_duplicate_peer();
    o["last_duplicate"] =
        collector::FormatRfc3339(n.last_duplicate_unix_nanos());
  } else {
    o["last_duplicate_peer"] = nullptr;
    o["last_duplicate"] = nullptr;
  }
  return o;
}

void PrintNodesTable(const std::vector<v1::NodeStatus>& nodes, absl::Time now,
                     std::ostream& out) {
  // A cluster's collectors name themselves: then each node says which one
  // its agent streams to, and the counts of another collector's nodes are
  // that collector's to tell ("-").
  const bool cluster = std::any_of(
      nodes.begin(), nodes.end(),
      [](const v1::NodeStatus& n) { return !n.collector().empty(); });
  std::vector<std::string> columns = {"NODE",    "STATUS", "LAST_REPORT",
                                      "AGE",     "SERIES", "GAPS",
                                      "NETDEVS", "DEVICES"};
  if (cluster) columns.emplace_back("COLLECTOR");
  Table table(columns);
  for (const v1::NodeStatus& n : nodes) {
    const bool seen = n.last_report_unix_nanos() != 0;
    auto count = [&n](uint64_t value) {
      return n.remote() ? std::string("-") : absl::StrCat(value);
    };
    std::vector<std::string> row = {
        n.node(),
        n.unobserved() ? "unobserved" : (n.up() ? "up" : "down"),
        seen ? collector::FormatRfc3339(n.last_report_unix_nanos()) : "",
        seen ? collector::FormatAge(
                   now - absl::FromUnixNanos(n.last_report_unix_nanos()))
             : "",
        count(n.series()),
        count(n.gaps()),
        count(static_cast<uint64_t>(n.netdevs_size())),
        n.remote() ? "-" : absl::StrJoin(n.rdma_devices(), ",")};
    if (cluster) row.push_back(n.collector());
    table.AddRow(row);
  }
  table.Print(out);
}

// Unobserved nodes: one line per collector after the table, saying since
// when, so that nobody takes them for dead agents. Those whose agents their
// collector handed to another one (on their way) apart from those whose
// collector's features stopped arriving.
void NoteUnobservedNodes(const std::vector<v1::NodeStatus>& nodes,
                         absl::Time now, std::ostream& out) {
  struct Lost {
    int nodes = 0;
    int64_t since_unix_nanos = 0;  // the earliest; 0 = unknown
  };
  // By (whether handed off, collector): the ones on their way first.
  std::map<std::pair<bool, std::string>, Lost> by_collector;
  for (const v1::NodeStatus& n : nodes) {
    if (!n.unobserved()) continue;
    const bool stalled = n.handed_off_unix_nanos() == 0;
    Lost& lost = by_collector[{stalled, n.collector()}];
    ++lost.nodes;
    const int64_t since =
        stalled ? n.unobserved_since_unix_nanos() : n.handed_off_unix_nanos();
    if (since != 0 &&
        (lost.since_unix_nanos == 0 || since < lost.since_unix_nanos)) {
      lost.since_unix_nanos = since;
    }
  }
  for (const auto& [key, lost] : by_collector) {
    const auto& [stalled, collector_id] = key;
    out << (stalled ? "unobserved: " : "moving: ") << lost.nodes
        << (stalled ? " node(s) of collector "
                    : " node(s) handed off by "
                      "collector ")
        << OrDash(collector_id);
    if (lost.since_unix_nanos != 0) {
      out << " since " << collector::FormatRfc3339(lost.since_unix_nanos)
          << " ("
          << collector::FormatAge(now -
                                  absl::FromUnixNanos(lost.since_unix_nanos))
          << " ago)";
    }
    if (stalled) {
      out << ": its features stopped reaching this collector, so their "
             "state is as of then, not down (its /healthz says why)\n";
    } else {
      out << ": their agents are on their way to another collector, so "
             "their state is as of their last report, not down\n";
    }
  }
}

// Two agents with the same --node: the collector keeps the first and
// refuses the other, which the table alone would not show.
void WarnDuplicateNodes(const std::vector<v1::NodeStatus>& nodes,
                        std::ostream& out) {
  for (const v1::NodeStatus& n : nodes) {
    if (n.duplicate_streams() == 0) continue;
    out << "warning: " << n.node() << ": " << n.duplicate_streams()
        << " stream(s) refused because another agent already streams as "
           "this node (streaming: "
        << (n.peer().empty() ? "none now" : n.peer())
        << "; last refused: " << n.last_duplicate_peer() << " at "
        << collector::FormatRfc3339(n.last_duplicate_unix_nanos())
        << "); give each agent its own --node\n";
  }
}

}  // namespace

int FindingsCommand(CollectorClient& client, const CommandOptions& options,
                    const CommandEnv& env) {
  absl::StatusOr<v1::ListFindingsRequest> request =
      FindingsRequestOf(options, env.clock->Now());
  if (!request.ok()) return ReportError(request.status(), env);
  // A window lists resolved findings too (the collector does the same).
  const bool history = options.all || request->since_unix_nanos() != 0 ||
                       request->until_unix_nanos() != 0;
  absl::StatusOr<FindingsList> list = ListAllFindings(client, *request);
  if (!list.ok()) return ReportError(list.status(), env);
  std::vector<v1::Finding>& findings = list->findings;
  const v1::FindingsStaleness& staleness = list->staleness;
  SortFindings(&findings);
  if (options.json) {
    // The array stays an array: each finding says it may be out of date.
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const v1::Finding& f : findings) {
      j.push_back(collector::FindingToJson(f));
      if (staleness.stale()) {
        j.back()["stale_seconds"] =
            static_cast<int64_t>(staleness.age_seconds());
      }
    }
    if (staleness.stale()) *env.err << StaleLine(staleness) << "\n";
    *env.out << j.dump() << "\n";
    return kExitOk;
  }
  if (staleness.stale()) *env.out << StaleLine(staleness) << "\n";
  if (findings.empty()) {
    *env.out << (history ? "no findings\n" : "no active findings\n");
    return kExitOk;
  }
  PrintFindingsTable(findings, /*with_state=*/history, env);
  return kExitOk;
}

int WatchCommand(CollectorClient& client, const CommandOptions& options,
                 const CommandEnv& env) {
  auto interrupted = [&env] {
    return env.interrupted != nullptr && env.interrupted->HasBeenNotified();
  };
  bool ever_connected = false;
  bool reconnecting = false;
  absl::Duration backoff = env.reconnect_backoff;

  QuietUpdates quiet;
  CollectorClient::WatchCallbacks callbacks;
  callbacks.on_connected = [&] {
    if (reconnecting) {
      *env.err << "fabricdiag: reconnected to collector " << client.address()
               << std::endl;
      reconnecting = false;
    }
    ever_connected = true;
    backoff = env.reconnect_backoff;
  };
  callbacks.on_event = [&](const v1::FindingEvent& event) {
    if (event.kind() == v1::FindingEvent::STALENESS) {
      if (options.json) {
        nlohmann::ordered_json j;
        j["event"] = std::string(collector::EventKindName(event.kind()));
        j["stale"] = event.staleness().stale();
        j["age_seconds"] = event.staleness().age_seconds();
        *env.out << j.dump() << "\n";
      } else {
        *env.out << StalenessEventLine(event, env) << "\n";
      }
    } else if (options.json) {
      nlohmann::ordered_json j;
      j["event"] = std::string(collector::EventKindName(event.kind()));
      const nlohmann::ordered_json finding =
          collector::FindingToJson(event.finding());
      for (auto it = finding.begin(); it != finding.end(); ++it) {
        j[it.key()] = it.value();
      }
      *env.out << j.dump() << "\n";
    } else {
      if (!quiet.Show(event, EventTime(event, env))) return;
      *env.out << EventLine(event, env) << "\n";
    }
    // Scripts and the demo read this through a pipe: one line, at once.
    env.out->flush();
  };

  for (;;) {
    if (interrupted()) return kExitOk;
    absl::Status status = client.WatchFindings(options.job, callbacks);
    if (interrupted()) return kExitOk;
    if (!ever_connected || IsPermanent(status.code())) {
      if (status.ok() || absl::IsCancelled(status)) {
        status = absl::UnavailableError(
            absl::StrCat("collector ", client.address(),
                         " ended the watch before it started"));
      }
      return ReportError(status, env);
    }
    if (!reconnecting) {
      *env.err << "fabricdiag: lost the watch on collector " << client.address()
               << ": "
               << (status.ok() ? std::string("the collector ended the stream")
                               : Printable(status.message()))
               << "; reconnecting (Ctrl-C to stop)" << std::endl;
      reconnecting = true;
    }
    if (env.interrupted != nullptr) {
      if (env.interrupted->WaitForNotificationWithTimeout(backoff)) {
        return kExitOk;
      }
    } else {
      absl::SleepFor(backoff);
    }
    backoff = std::min(backoff * 2, env.max_reconnect_backoff);
  }
}

int NodesCommand(CollectorClient& client, const CommandOptions& options,
                 const CommandEnv& env) {
  absl::StatusOr<v1::ListNodesResponse> response = client.ListNodes();
  if (!response.ok()) return ReportError(response.status(), env);
  std::vector<v1::NodeStatus> nodes(response->nodes().begin(),
                                    response->nodes().end());
  std::sort(nodes.begin(), nodes.end(),
            [](const v1::NodeStatus& a, const v1::NodeStatus& b) {
              return a.node() < b.node();
            });
  const absl::Time now = env.clock->Now();
  if (options.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const v1::NodeStatus& n : nodes) j.push_back(NodeJson(n, now));
    *env.out << j.dump() << "\n";
    return kExitOk;
  }
  if (nodes.empty()) {
    *env.out << "no agents have reported to collector " << client.address()
             << "\n";
    return kExitOk;
  }
  PrintNodesTable(nodes, now, *env.out);
  NoteUnobservedNodes(nodes, now, *env.out);
  WarnDuplicateNodes(nodes, *env.out);
  return kExitOk;
}

}  // namespace fabricdiag::cli
