#include "analysis/analysis_config.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/yaml_reader.h"
#include "yaml-cpp/yaml.h"

namespace fabricdiag::analysis {
namespace {

// One settable number: where it lives and what it may be.
struct Field {
  const char* name;
  double* real = nullptr;
  int* integer = nullptr;
  double min = 0;
  double max = std::numeric_limits<double>::infinity();
};

struct Section {
  const char* name;  // "" for top-level keys
  std::vector<Field> fields;
};

std::vector<Section> Sections(AnalysisConfig* c) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  return {
      {"", {{"window_seconds", &c->window_seconds, nullptr, 1, 600}}},
      {"hysteresis",
       {{"open_after", nullptr, &c->hysteresis.open_after, 1, 100},
        {"clear_after", nullptr, &c->hysteresis.clear_after, 1, 100},
        {"recent_seconds", &c->hysteresis.recent_seconds, nullptr, 0, 600},
        {"strong_over_threshold", &c->hysteresis.strong_over_threshold, nullptr,
         1, kInf},
        {"strong_open_after", nullptr, &c->hysteresis.strong_open_after, 1,
         100},
        {"open_within", nullptr, &c->hysteresis.open_within, 1,
         kMaxOpenWithin}}},
      {"hot_expert_incast",
       {{"rx_over_median", &c->hot_expert_incast.rx_over_median, nullptr, 1,
         kInf},
        {"min_link_fraction", &c->hot_expert_incast.min_link_fraction, nullptr,
         0, 1},
        {"min_rx_bytes_per_second",
         &c->hot_expert_incast.min_rx_bytes_per_second, nullptr, 0, kInf},
        {"min_group_size", nullptr, &c->hot_expert_incast.min_group_size, 2,
         1e6}}},
      {"pfc_storm",
       {{"warning_pause_fraction", &c->pfc_storm.warning_pause_fraction,
         nullptr, 0, 1},
        {"critical_pause_fraction", &c->pfc_storm.critical_pause_fraction,
         nullptr, 0, 1},
        {"warning_pause_frames_per_second",
         &c->pfc_storm.warning_pause_frames_per_second, nullptr, 0, kInf},
        {"victim_pause_fraction", &c->pfc_storm.victim_pause_fraction, nullptr,
         0, 1}}},
      {"ecmp_imbalance",
       {{"max_over_mean", &c->ecmp_imbalance.max_over_mean, nullptr, 1, kInf},
        {"min_mean_utilization", &c->ecmp_imbalance.min_mean_utilization,
         nullptr, 0, 1},
        {"min_mean_bytes_per_second",
         &c->ecmp_imbalance.min_mean_bytes_per_second, nullptr, 0, kInf},
        {"cnp_over_median", &c->ecmp_imbalance.cnp_over_median, nullptr, 1,
         kInf},
        {"min_cnp_per_second", &c->ecmp_imbalance.min_cnp_per_second, nullptr,
         0, kInf}}},
      {"link_errors",
       {{"errors_per_second", &c->link_errors.errors_per_second, nullptr, 0,
         kInf},
        {"pre_fec_ber", &c->link_errors.pre_fec_ber, nullptr, 0, 1},
        {"post_fec_ber", &c->link_errors.post_fec_ber, nullptr, 0, 1}}},
      {"link_degraded",
       {{"min_rate_fraction", &c->link_degraded.min_rate_fraction, nullptr, 0,
         1}}},
      {"retransmissions",
       {{"events_per_second", &c->retransmissions.events_per_second, nullptr, 0,
         kInf}}},
      {"congestion",
       {{"cnp_per_second", &c->congestion.cnp_per_second, nullptr, 0, kInf},
        {"over_median", &c->congestion.over_median, nullptr, 1, kInf}}},
      {"straggler_nic",
       {{"below_median_fraction", &c->straggler_nic.below_median_fraction,
         nullptr, 0, 1},
        {"min_median_link_fraction", &c->straggler_nic.min_median_link_fraction,
         nullptr, 0, 1},
        {"min_median_bytes_per_second",
         &c->straggler_nic.min_median_bytes_per_second, nullptr, 0, kInf},
        {"min_group_size", nullptr, &c->straggler_nic.min_group_size, 2, 1e6},
        {"below_own_history_fraction",
         &c->straggler_nic.below_own_history_fraction, nullptr, 0, 1},
        {"history_passes", nullptr, &c->straggler_nic.history_passes, 1, 1e6},
        {"min_history_passes", nullptr, &c->straggler_nic.min_history_passes, 1,
         1e6},
        {"min_window_coverage", &c->straggler_nic.min_window_coverage, nullptr,
         0, 1},
        {"max_interval_over_median", &c->straggler_nic.max_interval_over_median,
         nullptr, 1, kInf}}},
      // The interval's range is the agent's --interval range (10 ms to 1 h).
      {"agent_down",
       {{"missed_intervals", nullptr, &c->agent_down.missed_intervals, 1, 1000},
        {"default_interval_seconds", &c->agent_down.default_interval_seconds,
         nullptr, 0.01, 3600}}},
      {"agent_missing",
       {{"after_seconds", &c->agent_missing.after_seconds, nullptr, 0, 86400}}},
  };
}

absl::Status SetField(const Field& f, const YAML::Node& value,
                      const std::string& path) {
  if (!value.IsScalar()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a number"));
  }
  double v;
  if (!YAML::convert<double>::decode(value, v) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected a number, got \"", value.Scalar(), "\""));
  }
  if (v < f.min || v > f.max) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", value.Scalar(), " is outside [", f.min, ", ", f.max, "]"));
  }
  if (f.integer != nullptr) {
    if (v != std::floor(v)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": expected a whole number, got ", value.Scalar()));
    }
    *f.integer = static_cast<int>(v);
  } else {
    *f.real = v;
  }
  return absl::OkStatus();
}

