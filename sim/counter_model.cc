#include "sim/counter_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace fabricdiag::sim {
namespace {

constexpr double kNoise = 0.05;  // +-5% per tick on every throughput
// Kernel-stack (non-RDMA) traffic of a host NIC: ssh, metrics, storage.
constexpr double kStackBytesPerSecond = 2e6;
constexpr double kStackBytesPerPacket = 800;
// Usable share of the line rate (headers, pauses).
constexpr double kMaxLineShare = 0.95;
// Healthy pre-FEC bit error ratio of a 400G PAM4 link (well below the
// ~2.4e-4 RS-FEC limit of IEEE 802.3 clause 119).
constexpr double kHealthyBer = 1e-9;
constexpr double kBadLinkBer = 1e-4;
// pfc_storm: a stuck receiver still drains ~2% of its normal RX.
constexpr double kStormRxShare = 0.02;
// straggler: throughput relative to its peers.
constexpr double kStragglerShare = 0.3;
// ecmp_polarization: share of the uplink TX on the hot uplink when one is
// polarized; with more, each carries as much against a cold one as that one
// does.
constexpr double kPolarizedShare = 0.7;
// ... and with several, the hottest of them carries this much more than
// their even share and changes every kHottestSeconds: flows come and go and
// the hash moves them between the polarized uplinks.
constexpr double kHottestSwing = 0.25;
constexpr double kHottestSeconds = 1.0;

double LineBytesPerSecond(int gbps) { return gbps * 1e9 / 8; }

void Finish(PortRates* r) {
  if (!r->present || !r->link_up) {
    r->per_second.fill(0);
    return;
  }
  const double cap = kMaxLineShare * LineBytesPerSecond(r->speed_gbps);
  for (Counter k : {kTxBytes, kRxBytes}) {
    r->per_second[k] = std::clamp(r->per_second[k], 0.0, cap);
  }
  r->per_second[kTxPackets] = r->per_second[kTxBytes] / kRoceWireBytesPerPacket;
  r->per_second[kRxPackets] = r->per_second[kRxBytes] / kRoceWireBytesPerPacket;
  r->per_second[kStackTxPackets] =
      r->per_second[kStackTxBytes] / kStackBytesPerPacket;
  r->per_second[kStackRxPackets] =
      r->per_second[kStackRxBytes] / kStackBytesPerPacket;
  r->per_second[kRxBits] = r->speed_gbps * 1e9;
  r->per_second[kSymbolErrorsPhy] = r->per_second[kSymbolErrors];
}

}  // namespace

absl::StatusOr<CounterModel> CounterModel::Create(const Fabric* fabric,
                                                  Scenario scenario,
                                                  uint64_t seed) {
  absl::StatusOr<TrafficBase> base =
      TrafficBase::Build(*fabric, scenario.step_seconds, seed);
  if (!base.ok()) return base.status();
  return CounterModel(fabric, std::move(scenario), *std::move(base), seed);
}

CounterModel::CounterModel(const Fabric* fabric, Scenario scenario,
                           TrafficBase base, uint64_t seed)
    : fabric_(fabric),
      scenario_(std::move(scenario)),
      base_(std::move(base)),
      rng_(seed) {
  size_t host_ports = 0;
  for (const SimPort& p : fabric_->ports()) host_ports += p.nic ? 1 : 0;
  for (const SimNode& sw : fabric_->switches()) {
    size_t mine = 0;
    for (size_t p : sw.members) mine += fabric_->ports()[p].nic ? 1 : 0;
    // Destinations are spread over all host ports; those on this leaf are
    // reached without the uplinks.
    cross_fraction_.push_back(host_ports == 0
                                  ? 0.0
                                  : 1.0 - static_cast<double>(mine) /
                                              static_cast<double>(host_ports));
  }
}

double CounterModel::Uniform(double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng_);
}

