#include "server/collector_app.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/cluster_member.h"
#include "collector/access/access_control.h"
#include "collector/api/query_service.h"
#include "collector/declared/filled_layouts.h"
#include "collector/declared/layout_leases.h"
#include "collector/declared/layout_metrics.h"
#include "collector/declared/layout_name_check.h"
#include "collector/declared/layout_registry.h"
#include "collector/findings/findings_metrics.h"
#include "collector/findings/findings_store.h"
#include "collector/findings/silences.h"
#include "collector/ingest/ingest_service.h"
#include "collector/ingest/node_facts_intake.h"
#include "collector/ingest/server.h"
#include "collector/runner/agent_liveness.h"
#include "collector/runner/analysis_runner.h"
#include "collector/runner/collector_metrics.h"
#include "collector/state/state_store.h"
#include "collector/store/series_store.h"
#include "collector/topology/lldp_topology_builder.h"
#include "collector/topology/topology_keeper.h"
#include "collector/web/http_server.h"
#include "collector/web/job_write_routes.h"
#include "collector/web/mark_routes.h"
#include "collector/web/route_access.h"
#include "collector/web/web_routes.h"
#include "common/address_list.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/stop_signals.h"
#include "common/version.h"
#include "server/backends.h"

namespace fabricdiag::collector {
namespace {

absl::Status ValidateHostPort(absl::string_view flag, absl::string_view value) {
  const size_t colon = value.rfind(':');
  uint32_t port = 0;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(value.substr(colon + 1), &port) || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", value,
                     ": expected ADDR:PORT with a port in 0..65535"));
  }
  return absl::OkStatus();
}

absl::Status CheckReadable(absl::string_view flag, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  if (::access(path.c_str(), R_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, "=", path, ": cannot read: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

std::string AdvertisedAddress(const std::string& advertise,
                              const std::string& listen, int bound_port) {
  if (!advertise.empty()) return advertise;
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return "";
  const std::string host = listen.substr(0, colon);
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]") {
    return "";
  }
  return absl::StrCat(host, ":", bound_port);
}

absl::StatusOr<analysis::AnalysisConfig> LoadAnalysisConfig(
    const std::string& path) {
  if (path.empty()) return analysis::AnalysisConfig();
  absl::StatusOr<std::string> text = ReadFileCapped(path, 1 << 20);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--analysis_config=", path, ": ", text.status().message()));
  }
  absl::StatusOr<analysis::AnalysisConfig> config =
      analysis::ParseAnalysisConfig(*text);
  if (!config.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--analysis_config=", path, ": ", config.status().message()));
  }
  return config;
}

namespace {

// The cluster part of `config` (--nats and the --nats_* flags).
cluster::ClusterOptions ClusterOptionsOf(const CollectorConfig& config) {
  return {config.nats,
          config.collector_id,
          config.nats_replicas,
          config.analysis_interval,
          config.nats_startup_timeout,
          config.nats_security,
          config.analysis_shards};
}

}  // namespace

absl::Status ValidateCollectorConfig(const CollectorConfig& config) {
  RETURN_IF_ERROR(ValidateHostPort("listen", config.listen));
  RETURN_IF_ERROR(ValidateHostPort("http_listen", config.http_listen));
  if (!config.advertise_address.empty()) {
    RETURN_IF_ERROR(
        CheckHostPort("advertise_address", config.advertise_address, false));
    if (AdvertisedAddress("", config.advertise_address, 1).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--advertise_address=", config.advertise_address,
                       ": a wildcard host is no address agents can reach"));
    }
  }
  if (config.state_dir.empty()) {
    return absl::InvalidArgumentError("--state_dir: required");
  }
  RETURN_IF_ERROR(CheckReadable("tls_cert", config.tls_cert));
  RETURN_IF_ERROR(CheckReadable("tls_key", config.tls_key));
  RETURN_IF_ERROR(CheckReadable("tls_client_ca", config.tls_client_ca));
  RETURN_IF_ERROR(CheckReadable("http_tls_cert", config.http_tls_cert));
  RETURN_IF_ERROR(CheckReadable("http_tls_key", config.http_tls_key));
  RETURN_IF_ERROR(CheckReadable("auth_token_file", config.auth_token_file));
  RETURN_IF_ERROR(CheckReadable("ingest_token_file", config.ingest_token_file));
  if (config.tls_cert.empty() != config.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (config.http_tls_cert.empty() != config.http_tls_key.empty()) {
    return absl::InvalidArgumentError(
        "--http_tls_cert and --http_tls_key go together");
  }
  if (!config.tls_client_ca.empty() && config.tls_cert.empty()) {
    return absl::InvalidArgumentError(
        "--tls_client_ca needs --tls_cert and --tls_key (mutual TLS)");
  }
  if (config.analysis_interval < absl::Milliseconds(10) ||
      config.analysis_interval > absl::Minutes(10)) {
    return absl::InvalidArgumentError(
        "--analysis_interval: must be between 10ms and 10m");
  }
  if (config.window_samples < 60 || config.window_samples > 86400) {
    return absl::InvalidArgumentError(
        "--window_samples: must be between 60 and 86400");
  }
  RETURN_IF_ERROR(LoadAnalysisConfig(config.analysis_config).status());
  RETURN_IF_ERROR(cluster::ValidateClusterOptions(ClusterOptionsOf(config)));
  return absl::OkStatus();
}

