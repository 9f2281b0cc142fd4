#include "agent/report_encoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "tests/agent/sample_testing.h"

namespace fabricdiag::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Sample MakeSample(const std::string& device, const std::string& name,
                  uint64_t raw) {
  return TestSample(Subsystem::kRdmaPortCounters, device, 1, name, raw);
}

Snapshot MakeSnapshot(std::vector<Sample> samples) {
  Snapshot snap;
  snap.wall_time = absl::FromUnixSeconds(1795000000);
  snap.monotonic_nanos = 42;
  snap.samples = std::move(samples);
  return snap;
}

std::vector<SampleRate> NoRates(const Snapshot& snap) {
  return std::vector<SampleRate>(snap.samples.size());
}

std::vector<std::string> Names(const v1::Schema& schema) {
  std::vector<std::string> out;
  for (const v1::Series& s : schema.series()) {
    out.push_back(s.device() + "/" + s.name());
  }
  return out;
}

std::vector<uint64_t> Raw(const v1::Report& r) {
  return std::vector<uint64_t>(r.raw().begin(), r.raw().end());
}

EncodedReport EncodeOk(ReportEncoder& encoder, const Snapshot& snap,
                       const std::vector<SampleRate>& rates) {
  absl::StatusOr<EncodedReport> r = encoder.Encode(snap, rates);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : EncodedReport{};
}

TEST(ReportEncoderTest, SchemaIsSentOnceWhileSeriesAreStable) {
  ReportEncoder encoder;
  Snapshot snap = MakeSnapshot({MakeSample("mlx5_0", "port_xmit_data", 10),
                                MakeSample("mlx5_0", "port_rcv_data", 20)});
  EncodedReport first = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(first.new_schema.has_value());
  EXPECT_EQ(first.new_schema->schema_id(), 1u);
  EXPECT_THAT(Names(*first.new_schema),
              ElementsAre("mlx5_0/port_xmit_data", "mlx5_0/port_rcv_data"));
  EXPECT_EQ(first.report.schema_id(), 1u);
  EXPECT_THAT(Raw(first.report), ElementsAre(10, 20));
  EXPECT_EQ(first.report.wall_time_unix_nanos(), 1795000000LL * 1000000000);
  EXPECT_EQ(first.report.monotonic_nanos(), 42);

  for (int i = 0; i < 3; ++i) {
    snap.samples[0].raw += 100;
    EncodedReport next = EncodeOk(encoder, snap, NoRates(snap));
    EXPECT_FALSE(next.new_schema.has_value());
    EXPECT_EQ(next.report.schema_id(), 1u);
    EXPECT_EQ(next.report.raw(0), snap.samples[0].raw);
  }
  EXPECT_EQ(encoder.schemas_emitted(), 1u);
}

TEST(ReportEncoderTest, ValuesFollowSchemaOrderWhenSourcesReorder) {
  ReportEncoder encoder;
  Snapshot snap =
      MakeSnapshot({MakeSample("mlx5_0", "a", 1), MakeSample("mlx5_0", "b", 2),
                    MakeSample("mlx5_1", "a", 3)});
  EncodeOk(encoder, snap, NoRates(snap));
  Snapshot reordered = MakeSnapshot({MakeSample("mlx5_1", "a", 30),
                                     MakeSample("mlx5_0", "a", 10),
                                     MakeSample("mlx5_0", "b", 20)});
  EncodedReport r = EncodeOk(encoder, reordered, NoRates(reordered));
  EXPECT_FALSE(r.new_schema.has_value());
  EXPECT_THAT(Raw(r.report), ElementsAre(10, 20, 30));
  EXPECT_THAT(r.report.absent(), IsEmpty());
}

