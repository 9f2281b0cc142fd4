#include "agent/rdma_sysfs_source.h"

#include <sys/stat.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_sysfs.h"

namespace fabricdiag::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string FixtureRoot() {
  return std::string(FABRICDIAG_SOURCE_DIR) + "/tests/fixtures/sysfs";
}

SysfsReader::Options NoCache() {
  SysfsReader::Options o;
  o.cache_policy = FdCachePolicy::kNever;
  return o;
}

const Sample* Find(const Snapshot& snap, Subsystem subsystem,
                   const std::string& device, uint32_t port,
                   const std::string& name) {
  for (const Sample& s : snap.samples) {
    if (s.desc->subsystem == subsystem && s.desc->device == device &&
        s.desc->port == port && s.desc->name == name) {
      return &s;
    }
  }
  return nullptr;
}

const RdmaPortInfo* FindPort(const Snapshot& snap, const std::string& device,
                             uint32_t port) {
  for (const RdmaPortInfo& p : snap.rdma_ports) {
    if (p.device == device && p.port == port) return &p;
  }
  return nullptr;
}

const RdmaDeviceInfo* FindDevice(const Snapshot& snap,
                                 const std::string& device) {
  for (const RdmaDeviceInfo& d : snap.rdma_devices) {
    if (d.name == device) return &d;
  }
  return nullptr;
}

int CountDevice(const Snapshot& snap, const std::string& device) {
  int n = 0;
  for (const Sample& s : snap.samples) n += s.desc->device == device;
  return n;
}

// --- the procfs fixtures (real files; values from procfs's Go tests) -------

class RdmaFixtureTest : public ::testing::Test {
 protected:
  void SetUp() override { status_ = source_.Collect(&snap_); }
  SysfsReader reader_{FixtureRoot(), NoCache()};
  RdmaSysfsSource source_{&reader_};
  Snapshot snap_;
  SourceStatus status_;
};

TEST_F(RdmaFixtureTest, ReportsAllDevicesWithoutErrors) {
  EXPECT_EQ(status_.source, "rdma_sysfs");
  EXPECT_TRUE(status_.ok) << status_.last_error;
  EXPECT_EQ(status_.errors, 0);
  std::vector<std::string> names;
  for (const RdmaDeviceInfo& d : snap_.rdma_devices) names.push_back(d.name);
  EXPECT_THAT(names, ElementsAre("hfi1_0", "mlx4_0", "mlx5_0"));
  ASSERT_EQ(snap_.rdma_ports.size(), 4u);  // mlx4_0 has 2 ports
  EXPECT_NE(FindPort(snap_, "mlx4_0", 2), nullptr);
}

TEST_F(RdmaFixtureTest, DataCountersAreFourOctetWords) {
  const Sample* rcv =
      Find(snap_, Subsystem::kRdmaPortCounters, "mlx5_0", 1, "port_rcv_data");
  ASSERT_NE(rcv, nullptr);
  EXPECT_EQ(rcv->raw, 18126345378u);
  EXPECT_EQ(rcv->desc->scale, 4.0);
  EXPECT_EQ(rcv->BaseValue(), 72505381512.0);
  EXPECT_EQ(rcv->desc->unit, "bytes");
  EXPECT_EQ(rcv->desc->width_bits, 64u);  // unicast_* present: extended width
  EXPECT_EQ(rcv->desc->direction, Direction::kRx);
  EXPECT_FALSE(rcv->saturated);

  struct Expect {
    const char* dev;
    uint32_t port;
    const char* name;
    double base;
  } expects[] = {
      {"mlx5_0", 1, "port_xmit_data", 11523046035392.0},
      {"mlx5_0", 1, "port_rcv_packets", 541889824.0},
      {"mlx5_0", 1, "port_xmit_packets", 10907922116.0},
      {"mlx5_0", 1, "unicast_xmit_packets", 10907922116.0},
      {"hfi1_0", 1, "port_rcv_data", 1380366808104.0},
      {"hfi1_0", 1, "port_xmit_data", 1094233306172.0},
      {"hfi1_0", 1, "port_rcv_packets", 638036947.0},
      {"hfi1_0", 1, "port_xmit_packets", 568318856.0},
      {"mlx4_0", 1, "port_rcv_data", 8884894436.0},
      {"mlx4_0", 1, "port_xmit_data", 106036453180.0},
      {"mlx4_0", 1, "port_xmit_wait", 3599.0},
      {"mlx4_0", 2, "port_rcv_data", 9841747136.0},
      {"mlx4_0", 2, "port_xmit_data", 106161427560.0},
      {"mlx4_0", 2, "port_xmit_wait", 3846.0},
      {"mlx4_0", 2, "port_rcv_packets", 89332064.0},
      {"mlx4_0", 2, "port_xmit_packets", 88622850.0},
  };
  for (const Expect& e : expects) {
    const Sample* s =
        Find(snap_, Subsystem::kRdmaPortCounters, e.dev, e.port, e.name);
    ASSERT_NE(s, nullptr) << e.dev << " " << e.name;
    EXPECT_EQ(s->BaseValue(), e.base) << e.dev << " " << e.name;
  }
}

