#include "analysis/straggler_nic.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "analysis/analyzer_util.h"
#include "analysis/nic_ports.h"

namespace fabricdiag::analysis {
namespace {

// A usable positive link rate, else 0 (unknown).
double KnownRate(double rate) {
  return std::isfinite(rate) && rate > 0 ? rate : 0;
}

// One distinct NIC of a group that reports both directions.
struct Member {
  NicRef ref;
  const PortView* port = nullptr;
  double throughput = 0;  // rx + tx, bytes/s
};

// The distinct (host, NIC) pairs of a group, sorted: two groups with the
// same key compare the same NICs.
using NicSetKey = std::vector<std::pair<uint32_t, uint32_t>>;

// Whether the reports cover enough of the window. In reports when the view
// says how many a full window holds: agents read at a fixed rate, so a read
// that ran late shortens the time from the report before the window to the
// newest one by up to an interval while the window still holds every
// sample (on a busy machine the newest sample alone, a 0.5 s recent view,
// can span 0.3 s). In seconds otherwise.
bool ReportsCoverWindow(const SampleEvidence& e, double window_seconds,
                        const StragglerNicConfig& cfg) {
  if (e.expected_reports > 0) {
    return e.reports >= cfg.min_window_coverage * e.expected_reports;
  }
  return e.report_span_seconds >= cfg.min_window_coverage * window_seconds;
}

// Whether the samples that moved cover enough of the window: the reports
// do, and the newest of them are not stale reads still waiting for their
// lump.
bool MovedCoversWindow(const SampleEvidence& e, double window_seconds,
                       const StragglerNicConfig& cfg) {
  if (e.expected_reports > 0) {
    return ReportsCoverWindow(e, window_seconds, cfg) &&
           e.span_seconds >= cfg.min_window_coverage * e.report_span_seconds;
  }
  return e.span_seconds >= cfg.min_window_coverage * window_seconds;
}

// Whether the window's samples of a port are evidence at all: they cover
// enough of the window, at even intervals. A view that does not say
// (reports 0) is taken at its word.
bool EvenlySampled(const SampleEvidence& e, double window_seconds,
                   const StragglerNicConfig& cfg) {
  if (e.reports <= 0) return true;
  if (e.intervals <= 0) {
    // Nothing moved: stale reads, or a NIC that truly moved nothing. A run
    // of zeros longer than any stale run the regularity test lets pass,
    // over the window, is the latter.
    return e.reports > cfg.max_interval_over_median &&
           ReportsCoverWindow(e, window_seconds, cfg);
  }
  if (!MovedCoversWindow(e, window_seconds, cfg)) return false;
  return e.max_interval_seconds <=
         cfg.max_interval_over_median * e.median_interval_seconds;
}

// One group in this window: the members that count and their median.
struct GroupWindow {
  std::vector<Member> members;
  double median = 0;
  bool busy = false;  // enough members, and the median is busy
};

GroupWindow CompareGroup(const FabricView& view, const StragglerNicConfig& cfg,
                         const LayoutPorts& ports,
                         absl::Span<const NicRef> nics) {
  GroupWindow g;
  // Each vector allocated once per group, not grown member by member.
  g.members.reserve(nics.size());
  for (const NicRef& ref : nics) {
    if (ref.nic == kNoNic) continue;
    const PortView* port = ports.At(ref.host, ref.nic);
    if (port == nullptr) continue;  // never reported: nothing to compare
    // A port that is down moves nothing because it is down: link_flap
    // reports it, and its zero must not drag the median down either.
    if (!port->s.link_up) continue;
    if (!Usable(port->s.rx_bytes) || !Usable(port->s.tx_bytes)) continue;
    const double throughput = port->s.rx_bytes + port->s.tx_bytes;
    if (!std::isfinite(throughput)) continue;
    // Zeros then a lump make a mean that says nothing about the NIC, in
    // either direction: it is neither judged nor part of the median.
    if (!EvenlySampled(port->samples, view.window_seconds, cfg)) continue;
    g.members.push_back({ref, port, throughput});
  }
  if (g.members.size() < static_cast<size_t>(std::max(cfg.min_group_size, 1))) {
    return g;
  }
  std::vector<double> throughput;
  std::vector<double> rates;
  throughput.reserve(g.members.size());
  rates.reserve(g.members.size());
  for (const Member& m : g.members) {
    throughput.push_back(m.throughput);
    const double rate = KnownRate(m.port->s.link_rate);
    if (rate > 0) rates.push_back(rate);
  }
  g.median = Median(std::move(throughput));
  // Only a busy group waits on its slowest member; an idle one (between
  // steps, during evaluation) has nothing to wait for.
  const double busy = rates.empty()
                          ? cfg.min_median_bytes_per_second
                          : cfg.min_median_link_fraction * Median(rates);
  g.busy = g.median > 0 && g.median >= busy;
  return g;
}

// An expert-parallel job's NICs all carry its all-to-all, routing skew
// included, so even its dp groups compare skewed members.
bool ExpertParallel(const LayoutModel& model) {
  return model.Degree(Dim::kEp) > 1;
}

// The baseline `m` is judged against, or null: none given (`baselines`
// null), none kept, or too few passes in it yet.
const StragglerBaselines::Baseline* BaselineOf(
    const StragglerBaselines::OfLayout* baselines,
    const StragglerNicConfig& cfg, const Member& m) {
  if (baselines == nullptr) return nullptr;
  const StragglerBaselines::Baseline* b =
      baselines->Find(m.ref.host, m.ref.nic);
  if (b == nullptr || b->passes < std::max(cfg.min_history_passes, 1)) {
    return nullptr;
  }
  return b;
}

// How the group moves now against its usual: its median over the median of
// its members' baselines, when enough members have one (else 1). A whole
// group slows down or speeds up together (a data-loader stall, an
// evaluation, the quiet between gradient bursts, the end of a warm-up): that
// is the job's pace, so each member's own bar follows it.
double GroupLevel(const GroupWindow& g,
                  const StragglerBaselines::OfLayout* baselines,
                  const StragglerNicConfig& cfg) {
  std::vector<double> usual;
  usual.reserve(g.members.size());
  for (const Member& m : g.members) {
    if (const StragglerBaselines::Baseline* b = BaselineOf(baselines, cfg, m)) {
      usual.push_back(b->bytes_per_second);
    }
  }
  if (usual.size() < static_cast<size_t>(std::max(cfg.min_group_size, 1))) {
    return 1;
  }
  const double median = Median(std::move(usual));
  return median > 0 ? g.median / median : 1;
}

// Whether `m` straggles in `g`; `*threshold` gets the throughput it had to
// stay above (the stricter of the group's and its own bar, the latter at
// the group's `level` when the group is slower than usual: a group busier
// than usual does not raise the bar of a member that kept its own pace).
bool Straggles(const Member& m, const GroupWindow& g,
               const StragglerBaselines::Baseline* baseline, double level,
               bool expert_parallel, const StragglerNicConfig& cfg,
               double* threshold) {
  *threshold = cfg.below_median_fraction * g.median;
  if (!(m.throughput < *threshold)) return false;
  if (baseline == nullptr) return !expert_parallel;
  const double own = cfg.below_own_history_fraction *
                     baseline->bytes_per_second * std::min(level, 1.0);
  *threshold = std::min(*threshold, own);
  return m.throughput < own;
}

// Whether `m` rose against its own baseline, at the group's `level`, as
// far as a straggler falls (a hot expert drawing incast moves 2.5x what it
// did and more), or without a baseline as far above its group's median:
// a window the baseline must not learn, or once the burst ends the NIC
// would straggle against it.
bool Surges(const Member& m, const GroupWindow& g,
            const StragglerBaselines::Baseline* baseline, double level,
            const StragglerNicConfig& cfg) {
  if (baseline == nullptr) {
    return m.throughput * cfg.below_median_fraction > g.median;
  }
  return m.throughput * cfg.below_own_history_fraction >
         baseline->bytes_per_second * level;
}

Finding MakeFinding(const LayoutModel& model, GroupId id, const Member& m,
                    const GroupWindow& g,
                    const StragglerBaselines::Baseline* baseline,
                    const AnalysisConfig& config) {
  const PortSignals& s = m.port->s;
  const std::string& host = model.Hosts()[m.ref.host];
  const std::string& nic = model.Nics()[m.ref.nic];
  const double median = g.median;
  const size_t reporting = g.members.size();
  const double ratio = m.throughput / median;

  Finding f;
  f.kind = kStragglerNicKind;
  f.severity = Severity::kWarning;
  f.job = model.job();
  f.group = GroupName(id);
  f.node = host;
  f.nodes = {host};
  f.device = nic;

  // Every rank placed on the NIC waits on it, not only this group's (with
  // tp=2 on shared NICs both TP ranks do).
  const absl::Span<const uint32_t> on_nic =
      model.RanksOnNic(m.ref.host, m.ref.nic);
  const std::vector<uint32_t> ranks(on_nic.begin(), on_nic.end());
  const std::string rank_list = FormatRanks(ranks);
  f.evidence_text["ranks"] = rank_list;

  f.evidence["throughput_bytes_per_second"] = m.throughput;
  f.evidence["rx_bytes_per_second"] = s.rx_bytes;
  f.evidence["tx_bytes_per_second"] = s.tx_bytes;
  f.evidence["group_median_bytes_per_second"] = median;
  f.evidence["ratio_to_median"] = ratio;
  f.evidence["group_members_reporting"] = static_cast<double>(reporting);
  std::string own;
  if (baseline != nullptr) {
    const double own_ratio = m.throughput / baseline->bytes_per_second;
    f.evidence["own_baseline_bytes_per_second"] = baseline->bytes_per_second;
    f.evidence["ratio_to_own_baseline"] = own_ratio;
    f.evidence["own_baseline_passes"] = baseline->passes;
    own = absl::StrCat(" and ", FormatRatio(own_ratio), " its own usual ",
                       FormatBytesRate(baseline->bytes_per_second));
  } else {
    f.evidence_text["own_baseline"] = "none yet: judged on its group alone";
  }
  const SampleEvidence& e = m.port->samples;
  if (e.reports > 0) {
    f.evidence["sample_intervals"] = e.intervals;
    f.evidence["sample_span_seconds"] = e.span_seconds;
    f.evidence["max_sample_interval_seconds"] = e.max_interval_seconds;
  }
  const double link_rate = KnownRate(s.link_rate);
  const double expected = KnownRate(s.expected_rate);
  if (link_rate > 0) f.evidence["link_rate_bytes_per_second"] = link_rate;
  if (expected > 0) f.evidence["expected_rate_bytes_per_second"] = expected;

  // Name the likely cause when the node says so: the same test
  // link_degraded applies (LinkDegradedConfig::min_rate_fraction).
  std::string cause;
  if (link_rate > 0 && expected > 0 &&
      link_rate < config.link_degraded.min_rate_fraction * expected) {
    cause = absl::StrCat("; its link runs at ", FormatBytesRate(link_rate),
                         " instead of ", FormatBytesRate(expected));
  }
  f.summary = absl::StrCat(
      host, " ", nic, " moves ", FormatBytesRate(m.throughput), " (rx+tx), ",
      FormatRatio(ratio), " the median of ", f.group, " (",
      FormatBytesRate(median), " over ", reporting, " NICs)", own, " in job ",
      f.job, ": it is the straggler the other ", reporting - 1,
      " NICs wait for at every collective (rank",
      ranks.size() == 1 ? " " : "s ", rank_list, " use",
      ranks.size() == 1 ? "s" : "", " it)", cause,
      ". Check its link speed, PCIe slot and the GPU and host behind it.");
  return f;
}

// Judges one group; appends its stragglers to `out`.
void AnalyzeGroup(const AnalysisInput& in, const LayoutModel& model,
                  const LayoutPorts& ports,
                  const StragglerBaselines::OfLayout* baselines, GroupId id,
                  absl::Span<const NicRef> nics, std::vector<Finding>* out) {
  const StragglerNicConfig& cfg = in.config->straggler_nic;
  const GroupWindow g = CompareGroup(*in.view, cfg, ports, nics);
  if (!g.busy) return;
  const bool ep = ExpertParallel(model);
  const double level = GroupLevel(g, baselines, cfg);
  for (const Member& m : g.members) {
    const StragglerBaselines::Baseline* baseline =
        BaselineOf(baselines, cfg, m);
    double threshold = 0;
    if (!Straggles(m, g, baseline, level, ep, cfg, &threshold)) continue;
    Finding f = MakeFinding(model, id, m, g, baseline, *in.config);
    if (baseline != nullptr && level < 1) {
      // Its own bar was lowered by this much (GroupLevel).
      f.evidence["group_level_to_usual"] = level;
    }
    SetUnderThreshold(m.throughput, threshold, &f);
    out->push_back(std::move(f));
  }
}

// The dp groups, then the ep groups, of `model` (degree > 1).
template <typename Fn>
void ForEachGroup(const LayoutModel& model, Fn fn) {
  for (Dim dim : {Dim::kDp, Dim::kEp}) {
    if (model.Degree(dim) <= 1) continue;
    for (uint32_t g = 0; g < model.NumGroups(dim); ++g) {
      fn(GroupId{dim, g}, model.GroupNics(dim, g));
    }
  }
}

void AnalyzeJob(const AnalysisInput& in, const LayoutModel& model,
                const LayoutPorts& ports, std::vector<Finding>* out) {
  // dp first: when an ep group has the same NICs, the dp group (the one
  // every dense job has) is the one that reports.
  // NIC set -> indices into `out` of the findings of the group that had it.
  std::map<NicSetKey, std::vector<size_t>> examined;
  std::optional<StragglerBaselines::OfLayout> baselines;
  if (in.straggler_baselines != nullptr) {
    baselines = in.straggler_baselines->Of(model);
  }
  ForEachGroup(model, [&](GroupId id, absl::Span<const NicRef> nics) {
    NicSetKey key;
    key.reserve(nics.size());
    for (const NicRef& ref : nics) key.emplace_back(ref.host, ref.nic);
    std::sort(key.begin(), key.end());
    auto [it, fresh] = examined.try_emplace(std::move(key));
    if (!fresh) {
      for (size_t i : it->second) {
        std::string& same = (*out)[i].evidence_text["same_nics_as"];
        absl::StrAppend(&same, same.empty() ? "" : ",", GroupName(id));
      }
      return;
    }
    const size_t before = out->size();
    AnalyzeGroup(in, model, ports, baselines ? &*baselines : nullptr, id, nics,
                 out);
    for (size_t i = before; i < out->size(); ++i) {
      it->second.push_back(i);
    }
  });
}

}  // namespace

std::vector<Finding> StragglerNicFindings(const AnalysisInput& in) {
  std::vector<Finding> out;
  if (in.view == nullptr || in.config == nullptr) return out;
  std::optional<NicPorts> local;
  const NicPorts& ports = NicPortsOf(in, &local);
  for (const LayoutModel* model : in.layouts) {
    if (model != nullptr) AnalyzeJob(in, *model, ports.Of(*model), &out);
  }
  // Within a job the loops already run in a fixed order; only the order of
  // in.layouts is arbitrary.
  std::stable_sort(
      out.begin(), out.end(),
      [](const Finding& a, const Finding& b) { return a.job < b.job; });
  return out;
}

void StragglerBaselines::Update(const AnalysisInput& in) {
  Update(absl::MakeConstSpan(&in, 1));
}

void StragglerBaselines::Update(absl::Span<const AnalysisInput> views) {
  auto judged_over = [](const AnalysisInput& in) {
    return in.view != nullptr && in.config != nullptr;
  };
  auto first = std::find_if(views.begin(), views.end(), judged_over);
  if (first == views.end()) return;
  const int history = std::max(first->config->straggler_nic.history_passes, 1);
  ++pass_;
  for (const AnalysisInput& in : views) {
    if (judged_over(in)) Judge(in);
  }
  Fold(history);
}

void StragglerBaselines::Judge(const AnalysisInput& in) {
  const StragglerNicConfig& cfg = in.config->straggler_nic;
  std::optional<NicPorts> local;
  const NicPorts& ports = NicPortsOf(in, &local);
  for (const LayoutModel* model : in.layouts) {
    if (model == nullptr) continue;
    const LayoutPorts model_ports = ports.Of(*model);
    Job& job = Align(*model);
    job.seen = pass_;
    // The entries as they are before this pass, by index (when not too
    // sparse): what the groups are judged against, and where the NICs that
    // have one record what this pass judged.
    std::vector<Entry*> cells;
    IndexCells(job, *model, &cells);
    OfLayout judged;
    judged.job_ = &job;
    judged.model_ = model;
    judged.aligned_ = true;
    judged.dense_.assign(cells.begin(), cells.end());
    const bool ep = ExpertParallel(*model);
    // A NIC is in a dp and an ep group: it is folded in once, and not at
    // all when any of its groups finds it unusual. Its entry holds what
    // this pass judged until every group was judged (below); a new entry
    // has no baseline (passes 0) until then.
    const auto record = [this](Entry& e, const Member& m, bool unusual) {
      if (e.last_judged != pass_) {
        e.last_judged = pass_;
        e.window = m.throughput;
        e.unusual = false;
      }
      e.unusual = e.unusual || unusual;
    };
    // NICs without an entry yet, made once every group is judged: adding
    // one may move the others (`cells` and `judged` point at them).
    std::vector<std::pair<Member, bool>> fresh;
    ForEachGroup(*model, [&](GroupId, absl::Span<const NicRef> refs) {
      const GroupWindow g = CompareGroup(*in.view, cfg, model_ports, refs);
      if (!g.busy) return;  // an idle group says nothing of its NICs
      const double level = GroupLevel(g, &judged, cfg);
      for (const Member& m : g.members) {
        const StragglerBaselines::Baseline* baseline =
            BaselineOf(&judged, cfg, m);
        double threshold = 0;
        const bool unusual =
            Straggles(m, g, baseline, level, ep, cfg, &threshold) ||
            Surges(m, g, baseline, level, cfg);
        Entry* e = nullptr;
        const size_t nics = model->Nics().size();
        if (!cells.empty() && m.ref.host < model->Hosts().size() &&
            m.ref.nic < nics) {
          e = cells[size_t{m.ref.host} * nics + m.ref.nic];
        } else if (auto it = job.entries.find(CellKey(m.ref.host, m.ref.nic));
                   it != job.entries.end()) {
          e = &it->second;
        }
        if (e != nullptr) {
          record(*e, m, unusual);
        } else {
          fresh.emplace_back(m, unusual);
        }
      }
    });
    for (const auto& [m, unusual] : fresh) {
      auto [it, made] = job.entries.try_emplace(CellKey(m.ref.host, m.ref.nic));
      if (made) ++size_;
      record(it->second, m, unusual);
    }
  }
}

void StragglerBaselines::Fold(int history) {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Job& job = it->second;
    for (auto e = job.entries.begin(); e != job.entries.end();) {
      Entry& entry = e->second;
      if (entry.last_judged == pass_ && !entry.unusual) {
        Baseline& b = entry.baseline;
        // A plain mean until the baseline holds `history` windows, then an
        // exponentially weighted one: early windows count fully, old ones
        // fade.
        b.passes = std::min(b.passes + 1, history);
        b.bytes_per_second += (entry.window - b.bytes_per_second) / b.passes;
      }
      if (pass_ - entry.last_judged > static_cast<uint64_t>(history)) {
        job.entries.erase(e++);
        --size_;
      } else {
        ++e;
      }
    }
    // A declared job's names stay, so its lookups need no new names next
    // pass.
    if (job.entries.empty() && job.seen != pass_) {
      jobs_.erase(it++);
    } else {
      ++it;
    }
  }
}

void StragglerBaselines::Seed(const std::vector<Finding>& open) {
  for (const Finding& f : open) {
    if (f.kind != kStragglerNicKind) continue;
    auto usual = f.evidence.find("own_baseline_bytes_per_second");
    auto passes = f.evidence.find("own_baseline_passes");
    if (usual == f.evidence.end() || passes == f.evidence.end() ||
        !(usual->second > 0) || !std::isfinite(usual->second) ||
        !(passes->second >= 1)) {
      continue;
    }
    Entry& e = EntryOf(f.job, f.node, f.device);
    e.last_judged = pass_;
    e.baseline.bytes_per_second = usual->second;
    // Saturated passes (history_passes) are clamped again by Update().
    e.baseline.passes = static_cast<int>(std::min(passes->second, 1e6));
  }
}

}  // namespace fabricdiag::analysis