TEST(ReportEncoderTest, NewSeriesGetsNewSchemaWithNewId) {
  ReportEncoder encoder;
  Snapshot snap = MakeSnapshot({MakeSample("mlx5_0", "a", 1)});
  EncodeOk(encoder, snap, NoRates(snap));
  snap.samples.push_back(MakeSample("mlx5_1", "a", 2));  // a NIC appeared
  EncodedReport r = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(r.new_schema.has_value());
  EXPECT_EQ(r.new_schema->schema_id(), 2u);
  EXPECT_THAT(Names(*r.new_schema), ElementsAre("mlx5_0/a", "mlx5_1/a"));
  EXPECT_EQ(r.report.schema_id(), 2u);
  EXPECT_THAT(Raw(r.report), ElementsAre(1, 2));
}

TEST(ReportEncoderTest, VanishedSeriesIsAbsentThenLeavesTheSchema) {
  ReportEncoder::Options options;
  options.max_absent_reports = 2;
  ReportEncoder encoder(options);
  Snapshot full =
      MakeSnapshot({MakeSample("mlx5_0", "a", 1), MakeSample("mlx5_1", "a", 2),
                    MakeSample("mlx5_2", "a", 3)});
  EncodeOk(encoder, full, NoRates(full));
  Snapshot missing = MakeSnapshot(
      {MakeSample("mlx5_0", "a", 11), MakeSample("mlx5_2", "a", 33)});

  for (int i = 0; i < 2; ++i) {
    EncodedReport r = EncodeOk(encoder, missing, NoRates(missing));
    EXPECT_FALSE(r.new_schema.has_value()) << "report " << i;
    EXPECT_THAT(r.report.absent(), ElementsAre(1));
    EXPECT_THAT(Raw(r.report), ElementsAre(11, 0, 33));
    EXPECT_THAT(r.report.no_rate(), ElementsAre(0, 1, 2));
  }
  EncodedReport dropped = EncodeOk(encoder, missing, NoRates(missing));
  ASSERT_TRUE(dropped.new_schema.has_value());
  EXPECT_EQ(dropped.new_schema->schema_id(), 2u);
  EXPECT_THAT(Names(*dropped.new_schema), ElementsAre("mlx5_0/a", "mlx5_2/a"));
  EXPECT_THAT(dropped.report.absent(), IsEmpty());
  EXPECT_THAT(Raw(dropped.report), ElementsAre(11, 33));
}

TEST(ReportEncoderTest, TransientAbsenceResetsTheStreak) {
  ReportEncoder::Options options;
  options.max_absent_reports = 1;
  ReportEncoder encoder(options);
  Snapshot full = MakeSnapshot(
      {MakeSample("mlx5_0", "a", 1), MakeSample("mlx5_0", "b", 2)});
  Snapshot missing = MakeSnapshot({MakeSample("mlx5_0", "a", 1)});
  EncodeOk(encoder, full, NoRates(full));
  // Missing every other round never reaches two in a row.
  for (int i = 0; i < 4; ++i) {
    EXPECT_FALSE(EncodeOk(encoder, missing, NoRates(missing)).new_schema);
    EXPECT_FALSE(EncodeOk(encoder, full, NoRates(full)).new_schema);
  }
  EXPECT_EQ(encoder.schemas_emitted(), 1u);
}

TEST(ReportEncoderTest, ZeroToleranceDropsVanishedSeriesAtOnce) {
  ReportEncoder::Options options;
  options.max_absent_reports = 0;
  ReportEncoder encoder(options);
  Snapshot full = MakeSnapshot(
      {MakeSample("mlx5_0", "a", 1), MakeSample("mlx5_0", "b", 2)});
  EncodeOk(encoder, full, NoRates(full));
  Snapshot missing = MakeSnapshot({MakeSample("mlx5_0", "a", 1)});
  EncodedReport r = EncodeOk(encoder, missing, NoRates(missing));
  ASSERT_TRUE(r.new_schema.has_value());
  EXPECT_THAT(Names(*r.new_schema), ElementsAre("mlx5_0/a"));
}

