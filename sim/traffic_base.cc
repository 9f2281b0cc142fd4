#include "sim/traffic_base.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "analysis/traffic_model.h"

namespace fabricdiag::sim {
namespace {

using analysis::Dim;

// Seconds of [0, x) in the windows [lo, hi) of each period.
double WindowTime(double x, double step, double lo, double hi) {
  const double periods = std::floor(x / step);
  const double phase = x - periods * step;
  const double in_period = std::clamp(phase - lo * step, 0.0, (hi - lo) * step);
  return periods * (hi - lo) * step + in_period;
}

double Over(double per_step_compute, double per_step_dp, double step, double t,
            double dt) {
  if (!(dt > 0) || !(step > 0)) return 0;
  const double split = 1.0 - kDpBurstFraction;
  const double compute_rate = per_step_compute / (split * step);
  const double dp_rate = per_step_dp / (kDpBurstFraction * step);
  return (compute_rate * PhaseOverlap(t, dt, step, 0, split) +
          dp_rate * PhaseOverlap(t, dt, step, split, 1.0)) /
         dt;
}

bool IsDpDim(Dim d) {
  return d == Dim::kDp || d == Dim::kDpCp || d == Dim::kEdp;
}

// A layout's prediction is used only when it has a model section and at
// least one dimension could be predicted.
bool Usable(const absl::StatusOr<analysis::TrafficModel>& traffic) {
  bool usable = traffic.ok() && traffic->has_model();
  if (usable) {
    usable = false;
    for (const analysis::DimTraffic& d : traffic->Dimensions()) {
      usable = usable || d.available;
    }
  }
  return usable;
}

// Adds the bytes the traffic model predicts for `layout` to the NICs it uses.
void AddModelledBytes(const Fabric& fabric, const analysis::LayoutModel& layout,
                      double step_seconds, std::vector<NicBase>* nics) {
  absl::StatusOr<analysis::TrafficModel> traffic =
      analysis::TrafficModel::Predict(layout, analysis::LinkParams{});
  if (!Usable(traffic)) return;
  const double step = step_seconds > 0
                          ? step_seconds
                          : std::max(1.0, 1.25 * traffic->SerialSeconds());
  for (const analysis::NicTraffic& nt : traffic->Nics()) {
    std::optional<size_t> i = fabric.FindNic(nt.host_name, nt.nic_name);
    if (!i) continue;
    NicBase& n = (*nics)[*i];
    // A NIC two jobs share keeps the first job's step; the second job's
    // bytes are rescaled to it, which keeps their mean rate.
    if (!n.modelled) n.step_seconds = step;
    n.modelled = true;
    const double k_new = n.step_seconds / step;
    for (Dim d : analysis::kAllDims) {
      const analysis::NicBytes& b = nt.by_dim[static_cast<size_t>(d)];
      if (IsDpDim(d)) {
        n.dp_tx += b.tx * k_new;
        n.dp_rx += b.rx * k_new;
      } else if (d == Dim::kEp) {
        n.compute_tx += b.tx * k_new;
        n.compute_rx += b.rx * k_new * n.ep_skew;
      } else {
        n.compute_tx += b.tx * k_new;
        n.compute_rx += b.rx * k_new;
      }
    }
  }
}

// Peers: the EP group, else the DP group, of the NIC's first rank. A NIC
// keeps the peers of the first layout that uses it.
void AddLayoutPeers(const Fabric& fabric, const analysis::LayoutModel& layout,
                    std::vector<bool>* has_peers, std::vector<NicBase>* nics) {
  const Dim peer_dim = layout.Degree(Dim::kEp) > 1 ? Dim::kEp : Dim::kDp;
  for (uint32_t h = 0; h < layout.Hosts().size(); ++h) {
    for (uint32_t k = 0; k < layout.Nics().size(); ++k) {
      absl::Span<const uint32_t> ranks = layout.RanksOnNic(h, k);
      if (ranks.empty()) continue;
      std::optional<size_t> i =
          fabric.FindNic(layout.Hosts()[h], layout.Nics()[k]);
      if (!i || (*has_peers)[*i]) continue;
      (*has_peers)[*i] = true;
      const uint32_t group = layout.GroupOf(peer_dim, ranks[0]);
      for (const analysis::NicRef& ref : layout.GroupNics(peer_dim, group)) {
        if (ref.nic == analysis::kNoNic) continue;
        std::optional<size_t> j =
            fabric.FindNic(layout.Hosts()[ref.host], layout.Nics()[ref.nic]);
        if (j && *j != *i) (*nics)[*i].peers.push_back(*j);
      }
    }
  }
}

// NICs no layout models or pairs get a default rate and their host's other
// NICs as peers.
void FillUnmodelled(const Fabric& fabric, double step_seconds,
                    const std::vector<bool>& has_peers,
                    std::vector<NicBase>* nics) {
  for (size_t i = 0; i < nics->size(); ++i) {
    NicBase& n = (*nics)[i];
    if (!n.modelled) {
      n.step_seconds = step_seconds > 0 ? step_seconds : 1.0;
      n.compute_tx = kDefaultNicBytesPerSecond * n.step_seconds;
      n.compute_rx = kDefaultNicBytesPerSecond * n.step_seconds;
      n.dp_tx = 0;
      n.dp_rx = 0;
    }
    if (!has_peers[i]) {
      // No layout: compare with the other NICs of the same host.
      for (size_t j : fabric.hosts()[fabric.nics()[i].host_index].members) {
        if (j != i) n.peers.push_back(j);
      }
    }
  }
}

}  // namespace

double PhaseOverlap(double t, double dt, double step, double lo, double hi) {
  if (!(dt > 0) || !(step > 0) || !(hi > lo)) return 0;
  return WindowTime(t + dt, step, lo, hi) - WindowTime(t, step, lo, hi);
}

double NicBase::TxBytesPerSecondOver(double t, double dt) const {
  return Over(compute_tx, dp_tx, step_seconds, t, dt);
}

double NicBase::RxBytesPerSecondOver(double t, double dt) const {
  return Over(compute_rx, dp_rx, step_seconds, t, dt);
}

absl::StatusOr<TrafficBase> TrafficBase::Build(const Fabric& fabric,
                                               double step_seconds,
                                               uint64_t seed) {
  TrafficBase base;
  base.nics_.resize(fabric.nics().size());
  std::mt19937_64 rng(seed ^ 0x5eedba5eULL);
  std::uniform_real_distribution<double> skew(1.0 - kEpSkew, 1.0 + kEpSkew);
  for (NicBase& n : base.nics_) n.ep_skew = skew(rng);

  std::vector<bool> has_peers(base.nics_.size(), false);
  for (const analysis::LayoutModel& layout : fabric.layouts()) {
    AddModelledBytes(fabric, layout, step_seconds, &base.nics_);
    AddLayoutPeers(fabric, layout, &has_peers, &base.nics_);
  }
  FillUnmodelled(fabric, step_seconds, has_peers, &base.nics_);
  return base;
}

}  // namespace fabricdiag::sim