void CounterModel::Healthy(double t, double dt, FabricRates* out) {
  for (size_t i = 0; i < out->nics.size(); ++i) {
    PortRates& r = out->nics[i];
    const NicBase& b = base_.nic(i);
    auto& v = r.per_second;
    v[kTxBytes] =
        b.TxBytesPerSecondOver(t, dt) * Uniform(1 - kNoise, 1 + kNoise);
    v[kRxBytes] =
        b.RxBytesPerSecondOver(t, dt) * Uniform(1 - kNoise, 1 + kNoise);
    v[kStackTxBytes] = kStackBytesPerSecond * Uniform(0.5, 1.5);
    v[kStackRxBytes] = kStackBytesPerSecond * Uniform(0.5, 1.5);
    // DCQCN on a busy, healthy fabric: a few hundred CNPs a second.
    v[kNpCnpSent] = Uniform(100, 400);
    v[kNpEcnMarked] = v[kNpCnpSent] * Uniform(1.0, 1.2);
    v[kRpCnpHandled] = Uniform(100, 400);
    SetPauseFraction(&r, Side::kTx, kRocePriority, Uniform(0.0002, 0.0015));
    SetPauseFraction(&r, Side::kRx, kRocePriority, Uniform(0.0002, 0.0015));
    v[kCorrectedBits] = r.speed_gbps * 1e9 * kHealthyBer * Uniform(0.5, 1.5);
  }
}

void CounterModel::ApplyNicFault(const Fault& f, size_t i, FabricRates* out) {
  PortRates& r = out->nics[i];
  auto& v = r.per_second;
  const NicBase& b = base_.nic(i);
  auto peer_mean = [&](bool rx) {
    double sum = 0;
    for (size_t j : b.peers) {
      sum += rx ? base_.nic(j).MeanRxBytesPerSecond()
                : base_.nic(j).MeanTxBytesPerSecond();
    }
    if (b.peers.empty()) {
      return rx ? b.MeanRxBytesPerSecond() : b.MeanTxBytesPerSecond();
    }
    return sum / static_cast<double>(b.peers.size());
  };
  switch (f.kind) {
    case FaultKind::kHalfSpeed:
      r.speed_gbps = 200;
      v[kCorrectedBits] *= 0.5;
      break;
    case FaultKind::kStraggler:
      v[kTxBytes] =
          kStragglerShare * peer_mean(false) * Uniform(1 - kNoise, 1 + kNoise);
      v[kRxBytes] =
          kStragglerShare * peer_mean(true) * Uniform(1 - kNoise, 1 + kNoise);
      break;
    case FaultKind::kHotExpert: {
      v[kRxBytes] =
          f.factor * peer_mean(true) * Uniform(1 - kNoise, 1 + kNoise);
      // Incast: the NIC marks and answers with CNPs (DCQCN NP side), its
      // buffer fills, it pauses the switch on the RoCE priority and drops.
      const double cnp = Uniform(5e4, 2e5);
      v[kNpCnpSent] = cnp;
      v[kNpEcnMarked] = cnp * Uniform(1.0, 1.2);
      SetPauseFraction(&r, Side::kTx, kRocePriority, Uniform(0.05, 0.10));
      v[kRxDiscardsPhy] = Uniform(100, 1000);
      v[kRxPrioDiscards + kRocePriority] = v[kRxDiscardsPhy];
      for (size_t j : b.peers) {
        out->nics[j].per_second[kRpCnpHandled] +=
            cnp / static_cast<double>(b.peers.size());
      }
      break;
    }
    case FaultKind::kRetransmissions:
      v[kOutOfSequence] = Uniform(200, 2000);
      v[kPacketSeqErr] = Uniform(200, 2000);
      v[kLocalAckTimeoutErr] = Uniform(200, 2000);
      v[kDuplicateRequest] = Uniform(50, 200);
      v[kImpliedNakSeqErr] = Uniform(50, 200);
      v[kRoceAdpRetrans] = Uniform(100, 1000);
      v[kReqTransportRetriesExceeded] = Uniform(0, 2);
      break;
    case FaultKind::kLinkErrors: {
      const double symbols = Uniform(40, 60);
      const double crc = Uniform(15, 25);
      v[kSymbolErrors] = symbols;
      v[kCrcErrors] = crc;
      v[kRcvErrors] = crc;
      v[kPcsSymbolErrors] = Uniform(1, 5);
      v[kLinkErrorRecovery] = Uniform(0, 0.1);
      v[kCorrectedBits] = r.speed_gbps * 1e9 * kBadLinkBer * Uniform(0.8, 1.2);
      break;
    }
    case FaultKind::kPfcStorm:
      // A stuck receiver (docs/counters.md: tx_prioN_pause_duration growing
      // ~1e6 us per second), with mlx5's storm prevention firing.
      SetPauseFraction(&r, Side::kTx, f.priority, Uniform(0.94, 0.97));
      v[kRxBytes] *= kStormRxShare;
      v[kPauseStormWarning] = 0.5;
      v[kPauseStormError] = 0.1;
      ApplyStormVictims(f, i, out);
      break;
    case FaultKind::kEcmpPolarization:
    case FaultKind::kLinkFlap:
    case FaultKind::kNicGone:
    case FaultKind::kGnmiOutage:
    case FaultKind::kSwitchReload:
    case FaultKind::kMiscabling:
      break;  // not per NIC (a moved cable changes LLDP only)
  }
}

