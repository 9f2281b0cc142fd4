#include "analysis/pfc_storm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/analyzer_util.h"

namespace fabricdiag::analysis {
namespace {

// Line time one pause frame with the maximum timer holds its partner for:
// 65535 quanta x 512 bit times (IEEE 802.1Qbb / 802.3 Annex 31B), 335 us at
// 100 Gb/s, 84 us at 400 Gb/s.
constexpr double kMaxPauseBits = 65535.0 * 512.0;
// Victims listed by name in evidence_text and in the summary.
constexpr size_t kMaxListedVictims = 10;
constexpr size_t kMaxVictimsInSummary = 3;

// How a pause fraction was obtained.
enum class Basis {
  kNone,           // no pause signal at all
  kDuration,       // pause-duration counters: measured
  kFramesAndRate,  // frames x max pause time / link rate: upper bound
  kFramesOnly,     // frames scaled by the config's frames <-> fraction pair
};

struct Pause {
  // Fraction of the window paused, 0..1; for kFramesOnly the fraction the
  // config equates with that frame rate. NaN when unknown.
  double fraction = kAbsent;
  double frames = kAbsent;  // pause frames/s, NaN when not counted
  Basis basis = Basis::kNone;
};

Pause EstimatePause(double fraction, double frames, double link_rate,
                    const PfcStormConfig& config) {
  Pause p;
  p.frames = UsableOrAbsent(frames);
  const double measured = UsableOrAbsent(fraction);
  if (Has(measured)) {
    // Slightly above 1 happens when counter and clock samples straddle.
    p.fraction = std::min(measured, 1.0);
    p.basis = Basis::kDuration;
    return p;
  }
  if (!Has(p.frames)) return p;
  const double rate = UsableOrAbsent(link_rate);
  if (Has(rate) && rate > 0) {
    p.fraction = std::min(p.frames * kMaxPauseBits / (rate * 8), 1.0);
    p.basis = Basis::kFramesAndRate;
    return p;
  }
  if (config.warning_pause_frames_per_second > 0) {
    // Linear in the config's calibration (600 frames/s ~ 20% at 100 Gb/s),
    // so comparing this with warning_pause_fraction is comparing the frame
    // rate with warning_pause_frames_per_second.
    p.fraction = std::min(p.frames / config.warning_pause_frames_per_second *
                              config.warning_pause_fraction,
                          1.0);
    p.basis = Basis::kFramesOnly;
  }
  return p;
}

using PortKey = std::pair<std::string, std::string>;

// Everything the analyzer derives from the view once.
class Fabric {
 public:
  explicit Fabric(const AnalysisInput& in)
      : in_(in),
        config_(in.config->pfc_storm),
        topology_(IndexOf(in, &local_topology_)),
        ports_(in.view->ports()) {}

  const PfcStormConfig& config() const { return config_; }
  absl::Span<const PortView> ports() const { return ports_; }
  // Derived on demand rather than tabled: a table for 70k ports x 8
  // priorities x 2 directions is ~25 MB written every pass, and EstimatePause
  // is a handful of compares on the signals already at hand.
  Pause Tx(size_t i, int p) const {
    const PortSignals& s = ports_[i].s;
    return EstimatePause(s.tx_pause_fraction[p], s.tx_pause_frames[p],
                         s.link_rate, config_);
  }
  Pause Rx(size_t i, int p) const {
    const PortSignals& s = ports_[i].s;
    return EstimatePause(s.rx_pause_fraction[p], s.rx_pause_frames[p],
                         s.link_rate, config_);
  }

  bool IsVictim(size_t i, int p) const {
    const double fraction = Rx(i, p).fraction;
    return Has(fraction) && fraction >= config_.victim_pause_fraction;
  }

  // The topology's name for the other end of port i's cable.
  std::optional<PortKey> PartnerName(size_t i) const {
    std::optional<LinkEnd> end = topology_.Partner(ports_[i]);
    if (!end.has_value()) return std::nullopt;
    return PortKey{std::move(end->node), std::move(end->device)};
  }

  // Index of the partner port in the view, if it reports.
  std::optional<size_t> Partner(size_t i) const {
    std::optional<PortKey> name = PartnerName(i);
    if (!name) return std::nullopt;
    const PortView* q = in_.view->Find(name->first, name->second);
    if (q == nullptr) return std::nullopt;
    return static_cast<size_t>(q - ports_.data());
  }

