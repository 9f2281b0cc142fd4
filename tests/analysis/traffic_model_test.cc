#include "analysis/traffic_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fabricdiag::analysis {
namespace {

using ::testing::HasSubstr;

// `hosts` hosts gpu-000..., rails mlx5_0..mlx5_{gpus_per_node-1}.
v1::Layout MakeLayout(uint32_t gpus_per_node, uint32_t hosts, uint32_t tp,
                      uint32_t pp, uint32_t dp, bool rails = true) {
  v1::Layout layout;
  layout.set_job("job-1");
  layout.set_gpus_per_node(gpus_per_node);
  layout.mutable_parallelism()->set_tp(tp);
  layout.mutable_parallelism()->set_pp(pp);
  layout.mutable_parallelism()->set_dp(dp);
  for (uint32_t h = 0; h < hosts; ++h) {
    layout.add_hosts(absl::StrFormat("gpu-%03d", h));
  }
  if (rails) {
    for (uint32_t g = 0; g < gpus_per_node; ++g) {
      layout.add_rails(absl::StrCat("mlx5_", g));
    }
  }
  return layout;
}

// The activation part of the model section.
void SetShape(v1::Layout& layout, uint32_t micro_batch, uint32_t seq_len,
              uint32_t hidden, uint32_t layers, uint32_t micro_batches,
              uint32_t dtype_bytes) {
  v1::ModelSpec* m = layout.mutable_model();
  m->set_micro_batch(micro_batch);
  m->set_seq_len(seq_len);
  m->set_hidden(hidden);
  m->set_layers(layers);
  m->set_micro_batches(micro_batches);
  m->set_dtype_bytes(dtype_bytes);
}

TrafficModel Predict(const v1::Layout& proto, const LinkParams& link = {}) {
  absl::StatusOr<LayoutModel> layout = LayoutModel::Build(proto);
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<TrafficModel> traffic = TrafficModel::Predict(*layout, link);
  EXPECT_TRUE(traffic.ok()) << traffic.status();
  return *std::move(traffic);
}

const DimTraffic& Get(const TrafficModel& t, Dim dim) {
  const DimTraffic* d = t.Find(dim);
  EXPECT_NE(d, nullptr) << DimName(dim);
  static const DimTraffic kEmpty;
  return d ? *d : kEmpty;
}

LinkParams NoLatency() {
  LinkParams link;
  link.alpha_nvlink = 0;
  link.alpha_nic = 0;
  return link;
}

// GPT-3-like layer, B=1, S=2048, H=12288, TP=8, bf16. The activation is
// B*S*H*2 = 50,331,648 bytes; a ring all-reduce over 8 sends 2*7/8 = 1.75
// of it; Megatron does 4 per layer (2 forward, 2 backward): 352,321,536
// bytes per rank per layer. The "~175 MB" printed in a widely read guide is
// half of what its own formula gives.
TEST(TrafficModelTest, GptLayerTensorParallelMoves352MBPerLayer) {
  v1::Layout proto = MakeLayout(8, 1, 8, 1, 1);
  SetShape(proto, 1, 2048, 12288, 1, 1, 2);
  TrafficModel t = Predict(proto);
  const DimTraffic& tp = Get(t, Dim::kTp);
  ASSERT_TRUE(tp.available) << tp.unavailable_reason;
  EXPECT_EQ(tp.bytes_per_call, 50331648.0);
  EXPECT_EQ(tp.calls_per_step, 4.0);
  EXPECT_EQ(RingAllReduceSendBytes(50331648.0, 8), 1.75 * 50331648.0);
  EXPECT_DOUBLE_EQ(tp.rank_send_bytes, 352321536.0);
  EXPECT_GT(tp.rank_send_bytes, 2 * 175e6);  // not the guide's ~175 MB
  // Inside one NVLink domain: all of it over NVLink, nothing on a NIC.
  EXPECT_DOUBLE_EQ(tp.rank_nvlink_bytes, 352321536.0);
  EXPECT_EQ(tp.nic_bytes, 0.0);
  EXPECT_EQ(tp.groups_crossing, 0u);
  // 4 all-reduces x 2(8-1) NVLink steps of 3.4 us + bytes at 450 GB/s.
  EXPECT_DOUBLE_EQ(tp.latency_seconds, 4 * 14 * 3.4e-6);
  EXPECT_DOUBLE_EQ(tp.seconds, 4 * 14 * 3.4e-6 + 352321536.0 / 450e9);
  EXPECT_DOUBLE_EQ(tp.seconds, tp.seconds_if_nvlink);
  EXPECT_TRUE(t.TpCrossings().empty());
}

TEST(TrafficModelTest, TensorParallelScalesWithLayersPerStageAndMicroBatches) {
  // 96 layers over pp=2: 48 per stage; 8 micro-batches.
  v1::Layout proto = MakeLayout(8, 2, 8, 2, 1);
  SetShape(proto, 1, 2048, 12288, 96, 8, 2);
  const TrafficModel model = Predict(proto);
  const DimTraffic& tp = Get(model, Dim::kTp);
  EXPECT_DOUBLE_EQ(tp.rank_send_bytes, 352321536.0 * 48 * 8);
  // Odd layer counts: the busiest stage holds ceil(layers / pp).
  proto.mutable_model()->set_layers(95);
  EXPECT_DOUBLE_EQ(Get(Predict(proto), Dim::kTp).rank_send_bytes,
                   352321536.0 * 48 * 8);
}

// 175B parameters in FP32 = 700 GB of gradients; ring all-reduce at D=1024
// sends 2 * 1023/1024 * 700 GB = 1,398,632,812,500 bytes per rank.
TEST(TrafficModelTest, RingAllReduceOf175BFp32GradientsAt1024Ranks) {
  EXPECT_DOUBLE_EQ(RingAllReduceSendBytes(700e9, 1024), 1398632812500.0);
  v1::Layout proto = MakeLayout(8, 128, 1, 1, 1024);
  proto.mutable_model()->set_params(175e9);
  proto.mutable_model()->set_dtype_bytes(4);
  TrafficModel t = Predict(proto);
  const DimTraffic& dp = Get(t, Dim::kDp);
  ASSERT_TRUE(dp.available) << dp.unavailable_reason;
  EXPECT_DOUBLE_EQ(dp.bytes_per_call, 700e9);
  EXPECT_DOUBLE_EQ(dp.rank_send_bytes, 1398632812500.0);
  EXPECT_NEAR(dp.rank_send_bytes, 1.4e12, 0.002e12);  // "about 1.4 TB"
  // Only the gradient all-reduce is predicted: tp = pp = 1.
  EXPECT_EQ(t.Dimensions().size(), 1u);
}

// DDP of a 7B model in bf16: 14 GB of gradients, 2(D-1)/D -> 2 for large D:
// about 2 x 14 GB per rank per step.
TEST(TrafficModelTest, DdpOf7BInBf16MovesTwiceTheGradientPerRank) {
  v1::Layout proto = MakeLayout(8, 64, 1, 1, 512);
  proto.mutable_model()->set_params(7e9);
  proto.mutable_model()->set_dtype_bytes(2);
  const TrafficModel model = Predict(proto);
  const DimTraffic& dp = Get(model, Dim::kDp);
  EXPECT_DOUBLE_EQ(dp.rank_send_bytes, 2.0 * 511 / 512 * 14e9);
  EXPECT_NEAR(dp.rank_send_bytes, 2 * 14e9, 0.06e9);
}

// Pure DP on 512 GPUs (64 nodes x 8 GPUs, 8 x 400G NICs per node, one per
// GPU), 7B FP32 gradients = 28 GB. Each rank sends 2 x 511/512 x 28 GB
// ~ 56 GB; if all of it went through the rank's own 50 GB/s NIC the step
// would take ~1.1 s. NCCL instead runs one ring per NIC; each ring leaves a
// node once, so a node's NICs share 2 x 511/512 x 28 GB: 6.99 GB per NIC,
// 139.7 ms at line rate. The 49 GB each rank moves over NVLink (109 ms at
// 450 GB/s) pipelines underneath. Latency adds 2 x 448 NVLink steps and
// 2 x 63 network steps: 4.3 ms.
TEST(TrafficModelTest, PureDpOn512GpusTakesAbout140MsAtLineRate) {
  v1::Layout proto = MakeLayout(8, 64, 1, 1, 512);
  proto.mutable_model()->set_params(7e9);
  proto.mutable_model()->set_dtype_bytes(4);

  const double per_rank = 2.0 * 511 / 512 * 28e9;
  const double per_nic = per_rank / 8;  // 6,986,328,125 bytes
  EXPECT_DOUBLE_EQ(per_nic, 6986328125.0);

  TrafficModel bare = Predict(proto, NoLatency());
  const DimTraffic& dp0 = Get(bare, Dim::kDp);
  EXPECT_DOUBLE_EQ(dp0.rank_send_bytes, per_rank);
  EXPECT_DOUBLE_EQ(dp0.nic_bytes, per_nic);
  EXPECT_DOUBLE_EQ(dp0.rank_nvlink_bytes, per_rank * 7 / 8);
  EXPECT_DOUBLE_EQ(dp0.seconds, per_nic / 50e9);
  EXPECT_NEAR(dp0.seconds, 0.1397, 0.0001);

  TrafficModel t = Predict(proto);
  const DimTraffic& dp = Get(t, Dim::kDp);
  EXPECT_DOUBLE_EQ(dp.latency_seconds, 2 * 448 * 3.4e-6 + 2 * 63 * 9.6e-6);
  EXPECT_GT(dp.seconds, 0.135);
  EXPECT_LT(dp.seconds, 0.150);
  EXPECT_EQ(dp.groups_crossing, 1u);
  // Every NIC of every node carries the same share, both directions.
  ASSERT_EQ(t.Nics().size(), 512u);
  for (const NicTraffic& n : t.Nics()) {
    EXPECT_DOUBLE_EQ(n.total.tx, per_nic) << n.host_name << " " << n.nic_name;
    EXPECT_DOUBLE_EQ(n.total.rx, per_nic);
    EXPECT_DOUBLE_EQ(n.by_dim[static_cast<size_t>(Dim::kDp)].tx, per_nic);
  }
  std::optional<NicBytes> nic = t.PredictedNicBytesPerStep("gpu-063", "mlx5_7");
  ASSERT_TRUE(nic.has_value());
  EXPECT_DOUBLE_EQ(nic->tx, per_nic);
  EXPECT_FALSE(t.PredictedNicBytesPerStep("gpu-064", "mlx5_0").has_value());
  EXPECT_FALSE(t.PredictedNicBytesPerStep("gpu-000", "mlx5_8").has_value());
}

TEST(TrafficModelTest, RanksWithoutNamedNicsAreTimedWithANicEach) {
  v1::Layout proto = MakeLayout(8, 64, 1, 1, 512, /*rails=*/false);
  proto.mutable_model()->set_params(7e9);
  proto.mutable_model()->set_dtype_bytes(4);
  TrafficModel t = Predict(proto, NoLatency());
  EXPECT_DOUBLE_EQ(Get(t, Dim::kDp).seconds, 6986328125.0 / 50e9);
  EXPECT_TRUE(t.Nics().empty());
  EXPECT_FALSE(t.PredictedNicBytesPerStep("gpu-000", "").has_value());
}

TEST(TrafficModelTest, NodesWithFewerNicsShareTheDomainsRingTraffic) {
  // 2 hosts x 8 GPUs, 4 GPUs per NIC: a node's rings leave through 2 NICs.
  v1::Layout proto = MakeLayout(8, 2, 1, 1, 16, /*rails=*/false);
  for (int g = 0; g < 8; ++g) proto.add_rails(g < 4 ? "mlx5_0" : "mlx5_1");
  proto.mutable_model()->set_params(1e9);
  proto.mutable_model()->set_dtype_bytes(2);
  TrafficModel t = Predict(proto);
  const double per_rank = 2.0 * 15 / 16 * 2e9;
  EXPECT_DOUBLE_EQ(Get(t, Dim::kDp).nic_bytes, per_rank / 2);
  ASSERT_EQ(t.Nics().size(), 4u);
  EXPECT_DOUBLE_EQ(t.PredictedNicBytesPerStep("gpu-001", "mlx5_1")->rx,
                   per_rank / 2);
}

TEST(TrafficModelTest, DataParallelWithOneMemberPerNodeUsesTheRanksOwnNic) {
  // tp=8 fills a node: each dp group has one rank per node, on one rail.
  v1::Layout proto = MakeLayout(8, 4, 8, 1, 4);
  proto.mutable_model()->set_params(8e9);
  proto.mutable_model()->set_dtype_bytes(2);
  TrafficModel t = Predict(proto);
  // Gradient per rank = 8e9 / 8 x 2 = 2e9; ring over 4: 3e9 sent per rank.
  const DimTraffic& dp = Get(t, Dim::kDp);
  EXPECT_DOUBLE_EQ(dp.bytes_per_call, 2e9);
  EXPECT_DOUBLE_EQ(dp.rank_send_bytes, 3e9);
  EXPECT_DOUBLE_EQ(dp.nic_bytes, 3e9);
  EXPECT_EQ(dp.rank_nvlink_bytes, 0.0);
  EXPECT_DOUBLE_EQ(t.PredictedNicBytesPerStep("gpu-002", "mlx5_5")->tx, 3e9);
  // Without shape fields the TP prediction is unavailable, and says why.
  const DimTraffic& tp = Get(t, Dim::kTp);
  EXPECT_FALSE(tp.available);
  EXPECT_THAT(tp.unavailable_reason, HasSubstr("model.seq_len"));
  EXPECT_THAT(tp.unavailable_reason, HasSubstr("model.hidden"));
  EXPECT_EQ(tp.rank_send_bytes, 0.0);
  EXPECT_DOUBLE_EQ(t.SerialSeconds(), dp.seconds);
}

TEST(TrafficModelTest, TpGroupLeavingItsNvlinkDomainGoesOverTheNics) {
  // Two NVLink domains of 4 GPUs per host: tp=8 spans both, on one host.
  v1::Layout proto = MakeLayout(8, 1, 8, 1, 1);
  proto.set_nvlink_domain(4);
  SetShape(proto, 1, 2048, 12288, 1, 1, 2);
  TrafficModel t = Predict(proto);
  const DimTraffic& tp = Get(t, Dim::kTp);
  const double per_rank = 352321536.0;
  EXPECT_EQ(tp.groups_crossing, 1u);
  EXPECT_EQ(tp.groups_multi_host, 0u);  // crossing a domain, not a host
  // Each domain's 4 NICs share one rank's worth of ring traffic.
  EXPECT_DOUBLE_EQ(tp.nic_bytes, per_rank / 4);
  EXPECT_DOUBLE_EQ(tp.rank_nvlink_bytes, per_rank * 3 / 4);
  // Latency: 2(8-2) NVLink and 2(2-1) network steps per all-reduce.
  const double latency = 4 * (12 * 3.4e-6 + 2 * 9.6e-6);
  EXPECT_DOUBLE_EQ(tp.latency_seconds, latency);
  EXPECT_DOUBLE_EQ(tp.seconds, latency + per_rank / 4 / 50e9);
  EXPECT_DOUBLE_EQ(tp.seconds_if_nvlink, 4 * 14 * 3.4e-6 + per_rank / 450e9);
  ASSERT_EQ(t.TpCrossings().size(), 1u);
  EXPECT_EQ(t.TpCrossings()[0].group, 0u);
  EXPECT_DOUBLE_EQ(t.TpCrossings()[0].seconds, tp.seconds);
  EXPECT_DOUBLE_EQ(t.TpCrossings()[0].seconds_if_nvlink, tp.seconds_if_nvlink);
  // A quarter of the bytes at 1/9 of the rate: 2.25x the bandwidth time.
  EXPECT_GT(tp.seconds, 2 * tp.seconds_if_nvlink);
}

TEST(TrafficModelTest, TpGroupAcrossHostsOfOneNvlinkRackStaysOnNvlink) {
  // NVL72-style: 2 hosts of 4 GPUs share one NVLink domain of 8.
  v1::Layout proto = MakeLayout(4, 2, 8, 1, 1);
  proto.set_nvlink_domain(8);
  SetShape(proto, 1, 2048, 12288, 1, 1, 2);
  TrafficModel t = Predict(proto);
  const DimTraffic& tp = Get(t, Dim::kTp);
  EXPECT_EQ(tp.groups_multi_host, 1u);
  EXPECT_EQ(tp.groups_crossing, 0u);
  EXPECT_EQ(tp.nic_bytes, 0.0);
  EXPECT_DOUBLE_EQ(tp.seconds, tp.seconds_if_nvlink);
  EXPECT_TRUE(t.TpCrossings().empty());
}

TEST(TrafficModelTest, PipelineStageBoundaryCrossingNodes) {
  // tp=8 per node, pp=3 over three nodes: stage 1 talks to both neighbours.
  v1::Layout proto = MakeLayout(8, 3, 8, 3, 1);
  SetShape(proto, 2, 4096, 8192, 30, 16, 2);
  TrafficModel t = Predict(proto, NoLatency());
  const DimTraffic& pp = Get(t, Dim::kPp);
  const double act = 2.0 * 4096 * 8192 * 2;  // 134,217,728 bytes
  EXPECT_DOUBLE_EQ(pp.bytes_per_call, act);
  EXPECT_EQ(pp.calls_per_step, 16.0);
  // Interior stage: activations forward + gradients backward, 16 times.
  EXPECT_DOUBLE_EQ(pp.rank_send_bytes, 2 * 16 * act);
  EXPECT_DOUBLE_EQ(pp.nic_bytes, 2 * 16 * act);
  EXPECT_EQ(pp.rank_nvlink_bytes, 0.0);
  // End stages send one way and receive the other.
  NicBytes first = *t.PredictedNicBytesPerStep("gpu-000", "mlx5_0");
  EXPECT_DOUBLE_EQ(first.tx, 16 * act);
  EXPECT_DOUBLE_EQ(first.rx, 16 * act);
  NicBytes middle = *t.PredictedNicBytesPerStep("gpu-001", "mlx5_0");
  EXPECT_DOUBLE_EQ(middle.tx, 2 * 16 * act);
  EXPECT_DOUBLE_EQ(middle.rx, 2 * 16 * act);
  EXPECT_DOUBLE_EQ(pp.seconds, 2 * 16 * act / 50e9);
}

// MoE: 2 hosts x 4 GPUs, ep=8 over both, top-2, S=4096, H=4096, bf16.
// Per all-to-all each rank's tokens x top_k x H x 2 = 67,108,864 bytes; 7/8
// leaves the rank, 4/8 leaves the node. 2 layers x (dispatch + combine) x
// (forward + backward) = 8 all-to-alls per step.
TEST(TrafficModelTest, ExpertAllToAllDispatchAndCombine) {
  v1::Layout proto = MakeLayout(4, 2, 1, 1, 8);
  proto.mutable_parallelism()->set_ep(8);
  SetShape(proto, 1, 4096, 4096, 2, 1, 2);
  proto.mutable_model()->set_experts(16);
  proto.mutable_model()->set_top_k(2);
  proto.mutable_model()->set_params(1e9);
  TrafficModel t = Predict(proto, NoLatency());
  const DimTraffic& ep = Get(t, Dim::kEp);
  ASSERT_TRUE(ep.available) << ep.unavailable_reason;
  const double x = 4096.0 * 2 * 4096 * 2;
  EXPECT_DOUBLE_EQ(ep.bytes_per_call, x);
  EXPECT_EQ(ep.calls_per_step, 8.0);
  EXPECT_DOUBLE_EQ(ep.rank_send_bytes, 8 * x * 7 / 8);
  EXPECT_DOUBLE_EQ(ep.nic_bytes, 8 * x * 4 / 8);
  EXPECT_DOUBLE_EQ(ep.rank_nvlink_bytes, 8 * x * 3 / 8);
  // edp = dp / ep = 1: expert gradients need no reduction.
  EXPECT_EQ(t.Find(Dim::kEdp), nullptr);
  // Dense params = layers x 4 x H^2 = 134,217,728 (attention), reduced over
  // all 8 ranks.
  const DimTraffic& dp = Get(t, Dim::kDp);
  EXPECT_DOUBLE_EQ(dp.bytes_per_call, 134217728.0 * 2);
  EXPECT_THAT(dp.description, HasSubstr("dense"));
}

TEST(TrafficModelTest, ExpertAllToAllWithTensorParallelRoutesSequenceShards) {
  // tp=2 (sequence parallel, as Megatron-LM requires with EP): each TP rank
  // routes S/2 tokens.
  v1::Layout proto = MakeLayout(8, 2, 2, 1, 8);
  proto.mutable_parallelism()->set_ep(4);
  SetShape(proto, 1, 4096, 4096, 2, 1, 2);
  proto.mutable_model()->set_experts(16);
  proto.mutable_model()->set_top_k(2);
  proto.mutable_model()->set_params(1e9);
  const TrafficModel model = Predict(proto);
  const DimTraffic& ep = Get(model, Dim::kEp);
  EXPECT_DOUBLE_EQ(ep.bytes_per_call, 2048.0 * 2 * 4096 * 2);
}

TEST(TrafficModelTest, ExpertGradientsReduceOverExpertDataParallel) {
  // 16 ranks on 2 hosts, ep=4 inside a host, edp = 16 / 4 = 4 across hosts.
  v1::Layout proto = MakeLayout(8, 2, 1, 1, 16);
  proto.mutable_parallelism()->set_ep(4);
  SetShape(proto, 1, 1024, 1024, 4, 1, 2);
  proto.mutable_model()->set_experts(8);
  proto.mutable_model()->set_top_k(1);
  proto.mutable_model()->set_params(1e9);
  TrafficModel t = Predict(proto);
  const double dense = 4.0 * 4 * 1024 * 1024;  // 16,777,216
  const DimTraffic& edp = Get(t, Dim::kEdp);
  ASSERT_TRUE(edp.available) << edp.unavailable_reason;
  EXPECT_DOUBLE_EQ(edp.bytes_per_call, (1e9 - dense) / 4 * 2);
  EXPECT_DOUBLE_EQ(edp.rank_send_bytes, 2.0 * 3 / 4 * (1e9 - dense) / 4 * 2);
  EXPECT_EQ(Get(t, Dim::kEp).groups_crossing, 0u);
  EXPECT_EQ(Get(t, Dim::kEp).nic_bytes, 0.0);
  // Without hidden/layers the split cannot be made: both say so.
  proto.mutable_model()->clear_hidden();
  TrafficModel t2 = Predict(proto);
  EXPECT_FALSE(Get(t2, Dim::kDp).available);
  EXPECT_THAT(Get(t2, Dim::kDp).unavailable_reason, HasSubstr("model.hidden"));
  EXPECT_FALSE(Get(t2, Dim::kEdp).available);
}

TEST(TrafficModelTest, ContextParallelRingAndDpCpGradientGroup) {
  // 8 GPUs: tp=4, cp=2, one host: the ring stays on NVLink.
  v1::Layout proto = MakeLayout(8, 1, 4, 1, 1);
  proto.mutable_parallelism()->set_cp(2);
  SetShape(proto, 1, 8192, 4096, 2, 3, 2);
  proto.mutable_model()->set_params(1e9);
  TrafficModel t = Predict(proto);
  const DimTraffic& cp = Get(t, Dim::kCp);
  // K and V of S/cp tokens, H/tp wide: 2 x 4096 x 1024 x 2 bytes.
  const double kv = 2.0 * 4096 * 1024 * 2;
  EXPECT_DOUBLE_EQ(cp.bytes_per_call, kv);
  EXPECT_EQ(cp.calls_per_step, 3.0 * 1 * 2 * 3);
  EXPECT_DOUBLE_EQ(cp.rank_send_bytes, 18 * kv);
  EXPECT_EQ(cp.nic_bytes, 0.0);
  // Each rank holds S/cp tokens: TP messages shrink accordingly.
  EXPECT_DOUBLE_EQ(Get(t, Dim::kTp).bytes_per_call, 4096.0 * 4096 * 2);
  // Gradients are reduced over dp-cp (size 2), not dp (size 1).
  EXPECT_EQ(t.Find(Dim::kDp), nullptr);
  EXPECT_DOUBLE_EQ(Get(t, Dim::kDpCp).rank_send_bytes, 1e9 / 4 * 2);
}

TEST(TrafficModelTest, NoModelSectionListsEveryDimensionAsUnavailable) {
  v1::Layout proto = MakeLayout(4, 2, 8, 1, 1);
  TrafficModel t = Predict(proto);
  EXPECT_FALSE(t.has_model());
  ASSERT_EQ(t.Dimensions().size(), 1u);  // tp only: pp = dp = 1
  const DimTraffic& tp = t.Dimensions()[0];
  EXPECT_FALSE(tp.available);
  EXPECT_EQ(tp.unavailable_reason, "the layout has no model section");
  EXPECT_EQ(tp.groups_crossing, 1u);  // still known without a model
  EXPECT_TRUE(t.TpCrossings().empty());
  EXPECT_EQ(t.SerialSeconds(), 0.0);
  // NICs are listed, predicted to carry nothing.
  ASSERT_EQ(t.Nics().size(), 8u);
  EXPECT_EQ(t.PredictedNicBytesPerStep("gpu-001", "mlx5_3")->tx, 0.0);
}

TEST(TrafficModelTest, SingleRankMovesNothing) {
  v1::Layout proto = MakeLayout(1, 1, 1, 1, 1);
  proto.mutable_model()->set_params(1e9);
  TrafficModel t = Predict(proto);
  EXPECT_TRUE(t.Dimensions().empty());
  EXPECT_EQ(t.SerialSeconds(), 0.0);
}

TEST(TrafficModelTest, RejectsInvalidLinkParams) {
  absl::StatusOr<LayoutModel> layout =
      LayoutModel::Build(MakeLayout(8, 1, 8, 1, 1));
  ASSERT_TRUE(layout.ok());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    LinkParams link;
    const char* field;
  };
  LinkParams zero_nic, nan_nvlink, negative_alpha, inf_alpha;
  zero_nic.nic_bytes_per_second = 0;
  nan_nvlink.nvlink_bytes_per_second = nan;
  negative_alpha.alpha_nvlink = -1e-6;
  inf_alpha.alpha_nic = inf;
  for (const Case& c :
       {Case{zero_nic, "nic_bytes_per_second"},
        Case{nan_nvlink, "nvlink_bytes_per_second"},
        Case{negative_alpha, "alpha_nvlink"}, Case{inf_alpha, "alpha_nic"}}) {
    absl::StatusOr<TrafficModel> t = TrafficModel::Predict(*layout, c.link);
    ASSERT_FALSE(t.ok()) << c.field;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(t.status().message(), HasSubstr(c.field));
  }
  EXPECT_TRUE(ValidateLinkParams(LinkParams{}).ok());
}

TEST(TrafficModelTest, ExtremeModelValuesStayFinite) {
  // The largest values LayoutModel accepts must not overflow to inf.
  v1::Layout proto = MakeLayout(8, 2, 8, 1, 2);
  SetShape(proto, 10000000, 1000000000, 10000000, 100000, 10000000, 8);
  proto.mutable_model()->set_params(1e16);
  TrafficModel t = Predict(proto);
  for (const DimTraffic& d : t.Dimensions()) {
    EXPECT_TRUE(d.available) << DimName(d.dim);
    EXPECT_TRUE(std::isfinite(d.seconds)) << DimName(d.dim);
    EXPECT_GT(d.seconds, 0) << DimName(d.dim);
  }
}

}  // namespace
}  // namespace fabricdiag::analysis