void CounterModel::ApplyStormVictims(const Fault& f, size_t i,
                                     FabricRates* out) {
  const std::optional<size_t> port = fabric_->nics()[i].switch_port;
  if (!port) return;
  const SimNode& sw = fabric_->switches()[fabric_->ports()[*port].switch_index];
  for (size_t q : sw.members) {
    const std::optional<size_t> m = fabric_->ports()[q].nic;
    if (q == *port || !m) continue;
    // The switch's shared buffer fills behind the stuck port and it pauses
    // every ingress on that priority: the victims cannot send.
    const double fraction = Uniform(0.3, 0.6);
    PortRates& victim = out->nics[*m];
    SetPauseFraction(
        &victim, Side::kRx, f.priority,
        std::max(fraction, PauseFraction(victim, Side::kRx, f.priority)));
    victim.per_second[kTxBytes] *= 1 - 0.5 * fraction;
  }
}

void CounterModel::DerivePorts(FabricRates* out) {
  const auto& ports = fabric_->ports();
  for (size_t p = 0; p < ports.size(); ++p) {
    PortRates& r = out->ports[p];
    auto& v = r.per_second;
    if (const std::optional<size_t> m = ports[p].nic) {
      const PortRates& nic = out->nics[*m];
      r.link_up = r.link_up && nic.link_up && nic.present;
      r.speed_gbps = nic.speed_gbps;
      v[kRxBytes] = nic.per_second[kTxBytes];
      v[kTxBytes] = nic.per_second[kRxBytes];
      for (int pr = 0; pr < kPriorities; ++pr) {
        SetPauseFraction(&r, Side::kRx, pr, PauseFraction(nic, Side::kTx, pr));
        SetPauseFraction(&r, Side::kTx, pr, PauseFraction(nic, Side::kRx, pr));
      }
    } else {
      SetPauseFraction(&r, Side::kTx, kRocePriority, Uniform(0.0002, 0.0015));
      SetPauseFraction(&r, Side::kRx, kRocePriority, Uniform(0.0002, 0.0015));
    }
    v[kCorrectedBits] = r.speed_gbps * 1e9 * kHealthyBer * Uniform(0.5, 1.5);
  }
  for (size_t s = 0; s < fabric_->switches().size(); ++s) {
    const SimNode& sw = fabric_->switches()[s];
    double into_leaf = 0, out_of_leaf = 0;
    std::vector<size_t> up;
    for (size_t p : sw.members) {
      if (ports[p].nic) {
        into_leaf += out->ports[p].per_second[kRxBytes];
        out_of_leaf += out->ports[p].per_second[kTxBytes];
      } else if (ports[p].uplink && out->ports[p].link_up) {
        up.push_back(p);
      }
    }
    if (up.empty()) continue;
    const double n = static_cast<double>(up.size());
    for (size_t p : up) {
      auto& v = out->ports[p].per_second;
      v[kTxBytes] =
          cross_fraction_[s] * into_leaf / n * Uniform(1 - kNoise, 1 + kNoise);
      v[kRxBytes] = cross_fraction_[s] * out_of_leaf / n *
                    Uniform(1 - kNoise, 1 + kNoise);
    }
  }
}