TEST_F(RdmaFixtureTest, PmaWidthsFollowTheCounterTable) {
  const Sample* sym =
      Find(snap_, Subsystem::kRdmaPortCounters, "mlx4_0", 1, "symbol_error");
  ASSERT_NE(sym, nullptr);
  EXPECT_EQ(sym->desc->width_bits, 16u);
  const Sample* lli = Find(snap_, Subsystem::kRdmaPortCounters, "hfi1_0", 1,
                           "local_link_integrity_errors");
  ASSERT_NE(lli, nullptr);
  EXPECT_EQ(lli->desc->width_bits, 4u);
  // mlx4_0 has no unicast files, but port_xmit_data exceeds 2^32-1.
  const Sample* data =
      Find(snap_, Subsystem::kRdmaPortCounters, "mlx4_0", 1, "port_rcv_data");
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->desc->width_bits, 64u);
}

TEST_F(RdmaFixtureTest, HwCountersWithoutLifespan) {
  EXPECT_EQ(
      Find(snap_, Subsystem::kRdmaPortHwCounters, "mlx5_0", 1, "lifespan"),
      nullptr);
  struct Expect {
    const char* name;
    uint64_t raw;
  } expects[] = {
      {"duplicate_request", 41},       {"local_ack_timeout_err", 131},
      {"out_of_sequence", 1},          {"packet_seq_err", 1},
      {"req_cqe_error", 3481},         {"req_cqe_flush_error", 80},
      {"resp_cqe_error", 8109},        {"resp_cqe_flush_error", 4708},
      {"roce_adp_retrans", 99},        {"roce_adp_retrans_to", 4},
      {"roce_slow_restart_cnps", 131}, {"rx_read_requests", 175528982},
      {"rx_write_requests", 742114},   {"rx_atomic_requests", 0},
  };
  for (const Expect& e : expects) {
    const Sample* s =
        Find(snap_, Subsystem::kRdmaPortHwCounters, "mlx5_0", 1, e.name);
    ASSERT_NE(s, nullptr) << e.name;
    EXPECT_EQ(s->raw, e.raw) << e.name;
    EXPECT_EQ(s->desc->width_bits, 32u) << e.name;  // mlx5 Q-counters
  }
  int hw = 0;
  for (const Sample& s : snap_.samples) {
    hw += s.desc->subsystem == Subsystem::kRdmaPortHwCounters;
  }
  EXPECT_EQ(hw, 24);  // 25 files minus lifespan
}

