// link_errors: ports whose physical link corrupts or loses bits.
//
// Three kinds of evidence, each evaluated on its own (docs/counters.md):
// - error counters per second: IB symbol_error / mlx5 rx_symbol_err_phy,
//   port_rcv_errors / netdev rx_errors, rx_crc_errors_phy / rx_crc_errors,
//   each against LinkErrorsConfig::errors_per_second (a healthy link counts
//   none; NVIDIA UFM alarms at ~1/s sustained);
// - pre-FEC BER = FEC-corrected bits / received bits (mlx5
//   rx_corrected_bits_phy / rx_bits_phy) against pre_fec_ber: FEC still
//   hides the errors, but the link is eating its margin;
// - post-FEC BER = uncorrected symbol errors / received bits (mlx5
//   rx_pcs_symbol_err_phy / rx_bits_phy) against post_fec_ber (IEEE 802.3's
//   1e-12): frames are being dropped.
// Warning for error rates and pre-FEC BER; critical when post-FEC BER is
// exceeded or CRC errors reach kCriticalCrcFactor x the threshold, since
// every CRC error is a dropped frame that RoCE must retransmit.
//
// The fix is physical, so the summary names both ends of the cable from the
// topology: "reseat or replace the cable/optic of gpu-003 mlx5_2 (switch
// leaf-0 swp3 per topology)".
//
//   std::vector<Finding> found = LinkErrorsFindings(in);
//
// Pure: same input, same findings, sorted by (node, device).
#pragma once

#include <vector>

#include "analysis/analyzer.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis {

inline constexpr char kLinkErrorsKind[] = "link_errors";

// CRC errors at this multiple of errors_per_second are critical: at 100/s a
// RoCE flow loses a frame every 10 ms and go-back-N retransmission stalls it.
// Not in LinkErrorsConfig yet (asked of the lead).
inline constexpr double kCriticalCrcFactor = 100;

// One finding per port over any threshold; evidence lists every present
// signal (symbol_errors_per_second, crc_errors_per_second,
// rx_errors_per_second, pre_fec_ber, post_fec_ber).
std::vector<Finding> LinkErrorsFindings(const AnalysisInput& in);

}  // namespace fabricdiag::analysis
