#include "agent/agent_app.h"

#include <regex.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "agent/agent_runner.h"
#include "agent/ethtool_ioctl.h"
#include "agent/ethtool_source.h"
#include "agent/gpu_nic_source.h"
#include "agent/lldp_lldpctl.h"
#include "agent/lldp_source.h"
#include "agent/metrics_page.h"
#include "agent/netdev_source.h"
#include "agent/rdma_sysfs_source.h"
#include "agent/snapshot_json.h"
#include "agent/snapshotter.h"
#include "agent/stream_client.h"
#include "agent/stream_sink.h"
#include "agent/sysfs_reader.h"
#include "agent/verbs.h"
#include "agent/verbs_port_source.h"
#include "client/collector_list.h"
#include "client/tls.h"
#include "client/token.h"
#include "common/address_list.h"
#include "common/byte_size.h"
#include "common/clock.h"
#include "common/http_server.h"
#include "common/log.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "common/stop_signals.h"
#include "common/version.h"

namespace fabricdiag::agent {
namespace {

// One report of a large switch (~20,000 counters) takes ~350 KB: less than
// a few MiB could not ride out even a short reconnect.
constexpr uint64_t kMinStreamBuffer = uint64_t{4} << 20;
constexpr uint64_t kMaxStreamBuffer = uint64_t{64} << 30;

absl::Status CheckDirectory(absl::string_view flag, const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", path, ": ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", path, ": not a directory"));
  }
  return absl::OkStatus();
}

// The agent's sources, in one explicit table.
struct Sources {
  std::unique_ptr<SysfsReader> reader;
  std::vector<std::unique_ptr<Source>> devices;
  std::vector<std::unique_ptr<NetdevStatsSource>> netdev_stats;
};

absl::StatusOr<Sources> BuildSources(const AgentConfig& config,
                                     const Clock& clock) {
  Sources out;
  SysfsReader::Options reader_options;
  reader_options.cache_policy =
      config.sysfs_fd_cache == "always"  ? FdCachePolicy::kAlways
      : config.sysfs_fd_cache == "never" ? FdCachePolicy::kNever
                                         : FdCachePolicy::kAuto;
  out.reader = std::make_unique<SysfsReader>(config.sysfs_root, reader_options);
  out.devices.push_back(std::make_unique<RdmaSysfsSource>(out.reader.get()));
  NetdevSource::Options netdev_options;
  if (!config.netdev_exclude.empty()) {
    netdev_options.exclude_regex = config.netdev_exclude;
  }
  absl::StatusOr<std::unique_ptr<NetdevSource>> netdev =
      NetdevSource::Create(out.reader.get(), netdev_options);
  if (!netdev.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--netdev_exclude: ", netdev.status().message()));
  }
  out.devices.push_back(*std::move(netdev));
  out.devices.push_back(
      std::make_unique<VerbsPortSource>(std::make_unique<LibibverbsApi>()));
  out.devices.push_back(
      std::make_unique<GpuNicSource>(out.reader.get(), clock));
  EthtoolSourceOptions ethtool_options;
  ethtool_options.include_per_queue = config.ethtool_per_queue;
  if (!config.ethtool_dir.empty()) {
    out.netdev_stats.push_back(std::make_unique<EthtoolSource>(
        EthtoolTextDir{config.ethtool_dir}, ethtool_options));
  } else {
    ASSIGN_OR_RETURN(std::unique_ptr<KernelEthtoolStats> kernel,
                     KernelEthtoolStats::Create());
    out.netdev_stats.push_back(
        std::make_unique<EthtoolSource>(std::move(kernel), ethtool_options));
  }
  return out;
}

// The LLDP reader the flags ask for; null when LLDP is off. The file is
// checked every second (a stat; it is read only when it changed), lldpd is
// asked every --lldp_interval.
std::unique_ptr<LldpMonitor> BuildLldp(const AgentConfig& config,
                                       const Clock& clock) {
  if (!config.lldp_file.empty()) {
    return std::make_unique<LldpMonitor>(
        std::make_unique<LldpFileReader>(config.lldp_file),
        std::min(config.lldp_interval, absl::Seconds(1)), clock);
  }
  if (config.lldpd_socket.empty()) return nullptr;
  return std::make_unique<LldpMonitor>(
      std::make_unique<LldpdReader>(NewLldpctlApi(config.lldpd_socket)),
      config.lldp_interval, clock);
}

int RunOnce(const AgentConfig& config, Snapshotter* snapshotter,
            LldpMonitor* lldp) {
  Snapshot snapshot = snapshotter->Take();
  if (lldp != nullptr) snapshot.lldp = lldp->Update(snapshot.netdevs);
  if (snapshot.samples.empty() && snapshot.rdma_devices.empty() &&
      snapshot.netdevs.empty()) {
    std::string why;
    for (const SourceStatus& s : snapshot.sources) {
      if (!s.last_error.empty()) {
        absl::StrAppend(&why, "\n  ", s.source, ": ", s.last_error);
      }
    }
    std::cerr << "fabricdiag-agent: nothing could be read under --sysfs_root="
              << config.sysfs_root
              << " (no RDMA device in class/infiniband, no netdev in "
                 "class/net that --netdev_exclude lets through)"
              << why << "\n";
    return 1;
  }
  std::cout << SnapshotToJson(snapshot, config.node) << "\n";
  return 0;
}

// Sleeps until `deadline_nanos` on the monotonic clock or until SIGINT or
// SIGTERM arrives; returns true when a signal asked us to stop.
bool WaitForTickOrSignal(const sigset_t& signals, const Clock& clock,
                         int64_t deadline_nanos) {
  for (;;) {
    const int64_t now = clock.MonotonicNanos();
    if (now >= deadline_nanos) return false;
    const int64_t wait = deadline_nanos - now;
    struct timespec ts;
    ts.tv_sec = static_cast<time_t>(wait / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(wait % 1'000'000'000);
    const int signo = sigtimedwait(&signals, nullptr, &ts);
    if (signo == SIGINT || signo == SIGTERM) return true;
    // EAGAIN: the timeout expired; EINTR: another signal; loop re-checks.
  }
}

// The sysfs reader keeps one descriptor per counter file open (~900 on an
// 8-NIC node) and sizes its cache from the soft limit, which systemd and
// most shells set to 1024. Raising it to the hard limit costs nothing.
void RaiseOpenFileLimit() {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 &&
      limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      LogWarning(absl::StrCat("cannot raise the open-file limit: ",
                              std::strerror(errno)));
    }
  }
}

}  // namespace