TEST_F(RdmaFixtureTest, PortAttributesAndInfo) {
  const RdmaPortInfo* p = FindPort(snap_, "mlx5_0", 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->state_id, 4);
  EXPECT_EQ(p->state, "ACTIVE");
  EXPECT_EQ(p->phys_state_id, 4);
  EXPECT_EQ(p->phys_state, "ACTIVE");
  EXPECT_EQ(p->rate_text, "25 Gb/sec (1X EDR)");
  ASSERT_TRUE(p->rate_bytes_per_second.has_value());
  EXPECT_EQ(*p->rate_bytes_per_second, 3125000000.0);
  const RdmaPortInfo* ib = FindPort(snap_, "mlx4_0", 2);
  ASSERT_NE(ib, nullptr);
  EXPECT_EQ(ib->link_layer, "InfiniBand");  // file is "InfiniBand\n\n"
  EXPECT_THAT(ib->netdevs, IsEmpty());

  const Sample* rate = Find(snap_, Subsystem::kRdmaPortAttribute, "hfi1_0", 1,
                            "rate_bytes_per_second");
  ASSERT_NE(rate, nullptr);
  EXPECT_EQ(rate->raw, 12500000000u);
  EXPECT_EQ(rate->desc->kind, Kind::kGauge);
  const Sample* state =
      Find(snap_, Subsystem::kRdmaPortAttribute, "mlx5_0", 1, "state_id");
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(state->raw, 4u);
  EXPECT_NE(
      Find(snap_, Subsystem::kRdmaPortAttribute, "mlx5_0", 1, "phys_state_id"),
      nullptr);

  const RdmaDeviceInfo* mlx5 = FindDevice(snap_, "mlx5_0");
  ASSERT_NE(mlx5, nullptr);
  EXPECT_EQ(mlx5->fw_ver, "14.28.2006");
  EXPECT_EQ(mlx5->board_id, "SM_2001000001034");
  EXPECT_EQ(mlx5->hca_type, "MT4118");
  EXPECT_EQ(mlx5->node_guid, "0a7f:bc12:45ef:d23b");  // no trailing newline
  const RdmaDeviceInfo* hfi = FindDevice(snap_, "hfi1_0");
  ASSERT_NE(hfi, nullptr);
  EXPECT_EQ(hfi->board_id,
            "HPE 100Gb 1-port OP101 QSFP28 x16 PCIe Gen3 with Intel Omni-Path "
            "Adapter");
  EXPECT_EQ(hfi->fw_ver, "1.27.0");
  const RdmaDeviceInfo* mlx4 = FindDevice(snap_, "mlx4_0");
  ASSERT_NE(mlx4, nullptr);
  EXPECT_EQ(mlx4->fw_ver, "2.31.5050");
  EXPECT_EQ(mlx4->hca_type, "MT4099");
}

TEST_F(RdmaFixtureTest, SecondCollectReportsTheSameSamples) {
  Snapshot again;
  SourceStatus st = source_.Collect(&again);
  EXPECT_TRUE(st.ok);
  EXPECT_EQ(again.samples.size(), snap_.samples.size());
}

// --- a RoCE node with the real-system layout -------------------------------

class RdmaRoceNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<FakeRoceNode> node = BuildRoceNode(tmp_.path(), 8);
    ASSERT_TRUE(node.ok()) << node.status();
    node_ = *node;
  }
  ScopedTempDir tmp_;
  FakeRoceNode node_;
  FakeSysfs fake_{tmp_.path()};
  SysfsReader reader_{tmp_.path(), NoCache()};
  RdmaSysfsSource source_{&reader_};
};

