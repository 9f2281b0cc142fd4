#include "cli/report_rates.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/report.h"

namespace fabricdiag::cli {
namespace {

constexpr char kKept[] =
    "the collector keeps the newest --window_samples rates of each series "
    "(600 by default: 10 minutes at a 1 s agent interval) and serves at most "
    "the last hour of them";

double Gbps(double bytes_per_second) { return bytes_per_second * 8 / 1e9; }

struct Direction {
  bool has = false;
  double mean = 0;
  double peak = 0;
};

// The points of `points` in [since, until]; since 0: no lower bound.
Direction Fold(absl::Span<const v1::SeriesPoint> points, int64_t since,
               int64_t until, int64_t* newest) {
  Direction d;
  double sum = 0;
  size_t n = 0;
  for (const v1::SeriesPoint& p : points) {
    if (p.unix_nanos() < since || p.unix_nanos() > until) continue;
    sum += p.rate();
    d.peak = n == 0 ? p.rate() : std::max(d.peak, p.rate());
    *newest = std::max(*newest, p.unix_nanos());
    ++n;
  }
  if (n == 0) return d;
  d.has = true;
  d.mean = sum / static_cast<double>(n);
  return d;
}

// One NIC over the range, in bytes per second.
struct NicStat {
  bool reporting = false;
  double mean = 0;
  double peak = 0;
  double predicted = 0;  // bytes per step, max(tx, rx)
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

bool FarOff(double mean_gbps, double expected_gbps) {
  if (expected_gbps <= 0) return mean_gbps >= 1.0;
  const double ratio = mean_gbps / expected_gbps;
  return ratio < 1 / kFarOff || ratio > kFarOff;
}

}  // namespace

std::vector<NicRates> LayoutNics(const analysis::LayoutModel& model) {
  std::vector<uint32_t> by_name(model.Nics().size());
  for (uint32_t i = 0; i < by_name.size(); ++i) by_name[i] = i;
  std::sort(by_name.begin(), by_name.end(), [&](uint32_t a, uint32_t b) {
    return model.Nics()[a] < model.Nics()[b];
  });
  std::vector<NicRates> nics;
  for (uint32_t host = 0; host < model.Hosts().size(); ++host) {
    for (uint32_t nic : by_name) {
      if (model.RanksOnNic(host, nic).empty()) continue;
      NicRates r;
      r.host = model.Hosts()[host];
      r.nic = model.Nics()[nic];
      nics.push_back(std::move(r));
    }
  }
  return nics;
}

std::string FormatGbps(std::optional<double> gbps) {
  return gbps.has_value() ? absl::StrFormat("%.1f", *gbps) : "-";
}

std::string FarOffText(const GroupRate& group) {
  if (!group.far_off) return "";
  if (!group.mean_gbps.has_value() || !group.expected_gbps.has_value() ||
      *group.expected_gbps <= 0) {
    return "far off";
  }
  return absl::StrFormat("far off: %.2fx",
                         *group.mean_gbps / *group.expected_gbps);
}

std::string RatesSummary(const GroupRates& rates) {
  return absl::StrCat(
      "Means and peaks in Gb/s of ", rates.reporting, " of ", rates.nics,
      " NICs from ", ReportTime(rates.from_unix_nanos), " to ",
      ReportTime(rates.to_unix_nanos),
      " (each NIC's busier direction of its RDMA port counters). Expected: ",
      rates.basis == "plan"
          ? "the plan's traffic per NIC (fabricdiag plan) at the job's "
            "measured pace"
          : "the median group of the dimension",
      "; far off: under half or over twice that.");
}

std::string RatesNotServedNote(int64_t until_unix_nanos,
                               int64_t now_unix_nanos) {
  return absl::StrCat("No per-group rates: the range ended at ",
                      ReportTime(until_unix_nanos), ", ",
                      (now_unix_nanos - until_unix_nanos) / 1'000'000'000,
                      " s before the report, and ", kKept, ".");
}

GroupRatesResult BuildGroupRates(const analysis::LayoutModel& model,
                                 const analysis::TrafficModel* traffic,
                                 absl::Span<const analysis::Dim> dims,
                                 absl::Span<const NicRates> nics,
                                 int64_t since_unix_nanos,
                                 int64_t until_unix_nanos) {
  GroupRatesResult result;
  if (model.Nics().empty()) {
    result.note =
        "No per-group rates: the layout names no NICs (neither rails nor a "
        "nic per rank), so the report cannot tell which counters are the "
        "job's.";
    return result;
  }
  // (host, NIC) indices -> what was measured and predicted.
  std::map<std::pair<uint32_t, uint32_t>, NicStat> stats;
  int64_t oldest = std::numeric_limits<int64_t>::max();
  int64_t newest_held = 0;
  int64_t newest = 0;
  uint32_t reporting = 0;
  for (const NicRates& n : nics) {
    for (const auto* points : {&n.rx, &n.tx}) {
      for (const v1::SeriesPoint& p : *points) {
        oldest = std::min(oldest, p.unix_nanos());
        newest_held = std::max(newest_held, p.unix_nanos());
      }
    }
    const std::optional<uint32_t> host = model.HostIndex(n.host);
    const std::optional<uint32_t> nic = model.NicIndex(n.nic);
    if (!host.has_value() || !nic.has_value()) continue;
    NicStat& s = stats[{*host, *nic}];
    const Direction rx =
        Fold(n.rx, since_unix_nanos, until_unix_nanos, &newest);
    const Direction tx =
        Fold(n.tx, since_unix_nanos, until_unix_nanos, &newest);
    s.reporting = rx.has || tx.has;
    s.mean = std::max(rx.mean, tx.mean);
    s.peak = std::max(rx.peak, tx.peak);
    if (traffic != nullptr) {
      const std::optional<analysis::NicBytes> p =
          traffic->PredictedNicBytesPerStep(n.host, n.nic);
      if (p.has_value()) s.predicted = std::max(p->tx, p->rx);
    }
    if (s.reporting) ++reporting;
  }
  if (newest_held == 0) {
    result.note =
        "No per-group rates: this collector holds no rates of the job's NICs "
        "(their agents do not report to it; in a cluster, each collector "
        "holds the rates of the agents that report to it).";
    return result;
  }
  if (reporting == 0) {
    result.note = until_unix_nanos < oldest
                      ? absl::StrCat(
                            "No per-group rates: the collector no longer holds "
                            "rates of this range; the oldest it holds is from ",
                            ReportTime(oldest), " (", kKept, ").")
                      : absl::StrCat(
                            "No per-group rates: none in this range; the "
                            "newest the collector holds is from ",
                            ReportTime(newest_held), ".");
    return result;
  }

  GroupRates rates;
  rates.from_unix_nanos = std::max(since_unix_nanos, oldest);
  rates.to_unix_nanos = newest;
  rates.nics = static_cast<uint32_t>(nics.size());
  rates.reporting = reporting;
  // The job's pace in steps per second, over the NICs both measured and
  // predicted.
  double measured = 0;
  double predicted = 0;
  for (const auto& [key, s] : stats) {
    if (!s.reporting) continue;
    measured += s.mean;
    predicted += s.predicted;
  }
  const bool by_plan = predicted > 0;
  const double pace = by_plan ? measured / predicted : 0;
  rates.basis = by_plan ? "plan" : "median";

  for (analysis::Dim dim : dims) {
    DimensionRates d;
    d.dim = std::string(analysis::DimName(dim));
    d.groups = model.NumGroups(dim);
    std::vector<GroupRate> groups;
    groups.reserve(d.groups);
    for (uint32_t g = 0; g < d.groups; ++g) {
      GroupRate r;
      r.group = analysis::GroupName({dim, g});
      double sum = 0;
      double expected = 0;
      double peak = 0;
      for (const analysis::NicRef& ref : model.GroupNics(dim, g)) {
        if (ref.nic == analysis::kNoNic) continue;
        ++r.nics;
        auto it = stats.find({ref.host, ref.nic});
        if (it == stats.end() || !it->second.reporting) continue;
        ++r.reporting;
        sum += it->second.mean;
        expected += it->second.predicted * pace;
        peak = std::max(peak, it->second.peak);
      }
      if (r.reporting > 0) {
        r.mean_gbps = Gbps(sum / r.reporting);
        r.peak_gbps = Gbps(peak);
        if (by_plan) r.expected_gbps = Gbps(expected / r.reporting);
      }
      groups.push_back(std::move(r));
    }
    if (!by_plan) {
      std::vector<double> means;
      for (const GroupRate& r : groups) {
        if (r.mean_gbps.has_value()) means.push_back(*r.mean_gbps);
      }
      if (!means.empty()) {
        const double median = Median(std::move(means));
        for (GroupRate& r : groups) {
          if (r.mean_gbps.has_value()) r.expected_gbps = median;
        }
      }
    }
    for (GroupRate& r : groups) {
      r.far_off = r.mean_gbps.has_value() && r.expected_gbps.has_value() &&
                  FarOff(*r.mean_gbps, *r.expected_gbps);
      if (r.far_off) ++d.far_off;
    }
    // Far-off groups first, each part in group order.
    std::stable_partition(groups.begin(), groups.end(),
                          [](const GroupRate& r) { return r.far_off; });
    if (groups.size() > kRateGroupsShown) groups.resize(kRateGroupsShown);
    d.shown = std::move(groups);
    rates.dimensions.push_back(std::move(d));
  }

  std::vector<std::string> notes;
  if (since_unix_nanos < oldest) {
    notes.push_back(absl::StrCat(
        "The rates cover the range from ", ReportTime(oldest),
        " only: the oldest the collector still holds (", kKept, ")."));
  }
  if (reporting < rates.nics) {
    notes.push_back(absl::StrCat(rates.nics - reporting, " of the ", rates.nics,
                                 " NICs of the layout have no rate in the "
                                 "range."));
  }
  if (!by_plan) {
    notes.push_back(
        "The layout predicts no traffic (no model section, or no NIC it "
        "carries): each group is held against the median group of its "
        "dimension.");
  }
  for (const std::string& n : notes) {
    absl::StrAppend(&result.note, result.note.empty() ? "" : " ", n);
  }
  result.rates = std::move(rates);
  return result;
}

}  // namespace fabricdiag::cli