void ResolveDefaults(AgentConfig* config) {
  if (config->node.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) == 0) config->node = host;
  }
}

absl::Status ValidateAgentConfig(const AgentConfig& config) {
  if (!IsValidNodeName(config.node)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--node=", config.node,
        ": must be 1..253 characters of [A-Za-z0-9._-], starting with a "
        "letter or digit"));
  }
  RETURN_IF_ERROR(CheckDirectory("sysfs_root", config.sysfs_root));
  if (config.sysfs_fd_cache != "auto" && config.sysfs_fd_cache != "always" &&
      config.sysfs_fd_cache != "never") {
    return absl::InvalidArgumentError(
        absl::StrCat("--sysfs_fd_cache=", config.sysfs_fd_cache,
                     ": expected auto, always or never"));
  }
  if (!config.ethtool_dir.empty()) {
    RETURN_IF_ERROR(CheckDirectory("ethtool_dir", config.ethtool_dir));
  }
  if (config.lldp_interval < absl::Seconds(1) ||
      config.lldp_interval > absl::Hours(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--lldp_interval=", absl::FormatDuration(config.lldp_interval),
        ": must be between 1s and 1h"));
  }
  if (config.interval < absl::Milliseconds(10) ||
      config.interval > absl::Hours(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--interval=", absl::FormatDuration(config.interval),
                     ": must be between 10ms and 1h"));
  }
  if (!config.once) {
    RETURN_IF_ERROR(CheckHostPort("listen", config.listen, true));
  }
  if (!config.collector.empty()) {
    RETURN_IF_ERROR(client::ParseCollectorList(config.collector).status());
  }
  // --ingest_token_file alone is fine: the packaged unit always names the
  // token's credential, and an agent that streams nowhere never reads it.
  if (config.collector.empty() &&
      (!config.tls.ca.empty() || !config.tls.cert.empty() ||
       !config.tls.key.empty() || !config.tls.server_name.empty())) {
    return absl::InvalidArgumentError(
        "--tls_ca/--tls_cert/--tls_key/--tls_server_name need --collector");
  }
  if (!config.collector.empty()) {
    RETURN_IF_ERROR(client::LoadTls(config.tls).status());
  }
  absl::StatusOr<uint64_t> buffer = ParseByteSize(config.stream_buffer_size);
  if (!buffer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--stream_buffer_size: ", buffer.status().message()));
  }
  if (*buffer < kMinStreamBuffer || *buffer > kMaxStreamBuffer) {
    return absl::InvalidArgumentError(
        absl::StrCat("--stream_buffer_size=", config.stream_buffer_size,
                     ": must be between ", FormatByteSize(kMinStreamBuffer),
                     " and ", FormatByteSize(kMaxStreamBuffer)));
  }
  if (!config.netdev_exclude.empty()) {
    // The netdev source compiles the same POSIX extended regex.
    regex_t re;
    const int rc =
        regcomp(&re, config.netdev_exclude.c_str(), REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char why[256];
      regerror(rc, &re, why, sizeof(why));
      return absl::InvalidArgumentError(
          absl::StrCat("--netdev_exclude=", config.netdev_exclude, ": ", why));
    }
    regfree(&re);
  }
  return absl::OkStatus();
}