TEST_F(RdmaRoceNodeTest, ReportsEveryNicWithMapping) {
  Snapshot snap;
  SourceStatus st = source_.Collect(&snap);
  EXPECT_TRUE(st.ok) << st.last_error;
  ASSERT_EQ(snap.rdma_devices.size(), 8u);
  ASSERT_EQ(snap.rdma_ports.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const std::string dev = absl::StrCat("mlx5_", i);
    const std::string netdev = absl::StrCat("ens", i + 1, "f0np0");
    const RdmaPortInfo* p = FindPort(snap, dev, 1);
    ASSERT_NE(p, nullptr);
    EXPECT_THAT(p->netdevs, ElementsAre(netdev));
    EXPECT_EQ(p->link_layer, "Ethernet");
    EXPECT_EQ(*p->rate_bytes_per_second, 50000000000.0);
    EXPECT_THAT(FindDevice(snap, dev)->netdevs, ElementsAre(netdev));

    const uint64_t base = static_cast<uint64_t>(i + 1) * 1000;
    const Sample* xmit =
        Find(snap, Subsystem::kRdmaPortCounters, dev, 1, "port_xmit_data");
    ASSERT_NE(xmit, nullptr);
    EXPECT_EQ(xmit->raw, base * 1000003);
    const Sample* cnp =
        Find(snap, Subsystem::kRdmaPortHwCounters, dev, 1, "np_cnp_sent");
    ASSERT_NE(cnp, nullptr);
    EXPECT_EQ(cnp->desc->width_bits, 64u);
    const Sample* oos =
        Find(snap, Subsystem::kRdmaPortHwCounters, dev, 1, "out_of_sequence");
    ASSERT_NE(oos, nullptr);
    EXPECT_EQ(oos->desc->width_bits, 32u);
    EXPECT_NE(
        Find(snap, Subsystem::kRdmaDeviceHwCounters, dev, 0, "rp_cnp_handled"),
        nullptr);
    EXPECT_EQ(Find(snap, Subsystem::kRdmaDeviceHwCounters, dev, 0, "lifespan"),
              nullptr);
    // Every PMA counter, every mlx5 hw counter per port and per device
    // (31 in the table, the lifespan setting left out), 3 attribute gauges.
    const size_t pma = FakePmaCounterNames().size();
    const size_t hw = FakeMlx5HwCounterNames().size() - 1;
    EXPECT_EQ(pma, 21u);
    EXPECT_EQ(hw, 31u);
    EXPECT_EQ(static_cast<size_t>(CountDevice(snap, dev)), pma + hw + hw + 3)
        << dev;
  }
}

TEST_F(RdmaRoceNodeTest, SeesNewValuesAndHotPlug) {
  Snapshot first;
  source_.Collect(&first);
  ASSERT_TRUE(fake_.SetPortCounter("mlx5_2", 1, "port_rcv_data", 777).ok());
  ASSERT_TRUE(fake_.RemoveRdmaDevice("mlx5_3").ok());
  FakeRdmaDeviceSpec spec;
  spec.netdevs = {"ens9f0np0"};
  ASSERT_TRUE(fake_.AddRdmaDevice("mlx5_8", spec).ok());

  Snapshot second;
  SourceStatus st = source_.Collect(&second);
  EXPECT_TRUE(st.ok) << st.last_error;
  EXPECT_EQ(
      Find(second, Subsystem::kRdmaPortCounters, "mlx5_2", 1, "port_rcv_data")
          ->raw,
      777u);
  EXPECT_EQ(CountDevice(second, "mlx5_3"), 0);
  EXPECT_EQ(FindDevice(second, "mlx5_3"), nullptr);
  EXPECT_NE(FindDevice(second, "mlx5_8"), nullptr);
  EXPECT_NE(Find(second, Subsystem::kRdmaPortHwCounters, "mlx5_8", 1,
                 "np_ecn_marked_roce_packets"),
            nullptr);
  EXPECT_EQ(second.rdma_devices.size(), 8u);
}

TEST_F(RdmaRoceNodeTest, DeviceRecreatedWithOtherCountersIsRescanned) {
  Snapshot first;
  source_.Collect(&first);
  ASSERT_NE(Find(first, Subsystem::kRdmaPortHwCounters, "mlx5_0", 1,
                 "out_of_sequence"),
            nullptr);
  // Firmware without the hw_counters capabilities: device comes back bare.
  ASSERT_TRUE(fake_.RemoveRdmaDevice("mlx5_0").ok());
  FakeRdmaDeviceSpec bare;
  bare.mlx5_hw_counters = false;
  ASSERT_TRUE(fake_.AddRdmaDevice("mlx5_0", bare).ok());
  ASSERT_TRUE(fake_.SetHwCounter("mlx5_0", 1, "rx_write_requests", 5).ok());
  Snapshot second;
  SourceStatus st = source_.Collect(&second);
  EXPECT_TRUE(st.ok) << st.last_error;
  EXPECT_EQ(Find(second, Subsystem::kRdmaPortHwCounters, "mlx5_0", 1,
                 "out_of_sequence"),
            nullptr);
  const Sample* w = Find(second, Subsystem::kRdmaPortHwCounters, "mlx5_0", 1,
                         "rx_write_requests");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->raw, 5u);
}

