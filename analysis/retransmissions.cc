#include "analysis/retransmissions.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "analysis/analyzer_util.h"
#include "analysis/link_context.h"

namespace fabricdiag::analysis {
namespace {

struct RetransSignal {
  const char* name;  // evidence key stem and evidence_text value
  double PortSignals::*field;
  // What it means, from docs/counters.md, and what to check next.
  const char* meaning;
  // True when the cause is in the fabric (loss), so the path is suspect;
  // false for RNR, whose cause is the receiving host.
  bool fabric;
};

// Fixed order: also the tie-break for the dominant signal.
constexpr RetransSignal kSignals[] = {
    {"local_ack_timeout_err", &PortSignals::local_ack_timeout_err,
     "local ACK timeouts: packets lost in the fabric, severe congestion or "
     "the peer is dead",
     true},
    {"packet_seq_err", &PortSignals::packet_seq_err,
     "sequence-error NAKs: packets lost in the fabric, the sender "
     "retransmits go-back-N",
     true},
    {"out_of_sequence", &PortSignals::out_of_sequence,
     "out-of-sequence packets: packets lost or reordered in the fabric", true},
    {"duplicate_request", &PortSignals::duplicate_request,
     "duplicate requests: the peer retransmits because its packets or our "
     "ACKs are lost",
     true},
    {"implied_nak_seq_err", &PortSignals::implied_nak_seq_err,
     "implied NAKs: READ or atomic responses lost in the fabric", true},
    {"adaptive_retrans", &PortSignals::adaptive_retrans,
     "adaptive retransmissions: RoCE packets lost in the fabric", true},
    {"rnr_nak_retry_err", &PortSignals::rnr_nak_retry_err,
     "RNR NAKs: the receiver does not post receive buffers fast enough", false},
};

}  // namespace

std::vector<Finding> RetransmissionsFindings(const AnalysisInput& in) {
  std::vector<Finding> out;
  if (in.view == nullptr) return out;
  const AnalysisConfig defaults;
  const double threshold = (in.config != nullptr ? *in.config : defaults)
                               .retransmissions.events_per_second;
  std::optional<TopologyIndex> local;
  const TopologyIndex& topology = IndexOf(in, &local);

  for (const PortView& port : JudgedPorts(in)) {
    const PortSignals& s = port.s;
    double total = 0;
    bool any = false;
    const RetransSignal* dominant = nullptr;
    for (const RetransSignal& sig : kSignals) {
      const double v = s.*sig.field;
      if (!Usable(v)) continue;
      any = true;
      total += v;
      if (v > 0 && (dominant == nullptr || v > s.*dominant->field)) {
        dominant = &sig;
      }
    }
    const bool over = any && total > 0 && total >= threshold;
    const bool fatal = Usable(s.retries_exceeded) && s.retries_exceeded > 0;
    if (!over && !fatal) continue;

    const std::optional<LinkEnd> partner = topology.Partner(port);
    Finding f = NewLinkFinding(kRetransmissionsKind, in, port, partner);
    f.severity = fatal ? Severity::kCritical : Severity::kWarning;
    for (const RetransSignal& sig : kSignals) {
      const double v = s.*sig.field;
      if (Usable(v)) f.evidence[absl::StrCat(sig.name, "_per_second")] = v;
    }
    if (any) f.evidence["retransmission_events_per_second"] = total;
    if (over) SetOverThreshold(total, threshold, &f);
    if (Usable(s.retries_exceeded)) {
      f.evidence["retries_exceeded_per_second"] = s.retries_exceeded;
    }
    if (dominant != nullptr)
      f.evidence_text["dominant_signal"] = dominant->name;

    const std::string where = absl::StrCat(port.node, " ", port.device);
    std::string what;
    if (dominant != nullptr) {
      what = absl::StrCat(FormatPerSecond(total),
                          " retransmission events, mostly ", dominant->meaning,
                          " (", FormatPerSecond(s.*dominant->field), ")");
    }
    if (fatal) {
      if (!what.empty()) what += "; ";
      absl::StrAppend(&what, "QPs exceeding their retry limit (",
                      FormatPerSecond(s.retries_exceeded),
                      "): an RDMA connection failed and the job's collective "
                      "over it errors out");
    }
    const bool fabric = dominant == nullptr || dominant->fabric;
    const std::string advice =
        fabric ? absl::StrCat(
                     "check link_errors and pfc_storm findings on its "
                     "path",
                     PartnerText(partner))
               : "check the receiving application's buffer posting (RNR), "
                 "not the fabric";
    f.summary = absl::StrCat(where, " sees ", what, "; ", advice, ".");
    out.push_back(std::move(f));
  }
  SortLinkFindings(&out);
  return out;
}

}  // namespace fabricdiag::analysis