// Applies the keys of `map` to `section`'s fields; `prefix` is "" or
// "section.".
absl::Status ApplyMap(const YAML::Node& map, const Section& section,
                      const std::vector<Section>& all,
                      const std::string& prefix, AnalysisConfig* config) {
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>("");
    const std::string path = prefix + key;
    bool done = false;
    for (const Field& f : section.fields) {
      if (key == f.name) {
        absl::Status s = SetField(f, kv.second, path);
        if (!s.ok()) return s;
        done = true;
      }
    }
    if (!done && prefix.empty()) {
      for (const Section& sub : all) {
        if (*sub.name == '\0' || key != sub.name) continue;
        if (!kv.second.IsMap()) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": expected a mapping of settings"));
        }
        absl::Status s = ApplyMap(kv.second, sub, all, path + ".", config);
        if (!s.ok()) return s;
        done = true;
      }
    }
    if (!done) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": unknown setting"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AnalysisConfig> ParseAnalysisConfig(absl::string_view text) {
  AnalysisConfig config;
  // A config is a few dozen settings; anything much larger is a mistake.
  yaml::Limits limits;
  limits.max_bytes = 1 << 20;
  limits.max_values = 10000;
  absl::StatusOr<YAML::Node> loaded =
      yaml::LoadDocument(text, "analysis config", limits);
  if (!loaded.ok()) return loaded.status();
  const YAML::Node& root = *loaded;
  if (root.IsNull() || !root.IsDefined()) return config;  // all defaults
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(
        "analysis config: expected a mapping of settings at the top level");
  }
  const std::vector<Section> sections = Sections(&config);
  absl::Status s = ApplyMap(root, sections[0], sections, "", &config);
  if (!s.ok()) return s;
  if (config.pfc_storm.critical_pause_fraction <
      config.pfc_storm.warning_pause_fraction) {
    return absl::InvalidArgumentError(
        "pfc_storm.critical_pause_fraction: must not be below "
        "pfc_storm.warning_pause_fraction");
  }
  return config;
}

}  // namespace fabricdiag::analysis
