#include "sim/gnmi_fleet.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "analysis/layout_parse.h"
#include "common/address_list.h"
#include "common/files.h"
#include "common/posix_file.h"
#include "common/status_macros.h"

namespace fabricdiag::sim {
namespace {

// HOST and PORT of a checked HOST:PORT.
std::pair<std::string, int> SplitHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (!absl::SimpleAtoi(absl::string_view(address).substr(colon + 1), &port)) {
    port = 0;
  }
  return {address.substr(0, colon), port};
}

// A wildcard listening host as a client reaches it.
std::string ReachableHost(const std::string& host) {
  if (host == "0.0.0.0") return "127.0.0.1";
  if (host == "[::]") return "[::1]";
  return host;
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

// "user\npassword\n" -> {user, password}.
absl::Status ParseCredentials(const std::string& path, const std::string& text,
                              GnmiTargetOptions* o) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  for (std::string& line : lines) {
    absl::string_view v = line;
    absl::ConsumeSuffix(&v, "\r");
    line = std::string(v);
  }
  if (lines.size() < 2 || lines[0].empty() || lines[1].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--gnmi_credentials_file: ", path,
        ": expected the user name on line 1 and the password on line 2"));
  }
  o->username = lines[0];
  o->password = lines[1];
  return absl::OkStatus();
}

// A locally administered unicast MAC (the 0x02 bit of the first octet):
// `kind` 0 for hosts, 1 for switches, then the index.
std::string MadeUpMac(int kind, size_t index) {
  return absl::StrFormat("02:%02x:00:%02x:%02x:%02x", kind,
                         (index >> 16) & 0xff, (index >> 8) & 0xff,
                         index & 0xff);
}

}  // namespace

std::vector<LldpPeer> LldpPeersOf(const Fabric& fabric, size_t switch_index) {
  const SimNode& sw = fabric.switches()[switch_index];
  std::vector<LldpPeer> out;
  for (size_t p : sw.members) {
    const SimPort& port = fabric.ports()[p];
    if (!port.nic.has_value()) continue;
    const SimNic& nic = fabric.nics()[*port.nic];
    LldpPeer peer;
    peer.local_port = port.port;
    peer.system_name = nic.host;
    peer.chassis_id = MadeUpMac(0, nic.host_index);
    // lldpd on a host announces the netdev by name, and as its
    // description too when it has no alias.
    peer.port_id = nic.netdev;
    peer.port_description = nic.netdev;
    out.push_back(std::move(peer));
  }
  for (const v1::SwitchLink& link : fabric.topology().switch_links()) {
    const bool a = link.switch_a() == sw.name;
    const bool b = link.switch_b() == sw.name;
    if (a == b) continue;  // not this switch's (or a loop onto itself)
    const std::string& far = a ? link.switch_b() : link.switch_a();
    const std::optional<size_t> far_index = fabric.FindSwitch(far);
    if (!far_index.has_value()) continue;
    LldpPeer peer;
    peer.local_port = a ? link.port_a() : link.port_b();
    peer.system_name = far;
    peer.chassis_id = MadeUpMac(1, *far_index);
    peer.port_id = a ? link.port_b() : link.port_a();
    peer.port_description = peer.port_id;
    out.push_back(std::move(peer));
  }
  std::sort(out.begin(), out.end(), [](const LldpPeer& x, const LldpPeer& y) {
    return NaturalLess(x.local_port, y.local_port);
  });
  return out;
}

bool GnmiFlags::Serves(const std::string& name) const {
  return enabled() &&
         (switches.empty() ||
          std::find(switches.begin(), switches.end(), name) != switches.end());
}