  // Indexes of the other ports of port i's node.
  std::vector<size_t> Siblings(size_t i) const {
    std::vector<size_t> out;
    for (const PortView& q : in_.view->PortsOf(ports_[i].node)) {
      const size_t j = static_cast<size_t>(&q - ports_.data());
      if (j != i) out.push_back(j);
    }
    return out;
  }

  // A switch port transmitting pause because another port of its switch is
  // paused on the same priority: its ingress buffer fills behind the paused
  // egress, so it relays back-pressure rather than causing it.
  bool Relaying(size_t i, int p) const {
    if (!ports_[i].is_switch_port) return false;
    for (size_t j : Siblings(i)) {
      if (IsVictim(j, p)) return true;
    }
    return false;
  }

  // The one job whose layout places ranks on this NIC, else "".
  std::string JobOf(size_t i) const {
    const PortView& port = ports_[i];
    if (port.is_switch_port) return "";
    return JobOfNic(in_, port.node, port.device, port.netdev);
  }

  // Victims on priority p that pause from port `source` reaches through the
  // topology: its partner, and through every switch on the way the
  // partners of the ports relaying the pause.
  std::set<size_t> Reached(size_t source, int p) const {
    std::set<size_t> reached;
    std::set<size_t> visited{source};
    std::vector<size_t> pausing{source};
    while (!pausing.empty()) {
      const size_t x = pausing.back();
      pausing.pop_back();
      std::optional<size_t> y = Partner(x);
      if (!y || *y == source) continue;
      const bool rx_known = Has(Rx(*y, p).fraction);
      if (rx_known && !IsVictim(*y, p)) continue;  // the pause stops here
      if (rx_known) reached.insert(*y);
      if (!ports_[*y].is_switch_port) continue;
      for (size_t z : Siblings(*y)) {
        const Pause tx = Tx(z, p);
        if (Has(tx.fraction) && tx.fraction >= config_.victim_pause_fraction &&
            visited.insert(z).second) {
          pausing.push_back(z);
        }
      }
    }
    return reached;
  }

  std::string Name(size_t i) const {
    return absl::StrCat(ports_[i].node, " ", ports_[i].device);
  }

