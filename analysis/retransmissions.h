// retransmissions: ports whose RDMA transport is retransmitting.
//
// Lossless RoCE (and InfiniBand) should almost never retransmit; when it
// does, a reliable-connection QP stalls for a go-back-N round or an ACK
// timeout (milliseconds to seconds), which a collective feels as a
// straggler. Signals (docs/counters.md, mlx5 hw_counters; the view maps
// bnxt_re/rxe spellings onto the same fields), events per second:
//   out_of_sequence        responder saw a PSN gap: loss or reordering
//   packet_seq_err         sequence-error NAKs received: loss, go-back-N
//   local_ack_timeout_err  requester ACK timer expired: loss, severe
//                          congestion or a dead peer
//   rnr_nak_retry_err      RNR NAKs: the receiver posts buffers too slowly
//   duplicate_request      the peer retransmitted to us
//   implied_nak_seq_err    READ/atomic responses lost
//   adaptive_retrans       RoCE adaptive retransmissions (+ timeouts)
// Their sum >= RetransmissionsConfig::events_per_second is a warning.
// retries_exceeded (req_transport_retries_exceeded /
// req_rnr_retries_exceeded) > 0 is critical: a QP gave up and went to the
// error state, so the job's connection is broken.
//
//   std::vector<Finding> found = RetransmissionsFindings(in);
//
// Pure: same input, same findings, sorted by (node, device).
#pragma once

#include <vector>

#include "analysis/analyzer.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis {

inline constexpr char kRetransmissionsKind[] = "retransmissions";

// One finding per port. Evidence: <signal>_per_second for every present
// signal, retransmission_events_per_second (their sum) and
// retries_exceeded_per_second when present; evidence_text
// "dominant_signal".
std::vector<Finding> RetransmissionsFindings(const AnalysisInput& in);

}  // namespace fabricdiag::analysis
