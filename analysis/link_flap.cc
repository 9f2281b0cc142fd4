#include "analysis/link_flap.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "analysis/analyzer_util.h"
#include "analysis/link_context.h"

namespace fabricdiag::analysis {
namespace {

struct FlapCounter {
  const char* evidence_key;
  double PortSignals::*field;
  // Counter increments per flap: carrier_changes counts the down and the up.
  double per_flap;
};

constexpr FlapCounter kFlapCounters[] = {
    {"link_downed_per_second", &PortSignals::link_downed, 1},
    {"link_down_events_per_second", &PortSignals::link_down_events, 1},
    {"carrier_changes_per_second", &PortSignals::carrier_changes, 2},
};

// Mean rates are means: 1 event over 5 s may come back as 0.19999999.
constexpr double kRoundingSlack = 1e-6;

// "once", "3 times".
std::string Times(double n) {
  if (n == 1) return "once";
  return absl::StrCat(n, " times");
}

}  // namespace

std::vector<Finding> LinkFlapFindings(const AnalysisInput& in) {
  std::vector<Finding> out;
  if (in.view == nullptr) return out;
  const double window = in.view->window_seconds;
  const bool window_known = std::isfinite(window) && window > 0;

  std::optional<TopologyIndex> local;
  const TopologyIndex& topology = IndexOf(in, &local);

  for (const PortView& port : JudgedPorts(in)) {
    const PortSignals& s = port.s;
    bool flapped = false;
    double flaps = 0;  // estimated flaps in the window
    for (const FlapCounter& c : kFlapCounters) {
      const double rate = s.*c.field;
      if (!Usable(rate) || rate <= 0) continue;
      flapped = true;
      if (window_known) flaps = std::max(flaps, rate * window / c.per_flap);
    }
    // A counter moved, so at least one transition happened; carrier_changes
    // of 1 (half a flap) means the link went down or came up.
    flaps = std::max(1.0, std::ceil(flaps - kRoundingSlack));

    if (s.link_up && !flapped) continue;  // the common case: nothing to ask
    const std::optional<LinkEnd> partner = topology.Partner(port);
    const bool switch_port =
        port.is_switch_port || (partner.has_value() && !partner->is_switch);
    const bool down =
        !s.link_up && (!switch_port || topology.KnowsSwitchPort(port));
    if (!down && !flapped) continue;

    Finding f = NewLinkFinding(kLinkFlapKind, in, port, partner);
    f.severity = down ? Severity::kCritical : Severity::kWarning;
    f.immediate = true;
    f.evidence["link_up"] = s.link_up ? 1 : 0;
    if (flapped && window_known) f.evidence["flaps_in_window"] = flaps;
    for (const FlapCounter& c : kFlapCounters) {
      if (Usable(s.*c.field)) f.evidence[c.evidence_key] = s.*c.field;
    }
    if (Usable(s.link_error_recovery)) {
      f.evidence["link_error_recovery_per_second"] = s.link_error_recovery;
    }

    const std::string where = absl::StrCat(port.node, " ", port.device);
    std::string history;
    if (flapped) {
      history = window_known ? absl::StrCat(" flapped ", Times(flaps),
                                            " in the last ", window, " s")
                             : " flapped";
    }
    if (down) {
      // An uplink is one member of an ECMP group: traffic moves to the
      // others, so the fabric loses capacity rather than connections.
      const char* impact =
          topology.IsUplink(port)
              ? "the switch lost one of its uplinks and the remaining ones "
                "carry its traffic"
              : "every connection over it is broken";
      f.summary = absl::StrCat(where, " is down", flapped ? " after it" : "",
                               history, PartnerText(partner), ": ", impact,
                               "; check the cable/optic and the port state "
                               "at both ends.");
    } else {
      f.summary = absl::StrCat(
          where, history, PartnerText(partner),
          ": each flap breaks the connections over it (RDMA QPs time out or go "
          "to error); reseat or replace the cable/optic of ",
          where, " and check the switch port's log.");
    }
    out.push_back(std::move(f));
  }
  SortLinkFindings(&out);
  return out;
}

}  // namespace fabricdiag::analysis
