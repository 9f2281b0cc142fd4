// congestion: ports where RoCE congestion control is working far harder than
// anywhere else in the fabric (ECN/CNP hotspots).
//
// A switch queue above its ECN threshold CE-marks packets (RFC 3168); the
// receiving NIC (DCQCN notification point) answers with CNPs (mlx5
// np_cnp_sent, docs/counters.md) and the sender slows down. Some
// marking is normal under load; a port marked many times more than the
// fabric's typical port sits behind a congested queue (a hot downlink, a
// slow receiver, a misconfigured ECN threshold).
//
// Host NIC ports: the signal is cnp_sent, or ecn_marked when the NIC does
// not report CNPs; the baseline is the median of that signal over every host
// NIC port that reports one (at least kMinCongestionBaseline ports), or
// in.congestion_baselines when given. A port
// is a hotspot when it is >= CongestionConfig::cnp_per_second and >=
// over_median x that median. Switch ports reporting ecn_marked are compared
// the same way with the median of the switch ports.
//
// Incast is not excluded here: a hot expert also draws CNPs, and
// hot_expert_incast explains it better. RunRateAnalyzers' caller drops a
// congestion finding when hot_expert_incast reports the same (node, device)
// in the same pass.
//
//   AnalysisInput in{&view, layouts, &topology, &config};
//   for (const Finding& f : CongestionFindings(in)) { ... }
//
// Pure: same input, same findings, in view order (node, device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/fabric_view.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis {

inline constexpr char kCongestionKind[] = "congestion";

// Fewest reporting ports whose median is a baseline: with two, the median is
// half the suspect itself.
inline constexpr size_t kMinCongestionBaseline = 3;

// What each kind of port is compared with: the median of its signal over
// the ports of that kind that report it. Over a whole fabric cut into parts
// (analysis/rate_parts.h) each part is given the fabric's.
struct CongestionBaselines {
  struct Of {
    double median = 0;
    size_t ports = 0;  // below kMinCongestionBaseline: no baseline
  };
  Of hosts;
  Of switches;
};

// The baselines over `view`'s ports (what CongestionFindings uses when
// in.congestion_baselines is null).
CongestionBaselines CongestionBaselinesOf(const FabricView& view);

// The distribution of the signal over some ports, mergeable: each
// collector's histogram of its own ports, added to every other's, gives
// the fabric's medians within half a percent (buckets 1% wide) without
// sending every port's value.
class CongestionHistogram {
 public:
  // Bucket i holds the values in [kBucketRatio^i, kBucketRatio^(i+1)).
  static constexpr double kBucketRatio = 1.01;

  // Ignores NaN, infinite and negative values.
  void Add(double value);
  void Merge(const CongestionHistogram& other);
  // Adds `count` values of bucket `bucket` (zeros: AddZeros). For the wire.
  void AddToBucket(int32_t bucket, uint64_t count);
  void AddZeros(uint64_t count) { zeros_ += count; }

  uint64_t count() const { return count_ + zeros_; }
  uint64_t zeros() const { return zeros_; }
  const std::map<int32_t, uint64_t>& buckets() const { return buckets_; }
  // The median as Median() would compute it over the values added, each
  // value at the middle of its bucket; ports: how many were added.
  CongestionBaselines::Of Baseline() const;

 private:
  // The value of the `rank`th smallest (0-based, < count()).
  double ValueAt(uint64_t rank) const;

  uint64_t zeros_ = 0;
  uint64_t count_ = 0;  // in buckets_
  std::map<int32_t, uint64_t> buckets_;
};

struct CongestionHistograms {
  CongestionHistogram hosts;
  CongestionHistogram switches;

  void Merge(const CongestionHistograms& other) {
    hosts.Merge(other.hosts);
    switches.Merge(other.switches);
  }
  CongestionBaselines Baselines() const {
    return {hosts.Baseline(), switches.Baseline()};
  }
};

// The histograms of `view`'s ports (a collector's own).
CongestionHistograms CongestionHistogramsOf(const FabricView& view);

// Warning findings, one per hotspot port; job = the one job whose layout
// places ranks on that NIC ("" otherwise, and for switch ports), group "".
// Empty when in.view or in.config is null.
std::vector<Finding> CongestionFindings(const AnalysisInput& in);

}  // namespace fabricdiag::analysis
