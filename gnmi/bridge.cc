#include "gnmi/bridge.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analysis/layout_parse.h"
#include "client/collector_list.h"
#include "common/log.h"

namespace fabricdiag::gnmi {

bool Shard::Contains(absl::string_view switch_name) const {
  return count <= 1 ||
         client::Fnv1a64(switch_name) % static_cast<uint64_t>(count) ==
             static_cast<uint64_t>(index);
}

absl::StatusOr<Shard> ParseShard(absl::string_view text) {
  constexpr int kMaxShards = 4096;
  const std::vector<absl::string_view> parts = absl::StrSplit(text, '/');
  Shard shard;
  const bool digits_and_slash =
      !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= '0' && c <= '9') || c == '/';
      });
  if (!digits_and_slash || parts.size() != 2 ||
      !absl::SimpleAtoi(parts[0], &shard.index) ||
      !absl::SimpleAtoi(parts[1], &shard.count) || shard.count < 1 ||
      shard.count > kMaxShards || shard.index < 0 ||
      shard.index >= shard.count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shard=", text, ": expected I/N with 0 <= I < N <= ", kMaxShards,
        " (this bridge's share of the switches, e.g. 0/3, 1/3, 2/3)"));
  }
  return shard;
}

std::vector<SwitchConfig> SwitchesOf(const v1::Topology& topology,
                                     std::vector<std::string>* errors) {
  std::vector<SwitchConfig> out;
  for (int i = 0; i < topology.switches_size(); ++i) {
    const v1::Switch& s = topology.switches(i);
    if (!s.has_gnmi()) continue;
    const v1::GnmiTarget& g = s.gnmi();
    absl::Status valid =
        analysis::ValidateGnmiTarget(g, absl::StrCat("switches[", i, "].gnmi"));
    absl::StatusOr<Dialect> dialect = ParseDialect(g.dialect());
    if (valid.ok() && !dialect.ok()) valid = dialect.status();
    if (!valid.ok()) {
      errors->push_back(
          absl::StrCat("switch ", s.name(), ": ", valid.message()));
      continue;
    }
    SwitchConfig c;
    c.name = s.name();
    c.address = g.address();
    c.dialect = *dialect;
    c.tls_ca = g.tls_ca();
    c.tls_server_name = g.tls_server_name();
    c.credentials_file = g.credentials_file();
    c.insecure = g.insecure();
    out.push_back(std::move(c));
  }
  return out;
}

Bridge::Bridge(BridgeOptions options, const Clock& clock)
    : options_(std::move(options)), clock_(clock) {}

Bridge::~Bridge() { Stop(); }

std::unique_ptr<agent::StreamSink> Bridge::OpenStream(const std::string& node) {
  agent::StreamClient::Options o = options_.stream;
  o.node = node;
  o.interval = options_.interval;
  o.first_target = client::PreferredCollectorIndex(node, o.targets.size());
  o.boot_id.clear();  // random: a new boot of this switch's stream
  absl::StatusOr<std::unique_ptr<agent::StreamClient>> client =
      agent::StreamClient::Create(std::move(o), clock_);
  if (!client.ok()) {
    LogError(absl::StrCat("switch ", node, ": cannot stream to the collector: ",
                          client.status().message()));
    return nullptr;
  }
  auto sink = std::make_unique<agent::StreamSink>(*std::move(client));
  sink->Start();
  return sink;
}

std::unique_ptr<Bridge::Entry> Bridge::Open(const SwitchConfig& config) {
  auto e = std::make_unique<Entry>();
  e->config = config;
  absl::StatusOr<std::shared_ptr<SwitchSession>> session =
      SwitchSession::Create(config, options_.session, clock_, &scheduler_);
  if (!session.ok()) {
    e->config_error = std::string(session.status().message());
    LogError(absl::StrCat("fabricdiag-gnmi-bridge: ", e->config_error));
    return e;
  }
  e->sink = OpenStream(config.name);
  if (e->sink == nullptr) {
    e->config_error = "cannot stream to the collector";
    return e;
  }
  e->session = *std::move(session);
  e->session->Start();
  LogInfo(absl::StrCat("switch ", config.name, ": subscribing to ",
                       config.address, " (", DialectName(config.dialect),
                       config.tls_ca.empty() ? ", plaintext)" : ", TLS)"));
  return e;
}

void Bridge::Close(Entry* entry) {
  if (entry->session != nullptr) entry->session->Stop();
  if (entry->sink != nullptr) entry->sink->Stop();
}

void Bridge::SetSwitches(const std::vector<SwitchConfig>& switches) {
  std::map<std::string, std::unique_ptr<Entry>> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old.swap(switches_);
  }
  std::map<std::string, std::unique_ptr<Entry>> next;
  for (const SwitchConfig& c : switches) {
    auto it = old.find(c.name);
    if (it != old.end() && it->second->config == c) {
      next[c.name] = std::move(it->second);
      old.erase(it);
      continue;
    }
    if (it != old.end()) {
      LogInfo(absl::StrCat("switch ", c.name, ": gnmi block changed"));
      Close(it->second.get());
      old.erase(it);
    }
    next[c.name] = Open(c);
  }
  for (auto& [name, entry] : old) {
    LogInfo(absl::StrCat("switch ", name, ": no longer in the topology"));
    Close(entry.get());
  }
  std::lock_guard<std::mutex> lock(mu_);
  switches_.swap(next);
}

void Bridge::Tick() {
  std::lock_guard<std::mutex> lock(mu_);
  // A series not updated for three intervals (at least 3 s) is absent: the
  // switch stopped sending it.
  const absl::Duration stale =
      std::max(3 * options_.interval, absl::Seconds(3));
  for (auto& [name, e] : switches_) {
    if (e->session == nullptr) continue;
    if (e->session->TakeReload()) {
      ++e->reloads;
      LogInfo(absl::StrCat("switch ", name, ": reloaded (boot-time changed)"));
      e->sink->Stop();
      e->sink = OpenStream(name);
      if (e->sink == nullptr) continue;
    }
    if (e->sink == nullptr) continue;
    agent::Snapshot snapshot;
    std::vector<agent::SampleRate> rates;
    e->session->Build(clock_.MonotonicNanos(), clock_.Now(), stale, &snapshot,
                      &rates);
    if (snapshot.samples.empty()) continue;
    e->sink->Consume(snapshot, rates);
    ++e->reports;
  }
}

std::vector<SwitchStatus> Bridge::Status() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SwitchStatus> out;
  for (const auto& [name, e] : switches_) {
    SwitchStatus s;
    s.name = name;
    s.configured = e->session != nullptr;
    s.config_error = e->config_error;
    if (e->session != nullptr) s.session = e->session->stats();
    if (e->sink != nullptr) s.stream = e->sink->Health();
    s.reports = e->reports;
    s.reloads = e->reloads;
    out.push_back(std::move(s));
  }
  return out;
}

void Bridge::Stop() {
  std::map<std::string, std::unique_ptr<Entry>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(switches_);
  }
  for (auto& [name, e] : all) Close(e.get());
}

}  // namespace fabricdiag::gnmi