namespace {

// Enough reports for ten minutes at the configured interval, at least the
// default (ten minutes at 1 s); an outage shorter than that leaves no gap at
// the collector.
size_t StreamBufferReports(const AgentConfig& config) {
  if (config.stream_buffer_reports != 0) return config.stream_buffer_reports;
  const auto capacity =
      static_cast<size_t>(absl::Minutes(10) / config.interval);
  return std::max(capacity, ReportBuffer::kDefaultReports);
}

// The stream client's options; an error only when the ingest token cannot
// be read.
absl::StatusOr<StreamClient::Options> StreamOptions(const AgentConfig& config) {
  StreamClient::Options options;
  // Validated by ValidateAgentConfig.
  // Ranked per node by the stream client (rendezvous hashing).
  options.targets = *client::ParseCollectorList(config.collector);
  options.node = config.node;
  options.agent_version = kVersion;
  options.interval = config.interval;
  options.tls = config.tls;
  if (!config.ingest_token_file.empty()) {
    ASSIGN_OR_RETURN(options.token,
                     client::ReadIngestToken(config.ingest_token_file));
  }
  options.buffer.max_reports = StreamBufferReports(config);
  options.buffer.max_bytes = *ParseByteSize(config.stream_buffer_size);
  return options;
}

absl::StatusOr<std::unique_ptr<HttpServer>> ServeMetrics(
    const AgentConfig& config, MetricsPage* page) {
  HttpServerOptions options;
  options.listen = config.listen;
  std::vector<HttpRoute> routes;
  routes.push_back({"/metrics", [page](const HttpRequest& request) {
                      return page->Serve(request);
                    }});
  absl::StatusOr<std::unique_ptr<HttpServer>> http =
      HttpServer::Start(std::move(options), std::move(routes));
  if (!http.ok()) {
    return absl::Status(
        http.status().code(),
        absl::StrCat("cannot serve /metrics on --listen=", config.listen, ": ",
                     http.status().message()));
  }
  return http;
}

// Ticks `runner` at once, then on the wall clock's grid of the configured
// interval (NextGridTick) until SIGINT or SIGTERM: agents whose clocks
// agree read at the same instants, and the collector's passes run just
// after. A snapshot that overruns skips ticks instead of bursting.
void TickUntilSignal(const AgentConfig& config, const sigset_t& signals,
                     const Clock& clock, AgentRunner& runner) {
  for (;;) {
    runner.Tick();
    const int64_t next = NextGridTick(clock.MonotonicNanos(), clock.Now(),
                                      config.interval, absl::ZeroDuration());
    if (WaitForTickOrSignal(signals, clock, next)) return;
  }
}

}  // namespace

int RunAgent(const AgentConfig& config) {
  SystemClock clock;
  RaiseOpenFileLimit();
  absl::StatusOr<Sources> sources = BuildSources(config, clock);
  if (!sources.ok()) {
    LogError(absl::StrCat("fabricdiag-agent: ", sources.status().message()));
    return 1;
  }
  Snapshotter snapshotter(std::move(sources->devices),
                          std::move(sources->netdev_stats), clock);
  std::unique_ptr<LldpMonitor> lldp = BuildLldp(config, clock);
  if (config.once) return RunOnce(config, &snapshotter, lldp.get());

  // The sampling loop alone receives them, through sigtimedwait.
  const sigset_t signals = BlockStopSignals();
  std::unique_ptr<StreamSink> sink;
  if (!config.collector.empty()) {
    absl::StatusOr<StreamClient::Options> options = StreamOptions(config);
    if (!options.ok()) {
      LogError(absl::StrCat("fabricdiag-agent: ", options.status().message()));
      return 2;
    }
    absl::StatusOr<std::unique_ptr<StreamClient>> client =
        StreamClient::Create(*options, clock);
    if (!client.ok()) {
      LogError(absl::StrCat("fabricdiag-agent: --collector=", config.collector,
                            ": ", client.status().message()));
      return 1;
    }
    sink = std::make_unique<StreamSink>(*std::move(client));
  }

  MetricsPage page;
  absl::StatusOr<std::unique_ptr<HttpServer>> http =
      ServeMetrics(config, &page);
  if (!http.ok()) {
    LogError(absl::StrCat("fabricdiag-agent: ", http.status().message()));
    return 1;
  }
  if (sink != nullptr) sink->Start();

  AgentRunner runner(&snapshotter, &page, sink.get(), clock, kVersion);
  HttpServer* server = http->get();
  runner.set_http_stats([server] { return server->stats(); });
  if (lldp != nullptr) {
    runner.set_lldp([m = lldp.get()](const std::vector<NetdevInfo>& netdevs) {
      return m->Update(netdevs);
    });
  }
  const std::string ports = absl::StrCat((*http)->port());
  LogInfo(absl::StrCat(
      "fabricdiag-agent ", kVersion, " node=", config.node,
      " sysfs_root=", config.sysfs_root, " serving /metrics on port ", ports,
      config.collector.empty()
          ? std::string(" (no collector)")
          : absl::StrCat(" streaming to ", sink->Health().collector, " of ",
                         config.collector)));
  TickUntilSignal(config, signals, clock, runner);
  LogInfo("fabricdiag-agent: stopping");
  if (sink != nullptr) sink->Stop();
  return 0;
}

}  // namespace fabricdiag::agent