TEST_F(RdmaRoceNodeTest, CachedDescriptorsStillWork) {
  SysfsReader::Options o;
  o.cache_policy = FdCachePolicy::kAlways;
  SysfsReader cached(tmp_.path(), o);
  RdmaSysfsSource source(&cached);
  Snapshot a, b;
  source.Collect(&a);
  size_t fds = cached.cached_fd_count();
  EXPECT_GT(fds, 8u * 50);
  source.Collect(&b);
  EXPECT_EQ(cached.cached_fd_count(), fds);
  EXPECT_EQ(a.samples.size(), b.samples.size());
  // Removing a device closes its descriptors.
  ASSERT_TRUE(fake_.RemoveRdmaDevice("mlx5_7").ok());
  Snapshot c;
  source.Collect(&c);
  EXPECT_LT(cached.cached_fd_count(), fds);
  EXPECT_EQ(CountDevice(c, "mlx5_7"), 0);
}

// A periodic rescan keeps the descriptors of the files that are still
// there instead of reopening ~900 files. Seen here through kAlways on a
// regular-file tree: a counter rewritten by rename is a new inode, which a
// kept descriptor does not see (exactly why kAuto keeps none on such trees).
TEST_F(RdmaRoceNodeTest, RescansKeepTheDescriptors) {
  SysfsReader::Options o;
  o.cache_policy = FdCachePolicy::kAlways;
  SysfsReader cached(tmp_.path(), o);
  RdmaSysfsSource::Options options;
  options.rescan_every_n_calls = 1;  // rebuild every plan on every call
  RdmaSysfsSource source(&cached, options);
  Snapshot a;
  source.Collect(&a);
  const size_t fds = cached.cached_fd_count();
  const uint64_t before =
      Find(a, Subsystem::kRdmaPortCounters, "mlx5_2", 1, "port_rcv_data")->raw;
  ASSERT_TRUE(
      fake_.SetPortCounter("mlx5_2", 1, "port_rcv_data", before + 777).ok());
  Snapshot b;
  SourceStatus st = source.Collect(&b);
  EXPECT_TRUE(st.ok) << st.last_error;
  EXPECT_EQ(cached.cached_fd_count(), fds);
  EXPECT_EQ(
      Find(b, Subsystem::kRdmaPortCounters, "mlx5_2", 1, "port_rcv_data")->raw,
      before);  // the kept descriptor, not a reopened file
  // A reader that keeps nothing sees the new value after the same rescan.
  RdmaSysfsSource fresh(&reader_, options);
  Snapshot c;
  fresh.Collect(&c);
  EXPECT_EQ(
      Find(c, Subsystem::kRdmaPortCounters, "mlx5_2", 1, "port_rcv_data")->raw,
      before + 777);
}

TEST_F(RdmaRoceNodeTest, HwCounterWidthUsesTheDriverNotTheName) {
  FakeRdmaDeviceSpec renamed;  // udev-renamed mlx5 device
  ASSERT_TRUE(fake_.AddRdmaDevice("rocep23s0", renamed).ok());
  FakeRdmaDeviceSpec rxe;
  rxe.driver = "";  // soft-RoCE: no PCI driver link
  ASSERT_TRUE(fake_.AddRdmaDevice("rxe0", rxe).ok());
  Snapshot snap;
  source_.Collect(&snap);
  const Sample* a = Find(snap, Subsystem::kRdmaPortHwCounters, "rocep23s0", 1,
                         "duplicate_request");
  const Sample* b = Find(snap, Subsystem::kRdmaPortHwCounters, "rxe0", 1,
                         "duplicate_request");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->desc->width_bits, 32u);
  EXPECT_EQ(b->desc->width_bits, 64u);
}

// --- hostile trees -----------------------------------------------------------

