// The commands of the `fabricdiag` ops CLI (docs/cli.md).
//
// Each command is a function: parsed arguments + a CollectorClient + output
// streams in, exit status out. Nothing here knows gRPC, flags or signals, so
// every command is unit-tested against an in-memory client:
//
//   CommandEnv env{&std::cin, &std::cout, &std::cerr, &clock};
//   CommandOptions options;
//   options.json = true;
//   int status = FindingsCommand(client, options, env);
//
// Exit status (kExit*): 0 success, 1 the collector cannot be reached or
// failed (the message names the address and why), 2 invalid input (the
// message names the field or flag), 3 not found (what the command names
// does not exist; layout check and topology diff use 3 for what they
// find). Messages go to `err` as one line each,
// "fabricdiag: ...". Commands are thread-compatible.
#pragma once

#include <cstddef>
#include <functional>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "client/collector_api.h"
#include "common/clock.h"

namespace fabricdiag::cli {

// The collector as every command sees it (client/collector_api.h).
using ::fabricdiag::client::CollectorClient;

inline constexpr int kExitOk = 0;
inline constexpr int kExitCollector = 1;
inline constexpr int kExitInvalid = 2;
// What the command names does not exist: `layout show` of a job without a
// layout, `topology show` before any topology was applied; `ack`, `silence
// expire`, `nodes forget` of no such finding, silence or node.
inline constexpr int kExitNotFound = 3;
// layout check: the layout names a host or NIC no agent reports.
inline constexpr int kExitUnmatched = 3;
// topology diff: the discovered cabling differs from the declared topology.
inline constexpr int kExitDiffers = 3;
// layout apply --if_revision: the job's layout is not at that revision
// (another writer came first); nothing was written.
inline constexpr int kExitStale = 4;

// Command flags (absl flags in main.cc; all global, as absl parses them
// anywhere on the command line). A command ignores those it has no use for.
struct CommandOptions {
  std::string job;    // --job: findings, watch
  std::string kind;   // --kind: findings
  bool all = false;   // --all: findings, also resolved ones
  bool json = false;  // --json
  // --lease: layout apply declares the layout with this lease (0: none).
  absl::Duration lease = absl::ZeroDuration();
  // The owner recorded with an applied layout (the user running the CLI).
  std::string owner;
  // --if_revision as given ("" when not): layout apply writes only when
  // the job's layout is at this revision (0: only when it has none).
  std::string if_revision;
  // --discovered, --effective: topology show prints that view instead of
  // the declared topology.
  bool discovered = false;
  bool effective = false;
  // findings: a window (a duration ago, "2h", or an RFC 3339 time) and
  // narrower filters, as given ("" when not); checked by the command.
  std::string since;
  std::string until;
  std::string node;  // findings: a filter; maintenance: the node
  std::string device;
  std::string severity;  // at least this severe
  // --comment: ack, silence, maintenance.
  std::string comment;
  // --matcher (silence), --for (silence, maintenance; "4h", "7d"); the
  // node of maintenance is `node` above.
  std::string matcher;
  std::string for_duration;
  // report: --format (md, html, json; "" = md) and --output (a file; ""
  // or "-" = standard output).
  std::string format;
  std::string output;
};

// Where a command reads and writes, and what it may wait on.
struct CommandEnv {
  std::istream* in = nullptr;  // FILE "-"
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  const Clock* clock = nullptr;  // ages in tables
  // Notified when the user interrupts (SIGINT): `watch` then returns 0. May
  // be null (never interrupted).
  absl::Notification* interrupted = nullptr;
  // `watch` reconnects after the collector goes away, waiting this long
  // first and doubling up to the maximum.
  absl::Duration reconnect_backoff = absl::Milliseconds(500);
  absl::Duration max_reconnect_backoff = absl::Seconds(8);
  // Every address of --collector, in order, and a client of one of them
  // alone (same token, TLS and timeout): `report` reads the rates of each
  // node from the collector of the cluster that holds its series. Empty
  // and null: the command's client alone.
  std::vector<std::string> collectors;
  std::function<std::shared_ptr<CollectorClient>(const std::string& address)>
      connect;
};

// Reads FILE ("-" = env.in), at most `max_bytes` (analysis::kMaxDocumentBytes
// for a layout, analysis::kMaxTopologyBytes for a topology).
// InvalidArgument "FILE: cannot read: No such file or directory".
absl::StatusOr<std::string> ReadInputFile(absl::string_view path,
                                          size_t max_bytes,
                                          const CommandEnv& env);

// layout apply FILE: parses and validates locally (exit 2 naming the field),
// then ApplyLayout; prints "layout JOB applied (new|replaced)" and the
// findings the collector raised at once.
int LayoutApplyCommand(CollectorClient& client, absl::string_view file,
                       const CommandOptions& options, const CommandEnv& env);
// layout list: table JOB RANKS HOSTS PARALLELISM SOURCE OWNER APPLIED AGE
// EXPIRES (or a JSON array).
int LayoutListCommand(CollectorClient& client, const CommandOptions& options,
                      const CommandEnv& env);
// layout show JOB: YAML, or JSON with --json.
int LayoutShowCommand(CollectorClient& client, absl::string_view job,
                      const CommandOptions& options, const CommandEnv& env);
// layout check JOB: the hosts and NICs of the layout no agent reports, with
// the reported names that look alike (cli/layout_check.h); a table, or a
// JSON object with --json. kExitUnmatched when there is any.
int LayoutCheckCommand(CollectorClient& client, absl::string_view job,
                       const CommandOptions& options, const CommandEnv& env);
// layout delete JOB: prints "layout JOB deleted"; a job without a layout
// is success too (the layout is gone), with a note on `err`.
int LayoutDeleteCommand(CollectorClient& client, absl::string_view job,
                        const CommandOptions& options, const CommandEnv& env);

// topology apply FILE: validated locally first, like layouts.
int TopologyApplyCommand(CollectorClient& client, absl::string_view file,
                         const CommandOptions& options, const CommandEnv& env);
// topology show: the declared topology (--discovered: the one LLDP draws,
// --effective: what the analyzers use, each link with its source) as YAML,
// or JSON with --json. Both flags: exit 2.
int TopologyShowCommand(CollectorClient& client, const CommandOptions& options,
                        const CommandEnv& env);
// topology diff: the declared topology against the discovered one, one line
// per difference naming both ends ("moved: gpu-001 mlx5_0 is cabled to
// leaf-2 swp7, declared leaf-1 swp3"), or a JSON array. Both sides come
// from one drawing of the collector's views; a collector too old to answer
// so is read twice, with a note on stderr. kExitOk when they agree,
// kExitDiffers when they differ, kExitCollector when the collector cannot
// be reached.
int TopologyDiffCommand(CollectorClient& client, const CommandOptions& options,
                        const CommandEnv& env);
// topology adopt: writes the discovered topology as the declared one, over
// the declared version it read just before (Aborted, exit 1, when another
// write came in between); prints what it wrote as YAML after a summary
// comment, or as JSON with --json.
int TopologyAdoptCommand(CollectorClient& client, const CommandOptions& options,
                         const CommandEnv& env);

// findings: active findings (with --all also resolved), filtered by --job,
// --kind, --node, --device and --severity; --since/--until list the findings
// active in that window, resolved ones too. Every page the collector has
// (it answers 1,000 at a time). A table (most severe first), or with --json
// a JSON array of docs/findings.md finding objects. An unknown kind, job
// or severity, a malformed time or --until before --since: exit 2.
int FindingsCommand(CollectorClient& client, const CommandOptions& options,
                    const CommandEnv& env);

// watch: one line per event (SNAPSHOT first, then OPENED/UPDATED/RESOLVED),
// flushed at once; with --json one JSON object per line with an "event"
// field. Runs until env.interrupted (exit 0). When the collector goes away
// after the watch started it says so on `err`, retries with backoff and
// prints "reconnected"; a collector that cannot be reached at the start, or
// refuses the watch, gives exit 1.
int WatchCommand(CollectorClient& client, const CommandOptions& options,
                 const CommandEnv& env);

// nodes: table NODE STATUS LAST_REPORT AGE DEVICES NETDEVS SERIES GAPS, or a
// JSON array.
int NodesCommand(CollectorClient& client, const CommandOptions& options,
                 const CommandEnv& env);

// Operator marks (docs/cli.md, "Acknowledge, silence, maintenance"); each
// writes with the user name in CommandOptions::owner as its "who" (the
// collector prefers the client certificate's name). kExitNotFound for an
// unknown finding, silence or node; kExitInvalid naming the flag for bad
// input (checked before anything is sent).
// ack ID: acknowledges an active finding until it resolves.
int AckCommand(CollectorClient& client, absl::string_view id,
               const CommandOptions& options, const CommandEnv& env);
// silence --matcher=K=V[,K=V] --for=D --comment=T: prints the new id.
int SilenceCommand(CollectorClient& client, const CommandOptions& options,
                   const CommandEnv& env);
// maintenance --node=N --for=D [--comment=T]: a silence on node=N.
int MaintenanceCommand(CollectorClient& client, const CommandOptions& options,
                       const CommandEnv& env);
// silences: table ID STATE MATCHERS WHO UNTIL COMMENT, or a JSON array.
int SilencesCommand(CollectorClient& client, const CommandOptions& options,
                    const CommandEnv& env);
// silence expire ID: ends the silence now.
int SilenceExpireCommand(CollectorClient& client, absl::string_view id,
                         const CommandOptions& options, const CommandEnv& env);
// nodes forget NODE: ends its agent_down and drops it until it reports
// again.
int NodesForgetCommand(CollectorClient& client, absl::string_view node,
                       const CommandOptions& options, const CommandEnv& env);

// report --job=JOB [--since] [--until] [--format] [--output]: the job's
// incident hand-over report (cli/report.h): its layout, every finding that
// touched it in the range with its timeline, evidence and marks, and what
// to do. kExitNotFound for a job the collector knows nothing of (the
// message lists the known jobs); kExitInvalid for a missing --job, an
// unknown format, a malformed time or an --output that cannot be written.
int ReportCommand(CollectorClient& client, const CommandOptions& options,
                  const CommandEnv& env);

// plan FILE: offline. Validates the layout and prints its groups per
// dimension, the TP groups that leave their NVLink domain and, when the
// traffic model exists, the predicted traffic per step.
int PlanCommand(absl::string_view file, const CommandOptions& options,
                const CommandEnv& env);

}  // namespace fabricdiag::cli