TEST(ReportEncoderTest, MetadataChangeGetsNewSchema) {
  ReportEncoder encoder;
  Snapshot snap = MakeSnapshot({MakeSample("mlx5_0", "a", 1)});
  snap.samples[0] =
      Edited(snap.samples[0], [](SeriesDesc& d) { d.width_bits = 32; });
  EncodeOk(encoder, snap, NoRates(snap));
  // e.g. firmware now has extended counters
  snap.samples[0] =
      Edited(snap.samples[0], [](SeriesDesc& d) { d.width_bits = 64; });
  EncodedReport r = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(r.new_schema.has_value());
  EXPECT_EQ(r.new_schema->series(0).width_bits(), 64u);
}

TEST(ReportEncoderTest, SeriesCarryTheirMetadata) {
  ReportEncoder encoder;
  Sample s = Edited(MakeSample("eth0", "rx_prio3_pause_duration", 5),
                    [](SeriesDesc& d) {
                      d.subsystem = Subsystem::kEthtool;
                      d.port = 0;
                      d.unit = "seconds";
                      d.scale = 1e-6;
                      d.width_bits = 64;
                      d.meaning = Meaning::kPfcPauseDuration;
                      d.direction = Direction::kRx;
                      d.priority = 3;
                    });
  Sample g = Edited(MakeSample("mlx5_0", "rate", 400), [](SeriesDesc& d) {
    d.subsystem = Subsystem::kRdmaPortAttribute;
    d.kind = Kind::kGauge;
  });
  Snapshot snap = MakeSnapshot({s, g});
  EncodedReport r = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(r.new_schema.has_value());
  const v1::Series& e = r.new_schema->series(0);
  EXPECT_EQ(e.subsystem(), v1::SUBSYSTEM_ETHTOOL);
  EXPECT_EQ(e.device(), "eth0");
  EXPECT_EQ(e.port(), 0u);
  EXPECT_EQ(e.unit(), "seconds");
  EXPECT_DOUBLE_EQ(e.scale(), 1e-6);
  EXPECT_EQ(e.kind(), v1::KIND_COUNTER);
  EXPECT_EQ(e.meaning(), v1::MEANING_PFC_PAUSE_DURATION);
  EXPECT_EQ(e.direction(), v1::DIRECTION_RX);
  EXPECT_EQ(e.priority(), 3);
  EXPECT_EQ(r.new_schema->series(1).kind(), v1::KIND_GAUGE);
  EXPECT_EQ(r.new_schema->series(1).subsystem(),
            v1::SUBSYSTEM_RDMA_PORT_ATTRIBUTE);
  EXPECT_EQ(r.new_schema->series(1).priority(), -1);
}

TEST(ReportEncoderTest, RatesSkipSeriesWithoutRateAndFlagsAreIndexed) {
  ReportEncoder encoder;
  Snapshot snap =
      MakeSnapshot({MakeSample("d", "a", 1), MakeSample("d", "b", 2),
                    MakeSample("d", "c", 3), MakeSample("d", "e", 4),
                    MakeSample("d", "f", 5)});
  snap.samples[3].saturated = true;
  std::vector<SampleRate> rates(5);
  rates[0].per_second = 100.0;
  rates[1].reset = true;  // no rate after a reset
  rates[2].per_second = 2.5;
  rates[2].wrapped = true;
  rates[4].per_second = 0.0;
  EncodedReport r = EncodeOk(encoder, snap, rates);
  EXPECT_THAT(r.report.rate(), ElementsAre(100.0, 2.5, 0.0));
  EXPECT_THAT(r.report.no_rate(), ElementsAre(1, 3));
  EXPECT_THAT(r.report.reset(), ElementsAre(1));
  EXPECT_THAT(r.report.saturated(), ElementsAre(3));
  EXPECT_THAT(r.report.wrapped(), ElementsAre(2));
  EXPECT_THAT(r.report.absent(), IsEmpty());
}