TEST(RdmaHostileTest, BadFilesAreCountedAndEverythingElseReported) {
  ScopedTempDir tmp;
  FakeSysfs fake(tmp.path());
  ASSERT_TRUE(BuildRoceNode(tmp.path(), 3).ok());
  const std::string c0 = "class/infiniband/mlx5_0/ports/1/counters/";
  const std::string h0 = "class/infiniband/mlx5_0/ports/1/hw_counters/";
  // Real errors (5):
  ASSERT_TRUE(fake.WriteFile(c0 + "symbol_error", "abc\n").ok());
  ASSERT_TRUE(
      fake.WriteFile(c0 + "port_xmit_discards", "18446744073709551616\n").ok());
  ASSERT_TRUE(
      fake.WriteFile(c0 + "VL15_dropped", std::string("\x00\xff\x01\x7f", 4))
          .ok());
  ASSERT_TRUE(fake.Symlink("loopy", h0 + "loopy").ok());
  ASSERT_TRUE(fake.Remove("class/infiniband/mlx5_1/ports/1/counters").ok());
  ASSERT_TRUE(fake.WriteFile("class/infiniband/mlx5_1/ports/1/counters",
                             "I am a file\n")
                  .ok());
  // Normal absences (no error):
  ASSERT_TRUE(fake.WriteFile(c0 + "link_downed", "N/A (no PMA)\n").ok());
  ASSERT_TRUE(fake.WriteFile(c0 + "port_rcv_errors", "").ok());
  // Legal odd names (hfi1 "SwLinkUp,32", irdma "RNR sent"):
  ASSERT_TRUE(fake.WriteFile(h0 + "SwLinkUp,32", "5\n").ok());
  ASSERT_TRUE(fake.WriteFile(h0 + "RNR sent", "7\n").ok());
  // A device entry that loops: skipped, the rest reported.
  ASSERT_TRUE(fake.Symlink("loopdev", "class/infiniband/loopdev").ok());
  // chmod 000: root still reads it (documented), so it must be reported.
  ASSERT_TRUE(fake.SetPortCounter("mlx5_2", 1, "port_rcv_packets", 99).ok());
  ASSERT_EQ(chmod((tmp.path() + "/class/infiniband/mlx5_2/ports/1/counters/"
                                "port_rcv_packets")
                      .c_str(),
                  0),
            0);
  // Saturated fixed-width PMA counters.
  ASSERT_TRUE(
      fake.SetPortCounter("mlx5_2", 1, "port_xmit_wait", 4294967295ULL).ok());
  ASSERT_TRUE(fake.SetPortCounter("mlx5_2", 1, "symbol_error", 65535).ok());
  ASSERT_TRUE(fake.SetPortCounter("mlx5_2", 1, "link_downed", 254).ok());

  SysfsReader reader(tmp.path(), NoCache());
  RdmaSysfsSource source(&reader);
  for (int call = 0; call < 2; ++call) {  // structural errors persist
    Snapshot snap;
    SourceStatus st = source.Collect(&snap);
    EXPECT_FALSE(st.ok);
    EXPECT_EQ(st.errors, 5) << "call " << call << ": " << st.last_error;
    EXPECT_FALSE(st.last_error.empty());
    EXPECT_EQ(snap.rdma_devices.size(), 3u);

    auto pma = [&](const std::string& dev, const std::string& name) {
      return Find(snap, Subsystem::kRdmaPortCounters, dev, 1, name);
    };
    EXPECT_EQ(pma("mlx5_0", "symbol_error"), nullptr);
    EXPECT_EQ(pma("mlx5_0", "port_xmit_discards"), nullptr);
    EXPECT_EQ(pma("mlx5_0", "VL15_dropped"), nullptr);
    EXPECT_EQ(pma("mlx5_0", "link_downed"), nullptr);      // absent, not 0
    EXPECT_EQ(pma("mlx5_0", "port_rcv_errors"), nullptr);  // absent, not 0
    ASSERT_NE(pma("mlx5_0", "port_xmit_data"), nullptr);
    EXPECT_EQ(pma("mlx5_0", "port_xmit_data")->raw, 1000u * 1000003);
    EXPECT_NE(
        Find(snap, Subsystem::kRdmaPortHwCounters, "mlx5_0", 1, "SwLinkUp,32"),
        nullptr);
    EXPECT_EQ(
        Find(snap, Subsystem::kRdmaPortHwCounters, "mlx5_0", 1, "RNR sent")
            ->raw,
        7u);
    // mlx5_1 lost its PMA counters but keeps hw_counters and attributes.
    EXPECT_EQ(pma("mlx5_1", "port_xmit_data"), nullptr);
    EXPECT_NE(Find(snap, Subsystem::kRdmaPortHwCounters, "mlx5_1", 1,
                   "out_of_sequence"),
              nullptr);
    EXPECT_NE(FindPort(snap, "mlx5_1", 1), nullptr);

    ASSERT_NE(pma("mlx5_2", "port_rcv_packets"), nullptr);
    EXPECT_EQ(pma("mlx5_2", "port_rcv_packets")->raw, 99u);
    EXPECT_TRUE(pma("mlx5_2", "port_xmit_wait")->saturated);
    EXPECT_EQ(pma("mlx5_2", "port_xmit_wait")->desc->width_bits, 32u);
    EXPECT_TRUE(pma("mlx5_2", "symbol_error")->saturated);
    EXPECT_FALSE(pma("mlx5_2", "link_downed")->saturated);
    EXPECT_FALSE(pma("mlx5_2", "port_xmit_data")->saturated);
  }
}

