#include "analysis/link_errors.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "analysis/analyzer_util.h"
#include "analysis/link_context.h"

namespace fabricdiag::analysis {
namespace {

struct ErrorCounter {
  const char* evidence_key;
  const char* words;
  double PortSignals::*field;
};

// Evaluated separately: they count different things at different layers
// (PCS symbols, whole packets, FCS) and a driver may report only some.
constexpr ErrorCounter kCounters[] = {
    {"symbol_errors_per_second", "symbol errors", &PortSignals::symbol_errors},
    {"rx_errors_per_second", "receive errors", &PortSignals::rx_errors},
    {"crc_errors_per_second", "CRC errors", &PortSignals::crc_errors},
};

// "3.1e-10", "1e-6": two significant digits, no padded exponent.
std::string FormatBer(double ber) {
  std::string s = absl::StrFormat("%.2g", ber);
  s = absl::StrReplaceAll(s, {{"e-0", "e-"}, {"e+0", "e+"}});
  return s;
}

// errors / bits when both are usable and bits were received; NaN otherwise.
double Ber(double errors, double bits) {
  if (!Usable(errors) || !Usable(bits) || bits <= 0) return kAbsent;
  const double ber = errors / bits;
  return std::isfinite(ber) ? ber : kAbsent;
}

// A value over its limit; a zero rate is never a fault, whatever the limit.
bool Over(double value, double limit) {
  return Usable(value) && value > 0 && value >= limit;
}

// "a, b and c".
std::string JoinWords(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += (i + 1 == parts.size()) ? " and " : ", ";
    out += parts[i];
  }
  return out;
}

}  // namespace

std::vector<Finding> LinkErrorsFindings(const AnalysisInput& in) {
  std::vector<Finding> out;
  if (in.view == nullptr) return out;
  const AnalysisConfig defaults;
  const LinkErrorsConfig& cfg =
      (in.config != nullptr ? *in.config : defaults).link_errors;

  std::optional<TopologyIndex> local;
  const TopologyIndex& topology = IndexOf(in, &local);

  for (const PortView& port : JudgedPorts(in)) {
    const PortSignals& s = port.s;

    // The worst error counter over the threshold (highest rate).
    const ErrorCounter* worst = nullptr;
    for (const ErrorCounter& c : kCounters) {
      const double v = s.*c.field;
      if (Over(v, cfg.errors_per_second) &&
          (worst == nullptr || v > s.*worst->field)) {
        worst = &c;
      }
    }
    const double pre_ber = Ber(s.corrected_bits, s.received_bits);
    const double post_ber = Ber(s.pcs_symbol_errors, s.received_bits);
    const bool pre_over = Over(pre_ber, cfg.pre_fec_ber);
    const bool post_over = Over(post_ber, cfg.post_fec_ber);
    if (worst == nullptr && !pre_over && !post_over) continue;

    const bool crc_critical =
        Over(s.crc_errors, kCriticalCrcFactor * cfg.errors_per_second);
    const std::optional<LinkEnd> partner = topology.Partner(port);
    Finding f = NewLinkFinding(kLinkErrorsKind, in, port, partner);
    f.severity =
        (post_over || crc_critical) ? Severity::kCritical : Severity::kWarning;

    for (const ErrorCounter& c : kCounters) {
      if (Usable(s.*c.field)) f.evidence[c.evidence_key] = s.*c.field;
    }
    if (Has(pre_ber)) f.evidence["pre_fec_ber"] = pre_ber;
    if (Has(post_ber)) f.evidence["post_fec_ber"] = post_ber;
    // Any one test opens the finding: the farthest past says how sure.
    double over = 0;
    if (worst != nullptr) over = s.*worst->field / cfg.errors_per_second;
    if (pre_over) over = std::max(over, pre_ber / cfg.pre_fec_ber);
    if (post_over) over = std::max(over, post_ber / cfg.post_fec_ber);
    SetOverThreshold(over, 1, &f);

    std::vector<std::string> causes;
    if (post_over) {
      causes.push_back(absl::StrCat("a post-FEC BER of ", FormatBer(post_ber),
                                    " (limit ", FormatBer(cfg.post_fec_ber),
                                    ")"));
    }
    if (worst != nullptr) {
      causes.push_back(absl::StrCat(
          FormatPerSecond(s.*worst->field), " ", worst->words, " (limit ",
          FormatPerSecond(cfg.errors_per_second), ")"));
    }
    if (pre_over) {
      causes.push_back(absl::StrCat("a pre-FEC BER of ", FormatBer(pre_ber),
                                    " (limit ", FormatBer(cfg.pre_fec_ber),
                                    ")"));
    }
    const char* consequence =
        f.severity == Severity::kCritical ? "frames are being lost"
        : worst != nullptr                ? "the link is corrupting packets"
                           : "FEC still corrects the errors but the link is "
                             "running out of margin";
    f.summary = absl::StrCat(
        port.node, " ", port.device, " has ", JoinWords(causes), ": ",
        consequence, "; reseat or replace the cable/optic of ", port.node, " ",
        port.device, PartnerText(partner), ".");
    out.push_back(std::move(f));
  }
  SortLinkFindings(&out);
  return out;
}

}  // namespace fabricdiag::analysis