TEST(ReportEncoderTest, NonFiniteRatesNeverReachTheWire) {
  ReportEncoder encoder;
  Snapshot snap =
      MakeSnapshot({MakeSample("d", "a", 1), MakeSample("d", "b", 2),
                    MakeSample("d", "c", 3)});
  std::vector<SampleRate> rates(3);
  rates[0].per_second = std::numeric_limits<double>::quiet_NaN();
  rates[1].per_second = std::numeric_limits<double>::infinity();
  rates[2].per_second = 7.0;
  EncodedReport r = EncodeOk(encoder, snap, rates);
  EXPECT_THAT(r.report.rate(), ElementsAre(7.0));
  EXPECT_THAT(r.report.no_rate(), ElementsAre(0, 1));
  EXPECT_EQ(encoder.invalid_rates(), 2u);
}

TEST(ReportEncoderTest, MismatchedRatesAreAnError) {
  ReportEncoder encoder;
  Snapshot snap = MakeSnapshot({MakeSample("d", "a", 1)});
  absl::StatusOr<EncodedReport> r = encoder.Encode(snap, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("0 rates for 1"));
}

TEST(ReportEncoderTest, InvalidAndDuplicateSamplesAreSkippedAndCounted) {
  ReportEncoder encoder;
  Sample no_name = MakeSample("d", "", 1);
  Sample no_device = MakeSample("", "x", 1);
  Sample long_name = MakeSample("d", std::string(1000, 'n'), 1);
  Sample zero_width =
      Edited(MakeSample("d", "w0", 1), [](SeriesDesc& d) { d.width_bits = 0; });
  Sample wide = Edited(MakeSample("d", "w65", 1),
                       [](SeriesDesc& d) { d.width_bits = 65; });
  Sample nan_scale = Edited(MakeSample("d", "nan", 1),
                            [](SeriesDesc& d) { d.scale = std::nan(""); });
  Sample bad_priority = Edited(MakeSample("d", "prio", 1),
                               [](SeriesDesc& d) { d.priority = 1000; });
  Snapshot snap = MakeSnapshot({MakeSample("d", "ok", 7), no_name, no_device,
                                long_name, zero_width, wide, nan_scale,
                                bad_priority, MakeSample("d", "ok", 8)});
  EncodedReport r = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(r.new_schema.has_value());
  EXPECT_THAT(Names(*r.new_schema), ElementsAre("d/ok"));
  EXPECT_THAT(Raw(r.report), ElementsAre(7));  // first of a duplicate wins
  EXPECT_EQ(encoder.skipped_samples(), 8u);
  // The same snapshot again (the same descriptions: the steady-state fast
  // path) skips and counts them the same way.
  snap.samples[0].raw = 9;
  EncodedReport again = EncodeOk(encoder, snap, NoRates(snap));
  EXPECT_FALSE(again.new_schema.has_value());
  EXPECT_THAT(Raw(again.report), ElementsAre(9));
  EXPECT_EQ(encoder.skipped_samples(), 16u);
}

// Sources rebuild their descriptions on rescans: new objects describing
// the same series keep the schema; a changed description (a width that
// differs) gets a new one even in the same order.
TEST(ReportEncoderTest, RebuiltDescriptionsKeepTheSchemaChangedOnesDoNot) {
  ReportEncoder encoder;
  Snapshot first = MakeSnapshot(
      {MakeSample("mlx5_0", "a", 1), MakeSample("mlx5_0", "b", 2)});
  EncodeOk(encoder, first, NoRates(first));
  Snapshot rebuilt = MakeSnapshot(
      {MakeSample("mlx5_0", "a", 3), MakeSample("mlx5_0", "b", 4)});
  EncodedReport same = EncodeOk(encoder, rebuilt, NoRates(rebuilt));
  EXPECT_FALSE(same.new_schema.has_value());
  EXPECT_THAT(Raw(same.report), ElementsAre(3, 4));
  EncodeOk(encoder, rebuilt, NoRates(rebuilt));  // fast path
  Snapshot narrower =
      MakeSnapshot({MakeSample("mlx5_0", "a", 5),
                    Edited(MakeSample("mlx5_0", "b", 6),
                           [](SeriesDesc& d) { d.width_bits = 32; })});
  EncodedReport changed = EncodeOk(encoder, narrower, NoRates(narrower));
  ASSERT_TRUE(changed.new_schema.has_value());
  EXPECT_EQ(changed.new_schema->series(1).width_bits(), 32u);
  EXPECT_EQ(encoder.schemas_emitted(), 2u);
}

