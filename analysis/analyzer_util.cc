#include "analysis/analyzer_util.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fabricdiag::analysis {

double Median(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(),
                              [](double v) { return std::isnan(v); }),
               values.end());
  if (values.empty()) return kAbsent;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  if (values.size() % 2 == 1) return values[mid];
  const double upper = values[mid];
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

namespace {

// 3 significant digits, trailing zeros dropped ("38.2", "950", "1.5").
std::string Sig3(double v) {
  std::string s = absl::StrFormat("%.3g", v);
  if (s.find('e') != std::string::npos) s = absl::StrFormat("%.0f", v);
  return s;
}

}  // namespace

void SetOverThreshold(double value, double threshold, Finding* f) {
  if (!std::isfinite(value) || !std::isfinite(threshold) || threshold <= 0) {
    return;
  }
  f->evidence[kOverThresholdEvidence] =
      std::min(std::max(value, 0.0) / threshold, kMaxOverThreshold);
}

void SetUnderThreshold(double value, double threshold, Finding* f) {
  if (!std::isfinite(value) || !std::isfinite(threshold) || threshold <= 0) {
    return;
  }
  f->evidence[kOverThresholdEvidence] = value <= threshold / kMaxOverThreshold
                                            ? kMaxOverThreshold
                                            : threshold / value;
}

std::string FormatBytesRate(double b) {
  if (std::isnan(b)) return "n/a";
  static constexpr struct {
    double scale;
    const char* unit;
  } kUnits[] = {{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "kB/s"}};
  for (const auto& u : kUnits) {
    if (std::fabs(b) >= u.scale)
      return absl::StrCat(Sig3(b / u.scale), " ", u.unit);
  }
  return absl::StrCat(Sig3(b), " B/s");
}

std::string FormatFraction(double f) {
  if (std::isnan(f)) return "n/a";
  const double pct = f * 100;
  if (std::fabs(pct) >= 10) return absl::StrFormat("%.0f%%", pct);
  return absl::StrCat(Sig3(pct), "%");
}

std::string FormatPerSecond(double v) {
  if (std::isnan(v)) return "n/a";
  if (std::fabs(v) >= 1e6) return absl::StrCat(Sig3(v / 1e6), "M/s");
  if (std::fabs(v) >= 1e3) return absl::StrCat(Sig3(v / 1e3), "k/s");
  return absl::StrCat(Sig3(v), "/s");
}

std::string FormatRatio(double r) {
  if (std::isnan(r)) return "n/a";
  return absl::StrCat(Sig3(r), "x");
}

const PortView* RankPort(const FabricView& view, const LayoutModel& model,
                         uint32_t rank) {
  absl::string_view nic = model.NicName(rank);
  if (nic.empty()) return nullptr;
  return view.Find(model.HostName(rank), nic);
}

std::string FormatRanks(std::vector<uint32_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    absl::StrAppend(&out, ranks[i]);
    if (j > i) absl::StrAppend(&out, "-", ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace fabricdiag::analysis