namespace {

// How often the topology keeper looks whether the nodes' LLDP facts or the
// declared topology moved (two counter reads when nothing did): a new
// cable shows within this, plus the drawing (~1 s at 25k hosts).
constexpr absl::Duration kTopologyPoll = absl::Milliseconds(200);

// Logs why the collector cannot start; returns its exit code.
int StartupFailed(absl::string_view why) {
  LogError(absl::StrCat("fabricdiag-collector: ", why));
  return 1;
}

// The token in the file a flag names; empty when the flag is not set.
absl::StatusOr<std::string> ReadOptionalToken(absl::string_view flag,
                                              const std::string& path) {
  if (path.empty()) return std::string();
  return ReadTokenFile(flag, path, 16);
}

// Loads the layouts and findings kept in --state_dir and warns about what
// it had to set aside.
absl::Status LoadState(const CollectorConfig& config, const StateStore& state,
                       LayoutRegistry& registry, FindingsStore& findings) {
  for (const absl::Status& s : {registry.Load(), findings.Load()}) {
    if (!s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("cannot load --state_dir=", config.state_dir,
                                 ": ", s.ToString()));
    }
  }
  for (const std::string& problem : state.problems()) {
    LogWarning(absl::StrCat("state: ", problem));
  }
  return absl::OkStatus();
}

absl::StatusOr<IngestAuth> MakeIngestAuth(const CollectorConfig& config) {
  IngestAuth auth;
  auth.match_certificate = !config.tls_client_ca.empty();
  ASSIGN_OR_RETURN(auth.token, ReadOptionalToken("--ingest_token_file",
                                                 config.ingest_token_file));
  if (auth.token.empty() && !auth.match_certificate) {
    LogWarning(
        "ingest is open: any client that reaches the gRPC port can report as "
        "any node. In production, set --tls_client_ca (agents' certificates "
        "name their node) or --ingest_token_file; see docs/deployment.md");
  }
  return auth;
}

absl::StatusOr<AnalysisRunner::Options> MakeRunnerOptions(
    const CollectorConfig& config) {
  AnalysisRunner::Options options;
  options.interval = config.analysis_interval;
  ASSIGN_OR_RETURN(options.analysis,
                   LoadAnalysisConfig(config.analysis_config));
  return options;
}

absl::StatusOr<std::unique_ptr<CollectorServer>> StartGrpc(
    const CollectorConfig& config, IngestService* ingest, QueryService* query) {
  CollectorServer::Options options;
  options.listen = config.listen;
  options.tls_cert_file = config.tls_cert;
  options.tls_key_file = config.tls_key;
  options.tls_client_ca_file = config.tls_client_ca;
  absl::StatusOr<std::unique_ptr<CollectorServer>> server =
      CollectorServer::Start(options, {ingest, query});
  if (!server.ok()) {
    return absl::Status(server.status().code(),
                        absl::StrCat("--listen=", config.listen, ": ",
                                     server.status().message()));
  }
  return server;
}

// /healthz: unhealthy while writes to --state_dir fail, or the backends
// say so (in a cluster: NATS out of reach, writes of declared state fail).
HealthReport CollectorHealth(const StateStore& state,
                             const AnalysisStats& stats,
                             const Backends& backends) {
  HealthReport report;
  if (!backends.AppendHealth(&report.text)) report.ok = false;
  const absl::Status last_write = state.last_write_status();
  if (!last_write.ok()) {
    report.ok = false;
    absl::StrAppend(&report.text,
                    "state: the last write to --state_dir failed: ",
                    last_write.message(), " (", state.write_errors(),
                    " failed since start; healthy again after the next "
                    "write that succeeds)\n");
  }
  absl::StrAppend(&report.text, "analysis passes: ", stats.passes.load(), "\n");
  return report;
}