TEST(ReportEncoderTest, AbsurdlyManySeriesAreRefused) {
  ReportEncoder encoder;
  std::vector<Sample> samples;
  for (size_t i = 0; i <= ReportEncoder::kMaxSeries; ++i) {
    samples.push_back(MakeSample("d", "c" + std::to_string(i), i));
  }
  Snapshot snap = MakeSnapshot(std::move(samples));
  absl::StatusOr<EncodedReport> r = encoder.Encode(snap, NoRates(snap));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(encoder.schema(), nullptr);
}

TEST(ReportEncoderTest, InventoryIsSentFirstAndWhenItChanges) {
  ReportEncoder encoder;
  Snapshot snap = MakeSnapshot({MakeSample("mlx5_0", "a", 1)});
  RdmaPortInfo port;
  port.device = "mlx5_0";
  port.port = 1;
  port.state = "ACTIVE";
  port.state_id = 4;
  port.rate_bytes_per_second = std::nan("");  // must not reach the wire
  snap.rdma_ports.push_back(port);
  NetdevInfo nd;
  nd.name = "eth0";
  nd.operstate = "up";
  snap.netdevs.push_back(nd);

  EncodedReport first = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(first.new_inventory.has_value());
  ASSERT_EQ(first.new_inventory->rdma_ports_size(), 1);
  EXPECT_EQ(first.new_inventory->rdma_ports(0).state(), "ACTIVE");
  EXPECT_EQ(first.new_inventory->rdma_ports(0).rate_bytes_per_second(), 0.0);
  EXPECT_EQ(first.new_inventory->netdevs(0).operstate(), "up");

  EXPECT_FALSE(EncodeOk(encoder, snap, NoRates(snap)).new_inventory);

  snap.rdma_ports[0].state = "DOWN";
  snap.rdma_ports[0].state_id = 1;
  EncodedReport changed = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(changed.new_inventory.has_value());
  EXPECT_EQ(changed.new_inventory->rdma_ports(0).state(), "DOWN");
}

TEST(ReportEncoderTest, LldpNeighborsTravelOnlyWhenTheReadIsUpAndChanged) {
  ReportEncoder encoder;
  Snapshot snap = MakeSnapshot({MakeSample("mlx5_0", "a", 1)});
  auto lldp = std::make_shared<LldpState>();
  lldp->source = "file";
  lldp->up = true;
  LldpNeighbor n;
  n.netdev = "eth0";
  n.system_name = "leaf-0";
  n.chassis_id = "12:27:29:d0:18:68";
  n.chassis_id_type = "mac";
  n.port_id = "swp1";
  n.port_id_type = "ifname";
  lldp->set.neighbors = {n};
  lldp->set.version = 1;
  snap.lldp = lldp;

  EncodedReport first = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(first.new_inventory.has_value());
  EXPECT_EQ(first.new_inventory->lldp_source(), "file");
  ASSERT_EQ(first.new_inventory->lldp_neighbors_size(), 1);
  const v1::LldpNeighbor& wire = first.new_inventory->lldp_neighbors(0);
  EXPECT_EQ(wire.local_port(), "eth0");
  EXPECT_EQ(wire.system_name(), "leaf-0");
  EXPECT_EQ(wire.chassis_id(), "12:27:29:d0:18:68");
  EXPECT_EQ(wire.port_id(), "swp1");
  EXPECT_EQ(wire.port_id_type(), "ifname");

  // The same set again (a new state object, as each tick publishes): none.
  snap.lldp = std::make_shared<LldpState>(*lldp);
  EXPECT_FALSE(EncodeOk(encoder, snap, NoRates(snap)).new_inventory);

  auto moved = std::make_shared<LldpState>(*lldp);
  moved->set.neighbors[0].port_id = "swp2";
  moved->set.version = 2;
  snap.lldp = moved;
  EncodedReport changed = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(changed.new_inventory.has_value());
  EXPECT_EQ(changed.new_inventory->lldp_neighbors(0).port_id(), "swp2");

  // A failed read keeps the monitor's neighbors but is not up: the
  // inventory says "not read" and carries none, so the collector keeps
  // what it knew.
  auto failed = std::make_shared<LldpState>(*moved);
  failed->up = false;
  snap.lldp = failed;
  EncodedReport down = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(down.new_inventory.has_value());
  EXPECT_EQ(down.new_inventory->lldp_source(), "");
  EXPECT_EQ(down.new_inventory->lldp_neighbors_size(), 0);
}

