#include "gnmi/bridge_app.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/layout_parse.h"
#include "client/client_config.h"
#include "client/collector_client.h"
#include "client/collector_list.h"
#include "client/tls.h"
#include "client/token.h"
#include "common/address_list.h"
#include "common/byte_size.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/http_server.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/stop_signals.h"
#include "common/version.h"
#include "gnmi/bridge.h"
#include "gnmi/bridge_metrics.h"
#include "prometheus/text_serializer.h"

namespace fabricdiag::gnmi {
namespace {

constexpr uint64_t kMinStreamBuffer = uint64_t{1} << 20;
constexpr uint64_t kMaxStreamBuffer = uint64_t{4} << 30;
// A SONiC COUNTERS table of 128 ports is ~5.6 MB in one response.
constexpr uint64_t kMinMessage = uint64_t{4} << 20;
constexpr uint64_t kMaxMessage = uint64_t{1} << 30;

absl::Status CheckReadable(absl::string_view flag, const std::string& path) {
  if (path.empty() || ::access(path.c_str(), R_OK) == 0) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--", flag, "=", path, ": cannot read: ", std::strerror(errno)));
}

absl::Status CheckSize(absl::string_view flag, const std::string& value,
                       uint64_t min, uint64_t max) {
  absl::StatusOr<uint64_t> n = ParseByteSize(value);
  if (!n.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": ", n.status().message()));
  }
  if (*n < min || *n > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", value, ": must be between ",
                     FormatByteSize(min), " and ", FormatByteSize(max)));
  }
  return absl::OkStatus();
}

absl::Status CheckDuration(absl::string_view flag, absl::Duration d,
                           absl::Duration min, absl::Duration max) {
  if (d < min || d > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, "=", absl::FormatDuration(d), ": must be between ",
        absl::FormatDuration(min), " and ", absl::FormatDuration(max)));
  }
  return absl::OkStatus();
}

absl::StatusOr<BridgeOptions> Options(const BridgeConfig& config) {
  BridgeOptions o;
  o.interval = config.interval;
  o.session.sample_interval = config.interval;
  o.session.backoff_max = config.gnmi_backoff_max;
  // Ten samples missed, and never less than 30 s.
  o.session.idle_timeout = std::max(10 * config.interval, absl::Seconds(30));
  o.session.max_receive_bytes =
      static_cast<int>(*ParseByteSize(config.gnmi_max_message_size));
  o.stream.targets = *client::ParseCollectorList(config.collector);
  o.stream.agent_version = absl::StrCat("gnmi-bridge ", kVersion);
  o.stream.tls = config.tls;
  o.stream.buffer.max_bytes = *ParseByteSize(config.stream_buffer_size);
  if (!config.ingest_token_file.empty()) {
    ASSIGN_OR_RETURN(o.stream.token,
                     client::ReadIngestToken(config.ingest_token_file));
  }
  return o;
}

using TopologySource = std::function<absl::StatusOr<v1::Topology>()>;