TEST(RdmaHostileTest, DeviceRemovedBetweenCallsAndMissingClassDir) {
  ScopedTempDir tmp;
  FakeSysfs fake(tmp.path());
  SysfsReader reader(tmp.path(), NoCache());
  RdmaSysfsSource source(&reader);
  {
    Snapshot snap;
    SourceStatus st = source.Collect(&snap);  // no class/infiniband: no RDMA
    EXPECT_TRUE(st.ok);
    EXPECT_TRUE(snap.samples.empty());
  }
  ASSERT_TRUE(BuildRoceNode(tmp.path(), 2).ok());
  {
    Snapshot snap;
    EXPECT_TRUE(source.Collect(&snap).ok);
    EXPECT_EQ(snap.rdma_devices.size(), 2u);
  }
  // The device dir vanishes but the class link stays (a half-removed
  // device): the link dangles, so the device is simply not there.
  ASSERT_TRUE(fake.Remove("devices/pci0000:00/0000:17:00.0/infiniband").ok());
  {
    Snapshot snap;
    SourceStatus st = source.Collect(&snap);
    EXPECT_TRUE(st.ok) << st.last_error;
    EXPECT_EQ(snap.rdma_devices.size(), 1u);
    EXPECT_EQ(CountDevice(snap, "mlx5_0"), 0);
    EXPECT_GT(CountDevice(snap, "mlx5_1"), 0);
  }
}

TEST(RdmaHostileTest, OldKernelNoPmaDeviceIsNotAnError) {
  ScopedTempDir tmp;
  FakeSysfs fake(tmp.path());
  FakeRdmaDeviceSpec spec;
  spec.driver = "i40e";
  spec.mlx5_hw_counters = false;
  ASSERT_TRUE(fake.AddRdmaDevice("i40iw0", spec).ok());
  for (const std::string& name : FakePmaCounterNames()) {
    ASSERT_TRUE(
        fake.WriteFile("class/infiniband/i40iw0/ports/1/counters/" + name,
                       "N/A (no PMA)\n")
            .ok());
  }
  SysfsReader reader(tmp.path(), NoCache());
  RdmaSysfsSource source(&reader);
  Snapshot snap;
  SourceStatus st = source.Collect(&snap);
  EXPECT_TRUE(st.ok) << st.last_error;
  EXPECT_EQ(st.errors, 0);
  for (const Sample& s : snap.samples) {
    EXPECT_NE(s.desc->subsystem, Subsystem::kRdmaPortCounters) << s.desc->name;
  }
  EXPECT_NE(Find(snap, Subsystem::kRdmaPortAttribute, "i40iw0", 1, "state_id"),
            nullptr);
}

}  // namespace
}  // namespace fabricdiag::agent
