// Small helpers the rate analyzers share: robust statistics over a group's
// members, the ports a job's ranks use, and numbers in words an ops engineer
// reads at a glance.
//
//   double m = Median({3, 1, 2});           // 2
//   FormatBytesRate(38.2e9)                 // "38.2 GB/s"
//   FormatFraction(0.943)                   // "94%"
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "analysis/fabric_view.h"
#include "analysis/finding.h"
#include "analysis/layout_model.h"

namespace fabricdiag::analysis {

// Median of the values that are not NaN; NaN when there are none. Takes a
// copy because it reorders.
double Median(std::vector<double> values);

// Sets the finding's kOverThresholdEvidence for a fault that is a value
// above `threshold`: value / threshold. Leaves it unset unless both are
// finite and the threshold is positive.
void SetOverThreshold(double value, double threshold, Finding* f);
// The same for a fault that is a value below `threshold` (a straggler, a
// slow link): threshold / value; a value of 0 reads as kMaxOverThreshold
// times past, so the evidence stays a finite number.
void SetUnderThreshold(double value, double threshold, Finding* f);
inline constexpr double kMaxOverThreshold = 1000;

// "38.2 GB/s", "950 MB/s", "12 B/s" (decimal units, 3 significant digits).
std::string FormatBytesRate(double bytes_per_second);
// "94%", "0.5%", "12.3%".
std::string FormatFraction(double fraction);
// "1.23k/s", "45/s", "0.2/s".
std::string FormatPerSecond(double per_second);
// "3.2x".
std::string FormatRatio(double ratio);

// The port a rank's NIC maps to in the view (host + NIC name of the
// layout), or null when the layout names no NIC or the node has not reported
// it.
const PortView* RankPort(const FabricView& view, const LayoutModel& model,
                         uint32_t rank);

// "0-3,8,12-15": a compact list of ranks (sorted ascending).
std::string FormatRanks(std::vector<uint32_t> ranks);

}  // namespace fabricdiag::analysis
