#include "analysis/hot_expert_incast.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/analyzer_util.h"
#include "analysis/nic_ports.h"

namespace fabricdiag::analysis {
namespace {

// Transmitting pause at least 1% of the time is more than a healthy RoCE
// fabric shows (see PfcStormConfig: "a healthy RoCE fabric pauses well
// under 1%"); a hot receiver that pauses spreads its congestion upstream.
// TODO(config): move to HotExpertIncastConfig.
constexpr double kCriticalTxPauseFraction = 0.01;
// The same 1% for drivers with frame counters only: a 100 Gb/s port needs
// ~2,980 max-quanta pause frames/s to stay paused (PfcStormConfig), so
// ~30 frames/s.
constexpr double kCriticalTxPauseFramesPerSecond = 30;

// Largest usable per-priority value and its priority; {kAbsent, -1} when no
// priority reports one.
std::pair<double, int> MaxPriority(const PerPriority& values) {
  std::pair<double, int> best{kAbsent, -1};
  for (int p = 0; p < kPriorities; ++p) {
    const double v = values[static_cast<size_t>(p)];
    if (Usable(v) && (best.second < 0 || v > best.first)) best = {v, p};
  }
  return best;
}

// One distinct NIC of an EP group that reports its receive rate.
struct Member {
  NicRef ref;
  const PortView* port = nullptr;
  double rx = 0;
};

// "12-15", "0-7,16-23": the experts of one MoE layer that `ranks` hold, or
// "" when the layout gives no model.experts. Ranges are merged so that a
// large expert count never lists experts one by one.
std::string FormatExperts(const LayoutModel& model,
                          const std::vector<uint32_t>& ranks) {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (uint32_t r : ranks) {
    std::optional<ExpertRange> e = model.ExpertsOf(r);
    if (!e.has_value() || e->end <= e->begin) continue;
    ranges.emplace_back(e->begin, e->end);
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranges.size();) {
    uint32_t begin = ranges[i].first;
    uint32_t end = ranges[i].second;
    size_t j = i + 1;
    while (j < ranges.size() && ranges[j].first <= end) {
      end = std::max(end, ranges[j].second);
      ++j;
    }
    parts.push_back(end - begin == 1 ? absl::StrCat(begin)
                                     : absl::StrCat(begin, "-", end - 1));
    i = j;
  }
  return absl::StrJoin(parts, ",");
}

// "a, b and c".
std::string JoinWords(const std::vector<std::string>& words) {
  if (words.size() <= 1) return absl::StrJoin(words, "");
  return absl::StrCat(absl::StrJoin(words.begin(), words.end() - 1, ", "),
                      " and ", words.back());
}

// The group's ranks behind the NIC `ref` (a NIC carries every rank placed on
// it; ranks of other groups sharing it are judged in their own group).
std::vector<uint32_t> RanksBehind(const LayoutModel& model, uint32_t group,
                                  const NicRef& ref) {
  std::vector<uint32_t> ranks;
  for (uint32_t r : model.Group(Dim::kEp, group)) {
    const RankInfo& info = model.Rank(r);
    if (info.host == ref.host && info.nic == ref.nic) ranks.push_back(r);
  }
  return ranks;
}

// Strengthening evidence from the same NIC (docs/counters.md): np_cnp_sent
// makes it the notification point of congested incoming traffic, CE marks
// show the path to it is congested. `marks_per_second`: CNPs or CE marks per
// second worth naming in the summary (CongestionConfig::cnp_per_second); a
// lower rate is the background of any busy RoCE fabric and stays in the
// evidence only.
void AddCongestionSigns(const PortSignals& s, double marks_per_second,
                        Finding* f, std::vector<std::string>* signs) {
  if (Usable(s.cnp_sent)) {
    f->evidence["cnp_sent_per_second"] = s.cnp_sent;
    if (s.cnp_sent >= marks_per_second) {
      signs->push_back(
          absl::StrCat("sends CNPs at ", FormatPerSecond(s.cnp_sent)));
    }
  }
  if (Usable(s.ecn_marked)) {
    f->evidence["ecn_marked_per_second"] = s.ecn_marked;
    if (s.ecn_marked >= marks_per_second) {
      signs->push_back(absl::StrCat("receives ECN-marked packets at ",
                                    FormatPerSecond(s.ecn_marked)));
    }
  }
}

// TX pause and RX discards show the NIC's buffers overflowing; returns true
// when they make the finding critical.
bool AddOverflowSigns(const PortSignals& s, Finding* f,
                      std::vector<std::string>* signs) {
  bool critical = false;
  const auto [pause_fraction, fraction_prio] = MaxPriority(s.tx_pause_fraction);
  const auto [pause_frames, frames_prio] = MaxPriority(s.tx_pause_frames);
  if (fraction_prio >= 0) {
    f->evidence["tx_pause_fraction"] = pause_fraction;
    f->evidence["tx_pause_priority"] = fraction_prio;
  }
  if (frames_prio >= 0) {
    f->evidence["tx_pause_frames_per_second"] = pause_frames;
  }
  // Prefer the duration counter; frames only where the driver has no
  // duration (a frame can pause for 0 to 335 us).
  if (fraction_prio >= 0 && pause_fraction >= kCriticalTxPauseFraction) {
    critical = true;
    signs->push_back(absl::StrCat("transmits PFC pause ",
                                  FormatFraction(pause_fraction),
                                  " of the time on priority ", fraction_prio));
  } else if (fraction_prio < 0 && frames_prio >= 0 &&
             pause_frames >= kCriticalTxPauseFramesPerSecond) {
    critical = true;
    signs->push_back(absl::StrCat("transmits PFC pause frames at ",
                                  FormatPerSecond(pause_frames),
                                  " on priority ", frames_prio));
  }
  if (Usable(s.rx_discards)) {
    f->evidence["rx_discards_per_second"] = s.rx_discards;
    // A lossless RoCE class should drop nothing.
    if (s.rx_discards > 0) {
      critical = true;
      signs->push_back(absl::StrCat("drops ", FormatPerSecond(s.rx_discards),
                                    " packets for lack of buffer"));
    }
  }
  return critical;
}

// `marks_per_second`: see AddCongestionSigns.
Finding MakeFinding(const LayoutModel& model, uint32_t group, const Member& hot,
                    double median, size_t reporting, double link_rate,
                    double marks_per_second) {
  const std::string& host = model.Hosts()[hot.ref.host];
  const std::string& nic = model.Nics()[hot.ref.nic];
  const double ratio = hot.rx / median;

  Finding f;
  f.kind = kHotExpertIncastKind;
  f.job = model.job();
  f.group = GroupName({Dim::kEp, group});
  f.node = host;
  // Who sends to the hot NIC is not measured (every member of the group
  // may), so only the receiver is named.
  f.nodes = {host};
  f.device = nic;

  const std::vector<uint32_t> ranks = RanksBehind(model, group, hot.ref);
  const std::string rank_list = FormatRanks(ranks);
  const std::string experts = FormatExperts(model, ranks);
  f.evidence_text["ranks"] = rank_list;
  if (!experts.empty()) f.evidence_text["experts"] = experts;

  f.evidence["rx_bytes_per_second"] = hot.rx;
  f.evidence["group_median_rx_bytes_per_second"] = median;
  f.evidence["ratio_to_median"] = ratio;
  f.evidence["group_members_reporting"] = static_cast<double>(reporting);
  if (link_rate > 0) {
    f.evidence["link_rate_bytes_per_second"] = link_rate;
    f.evidence["rx_link_fraction"] = hot.rx / link_rate;
  }

  std::vector<std::string> signs;
  AddCongestionSigns(hot.port->s, marks_per_second, &f, &signs);
  const bool critical = AddOverflowSigns(hot.port->s, &f, &signs);
  f.severity = critical ? Severity::kCritical : Severity::kWarning;

  const bool one = ranks.size() == 1;
  std::string who =
      experts.empty()
          ? absl::StrCat("; rank", one ? " " : "s ", rank_list,
                         one ? " sits" : " sit", " behind it")
          : absl::StrCat("; rank", one ? " " : "s ", rank_list,
                         one ? " holds" : " hold", " experts ", experts);
  f.summary = absl::StrCat(
      host, " ", nic, " receives ", FormatBytesRate(hot.rx), ", ",
      FormatRatio(ratio), " the median of ", f.group, " (",
      FormatBytesRate(median), " over ", reporting, " NICs) in job ", f.job,
      who, signs.empty() ? "" : "; it ", JoinWords(signs),
      ": a hot expert is drawing incast. Check the MoE router's load "
      "balance for these experts (auxiliary loss, capacity factor).");
  return f;
}

void AnalyzeJob(const AnalysisConfig& config, const LayoutModel& model,
                const LayoutPorts& ports, std::vector<Finding>* out) {
  const HotExpertIncastConfig& cfg = config.hot_expert_incast;
  if (model.Degree(Dim::kEp) <= 1) return;
  for (uint32_t g = 0; g < model.NumGroups(Dim::kEp); ++g) {
    std::vector<Member> members;
    for (const NicRef& ref : model.GroupNics(Dim::kEp, g)) {
      if (ref.nic == kNoNic) continue;
      const PortView* port = ports.At(ref.host, ref.nic);
      // A host that never reported, a NIC without a receive counter, or a
      // port that is down (link_flap's business: its zero would drag the
      // median down) is not a member the comparison can use.
      if (port == nullptr || !port->s.link_up || !Usable(port->s.rx_bytes)) {
        continue;
      }
      members.push_back({ref, port, port->s.rx_bytes});
    }
    if (members.size() < static_cast<size_t>(std::max(cfg.min_group_size, 1))) {
      continue;
    }
    std::vector<double> rx;
    rx.reserve(members.size());
    for (const Member& m : members) rx.push_back(m.rx);
    const double median = Median(std::move(rx));
    // No ratio exists over an idle median; such a group is not running an
    // all-to-all at all.
    if (!(median > 0)) continue;
    for (const Member& m : members) {
      const double link_rate =
          std::isfinite(m.port->s.link_rate) && m.port->s.link_rate > 0
              ? m.port->s.link_rate
              : 0;
      const double floor = link_rate > 0 ? cfg.min_link_fraction * link_rate
                                         : cfg.min_rx_bytes_per_second;
      if (m.rx >= cfg.rx_over_median * median && m.rx >= floor) {
        Finding f = MakeFinding(model, g, m, median, members.size(), link_rate,
                                config.congestion.cnp_per_second);
        // Both tests hold: the nearer one says how sure the finding is.
        SetOverThreshold(
            std::min(m.rx / (cfg.rx_over_median * median), m.rx / floor), 1,
            &f);
        out->push_back(std::move(f));
      }
    }
  }
}

}  // namespace

std::vector<Finding> HotExpertIncastFindings(const AnalysisInput& in) {
  std::vector<Finding> out;
  if (in.view == nullptr || in.config == nullptr) return out;
  std::optional<NicPorts> local;
  const NicPorts& ports = NicPortsOf(in, &local);
  for (const LayoutModel* model : in.layouts) {
    if (model != nullptr) {
      AnalyzeJob(*in.config, *model, ports.Of(*model), &out);
    }
  }
  // Within a job the loop already runs in group order and member order;
  // only the order of in.layouts is arbitrary.
  std::stable_sort(
      out.begin(), out.end(),
      [](const Finding& a, const Finding& b) { return a.job < b.job; });
  return out;
}

}  // namespace fabricdiag::analysis