// What the HTTP endpoint serves; every pointer outlives it.
struct HttpSources {
  const SeriesStore* series;
  const IngestCounters* counters;
  const AnalysisStats* stats;
  const FindingsStore* findings;
  const LayoutRegistry* registry;
  // The layouts as analysed (their NICs filled), for the metrics and pages.
  const LayoutSnapshots* layouts;
  const StateStore* state;
  const Backends* backends;
  AnalysisRunner* runner;
  const Clock* clock;
  NodeUpRule node_up;
  const LayoutLeases* leases;
  const LayoutNameCheck* name_check;
  const TopologyKeeper* topology;
  JobWriteSources writes;  // PUT/POST/DELETE /api/v1/jobs/{job}
  // Who may use which /api/ route (--auth_token_file).
  std::shared_ptr<AccessControl> access;
  // Acks and silences over /api/v1/silences and /api/v1/findings/{id}/ack.
  Marks* marks;
};

absl::StatusOr<std::unique_ptr<HttpServer>> StartHttp(
    const CollectorConfig& config, const HttpSources& in) {
  auto collector_metrics = std::make_shared<CollectorMetrics>(
      in.series, in.counters, in.stats, in.node_up);
  auto findings_metrics =
      std::make_shared<FindingsMetrics>(in.findings, in.registry, in.state);
  const StateStore* state = in.state;
  const AnalysisStats* stats = in.stats;
  const LayoutRegistry* registry = in.registry;
  const LayoutSnapshots* layouts = in.layouts;
  const Backends* backends = in.backends;
  AnalysisRunner* runner = in.runner;
  std::vector<std::function<void(std::string*)>> text_metrics = {
      [layouts](std::string* out) {
        AppendLayoutMetrics(*layouts->Snapshot(), out);
      }};
  const LayoutLeases* leases = in.leases;
  const LayoutNameCheck* name_check = in.name_check;
  text_metrics.push_back([leases, name_check](std::string* out) {
    leases->AppendMetrics(out);
    name_check->AppendMetrics(out);
  });
  text_metrics.push_back([backends, registry](std::string* out) {
    backends->AppendMetrics(registry->watch_stats(), out);
  });
  const TopologyKeeper* topology = in.topology;
  text_metrics.push_back(
      [topology](std::string* out) { topology->AppendMetrics(out); });
  text_metrics.push_back(
      [access = in.access](std::string* out) { access->AppendMetrics(out); });
  std::vector<HttpRoute> routes = WebRoutes(
      {in.findings, in.layouts, [runner] { return runner->LatestView(); },
       runner->ViewIsWholeFabric() ? FabricScope::kFabric
                                   : FabricScope::kCollector,
       in.clock, in.topology,
       [backends] { return backends->findings_staleness(); },
       [runner](absl::string_view job) { return runner->LatestJobView(job); },
       [runner](absl::string_view job) { return runner->JobShardOwner(job); }});
  for (HttpRoute& r : JobWriteRoutes(in.writes)) routes.push_back(std::move(r));
  for (HttpRoute& r : MarkRoutes({in.marks, in.findings, in.access})) {
    routes.push_back(std::move(r));
  }
  routes = GuardRoutes(std::move(routes), in.access);
  HttpServerOptions options;
  options.listen = config.http_listen;
  options.tls_cert_file = config.http_tls_cert;
  options.tls_key_file = config.http_tls_key;
  absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(
      std::move(options), {collector_metrics, findings_metrics},
      [state, stats, backends] {
        return CollectorHealth(*state, *stats, *backends);
      },
      std::move(text_metrics), std::move(routes));
  if (!http.ok()) {
    // Bind errors name the address; TLS file errors name the file already.
    const std::string flag =
        http.status().code() == absl::StatusCode::kInvalidArgument &&
                !config.http_tls_cert.empty()
            ? "--http_tls_cert/--http_tls_key"
            : absl::StrCat("--http_listen=", config.http_listen);
    return absl::Status(http.status().code(),
                        absl::StrCat(flag, ": ", http.status().message()));
  }
  return http;
}

// Calls to the query service need a token of `access` (when it has a
// file); a layout change runs an analysis pass at once.
QueryService::Options MakeQueryOptions(std::shared_ptr<AccessControl> access,
                                       AnalysisRunner* runner,
                                       NodeUpRule node_up) {
  QueryService::Options options;
  options.access = std::move(access);
  options.node_up = std::move(node_up);
  options.on_layouts_changed = [runner](const std::string& job,
                                        absl::Time answer_by) {
    return runner->RunLayoutPass(job, answer_by);
  };
  return options;
}