void CounterModel::ApplyPolarization(const Fault& f, double t,
                                     FabricRates* out) {
  std::optional<size_t> s = fabric_->FindSwitch(f.switch_name);
  if (!s) return;
  std::vector<size_t> up;
  double total = 0;
  for (size_t p : fabric_->switches()[*s].members) {
    if (fabric_->ports()[p].uplink && out->ports[p].link_up) {
      up.push_back(p);
      total += out->ports[p].per_second[kTxBytes];
    }
  }
  if (up.size() < 2) return;
  // Flows hash onto a few next hops (poor entropy in the 5-tuple: few QPs,
  // one UDP source port): the first `uplinks` up uplinks carry most, the
  // total is unchanged. Weights: a cold uplink 1, a hot one what makes a
  // single hot uplink kPolarizedShare of the total.
  const size_t m = up.size();
  const size_t hot = std::min(static_cast<size_t>(std::max(f.uplinks, 1)),
                              m - 1);  // uplinks went down since
  const double weight =
      kPolarizedShare * static_cast<double>(m - 1) / (1 - kPolarizedShare);
  const size_t hottest =
      static_cast<size_t>(std::max(0.0, (t - f.start) / kHottestSeconds)) % hot;
  std::vector<double> w(m, 1.0);
  for (size_t k = 0; k < hot; ++k) {
    w[k] = hot == 1 ? weight
           : k == hottest
               ? weight * (1 + kHottestSwing)
               : weight * (1 - kHottestSwing / static_cast<double>(hot - 1));
  }
  double sum = 0;
  for (double x : w) sum += x;
  for (size_t k = 0; k < m; ++k) {
    out->ports[up[k]].per_second[kTxBytes] = w[k] / sum * total;
  }
}

FabricRates CounterModel::RatesAt(double t, double dt) {
  FabricRates out;
  out.nics.resize(fabric_->nics().size());
  out.ports.resize(fabric_->ports().size());
  Healthy(t, dt, &out);

  // Link state first: flaps and vanished NICs take both ends down.
  for (const Fault& f : scenario_.faults) {
    if (!f.ActiveAt(t)) continue;
    std::optional<size_t> nic, port;
    if (!f.node.empty()) nic = fabric_->FindNic(f.node, f.nic);
    if (!f.port.empty()) port = fabric_->FindPort(f.switch_name, f.port);
    if (nic && !port) port = fabric_->nics()[*nic].switch_port;
    if (port && !nic) nic = fabric_->ports()[*port].nic;
    if (f.kind == FaultKind::kLinkFlap) {
      // Down for the first half of every period, from `start` on.
      const bool down = std::fmod(t - f.start, f.period) < f.period / 2;
      if (!down) continue;
      if (nic) out.nics[*nic].link_up = false;
      if (port) out.ports[*port].link_up = false;
    } else if (f.kind == FaultKind::kNicGone && nic) {
      out.nics[*nic].present = false;
      if (port) out.ports[*port].link_up = false;
    }
  }

  for (const Fault& f : scenario_.faults) {
    if (!f.ActiveAt(t)) continue;
    if (f.kind == FaultKind::kEcmpPolarization) {
      // Hosts behind the polarized leaf see congestion on the hot uplink.
      if (std::optional<size_t> s = fabric_->FindSwitch(f.switch_name)) {
        for (size_t p : fabric_->switches()[*s].members) {
          if (std::optional<size_t> m = fabric_->ports()[p].nic) {
            out.nics[*m].per_second[kRpCnpHandled] = Uniform(5e3, 2e4);
          }
        }
      }
      continue;
    }
    if (f.node.empty()) continue;
    if (std::optional<size_t> nic = fabric_->FindNic(f.node, f.nic)) {
      ApplyNicFault(f, *nic, &out);
    }
  }
  for (PortRates& r : out.nics) Finish(&r);

  DerivePorts(&out);
  for (const Fault& f : scenario_.faults) {
    if (f.ActiveAt(t) && f.kind == FaultKind::kEcmpPolarization) {
      ApplyPolarization(f, t, &out);
    }
  }
  for (PortRates& r : out.ports) Finish(&r);
  return out;
}

}  // namespace fabricdiag::sim