 private:
  const AnalysisInput& in_;
  const PfcStormConfig& config_;
  std::optional<TopologyIndex> local_topology_;
  const TopologyIndex& topology_;
  absl::Span<const PortView> ports_;
};

struct Source {
  size_t port = 0;
  int priority = -1;     // -1: only storm events, no priority known
  bool stormed = false;  // the pause fraction passed the warning level
  double storm_errors = kAbsent;
  double storm_warnings = kAbsent;
  bool events() const {
    return Or(storm_errors, 0) > 0 || Or(storm_warnings, 0) > 0;
  }
};

// At least every pause fraction EstimatePause gives port s, sent or
// received, on any priority (0 when it counts no pause): the largest
// measured fraction, and what the largest frame rate would estimate
// (estimates grow with the frame rate). One pass over 32 values instead of
// 16 estimates.
double MostPaused(const PortSignals& s, const PfcStormConfig& config) {
  double fraction = 0;
  double frames = 0;
  for (int p = 0; p < kPriorities; ++p) {
    for (double f : {s.tx_pause_fraction[p], s.rx_pause_fraction[p]}) {
      if (Usable(f)) fraction = std::max(fraction, std::min(f, 1.0));
    }
    for (double f : {s.tx_pause_frames[p], s.rx_pause_frames[p]}) {
      if (Usable(f)) frames = std::max(frames, f);
    }
  }
  const Pause estimated = EstimatePause(kAbsent, frames, s.link_rate, config);
  return std::max(fraction, Or(estimated.fraction, 0));
}

// Port i with its storm watchdog's events, no priority yet.
Source WithEvents(const Fabric& fabric, size_t i) {
  Source src;
  src.port = i;
  src.storm_errors = UsableOrAbsent(fabric.ports()[i].s.pause_storm_errors);
  src.storm_warnings = UsableOrAbsent(fabric.ports()[i].s.pause_storm_warnings);
  return src;
}

std::optional<Source> FindSource(const Fabric& fabric, size_t i) {
  const PfcStormConfig& config = fabric.config();
  Source src = WithEvents(fabric, i);
  double best = -1;
  for (int p = 0; p < kPriorities; ++p) {
    const double f = fabric.Tx(i, p).fraction;
    if (Has(f) && f >= config.warning_pause_fraction && f > best &&
        !fabric.Relaying(i, p)) {
      best = f;
      src.priority = p;
      src.stormed = true;
    }
  }
  if (src.stormed) return src;
  if (!src.events()) return std::nullopt;
  // The watchdog counters are per port: name the priority paused most.
  for (int p = 0; p < kPriorities; ++p) {
    const double f = fabric.Tx(i, p).fraction;
    if (Has(f) && f > 0 && f > best) {
      best = f;
      src.priority = p;
    }
  }
  return src;
}

std::string Seconds(double s) { return absl::StrFormat("%g", s); }

// "leaf-0 swp3, gpu-000 mlx5_0, ... +4 more", at most `limit` names.
std::string ListPorts(const Fabric& fabric, const std::vector<size_t>& ports,
                      size_t limit) {
  std::vector<std::string> names;
  for (size_t k = 0; k < ports.size() && k < limit; ++k) {
    names.push_back(fabric.Name(ports[k]));
  }
  std::string out = absl::StrJoin(names, ", ");
  if (ports.size() > limit) {
    absl::StrAppend(&out, " +", ports.size() - limit, " more");
  }
  return out;
}

// `first`, then every other node of `ports`, sorted and unique.
std::vector<std::string> NodesOf(const Fabric& fabric, const std::string& first,
                                 const std::vector<size_t>& ports) {
  std::set<std::string> others;
  for (size_t j : ports) others.insert(fabric.ports()[j].node);
  others.erase(first);
  std::vector<std::string> nodes{first};
  nodes.insert(nodes.end(), others.begin(), others.end());
  return nodes;
}

// "for 94% of the last 5 s", or the frame rate when that is all there is.
std::string PauseWords(const Pause& pause, double window_seconds,
                       const PfcStormConfig& config) {
  const std::string window = Seconds(window_seconds);
  switch (pause.basis) {
    case Basis::kDuration:
      return absl::StrCat("for ", FormatFraction(pause.fraction),
                          " of the last ", window, " s");
    case Basis::kFramesAndRate:
      return absl::StrCat("for about ", FormatFraction(pause.fraction),
                          " of the last ", window, " s (",
                          FormatPerSecond(pause.frames),
                          " pause frames at its link rate)");
    case Basis::kFramesOnly:
      return absl::StrCat(
          "at ", FormatPerSecond(pause.frames), " pause frames over the last ",
          window, " s (link rate unknown; ",
          FormatPerSecond(config.warning_pause_frames_per_second),
          " is a storm)");
    case Basis::kNone:
      break;
  }
  return absl::StrCat("over the last ", window, " s");
}

// Severity and tx-pause evidence of a source, and the words saying what it
// transmitted.
std::string TxPauseWhat(const Fabric& fabric, const Source& src,
                        double window_seconds, Finding* f) {
  if (src.priority < 0) {
    return absl::StrCat("has transmitted PFC pause over the last ",
                        Seconds(window_seconds), " s");
  }
  const PfcStormConfig& config = fabric.config();
  const Pause tx = fabric.Tx(src.port, src.priority);
  f->severity = tx.basis != Basis::kFramesOnly &&
                        tx.fraction >= config.critical_pause_fraction
                    ? Severity::kCritical
                    : Severity::kWarning;
  if (tx.basis != Basis::kFramesOnly && Has(tx.fraction)) {
    f->evidence["tx_pause_fraction"] = tx.fraction;
  }
  if (Has(tx.frames)) f->evidence["tx_pause_frames_per_second"] = tx.frames;
  f->evidence["priority"] = src.priority;
  // A source named by watchdog events alone may pause below the threshold.
  if (src.stormed) {
    SetOverThreshold(tx.fraction, config.warning_pause_fraction, f);
  }
  return absl::StrCat("has transmitted PFC pause on priority ", src.priority,
                      " ", PauseWords(tx, window_seconds, config));
}

// A watchdog event makes the finding critical whatever the pause fraction.
void AddWatchdogEvidence(const Source& src, Finding* f) {
  if (!src.events()) return;
  f->severity = Severity::kCritical;
  if (Has(src.storm_errors)) {
    f->evidence["pause_storm_errors_per_second"] = src.storm_errors;
  }
  if (Has(src.storm_warnings)) {
    f->evidence["pause_storm_warnings_per_second"] = src.storm_warnings;
  }
}

// How far the pause spread: the first victims by name, then a count.
std::string SpreadWords(const Fabric& fabric,
                        const std::vector<size_t>& victims) {
  if (victims.empty()) {
    return "no port in telemetry reports receiving its pause";
  }
  std::vector<size_t> first(
      victims.begin(),
      victims.begin() + std::min(victims.size(), kMaxVictimsInSummary));
  std::string shown = ListPorts(fabric, first, kMaxVictimsInSummary);
  if (victims.size() > first.size()) absl::StrAppend(&shown, " ...");
  return absl::StrCat(victims.size(),
                      victims.size() == 1 ? " port receives" : " ports receive",
                      " its pause (", shown, ")");
}

Finding SourceFinding(const Fabric& fabric, const Source& src,
                      const std::vector<size_t>& victims,
                      double window_seconds) {
  const PortView& port = fabric.ports()[src.port];
  Finding f;
  f.kind = kPfcStormKind;
  f.job = fabric.JobOf(src.port);
  f.node = port.node;
  f.device = port.device;
  f.nodes = NodesOf(fabric, port.node, victims);
  f.immediate = src.events();

  std::string what = TxPauseWhat(fabric, src, window_seconds, &f);
  AddWatchdogEvidence(src, &f);

  const double rx = UsableOrAbsent(port.s.rx_bytes);
  if (Has(rx)) {
    f.evidence["rx_bytes_per_second"] = rx;
    absl::StrAppend(&what, " while draining only ", FormatBytesRate(rx));
  }
  if (src.events()) {
    // mlx5 counters.rst: an error event means the device stopped sending
    // pause (storm prevention), a warning that it stalled past the minor
    // watermark.
    absl::StrAppend(&what, Or(src.storm_errors, 0) > 0
                               ? ", and its PFC storm watchdog fired (the NIC "
                                 "stopped sending pause to protect the "
                                 "fabric; drops may follow)"
                               : ", and its PFC storm watchdog warns of a "
                                 "continuous stall");
  }
  f.evidence["victims"] = static_cast<double>(victims.size());
  if (!victims.empty()) {
    f.evidence_text["victim_ports"] =
        ListPorts(fabric, victims, kMaxListedVictims);
  }

  const std::string spread = SpreadWords(fabric, victims);
  const char* verdict =
      port.is_switch_port
          ? "this switch port is not draining and holds its senders back"
          : (victims.empty() ? "a stuck receiver is pausing its link partner"
                             : "a stuck receiver is spreading back-pressure");
  f.summary = absl::StrCat(fabric.Name(src.port), " ", what, "; ", spread, ": ",
                           verdict);
  return f;
}

// No source in the view on priority p: name the most-paused victim.
std::optional<Finding> SourcelessFinding(const Fabric& fabric, int p,
                                         const std::vector<size_t>& victims,
                                         double window_seconds) {
  const PfcStormConfig& config = fabric.config();
  std::optional<size_t> worst;
  for (size_t j : victims) {
    if (!worst || fabric.Rx(j, p).fraction > fabric.Rx(*worst, p).fraction) {
      worst = j;
    }
  }
  // Being paused as long as a storm source pauses: shorter pauses on a
  // victim alone are ordinary congestion back-pressure.
  if (!worst || fabric.Rx(*worst, p).fraction < config.warning_pause_fraction) {
    return std::nullopt;
  }
  const size_t w = *worst;
  const PortView& port = fabric.ports()[w];
  const Pause rx = fabric.Rx(w, p);
  std::vector<size_t> others;
  for (size_t j : victims) {
    if (j != w) others.push_back(j);
  }
  Finding f;
  f.kind = kPfcStormKind;
  f.severity = Severity::kWarning;
  f.job = fabric.JobOf(w);
  f.node = port.node;
  f.device = port.device;
  f.nodes = NodesOf(fabric, port.node, others);
  if (rx.basis != Basis::kFramesOnly)
    f.evidence["rx_pause_fraction"] = rx.fraction;
  if (Has(rx.frames)) f.evidence["rx_pause_frames_per_second"] = rx.frames;
  SetOverThreshold(rx.fraction, config.warning_pause_fraction, &f);
  f.evidence["priority"] = p;
  f.evidence["victims"] = static_cast<double>(victims.size());
  f.evidence_text["victim_ports"] =
      ListPorts(fabric, victims, kMaxListedVictims);
  // The most-paused victim changes from pass to pass while one storm lasts;
  // the priority does not, so the finding keeps the port it named first.
  f.evidence_text[kFaultEvidence] =
      absl::StrCat("PFC pause on priority ", p, " without a visible source");

  std::string from;
  if (std::optional<PortKey> partner = fabric.PartnerName(w)) {
    const std::string name = absl::StrCat(partner->first, " ", partner->second);
    f.evidence_text["link_partner"] = name;
    from =
        absl::StrCat(" from its link partner ", name,
                     fabric.Partner(w) ? "" : " (which reports no telemetry)");
  }
  std::string also;
  if (!others.empty()) {
    also =
        absl::StrCat(", and ", others.size(),
                     others.size() == 1 ? " other port is" : " other ports are",
                     " paused too");
  }
  f.summary = absl::StrCat(
      fabric.Name(w), " has received PFC pause on priority ", p, " ",
      PauseWords(rx, window_seconds, config), from, also,
      ", but no port in telemetry transmits that pause: a victim without a "
      "visible source (the source is outside telemetry or does not count PFC "
      "pause)");
  return f;
}

}  // namespace

std::vector<Finding> PfcStormFindings(const AnalysisInput& in) {
  std::vector<Finding> out;
  if (in.view == nullptr || in.config == nullptr) return out;
  const Fabric fabric(in);
  const size_t n = fabric.ports().size();

  // Sources, and victims per priority: one sweep of the ports (a view of
  // 200k GPUs is over 250 MB, so a sweep per priority would read it 8
  // times).
  std::vector<Source> sources;
  std::array<std::vector<size_t>, kPriorities> victims;
  // A port paused less than both thresholds on every priority is no victim,
  // and no source unless its storm watchdog counted events: most ports of
  // a healthy fabric, passed over without their 16 pause estimates.
  const double quiet_below = std::min(fabric.config().warning_pause_fraction,
                                      fabric.config().victim_pause_fraction);
  for (size_t i = 0; i < n; ++i) {
    if (MostPaused(fabric.ports()[i].s, fabric.config()) < quiet_below &&
        !WithEvents(fabric, i).events()) {
      continue;
    }
    if (std::optional<Source> src = FindSource(fabric, i)) {
      sources.push_back(*src);
    }
    for (int p = 0; p < kPriorities; ++p) {
      if (fabric.IsVictim(i, p)) victims[p].push_back(i);
    }
  }

  // Which victims some source's pause reaches.
  std::vector<std::set<size_t>> reached(sources.size());
  std::array<std::set<size_t>, kPriorities> reached_any;
  std::array<bool, kPriorities> has_source{};
  for (size_t k = 0; k < sources.size(); ++k) {
    const int p = sources[k].priority;
    if (p < 0) continue;
    has_source[p] = true;
    reached[k] = fabric.Reached(sources[k].port, p);
    reached_any[p].insert(reached[k].begin(), reached[k].end());
  }

  const double window = in.view->window_seconds;
  for (size_t k = 0; k < sources.size(); ++k) {
    const Source& src = sources[k];
    std::vector<size_t> mine;
    if (src.priority >= 0) {
      for (size_t j : victims[src.priority]) {
        if (j == src.port) continue;
        // Unreached victims may sit behind any source (spines the topology
        // does not describe), so each source lists them.
        if (reached[k].count(j) > 0 ||
            reached_any[src.priority].count(j) == 0) {
          mine.push_back(j);
        }
      }
    }
    // The link partner first: it is where the pause lands.
    if (std::optional<size_t> partner = fabric.Partner(src.port)) {
      auto it = std::find(mine.begin(), mine.end(), *partner);
      if (it != mine.end()) std::rotate(mine.begin(), it, it + 1);
    }
    out.push_back(SourceFinding(fabric, src, mine, window));
  }
  for (int p = 0; p < kPriorities; ++p) {
    if (has_source[p]) continue;
    if (std::optional<Finding> f =
            SourcelessFinding(fabric, p, victims[p], window)) {
      out.push_back(std::move(*f));
    }
  }
  std::stable_sort(
      out.begin(), out.end(), [](const Finding& a, const Finding& b) {
        return std::tie(a.node, a.device) < std::tie(b.node, b.device);
      });
  return out;
}

bool IsSourceless(const Finding& f) {
  return f.kind == kPfcStormKind && f.evidence_text.count(kFaultEvidence) > 0;
}

std::optional<int> StormPriority(
    const std::map<std::string, double>& evidence) {
  auto p = evidence.find("priority");
  if (p == evidence.end() || !(p->second >= 0) || p->second >= kPriorities ||
      p->second != std::floor(p->second)) {
    return std::nullopt;
  }
  return static_cast<int>(p->second);
}

void DropSourcelessOnPriorities(const std::set<int>& held_priorities,
                                std::vector<Finding>* found) {
  if (held_priorities.empty()) return;
  found->erase(std::remove_if(found->begin(), found->end(),
                              [&held_priorities](const Finding& f) {
                                if (!IsSourceless(f)) return false;
                                const std::optional<int> p =
                                    StormPriority(f.evidence);
                                return p && held_priorities.count(*p) > 0;
                              }),
               found->end());
}

}  // namespace fabricdiag::analysis
