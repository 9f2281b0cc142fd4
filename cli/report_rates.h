// The per-group rates of a job report (docs/cli.md, "Per-group rates"):
// for each parallel dimension of the layout, the measured rates of every
// group's NICs over the report's range, next to what the plan expects of
// them, flagged when far off.
//
// The collector keeps the recent rates of every series it ingests (its
// --window_samples, 600 samples by default: 10 minutes at a 1 s agent
// interval) and serves at most the last hour of them (GetSeries); the report
// reads the RDMA port data counters of each (host, NIC) of the layout
// (cli/report_command.cc) and BuildGroupRates folds them:
//
//   - a NIC's rate is its busier direction: the larger of its RX and TX
//     means (peaks); a group's mean is the mean of its NICs' means, its
//     peak the largest of their peaks;
//   - what the plan expects of a NIC is its predicted bytes per training
//     step (analysis/traffic_model.h, every dimension it carries) times the
//     job's pace, measured steps per second = the sum of the NICs' measured
//     means over the sum of their predictions: the plan gives the shape of
//     the traffic, the counters its magnitude. A layout without a `model`
//     section predicts nothing; then a group is held against the median
//     group of its dimension;
//   - a group is far off when its mean is under half or over twice what is
//     expected (over 1 Gb/s when nothing is expected).
//
//   GroupRatesResult r = BuildGroupRates(model, &traffic, nics, since, until);
//
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "analysis/layout_model.h"
#include "analysis/traffic_model.h"
#include "proto/collector.pb.h"

namespace fabricdiag::cli {

// The last seconds of rates GetSeries serves at most
// (collector/api/query_service.cc).
inline constexpr int64_t kSeriesServedSeconds = 3600;
// Groups each dimension lists at most, far-off ones first.
inline constexpr size_t kRateGroupsShown = 24;
// Far off: a mean under 1/kFarOff or over kFarOff times what is expected.
inline constexpr double kFarOff = 2.0;

// The rates of one NIC of the layout as the collector answered them, in
// bytes per second, every point it sent (also those before the range: the
// oldest says how far back it keeps them).
struct NicRates {
  std::string host;
  std::string nic;
  std::vector<v1::SeriesPoint> rx;
  std::vector<v1::SeriesPoint> tx;
};

struct GroupRate {
  std::string group;  // "dp:3"
  uint32_t nics = 0;
  uint32_t reporting = 0;  // NICs with a rate in the range
  // Gb/s; unset without a reporting NIC.
  std::optional<double> mean_gbps;
  std::optional<double> peak_gbps;
  std::optional<double> expected_gbps;
  bool far_off = false;
};

struct DimensionRates {
  std::string dim;  // "tp", "pp", "dp", "cp", "ep"
  uint32_t groups = 0;
  uint32_t far_off = 0;
  std::vector<GroupRate> shown;  // at most kRateGroupsShown
};

struct GroupRates {
  // What the rates cover: from the later of the range's start and the
  // oldest rate the collector holds, to the newest rate in the range.
  int64_t from_unix_nanos = 0;
  int64_t to_unix_nanos = 0;
  // "plan" (the plan's shape at the measured pace) or "median" (the
  // dimension's median group: the layout predicts no traffic).
  std::string basis;
  uint32_t nics = 0;
  uint32_t reporting = 0;
  std::vector<DimensionRates> dimensions;
};

struct GroupRatesResult {
  std::optional<GroupRates> rates;  // unset: nothing to show
  // Why there is nothing, or what the rates leave out; "" when they cover
  // the whole range.
  std::string note;
};

// `traffic` null: no prediction. `dims` the dimensions to list (degree > 1).
// `since` 0: the range starts with the oldest rate held.
GroupRatesResult BuildGroupRates(const analysis::LayoutModel& model,
                                 const analysis::TrafficModel* traffic,
                                 absl::Span<const analysis::Dim> dims,
                                 absl::Span<const NicRates> nics,
                                 int64_t since_unix_nanos,
                                 int64_t until_unix_nanos);

// The layout's (host, NIC) pairs, hosts in layout order, then by NIC name;
// NICs the layout does not name are left out.
std::vector<NicRates> LayoutNics(const analysis::LayoutModel& model);

// "12.3" (Gb/s, one decimal), "-" when unset.
std::string FormatGbps(std::optional<double> gbps);
// "far off: 0.25x" (the mean over what is expected), "far off" when
// nothing was expected, "" when not far off.
std::string FarOffText(const GroupRate& group);
// The rates' coverage and basis in words (times and numbers only: safe in
// every format): "Means and peaks of 16 of 16 NICs from T to T, the busier
// direction of each; expected: ...".
std::string RatesSummary(const GroupRates& rates);

// What a report says when the collector was not asked or could not answer.
std::string RatesNotServedNote(int64_t until_unix_nanos,
                               int64_t now_unix_nanos);

}  // namespace fabricdiag::cli
