#include "collector/collector_app.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collector/analysis_runner.h"
#include "collector/collector_metrics.h"
#include "collector/findings_metrics.h"
#include "collector/findings_store.h"
#include "collector/http_server.h"
#include "collector/ingest_service.h"
#include "collector/layout_metrics.h"
#include "collector/layout_registry.h"
#include "collector/query_service.h"
#include "collector/series_store.h"
#include "collector/server.h"
#include "collector/state_store.h"
#include "collector/web_routes.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/version.h"

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

absl::Status ValidateCollectorConfig(const CollectorConfig& config) {
  RETURN_IF_ERROR(ValidateHostPort("listen", config.listen));
  RETURN_IF_ERROR(ValidateHostPort("http_listen", config.http_listen));
  if (config.state_dir.empty()) {
    return absl::InvalidArgumentError("--state_dir: required");
  }
  RETURN_IF_ERROR(CheckReadable("tls_cert", config.tls_cert));
  RETURN_IF_ERROR(CheckReadable("tls_key", config.tls_key));
  RETURN_IF_ERROR(CheckReadable("tls_client_ca", config.tls_client_ca));
  RETURN_IF_ERROR(CheckReadable("auth_token_file", config.auth_token_file));
  RETURN_IF_ERROR(CheckReadable("ingest_token_file", config.ingest_token_file));
  if (config.tls_cert.empty() != config.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
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
  return absl::OkStatus();
}

int RunCollector(const CollectorConfig& config) {
  // Block the stop signals before any thread exists; the main thread waits
  // for them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  SystemClock clock;
  std::string token;
  if (!config.auth_token_file.empty()) {
    absl::StatusOr<std::string> t =
        ReadTokenFile("--auth_token_file", config.auth_token_file, 16);
    if (!t.ok()) {
      LogError(absl::StrCat("fabricdiag-collector: ", t.status().message()));
      return 1;
    }
    token = *std::move(t);
  }

  absl::StatusOr<std::unique_ptr<StateStore>> state =
      StateStore::Open(config.state_dir, &clock);
  if (!state.ok()) {
    LogError(absl::StrCat("fabricdiag-collector: --state_dir: ",
                          state.status().message()));
    return 1;
  }
  LayoutRegistry registry(state->get(), &clock);
  FindingsStore findings(state->get(), FindingsStoreOptions{});
  for (const absl::Status& s : {registry.Load(), findings.Load()}) {
    if (!s.ok()) {
      LogError(absl::StrCat("fabricdiag-collector: cannot load --state_dir=",
                            config.state_dir, ": ", s.ToString()));
      return 1;
    }
  }
  for (const std::string& problem : (*state)->problems()) {
    LogWarning(absl::StrCat("state: ", problem));
  }

  SeriesStore::Options series_options;
  series_options.window_samples = config.window_samples;
  SeriesStore series(series_options, clock);
  IngestCounters counters;
  IngestAuth ingest_auth;
  ingest_auth.match_certificate = !config.tls_client_ca.empty();
  if (!config.ingest_token_file.empty()) {
    absl::StatusOr<std::string> t =
        ReadTokenFile("--ingest_token_file", config.ingest_token_file, 16);
    if (!t.ok()) {
      LogError(absl::StrCat("fabricdiag-collector: ", t.status().message()));
      return 1;
    }
    ingest_auth.token = *std::move(t);
  }
  if (ingest_auth.token.empty() && !ingest_auth.match_certificate) {
    LogWarning(
        "ingest is open: any client that reaches the gRPC port can report as "
        "any node. In production, set --tls_client_ca (agents' certificates "
        "name their node) or --ingest_token_file; see docs/deployment.md");
  }
  IngestService ingest(&series, &counters, ingest_auth);
  AnalysisStats stats;
  AnalysisRunner::Options runner_options;
  runner_options.interval = config.analysis_interval;
  {
    absl::StatusOr<analysis::AnalysisConfig> analysis =
        LoadAnalysisConfig(config.analysis_config);
    if (!analysis.ok()) {
      LogError(
          absl::StrCat("fabricdiag-collector: ", analysis.status().message()));
      return 1;
    }
    runner_options.analysis = *analysis;
  }
  AnalysisRunner runner(&series, &registry, &findings, &stats, clock,
                        runner_options);

  QueryService::Options query_options;
  query_options.auth_token = token;
  query_options.on_layouts_changed = [&runner](const std::string& job) {
    return runner.RunLayoutPass(job);
  };
  QueryService query(&registry, &findings, &series, query_options, clock);

  CollectorServer::Options server_options;
  server_options.listen = config.listen;
  server_options.tls_cert_file = config.tls_cert;
  server_options.tls_key_file = config.tls_key;
  server_options.tls_client_ca_file = config.tls_client_ca;
  absl::StatusOr<std::unique_ptr<CollectorServer>> server =
      CollectorServer::Start(server_options, {&ingest, &query});
  if (!server.ok()) {
    LogError(absl::StrCat("fabricdiag-collector: --listen=", config.listen,
                          ": ", server.status().message()));
    return 1;
  }

  auto collector_metrics = std::make_shared<CollectorMetrics>(
      &series, &counters, &stats, 3 * config.analysis_interval);
  auto findings_metrics =
      std::make_shared<FindingsMetrics>(&findings, &registry, state->get());
  StateStore* state_ptr = state->get();
  absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(
      config.http_listen, {collector_metrics, findings_metrics},
      [state_ptr, &stats] {
        HealthReport report;
        const absl::Status last_write = state_ptr->last_write_status();
        if (!last_write.ok()) {
          report.ok = false;
          absl::StrAppend(&report.text,
                          "state: the last write to --state_dir failed: ",
                          last_write.message(), " (", state_ptr->write_errors(),
                          " failed since start; healthy again after the next "
                          "write that succeeds)\n");
        }
        absl::StrAppend(&report.text, "analysis passes: ", stats.passes.load(),
                        "\n");
        return report;
      },
      {[&registry](std::string* out) {
        AppendLayoutMetrics(*registry.Snapshot(), out);
      }},
      WebRoutes({&findings, &registry,
                 [&runner] { return runner.LatestView(); }, &clock}));
  if (!http.ok()) {
    LogError(absl::StrCat("fabricdiag-collector: --http_listen=",
                          config.http_listen, ": ", http.status().message()));
    (*server)->Shutdown(absl::ZeroDuration());
    return 1;
  }

  runner.Start();
  LogInfo(absl::StrCat("fabricdiag-collector ", kVersion, " gRPC on port ",
                       (*server)->port(), ", HTTP on port ", (*http)->port(),
                       ", state in ", config.state_dir,
                       token.empty() ? ", writes open (no --auth_token_file)"
                                     : ", writes need the bearer token"));

  int signo = 0;
  sigwait(&signals, &signo);
  LogInfo("fabricdiag-collector: stopping");
  runner.Stop();
  query.Shutdown();
  (*server)->Shutdown(absl::Seconds(2));
  (*server)->Wait();
  return 0;
}

}  // namespace fabricdiag::collector
