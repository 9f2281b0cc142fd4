#include "analysis/straggler_nic.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "analysis/analyzer_util.h"

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

Finding MakeFinding(const LayoutModel& model, GroupId id, const Member& m,
                    double median, size_t reporting,
                    const AnalysisConfig& config) {
  const PortSignals& s = m.port->s;
  const std::string& host = model.Hosts()[m.ref.host];
  const std::string& nic = model.Nics()[m.ref.nic];
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
      FormatBytesRate(median), " over ", reporting, " NICs) in job ", f.job,
      ": it is the straggler the other ", reporting - 1,
      " NICs wait for at every collective (rank",
      ranks.size() == 1 ? " " : "s ", rank_list, " use",
      ranks.size() == 1 ? "s" : "", " it)", cause,
      ". Check its link speed, PCIe slot and the GPU and host behind it.");
  return f;
}

// Judges one group; appends its stragglers to `out`.
void AnalyzeGroup(const FabricView& view, const AnalysisConfig& config,
                  const LayoutModel& model, GroupId id,
                  absl::Span<const NicRef> nics, std::vector<Finding>* out) {
  const StragglerNicConfig& cfg = config.straggler_nic;
  std::vector<Member> members;
  for (const NicRef& ref : nics) {
    if (ref.nic == kNoNic) continue;
    const PortView* port =
        view.Find(model.Hosts()[ref.host], model.Nics()[ref.nic]);
    if (port == nullptr) continue;  // never reported: nothing to compare
    // A port that is down moves nothing because it is down: link_flap
    // reports it, and its zero must not drag the median down either.
    if (!port->s.link_up) continue;
    if (!Usable(port->s.rx_bytes) || !Usable(port->s.tx_bytes)) continue;
    const double throughput = port->s.rx_bytes + port->s.tx_bytes;
    if (!std::isfinite(throughput)) continue;
    members.push_back({ref, port, throughput});
  }
  if (members.size() < static_cast<size_t>(std::max(cfg.min_group_size, 1))) {
    return;
  }
  std::vector<double> throughput;
  std::vector<double> rates;
  for (const Member& m : members) {
    throughput.push_back(m.throughput);
    const double rate = KnownRate(m.port->s.link_rate);
    if (rate > 0) rates.push_back(rate);
  }
  const double median = Median(std::move(throughput));
  // Only a busy group waits on its slowest member; an idle one (between
  // steps, during evaluation) has nothing to wait for.
  const double busy = rates.empty()
                          ? cfg.min_median_bytes_per_second
                          : cfg.min_median_link_fraction * Median(rates);
  if (!(median > 0) || median < busy) return;
  for (const Member& m : members) {
    if (m.throughput < cfg.below_median_fraction * median) {
      Finding f = MakeFinding(model, id, m, median, members.size(), config);
      SetUnderThreshold(m.throughput, cfg.below_median_fraction * median, &f);
      out->push_back(std::move(f));
    }
  }
}

void AnalyzeJob(const FabricView& view, const AnalysisConfig& config,
                const LayoutModel& model, std::vector<Finding>* out) {
  // dp first: when an ep group has the same NICs, the dp group (the one
  // every dense job has) is the one that reports.
  // NIC set -> indices into `out` of the findings of the group that had it.
  std::map<NicSetKey, std::vector<size_t>> examined;
  for (Dim dim : {Dim::kDp, Dim::kEp}) {
    if (model.Degree(dim) <= 1) continue;
    for (uint32_t g = 0; g < model.NumGroups(dim); ++g) {
      const GroupId id{dim, g};
      const absl::Span<const NicRef> nics = model.GroupNics(dim, g);
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
        continue;
      }
      const size_t before = out->size();
      AnalyzeGroup(view, config, model, id, nics, out);
      for (size_t i = before; i < out->size(); ++i) {
        it->second.push_back(i);
      }
    }
  }
}

}  // namespace

std::vector<Finding> StragglerNicFindings(const AnalysisInput& in) {
  std::vector<Finding> out;
  if (in.view == nullptr || in.config == nullptr) return out;
  for (const LayoutModel* model : in.layouts) {
    if (model != nullptr) AnalyzeJob(*in.view, *in.config, *model, &out);
  }
  // Within a job the loops already run in a fixed order; only the order of
  // in.layouts is arbitrary.
  std::stable_sort(
      out.begin(), out.end(),
      [](const Finding& a, const Finding& b) { return a.job < b.job; });
  return out;
}

}  // namespace fabricdiag::analysis