absl::Status ValidateGnmiFlags(const GnmiFlags& flags, bool have_topology) {
  if (!flags.enabled()) {
    const std::pair<const char*, const std::string*> others[] = {
        {"--gnmi_tls_cert", &flags.tls_cert},
        {"--gnmi_tls_key", &flags.tls_key},
        {"--gnmi_tls_ca", &flags.tls_ca},
        {"--gnmi_credentials_file", &flags.credentials_file},
        {"--gnmi_topology_out", &flags.topology_out},
    };
    for (const auto& [flag, value] : others) {
      if (!value->empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(flag, ": needs --gnmi_listen"));
      }
    }
    if (flags.refresh != absl::ZeroDuration()) {
      return absl::InvalidArgumentError("--gnmi_refresh: needs --gnmi_listen");
    }
    if (flags.pfc_refresh != absl::ZeroDuration()) {
      return absl::InvalidArgumentError(
          "--gnmi_pfc_refresh: needs --gnmi_listen");
    }
    if (flags.overlap) {
      return absl::InvalidArgumentError("--gnmi_overlap: needs --gnmi_listen");
    }
    if (!flags.switches.empty()) {
      return absl::InvalidArgumentError("--gnmi_switches: needs --gnmi_listen");
    }
    return absl::OkStatus();
  }
  const std::pair<const char*, absl::Duration> refreshes[] = {
      {"--gnmi_refresh", flags.refresh},
      {"--gnmi_pfc_refresh", flags.pfc_refresh},
  };
  for (const auto& [flag, refresh] : refreshes) {
    if (refresh < absl::ZeroDuration() || refresh > absl::Hours(1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, "=", absl::FormatDuration(refresh),
                       ": must be 0 (counters change every tick) up to 1h"));
    }
  }
  RETURN_IF_ERROR(CheckHostPort("gnmi_listen", flags.listen,
                                /*allow_port_zero=*/true));
  if (absl::StatusOr<gnmi::Dialect> d = gnmi::ParseDialect(flags.dialect);
      !d.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gnmi_dialect: ", d.status().message()));
  }
  if (flags.tls_cert.empty() != flags.tls_key.empty()) {
    return absl::InvalidArgumentError(
        "--gnmi_tls_cert and --gnmi_tls_key must be given together");
  }
  if (!flags.tls_ca.empty() && flags.tls_cert.empty()) {
    return absl::InvalidArgumentError(
        "--gnmi_tls_ca: needs --gnmi_tls_cert and --gnmi_tls_key");
  }
  if (!flags.credentials_file.empty() && flags.tls_cert.empty()) {
    return absl::InvalidArgumentError(
        "--gnmi_credentials_file: credentials travel only over TLS; give "
        "--gnmi_tls_cert and --gnmi_tls_key");
  }
  if (!flags.topology_out.empty() && !have_topology) {
    return absl::InvalidArgumentError(
        "--gnmi_topology_out: needs --topology (its switches are the gNMI "
        "targets)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<GnmiFleet>> GnmiFleet::Start(
    const GnmiFlags& flags, const Fabric* fabric) {
  GnmiTargetOptions o;
  ASSIGN_OR_RETURN(o.dialect, gnmi::ParseDialect(flags.dialect));
  o.refresh = flags.refresh;
  o.pfc_refresh = flags.pfc_refresh;
  o.overlap = flags.overlap;
  if (!flags.tls_cert.empty()) {
    ASSIGN_OR_RETURN(o.tls_cert_pem,
                     ReadPemFile("--gnmi_tls_cert", flags.tls_cert, false));
    ASSIGN_OR_RETURN(o.tls_key_pem,
                     ReadPemFile("--gnmi_tls_key", flags.tls_key, true));
  }
  if (!flags.credentials_file.empty()) {
    // The message of a refused file names the flag and says how to fix it.
    absl::StatusOr<std::string> text =
        ReadSecretFile("--gnmi_credentials_file", flags.credentials_file, 4096);
    if (!text.ok()) {
      return absl::InvalidArgumentError(text.status().message());
    }
    RETURN_IF_ERROR(ParseCredentials(flags.credentials_file, *text, &o));
  }
  const auto [host, first_port] = SplitHostPort(flags.listen);
  const size_t n = fabric->switches().size();
  if (first_port > 0 && static_cast<size_t>(first_port) + n - 1 > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--gnmi_listen: ", n, " switches need ports ", first_port, "..",
        static_cast<size_t>(first_port) + n - 1, ", beyond 65535"));
  }
  for (const std::string& name : flags.switches) {
    if (!fabric->FindSwitch(name).has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--gnmi_switches: \"", name, "\" is not a simulated switch"));
    }
  }
  std::unique_ptr<GnmiFleet> fleet(new GnmiFleet(flags, fabric));
  for (size_t i = 0; i < n; ++i) {
    if (!flags.Serves(fabric->switches()[i].name)) continue;
    o.listen = absl::StrCat(
        host, ":", first_port == 0 ? 0 : first_port + static_cast<int>(i));
    ASSIGN_OR_RETURN(std::unique_ptr<GnmiTarget> t,
                     GnmiTarget::Start(fabric->switches()[i].name, o));
    fleet->targets_.push_back(std::move(t));
    fleet->switch_of_.push_back(i);
    fleet->lldp_.push_back(LldpPeersOf(*fabric, i));
  }
  return fleet;
}

void GnmiFleet::Publish(const std::vector<PortCounters>& ports,
                        int64_t timestamp_nanos,
                        const std::vector<int64_t>& boot_nanos,
                        const std::vector<bool>& available) {
  for (size_t t = 0; t < targets_.size(); ++t) {
    const size_t s = switch_of_[t];
    SwitchState state;
    state.name = fabric_->switches()[s].name;
    state.timestamp_nanos = timestamp_nanos;
    state.boot_time_nanos = boot_nanos[s];
    for (size_t p : fabric_->switches()[s].members) {
      state.ports.push_back(fabric_->ports()[p].port);
      state.counters.push_back(ports[p]);
    }
    state.lldp = lldp_[t];
    targets_[t]->SetAvailable(available[s]);
    targets_[t]->Publish(state);
  }
}

v1::Topology GnmiFleet::Topology() const {
  v1::Topology topology = fabric_->topology();
  for (v1::Switch& sw : *topology.mutable_switches()) {
    for (const std::unique_ptr<GnmiTarget>& t : targets_) {
      if (t->switch_name() != sw.name()) continue;
      v1::GnmiTarget* g = sw.mutable_gnmi();
      g->Clear();
      const auto [host, port] = SplitHostPort(t->address());
      g->set_address(absl::StrCat(ReachableHost(host), ":", port));
      g->set_dialect(gnmi::DialectName(t->dialect()));
      if (flags_.tls_cert.empty()) {
        g->set_insecure(true);
      } else {
        g->set_tls_ca(
            Absolute(flags_.tls_ca.empty() ? flags_.tls_cert : flags_.tls_ca));
        if (!flags_.credentials_file.empty()) {
          g->set_credentials_file(Absolute(flags_.credentials_file));
        }
      }
    }
  }
  return topology;
}

absl::Status GnmiFleet::WriteTopology(const std::string& path) const {
  const v1::Topology topology = Topology();
  RETURN_IF_ERROR(analysis::ValidateTopology(topology));
  AtomicWriteOptions o;
  o.durable = false;
  o.mode = 0644;
  return WriteFileAtomically(path, analysis::TopologyToJson(topology) + "\n",
                             o);
}

}  // namespace fabricdiag::sim
