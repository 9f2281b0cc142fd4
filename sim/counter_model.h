// Per tick, the rate of every counter of every simulated port: healthy
// traffic from the layouts (traffic_base.h) with noise, plus the signature
// of every fault active at the start of the tick.
//
// Healthy levels (what a quiet RoCE fabric shows): a few hundred CNP/s
// sent and handled, PFC pause < 0.2% of the time on priority 3, FEC
// correcting ~1e-9 of the received bits, no symbol/CRC errors, no flaps,
// +-5% noise on every throughput per tick.
//
// Fault signatures (scenario.h lists the fields; docs/counters.md the
// counters):
//   hot_expert        RX = factor x mean RX of its EP (else DP) peers, capped
//                     at 95% of line rate; np_cnp_sent / np_ecn_marked
//                     50-200k/s; tx pause 5-10% on priority 3; rx_discards;
//                     the peers handle the CNPs (rp_cnp_handled).
//   pfc_storm         tx pause 94-97% on the priority, RX at 2% of normal,
//                     storm warning/error events; the switch port facing it
//                     receives that pause; the switch's other host ports
//                     pause their hosts 30-60% of the time (victims).
//   ecmp_polarization the switch's first `uplinks` up uplinks carry most of
//                     its uplink TX: one carries 70%, the others share the
//                     rest; with N, each carries as much against a cold one
//                     as that one does, and the hottest of them (25% over
//                     their even share) changes every second. Hosts behind
//                     it handle 5-20k CNP/s.
//   link_flap         link down during the first half of each period: no
//                     traffic, carrier/link_downed events (port_counters.h).
//   link_errors       symbol errors ~50/s, CRC ~20/s, pre-FEC BER ~1e-4.
//   half_speed        200 Gb/s, throughput capped at 95% of it.
//   retransmissions   out_of_sequence, packet_seq_err, local_ack_timeout_err
//                     200-2000/s each.
//   straggler         TX and RX at ~30% of its peers' mean.
//   nic_gone          the device is absent; its switch port is down.
// Switch host ports mirror their NIC (port RX = NIC TX, pause likewise);
// uplinks carry the leaf's cross-leaf share, 1 - leaf ports / all host
// ports of the topology, split evenly (+-5%) over the up uplinks.
//
//   ASSIGN_OR_RETURN(CounterModel model,
//                    CounterModel::Create(&fabric, scenario, seed));
//   FabricRates r = model.RatesAt(/*t=*/20.0, /*dt=*/1.0);
//   double hot_rx = r.nics[i].per_second[kRxBytes];
//
// Pure: no I/O and no clock; the same seed gives the same rates. Not
// thread-safe (RatesAt advances the noise generator).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/fabric.h"
#include "sim/port_counters.h"
#include "sim/scenario.h"
#include "sim/traffic_base.h"

namespace fabricdiag::sim {

// Bytes per RoCE packet on the wire: 4096 MTU payload + headers.
inline constexpr double kRoceWireBytesPerPacket = 4160;
// Priority of the lossless RoCE class (the common DSCP 26 -> prio 3 setup).
inline constexpr int kRocePriority = 3;

struct FabricRates {
  std::vector<PortRates> nics;   // indexed like Fabric::nics()
  std::vector<PortRates> ports;  // indexed like Fabric::ports()
};

class CounterModel {
 public:
  // `fabric` is not owned and must outlive the model. Faults must name
  // ports of `fabric` (ValidateScenarioNames); others are ignored.
  static absl::StatusOr<CounterModel> Create(const Fabric* fabric,
                                             Scenario scenario, uint64_t seed);

  // Rates during [t, t + dt) seconds of simulated time.
  FabricRates RatesAt(double t, double dt);

  const TrafficBase& base() const { return base_; }
  const Scenario& scenario() const { return scenario_; }

 private:
  CounterModel(const Fabric* fabric, Scenario scenario, TrafficBase base,
               uint64_t seed);

  double Uniform(double lo, double hi);
  void Healthy(double t, double dt, FabricRates* out);
  void ApplyNicFault(const Fault& f, size_t nic, FabricRates* out);
  void ApplyStormVictims(const Fault& f, size_t nic, FabricRates* out);
  void DerivePorts(FabricRates* out);
  void ApplyPolarization(const Fault& f, double t, FabricRates* out);

  const Fabric* fabric_;
  Scenario scenario_;
  TrafficBase base_;
  std::mt19937_64 rng_;
  // Per switch: share of its host ports' traffic that leaves via uplinks.
  std::vector<double> cross_fraction_;
};

}  // namespace fabricdiag::sim