// The topology in `path`, read afresh on every call.
absl::StatusOr<v1::Topology> ReadTopologyFile(const std::string& path) {
  absl::StatusOr<std::string> text =
      ReadFileCapped(path, analysis::kMaxTopologyBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<v1::Topology> topology = analysis::ParseTopology(*text);
  if (!topology.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", topology.status().message()));
  }
  return topology;
}

// Reads the topology every `refresh` on its own thread (a hung collector
// never delays the reports) and hands the gNMI switches to the bridge.
class TopologyPoller {
 public:
  TopologyPoller(TopologySource source, absl::Duration refresh, Shard shard,
                 Bridge* bridge)
      : source_(std::move(source)),
        refresh_(refresh),
        shard_(shard),
        bridge_(bridge) {
    thread_ = std::thread([this] { Run(); });
  }
  ~TopologyPoller() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  TopologyPoller(const TopologyPoller&) = delete;
  TopologyPoller& operator=(const TopologyPoller&) = delete;

 private:
  void Run() {
    // What the last topology read gave: the effective view moves with every
    // cable LLDP reports, the switches to subscribe to rarely.
    std::vector<SwitchConfig> last;
    std::vector<std::string> last_errors;
    bool applied = false;
    std::string last_error;
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      lock.unlock();
      absl::StatusOr<v1::Topology> topology = source_();
      if (!topology.ok()) {
        const std::string error(topology.status().message());
        if (error != last_error) LogWarning(absl::StrCat("topology: ", error));
        last_error = error;
      } else {
        last_error.clear();
        std::vector<std::string> errors;
        std::vector<SwitchConfig> switches = SwitchesOf(*topology, &errors);
        if (!applied || switches != last || errors != last_errors) {
          for (const std::string& e : errors) LogWarning(e);
          const size_t all = switches.size();
          last = switches;
          last_errors = std::move(errors);
          switches.erase(std::remove_if(switches.begin(), switches.end(),
                                        [this](const SwitchConfig& s) {
                                          return !shard_.Contains(s.name);
                                        }),
                         switches.end());
          LogInfo(absl::StrCat(
              "topology: ", all, " switches with a gnmi block",
              shard_.count > 1
                  ? absl::StrCat(", ", switches.size(), " in shard ",
                                 shard_.index, "/", shard_.count)
                  : ""));
          bridge_->SetSwitches(switches);
          applied = true;
        }
      }
      lock.lock();
      cv_.wait_for(lock, absl::ToChronoNanoseconds(refresh_),
                   [this] { return stopping_; });
    }
  }

  TopologySource source_;
  const absl::Duration refresh_;
  const Shard shard_;
  Bridge* const bridge_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

// Sleeps until `deadline_nanos` or a stop signal; true on a signal.
bool WaitOrSignal(const sigset_t& signals, const Clock& clock,
                  int64_t deadline_nanos) {
  for (;;) {
    const int64_t wait = deadline_nanos - clock.MonotonicNanos();
    if (wait <= 0) return false;
    struct timespec ts;
    ts.tv_sec = static_cast<time_t>(wait / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(wait % 1'000'000'000);
    const int signo = sigtimedwait(&signals, nullptr, &ts);
    if (signo == SIGINT || signo == SIGTERM) return true;
  }
}

absl::StatusOr<std::unique_ptr<HttpServer>> Serve(
    const BridgeConfig& config, const std::shared_ptr<BridgeMetrics>& metrics) {
  HttpServerOptions options;
  options.listen = config.http_listen;
  std::vector<HttpRoute> routes;
  routes.push_back(
      {"/metrics", [metrics](const HttpRequest&) {
         HttpResponse r;
         r.content_type = "text/plain; version=0.0.4; charset=utf-8";
         r.body = prometheus::TextSerializer().Serialize(metrics->Collect());
         return r;
       }});
  routes.push_back({"/healthz",
                    [](const HttpRequest&) {
                      HttpResponse r;
                      r.body = "ok\n";
                      return r;
                    },
                    /*inline_handler=*/true});
  absl::StatusOr<std::unique_ptr<HttpServer>> http =
      HttpServer::Start(std::move(options), std::move(routes));
  if (!http.ok()) {
    return absl::Status(
        http.status().code(),
        absl::StrCat("cannot serve on --http_listen=", config.http_listen, ": ",
                     http.status().message()));
  }
  return http;
}

}  // namespace

absl::StatusOr<v1::Topology> ReadCollectorTopology(
    client::CollectorClient& collector) {
  return collector.GetTopologyView(v1::TOPOLOGY_VIEW_EFFECTIVE);
}

absl::Status ValidateBridgeConfig(const BridgeConfig& config) {
  if (config.collector.empty()) {
    return absl::InvalidArgumentError(
        "--collector is required: HOST:PORT of the collector (or a "
        "comma-separated list of a cluster's collectors)");
  }
  RETURN_IF_ERROR(client::ParseCollectorList(config.collector).status());
  RETURN_IF_ERROR(CheckDuration("interval", config.interval,
                                absl::Milliseconds(100), absl::Hours(1)));
  RETURN_IF_ERROR(ParseShard(config.shard).status());
  RETURN_IF_ERROR(CheckDuration("topology_refresh", config.topology_refresh,
                                absl::Seconds(1), absl::Hours(1)));
  RETURN_IF_ERROR(CheckDuration("gnmi_backoff_max", config.gnmi_backoff_max,
                                absl::Seconds(1), absl::Hours(1)));
  RETURN_IF_ERROR(CheckHostPort("http_listen", config.http_listen, true));
  RETURN_IF_ERROR(client::LoadTls(config.tls).status());
  RETURN_IF_ERROR(CheckReadable("ingest_token_file", config.ingest_token_file));
  RETURN_IF_ERROR(CheckReadable("token_file", config.token_file));
  RETURN_IF_ERROR(CheckReadable("topology", config.topology_file));
  RETURN_IF_ERROR(CheckSize("stream_buffer_size", config.stream_buffer_size,
                            kMinStreamBuffer, kMaxStreamBuffer));
  RETURN_IF_ERROR(CheckSize("gnmi_max_message_size",
                            config.gnmi_max_message_size, kMinMessage,
                            kMaxMessage));
  return absl::OkStatus();
}

int RunBridge(const BridgeConfig& config) {
  SystemClock clock;
  const sigset_t signals = BlockStopSignals();
  absl::StatusOr<BridgeOptions> options = Options(config);
  if (!options.ok()) {
    LogError(
        absl::StrCat("fabricdiag-gnmi-bridge: ", options.status().message()));
    return 1;
  }
  client::ClientFlags flags;
  flags.address = config.collector;
  flags.tls = config.tls;
  flags.token_file = config.token_file;
  absl::StatusOr<client::ClientConfig> query = client::LoadClientConfig(flags);
  if (!query.ok()) {
    LogError(
        absl::StrCat("fabricdiag-gnmi-bridge: ", query.status().message()));
    return 1;
  }

  Bridge bridge(*std::move(options), clock);
  auto metrics = std::make_shared<BridgeMetrics>(&bridge, clock);
  absl::StatusOr<std::unique_ptr<HttpServer>> http = Serve(config, metrics);
  if (!http.ok()) {
    LogError(absl::StrCat("fabricdiag-gnmi-bridge: ", http.status().message()));
    return 1;
  }
  TopologySource source;
  if (config.topology_file.empty()) {
    source = [collector = client::MakeCollectorClient(*query)] {
      return ReadCollectorTopology(*collector);
    };
  } else {
    source = [path = config.topology_file] { return ReadTopologyFile(path); };
  }
  LogInfo(absl::StrCat(
      "fabricdiag-gnmi-bridge ", kVersion, " serving /metrics on port ",
      (*http)->port(), ", topology from ",
      config.topology_file.empty() ? config.collector : config.topology_file,
      " every ", absl::FormatDuration(config.topology_refresh)));
  {
    TopologyPoller poller(std::move(source), config.topology_refresh,
                          *ParseShard(config.shard), &bridge);
    // Reports on the wall clock's grid, where agents read (NextGridTick):
    // the collector's pass waits for the reports of its grid point, so a
    // switch's report counts in the pass just after it. At an arbitrary
    // phase it was not waited for and counted up to an interval later.
    // NextGridTick skips missed ticks instead of bursting to catch up.
    while (!WaitOrSignal(signals, clock,
                         NextGridTick(clock.MonotonicNanos(), clock.Now(),
                                      config.interval, absl::ZeroDuration()))) {
      bridge.Tick();
    }
    LogInfo("fabricdiag-gnmi-bridge: stopping");
  }
  bridge.Stop();
  return 0;
}

}  // namespace fabricdiag::gnmi