void LogServing(const CollectorConfig& config, const Backends& backends,
                int grpc_port, int http_port, bool open) {
  LogInfo(absl::StrCat("fabricdiag-collector ", kVersion, " gRPC on port ",
                       grpc_port, ", HTTP on port ", http_port,
                       config.http_tls_cert.empty() ? "" : " (TLS)",
                       ", state in ", config.state_dir, backends.Describe(),
                       open ? ", API open (no --auth_token_file)"
                            : ", API calls need a token of --auth_token_file"));
}

}  // namespace

int RunCollector(const CollectorConfig& config) {
  const sigset_t signals = BlockStopSignals();
  SystemClock clock;
  absl::StatusOr<std::shared_ptr<AccessControl>> access =
      config.auth_token_file.empty()
          ? std::make_shared<AccessControl>()
          : AccessControl::FromFile("--auth_token_file", config.auth_token_file,
                                    &clock);
  if (!access.ok()) return StartupFailed(access.status().message());
  absl::StatusOr<std::unique_ptr<StateStore>> state =
      StateStore::Open(config.state_dir, &clock);
  if (!state.ok()) {
    return StartupFailed(
        absl::StrCat("--state_dir: ", state.status().message()));
  }
  // The one choice of the mode: everything below runs on the bundle.
  absl::StatusOr<std::unique_ptr<Backends>> chosen =
      config.nats.empty()
          ? EmbeddedBackends(state->get())
          : ClusterBackends(ClusterOptionsOf(config), state->get());
  if (!chosen.ok()) return StartupFailed(chosen.status().message());
  Backends& backends = **chosen;
  LayoutRegistry registry(&backends.declared_state(), &clock);
  FindingsStoreOptions findings_options;
  findings_options.resolved_retention = config.findings_retention;
  findings_options.max_resolved_bytes = config.findings_retention_bytes;
  FindingsStore findings(state->get(), findings_options);
  if (absl::Status s = LoadState(config, **state, registry, findings);
      !s.ok()) {
    return StartupFailed(s.message());
  }
  registry.StartWatching();
  SeriesStore::Options series_options;
  series_options.window_samples = config.window_samples;
  SeriesStore series(series_options, clock);
  // Acks, silences and forgotten nodes, on every surface of the findings.
  Marks marks(&backends.marks(), clock);
  if (absl::Status s = marks.Load(); !s.ok()) {
    return StartupFailed(absl::StrCat(
        "operator marks (", backends.marks().Describe(), "): ", s.message()));
  }
  findings.SetMarks(&marks);
  // A node forgotten through another collector of a cluster: its series
  // here go too, unless it reported since (its agent moved here).
  marks.OnWatchedForget([&series](const v1::NodeForget& forget) {
    std::shared_ptr<NodeSeries> node = series.FindNode(forget.node());
    if (node != nullptr && node->LastArrival().last_report <=
                               absl::FromUnixNanos(forget.at_unix_nanos())) {
      series.DropNode(forget.node());
    }
  });
  IngestCounters counters;
  absl::StatusOr<IngestAuth> ingest_auth = MakeIngestAuth(config);
  if (!ingest_auth.ok()) return StartupFailed(ingest_auth.status().message());
  TopologySwitches switches(registry);
  IngestService ingest(&series, &counters, *std::move(ingest_auth),
                       backends.ingest_placement(),
                       {backends.node_facts(), switches});
  AnalysisStats stats;
  absl::StatusOr<AnalysisRunner::Options> runner_options =
      MakeRunnerOptions(config);
  if (!runner_options.ok()) {
    return StartupFailed(runner_options.status().message());
  }
  runner_options->forgotten_at = [&marks](absl::string_view node) {
    return marks.ForgottenAt(node);
  };
  // Who counts as up everywhere (metrics, `fabricdiag nodes`): agent_down's
  // rule.
  const NodeUpRule node_up = AgentUpRule(runner_options->analysis.agent_down);
  // Ids from, and every version shared through, the backends' replication
  // (in a cluster: the one set of findings everyone serves).
  if (absl::Status s = findings.Replicate(backends.findings_replication());
      !s.ok()) {
    // Not fatal: ids are reserved again before the first finding opens.
    LogWarning(absl::StrCat("shared findings: ", s.message()));
  }
  // The rest of the fabric, who analyses, and where every NIC's straggler
  // baseline survives a restart (and in a cluster a failover).
  // The topology the analyzers read: declared, and discovered over LLDP
  // from every node's facts (in a cluster every collector's agents') where
  // nothing is declared; redrawn on its own thread when either moves.
  LldpTopologyBuilder topology_builder;
  TopologyKeeper topology(&backends.node_facts(), &registry, &topology_builder,
                          &clock);
  // The layouts as analysed: a rank without a declared NIC gets the one its
  // agent pairs with its GPU, as soon as the agent reports it.
  FilledLayouts filled_layouts(&registry, &backends.node_facts());
  AnalysisRunner runner(
      &series, &filled_layouts, &findings, &stats, clock,
      {backends.features(), backends.role(), backends.baselines(), topology,
       backends.analysis_shards()},
      *std::move(runner_options));

  QueryService::Options query_options =
      MakeQueryOptions(*access, &runner, node_up);
  // Names a layout uses that no agent reports: accepted, with warnings.
  LayoutNameCheck name_check([&runner] { return runner.LatestNames(); });
  auto warnings = [&name_check](const v1::Layout& layout) {
    return name_check.Check(layout);
  };
  query_options.layout_warnings = warnings;
  // `fabricdiag nodes` lists the whole fabric, each node with the collector
  // its agent streams to (embedded: every node is this collector's).
  query_options.collector_id = backends.collector_id();
  query_options.fabric_nodes = [&runner] { return runner.LatestNodes(); };
  const NodeFactsStore* node_facts = &backends.node_facts();
  query_options.node_facts = [node_facts] { return node_facts->Snapshot(); };
  query_options.facts_store = &backends.node_facts();
  query_options.staleness = [&backends] {
    return backends.findings_staleness();
  };
  query_options.marks = &marks;
  QueryService query(&registry, &topology, &findings, &series,
                     std::move(query_options), clock);
  // Layouts whose lease ran out go, and their findings resolve.
  LayoutLeases leases(&registry, &clock, [&runner](const std::string& job) {
    runner.RunLayoutPass(job, absl::Now() + absl::Seconds(10));
  });
  JobWriteSources writes;
  writes.registry = &registry;
  writes.leases = &leases;
  writes.clock = &clock;
  writes.on_layouts_changed = [&runner](const std::string& job,
                                        absl::Time answer_by) {
    runner.RunLayoutPass(job, answer_by);
  };
  writes.warnings = warnings;
  absl::StatusOr<std::unique_ptr<CollectorServer>> server =
      StartGrpc(config, &ingest, &query);
  if (!server.ok()) return StartupFailed(server.status().message());
  absl::StatusOr<std::unique_ptr<HttpServer>> http =
      StartHttp(config, {&series, &counters, &stats, &findings, &registry,
                         &filled_layouts, state->get(), &backends, &runner,
                         &clock, node_up, &leases, &name_check, &topology,
                         std::move(writes), *access, &marks});
  if (!http.ok()) {
    const int code = StartupFailed(http.status().message());
    (*server)->Shutdown(absl::ZeroDuration());
    return code;
  }

  // Announced only now that the port serves: no collector hands an agent
  // here before it can stream.
  const std::string advertised = AdvertisedAddress(
      config.advertise_address, config.listen, (*server)->port());
  if (!advertised.empty()) {
    backends.ingest_placement().Advertise(advertised);
  } else if (!config.nats.empty()) {
    LogWarning(absl::StrCat(
        "--listen=", config.listen,
        " has a wildcard host and no --advertise_address is set: agents are "
        "neither handed to this collector nor back from it"));
  }
  backends.MirrorFindings(findings);
  topology.Start(kTopologyPoll);
  runner.Start();
  leases.Start(absl::Seconds(1));
  LogServing(config, backends, (*server)->port(), (*http)->port(),
             (*access)->open());

  // A stop signal, or backends that cannot go on (a NATS connection its
  // client gave up on): the latter ends in exit 1, so that systemd starts
  // the collector again (Restart=on-failure) and it connects anew.
  std::string lost;
  const timespec kLookAgain = {1, 0};
  while (sigtimedwait(&signals, nullptr, &kLookAgain) < 0) {
    lost = backends.Lost();
    if (!lost.empty()) break;
  }
  if (lost.empty()) {
    LogInfo("fabricdiag-collector: stopping");
  } else {
    LogError(absl::StrCat("fabricdiag-collector: ", lost,
                          "; stopping, to be started again"));
  }
  // NATS calls (the pass's publish, watchers, the lease) are cut short
  // after a grace: a cluster that is gone does not hold the stop up.
  backends.BeginStop(cluster::kStopGrace);
  leases.Stop();
  runner.Stop();
  topology.Stop();
  backends.Leave();
  query.Shutdown();
  (*server)->Shutdown(absl::Seconds(2));
  (*server)->Wait();
  return lost.empty() ? 0 : 1;
}

}  // namespace fabricdiag::collector
