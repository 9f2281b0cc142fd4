// The traffic model of a declared layout: per training step, per rank and per
// parallel dimension, the bytes each collective moves, over which links, and
// how long that takes in the alpha-beta model. The analyzers compare the
// per-NIC prediction with measured counters; `fabricdiag plan` prints it.
//
// What is modelled (B = model.micro_batch, S = model.seq_len, H =
// model.hidden, b = model.dtype_bytes, m = model.micro_batches, L_s =
// ceil(model.layers / pp) layers on the busiest pipeline stage; a rank holds
// S / cp tokens of each sequence):
//
//   dim     collective          message per call, per rank    calls per step
//   tp      ring all-reduce     B x S/cp x H x b              4 x L_s x m
//   cp      ring send/recv      2 x B x S/cp x H/tp x b (K,V) 3 x (cp-1) x L_s
//   x m pp      send/recv chain     B x S/cp x H x b              m (fwd + bwd)
//   dp      ring all-reduce     dense gradient bytes          1
//   ep      all-to-all          B x S/(cp tp) x top_k x H x b 4 x L_s x m
//   edp     ring all-reduce     expert gradient bytes         1
//
// - tp: Megatron-LM tensor parallelism all-reduces the activations twice per
//   transformer layer forward (attention, MLP) and twice backward. Sequence
//   parallelism replaces each by a reduce-scatter + all-gather: same bytes.
//   A ring all-reduce over T ranks sends 2(T-1)/T x message per rank.
// - dp: gradients are reduced once per step over dp-cp ("dp" when cp = 1),
//   in the dtype of model.dtype_bytes (pass 4 for FP32 gradients). The
//   distributed optimizer's reduce-scatter + all-gather moves the same bytes.
//   Dense gradient bytes per rank = dense params / (tp x pp) x b.
// - MoE (model.experts > 1 and ep > 1): every layer is an MoE layer. `params`
//   is split into dense params = min(params, layers x 4 x H^2) (attention
//   weights; embeddings and norms ignored) and expert params = the rest. Expert
//   gradients, params_expert / (tp x pp x ep) x b per rank, are reduced over
//   edp (dp x cp / ep); dense ones over dp-cp. With ep = 1 all params are
//   treated as dense (both reductions run over the same ranks).
// - ep: per MoE layer and micro-batch, dispatch and combine forward and their
//   two backward all-to-alls; routing is taken as uniform, so (ep-1)/ep of
//   each all-to-all leaves the rank. With tp > 1 each TP rank routes S/(cp
//   tp) tokens: Megatron-LM requires sequence parallelism when EP is
//   combined with TP (megatron/core/transformer/transformer_config.py), so
//   the MoE layer's input is split along the sequence.
// - pp: each micro-batch's activations go to the next stage forward and their
//   gradient to the previous stage backward; every TP rank sends the full
//   tensor (Megatron-LM without scatter-gather). Virtual stages not modelled.
// - cp: ring attention passes each rank's K and V block (heads split over
//   tp, no GQA) around the ring cp-1 times forward; backward passes K, V and
//   dK, dV, counted as twice the forward. A coarse estimate.
//
// Links and time (alpha-beta). Ranks in one NVLink domain talk over NVLink;
// everything between domains (even two domains of one host) runs at the NIC
// rate. A ring all-reduce over a group spanning n domains is NCCL's: one ring
// per distinct NIC the group's members use in a domain ("rails"), each ring
// leaving every domain once, so a domain sends 2(D-1)/D x message over its
// NICs in total, split evenly over them; the rest moves over NVLink, and
// chunks pipeline so the slowest link sets the pace. Time of a dimension per
// step = latency + max(busiest NIC's max(tx, rx) / NIC rate, busiest rank's
// NVLink bytes / NVLink rate): a line-rate lower bound with all its groups
// running at once. Latency follows NCCL's tuning model (src/graph/tuning.cc):
// a ring all-reduce takes 2(D-n) intra-domain and 2(n-1) inter-domain steps;
// an all-to-all or send/recv pays one alpha of its slowest link per call.
// Ranks whose NIC the layout does not name are given a NIC of their own for
// timing and are left out of the per-NIC table.
//
// Worked example (tested): pure DP of a 7B model with FP32 gradients on 512
// GPUs, 64 nodes of 8 GPUs with 8 x 400G NICs: a rank sends 2 x 511/512 x
// 28 GB ~ 56 GB per step, but a node's 8 rings each leave the node once, so
// each NIC carries 2 x 511/512 x 28 GB / 8 = 6.99 GB: 139.7 ms at 50 GB/s
// (+4.3 ms of latency). The NVLink part (49 GB per rank at 450 GB/s, 109 ms)
// overlaps it.
//
// Usage:
//   ASSIGN_OR_RETURN(LayoutModel layout, LayoutModel::Build(proto));
//   ASSIGN_OR_RETURN(TrafficModel traffic,
//                    TrafficModel::Predict(layout, LinkParams{}));
//   if (const DimTraffic* dp = traffic.Find(Dim::kDp); dp && dp->available)
//     ... dp->seconds ...
//   std::optional<NicBytes> nic =
//       traffic.PredictedNicBytesPerStep("gpu-003", "mlx5_2");
//
// Predict() is O(ranks x dimensions) time and memory. A TrafficModel is
// immutable: thread-safe for concurrent readers. Bytes are doubles: they are
// predictions (fractions of a byte are meaningful in averages), not counters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "analysis/layout_model.h"