TEST(ReportEncoderTest, GpuNicPairsTravelOnlyWhenTheWalkRead) {
  ReportEncoder encoder;
  Snapshot snap = MakeSnapshot({MakeSample("mlx5_0", "a", 1)});
  GpuNicPair pair;
  pair.gpu = 3;
  pair.gpu_pci = "0000:1b:00.0";
  pair.device = "mlx5_3";
  pair.netdev = "ibp27s0";
  pair.distance = PcieDistance::kPcieSwitch;
  snap.gpu_nics = {pair};
  snap.gpus_read = false;  // the walk failed

  EncodedReport unread = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(unread.new_inventory.has_value());
  EXPECT_FALSE(unread.new_inventory->gpus_read());
  EXPECT_EQ(unread.new_inventory->gpu_nics_size(), 0);

  snap.gpus_read = true;
  EncodedReport read = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(read.new_inventory.has_value());
  EXPECT_TRUE(read.new_inventory->gpus_read());
  ASSERT_EQ(read.new_inventory->gpu_nics_size(), 1);
  const v1::GpuNic& wire = read.new_inventory->gpu_nics(0);
  EXPECT_EQ(wire.gpu(), 3u);
  EXPECT_EQ(wire.gpu_pci(), "0000:1b:00.0");
  EXPECT_EQ(wire.device(), "mlx5_3");
  EXPECT_EQ(wire.netdev(), "ibp27s0");
  EXPECT_EQ(wire.distance(), "pcie_switch");
  EXPECT_FALSE(EncodeOk(encoder, snap, NoRates(snap)).new_inventory);

  // A host without GPUs that read its tree says so: gpus_read, no pairs.
  snap.gpu_nics.clear();
  EncodedReport none = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_TRUE(none.new_inventory.has_value());
  EXPECT_TRUE(none.new_inventory->gpus_read());
  EXPECT_EQ(none.new_inventory->gpu_nics_size(), 0);
}

TEST(ReportEncoderTest, SourceHealthTravelsWithEveryReport) {
  ReportEncoder encoder;
  Snapshot snap = MakeSnapshot({MakeSample("d", "a", 1)});
  SourceStatus good;
  good.source = "rdma_sysfs";
  good.duration = absl::Milliseconds(3);
  good.last_error = "stale";  // only sent when the source failed
  SourceStatus bad;
  bad.source = "ethtool";
  bad.ok = false;
  bad.errors = 2;
  bad.last_error = std::string(5000, 'e');
  snap.sources = {good, bad};
  EncodedReport r = EncodeOk(encoder, snap, NoRates(snap));
  ASSERT_EQ(r.report.sources_size(), 2);
  EXPECT_TRUE(r.report.sources(0).ok());
  EXPECT_EQ(r.report.sources(0).duration_nanos(), 3'000'000);
  EXPECT_EQ(r.report.sources(0).last_error(), "");
  EXPECT_FALSE(r.report.sources(1).ok());
  EXPECT_EQ(r.report.sources(1).errors(), 2u);
  EXPECT_EQ(r.report.sources(1).last_error().size(),
            ReportEncoder::kMaxErrorBytes);
}

}  // namespace
}  // namespace fabricdiag::agent