namespace fabricdiag::analysis {

// Link rates and latencies of the alpha-beta model.
struct LinkParams {
  // Per GPU, per direction. H100 SXM: NVLink 4, 18 links, 900 GB/s
  // bidirectional (NVIDIA H100 datasheet) = 450e9 B/s each way.
  double nvlink_bytes_per_second = 450e9;
  // Per NIC, per direction: 400 Gb/s (NDR InfiniBand, 400GbE) = 50e9 B/s.
  double nic_bytes_per_second = 50e9;
  // Seconds per step of a collective. NCCL's ring/Simple hardware latencies
  // (src/graph/tuning.cc, hwLat: NVLink 3.4 us, NET 9.6 us).
  double alpha_nvlink = 3.4e-6;
  double alpha_nic = 9.6e-6;
};

// InvalidArgument unless both rates are finite and > 0 and both alphas are
// finite and >= 0; the message names the field.
absl::Status ValidateLinkParams(const LinkParams& link);

enum class Collective : uint8_t { kAllReduce, kAllToAll, kSendRecv };
// "all-reduce", "all-to-all", "send/recv".
absl::string_view CollectiveName(Collective collective);

// 2(D-1)/D x bytes: what each rank sends in a ring all-reduce of `bytes`
// over D ranks (0 for D <= 1).
double RingAllReduceSendBytes(double bytes, uint32_t group_size);

// Bytes per training step through one NIC.
struct NicBytes {
  double tx = 0;
  double rx = 0;
};

// The traffic of one parallel dimension per training step. Dimensions of
// degree 1 move nothing and are not listed.
struct DimTraffic {
  Dim dim = Dim::kTp;  // kDpCp for the gradient reduction when cp > 1
  Collective collective = Collective::kAllReduce;
  std::string description;  // "activation all-reduce, 4 per layer ..."
  // False when the model section lacks what the prediction needs; then
  // unavailable_reason says what ("needs model.hidden, model.seq_len") and
  // every number below is 0.
  bool available = false;
  std::string unavailable_reason;
  uint32_t group_size = 0;
  uint32_t num_groups = 0;
  uint32_t groups_crossing = 0;  // groups spanning > 1 NVLink domain
  // Groups spanning > 1 host. Differs from groups_crossing on NVL72-style
  // racks (hosts share a domain: no NIC traffic) and with several domains
  // per host (NIC traffic on one host).
  uint32_t groups_multi_host = 0;
  double calls_per_step = 0;     // collective calls per group per step
  double bytes_per_call = 0;     // message size of one call, per rank
  double rank_send_bytes = 0;    // busiest rank, all links, per step
  double rank_nvlink_bytes = 0;  // busiest rank, over NVLink, per step
  double nic_bytes = 0;          // busiest NIC, max(tx, rx), per step
  double latency_seconds = 0;    // alpha terms per step (slowest group)
  double seconds = 0;            // predicted time per step
  double seconds_if_nvlink = 0;  // same traffic, all of it over NVLink
};

// Predicted bytes per step of one NIC (sum over the ranks using it).
struct NicTraffic {
  NicRef nic;
  std::string host_name;
  std::string nic_name;
  NicBytes total;
  NicBytes by_dim[kNumDims];  // indexed by static_cast<size_t>(Dim)
};

// Predicted time per step of one group's collectives.
struct GroupTime {
  uint32_t group = 0;
  double seconds = 0;
  double seconds_if_nvlink = 0;
};

class TrafficModel {
 public:
  // InvalidArgument when `link` is invalid. A layout without a model section
  // (or with missing fields) is not an error: the affected dimensions are
  // listed with available = false and a reason.
  static absl::StatusOr<TrafficModel> Predict(const LayoutModel& layout,
                                              const LinkParams& link);

  const LinkParams& link() const { return link_; }
  bool has_model() const { return has_model_; }
  // In the order tp, cp, pp, dp (or dp-cp), ep, edp; degree-1 ones omitted.
  absl::Span<const DimTraffic> Dimensions() const { return dims_; }
  // nullptr when `dim` is not listed.
  const DimTraffic* Find(Dim dim) const;
  // Sum of the available dimensions' seconds: the step's communication time
  // if nothing overlapped (an upper bound of the exposed time).
  double SerialSeconds() const;

  // Every NIC some rank uses, hosts in layout order, then by NIC name.
  absl::Span<const NicTraffic> Nics() const { return nics_; }
  // nullopt for a NIC no rank of the layout uses.
  std::optional<NicBytes> PredictedNicBytesPerStep(absl::string_view host,
                                                   absl::string_view nic) const;

  // Each TP group that spans more than one NVLink domain, ascending (as
  // LayoutModel::TpGroupsCrossingNvlink), with its predicted time per step
  // and the time if it sat inside one domain. Empty when the TP prediction
  // is unavailable.
  absl::Span<const GroupTime> TpCrossings() const { return tp_crossings_; }

 private:
  TrafficModel() = default;

  LinkParams link_;
  bool has_model_ = false;
  std::vector<DimTraffic> dims_;
  std::vector<NicTraffic> nics_;
  absl::flat_hash_map<std::pair<std::string, std::string>, size_t> nic_index_;
  std::vector<GroupTime> tp_crossings_;
};

}  // namespace fabricdiag::analysis
