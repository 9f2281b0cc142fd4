#include "agent/ethtool_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "agent/ethtool_ioctl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::agent {
namespace {

using ::testing::_;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Return;
using ::testing::SizeIs;

class MockEthtoolStats : public EthtoolStats {
 public:
  MOCK_METHOD(absl::StatusOr<std::vector<std::string>>, StatNames,
              (const std::string& ifname), (override));
  MOCK_METHOD(absl::StatusOr<std::vector<uint64_t>>, StatValues,
              (const std::string& ifname, size_t count), (override));
};

Snapshot WithNetdevs(const std::vector<std::string>& names) {
  Snapshot snap;
  for (const std::string& name : names) {
    NetdevInfo info;
    info.name = name;
    snap.netdevs.push_back(info);
  }
  return snap;
}

const Sample* Find(const Snapshot& snap, const std::string& device,
                   const std::string& name) {
  for (const Sample& s : snap.samples) {
    if (s.desc->device == device && s.desc->name == name) return &s;
  }
  return nullptr;
}

EthtoolSourceOptions PerQueue() {
  EthtoolSourceOptions options;
  options.include_per_queue = true;
  return options;
}

EthtoolSourceOptions RefreshEvery(int reads) {
  EthtoolSourceOptions options;
  options.names_refresh_reads = reads;
  return options;
}

EthtoolSourceOptions MaxBytes(size_t bytes) {
  EthtoolSourceOptions options;
  options.max_text_file_bytes = bytes;
  return options;
}

std::vector<std::string> SampleNames(const Snapshot& snap) {
  std::vector<std::string> names;
  for (const Sample& s : snap.samples) names.push_back(s.desc->name);
  return names;
}

// ---------------------------------------------------------------------------
// Kernel mode with a mocked seam.

class EthtoolSourceKernelTest : public ::testing::Test {
 protected:
  EthtoolSource MakeSource(
      EthtoolSourceOptions options = EthtoolSourceOptions()) {
    auto mock = std::make_unique<MockEthtoolStats>();
    mock_ = mock.get();
    return EthtoolSource(std::move(mock), options);
  }
  MockEthtoolStats* mock_ = nullptr;
};

const std::vector<std::string> kNoPfc = {"rx_bytes_phy", "rx0_packets",
                                         "rx_discards_phy"};
// PFC enabled on priority 3: mlx5 adds five names (en_stats.c).
const std::vector<std::string> kPfc3 = {"rx_bytes_phy",
                                        "rx0_packets",
                                        "rx_discards_phy",
                                        "rx_prio3_pause",
                                        "rx_prio3_pause_duration",
                                        "tx_prio3_pause",
                                        "tx_prio3_pause_duration",
                                        "rx_prio3_pause_transition"};

TEST_F(EthtoolSourceKernelTest, EmitsClassifiedSamplesAndSkipsPerQueue) {
  EthtoolSource source = MakeSource();
  EXPECT_CALL(*mock_, StatNames("eth0")).WillOnce(Return(kPfc3));
  EXPECT_CALL(*mock_, StatValues("eth0", 8))
      .WillOnce(Return(
          std::vector<uint64_t>{1000, 5, 7, 11, 2500000, 13, UINT64_MAX, 4}));
  Snapshot snap = WithNetdevs({"eth0"});
  SourceStatus status = source.Collect(snap.netdevs, &snap);

  EXPECT_TRUE(status.ok);
  EXPECT_EQ(status.errors, 0);
  EXPECT_EQ(status.source, "ethtool");
  EXPECT_EQ(source.name(), "ethtool");
  EXPECT_EQ(Find(snap, "eth0", "rx0_packets"), nullptr);
  ASSERT_THAT(snap.samples, SizeIs(7));

  const Sample* dur = Find(snap, "eth0", "rx_prio3_pause_duration");
  ASSERT_NE(dur, nullptr);
  EXPECT_EQ(dur->desc->subsystem, Subsystem::kEthtool);
  EXPECT_EQ(dur->raw, 2500000u);
  EXPECT_EQ(dur->desc->meaning, Meaning::kPfcPauseDuration);
  EXPECT_EQ(dur->desc->direction, Direction::kRx);
  EXPECT_EQ(dur->desc->priority, 3);
  EXPECT_EQ(dur->desc->unit, "seconds");
  EXPECT_THAT(dur->BaseValue(), DoubleNear(2.5, 1e-12));

  const Sample* tx = Find(snap, "eth0", "tx_prio3_pause_duration");
  ASSERT_NE(tx, nullptr);
  EXPECT_EQ(tx->raw, UINT64_MAX);  // raw kept bit-exact
  EXPECT_EQ(tx->desc->direction, Direction::kTx);

  const Sample* frames = Find(snap, "eth0", "rx_prio3_pause");
  ASSERT_NE(frames, nullptr);
  EXPECT_EQ(frames->desc->meaning, Meaning::kPfcPauseFrames);
  EXPECT_EQ(frames->raw, 11u);
}

TEST_F(EthtoolSourceKernelTest, IncludePerQueueOption) {
  EthtoolSource source = MakeSource(PerQueue());
  EXPECT_CALL(*mock_, StatNames("eth0")).WillOnce(Return(kNoPfc));
  EXPECT_CALL(*mock_, StatValues("eth0", 3))
      .WillOnce(Return(std::vector<uint64_t>{1, 2, 3}));
  Snapshot snap = WithNetdevs({"eth0"});
  source.Collect(snap.netdevs, &snap);
  EXPECT_THAT(SampleNames(snap),
              ElementsAre("rx_bytes_phy", "rx0_packets", "rx_discards_phy"));
  EXPECT_EQ(Find(snap, "eth0", "rx0_packets")->raw, 2u);
}

TEST_F(EthtoolSourceKernelTest, NamesAreReadOnceWhileTheCountIsStable) {
  EthtoolSource source = MakeSource();
  EXPECT_CALL(*mock_, StatNames("eth0")).Times(1).WillOnce(Return(kNoPfc));
  EXPECT_CALL(*mock_, StatValues("eth0", 3))
      .Times(3)
      .WillRepeatedly(Return(std::vector<uint64_t>{1, 2, 3}));
  for (int i = 0; i < 3; ++i) {
    Snapshot snap = WithNetdevs({"eth0"});
    EXPECT_TRUE(source.Collect(snap.netdevs, &snap).ok);
    EXPECT_THAT(snap.samples, SizeIs(2));
  }
}

TEST_F(EthtoolSourceKernelTest, CountChangeRereadsNamesInTheSameCollect) {
  EthtoolSource source = MakeSource();
  ::testing::InSequence seq;
  EXPECT_CALL(*mock_, StatNames("eth0")).WillOnce(Return(kNoPfc));
  EXPECT_CALL(*mock_, StatValues("eth0", 3))
      .WillOnce(Return(std::vector<uint64_t>{1, 2, 3}));
  // PFC gets enabled on priority 3 between two collects.
  EXPECT_CALL(*mock_, StatValues("eth0", 3))
      .WillOnce(Return(absl::AbortedError("eth0: count is 8, expected 3")));
  EXPECT_CALL(*mock_, StatNames("eth0")).WillOnce(Return(kPfc3));
  EXPECT_CALL(*mock_, StatValues("eth0", 8))
      .WillOnce(Return(std::vector<uint64_t>{1, 2, 3, 40, 0, 0, 0, 0}));

  Snapshot first = WithNetdevs({"eth0"});
  source.Collect(first.netdevs, &first);
  EXPECT_EQ(Find(first, "eth0", "rx_prio3_pause"), nullptr);

  Snapshot second = WithNetdevs({"eth0"});
  SourceStatus status = source.Collect(second.netdevs, &second);
  EXPECT_TRUE(status.ok) << status.last_error;
  const Sample* pause = Find(second, "eth0", "rx_prio3_pause");
  ASSERT_NE(pause, nullptr);
  EXPECT_EQ(pause->raw, 40u);
}

TEST_F(EthtoolSourceKernelTest, NoEthtoolStatsIsNotAnError) {
  EthtoolSource source = MakeSource();
  EXPECT_CALL(*mock_, StatNames("lo"))
      .WillRepeatedly(Return(absl::UnimplementedError("lo: no stats")));
  EXPECT_CALL(*mock_, StatValues(_, _)).Times(0);
  Snapshot snap = WithNetdevs({"lo"});
  SourceStatus status = source.Collect(snap.netdevs, &snap);
  EXPECT_TRUE(status.ok);
  EXPECT_EQ(status.errors, 0);
  EXPECT_THAT(snap.samples, IsEmpty());
}

TEST_F(EthtoolSourceKernelTest, VanishedNetdevIsNotAnErrorAndDropsCache) {
  EthtoolSource source = MakeSource();
  ::testing::InSequence seq;
  EXPECT_CALL(*mock_, StatNames("eth0")).WillOnce(Return(kNoPfc));
  EXPECT_CALL(*mock_, StatValues("eth0", 3))
      .WillOnce(Return(std::vector<uint64_t>{1, 2, 3}));
  EXPECT_CALL(*mock_, StatValues("eth0", 3))
      .WillOnce(Return(absl::NotFoundError("eth0: No such device")));
  // Re-created with another driver: names must be read again.
  EXPECT_CALL(*mock_, StatNames("eth0"))
      .WillOnce(Return(std::vector<std::string>{"peer_ifindex"}));
  EXPECT_CALL(*mock_, StatValues("eth0", 1))
      .WillOnce(Return(std::vector<uint64_t>{7}));

  Snapshot a = WithNetdevs({"eth0"});
  source.Collect(a.netdevs, &a);
  EXPECT_EQ(source.cached_netdevs(), 1u);

  Snapshot b = WithNetdevs({"eth0"});
  SourceStatus status = source.Collect(b.netdevs, &b);
  EXPECT_TRUE(status.ok);
  EXPECT_THAT(b.samples, IsEmpty());
  EXPECT_EQ(source.cached_netdevs(), 0u);

  Snapshot c = WithNetdevs({"eth0"});
  source.Collect(c.netdevs, &c);
  const Sample* peer = Find(c, "eth0", "peer_ifindex");
  ASSERT_NE(peer, nullptr);
  EXPECT_EQ(peer->desc->kind, Kind::kGauge);
}

TEST_F(EthtoolSourceKernelTest, NetdevMissingFromSnapshotIsForgotten) {
  EthtoolSource source = MakeSource();
  EXPECT_CALL(*mock_, StatNames("eth0"))
      .Times(2)
      .WillRepeatedly(Return(kNoPfc));
  EXPECT_CALL(*mock_, StatValues("eth0", 3))
      .WillRepeatedly(Return(std::vector<uint64_t>{1, 2, 3}));
  Snapshot a = WithNetdevs({"eth0"});
  source.Collect(a.netdevs, &a);
  Snapshot b = WithNetdevs({});
  source.Collect(b.netdevs, &b);
  EXPECT_EQ(source.cached_netdevs(), 0u);
  Snapshot c = WithNetdevs({"eth0"});
  source.Collect(c.netdevs, &c);  // second StatNames call
  EXPECT_THAT(c.samples, SizeIs(2));
}

TEST_F(EthtoolSourceKernelTest, ValueCountMismatchRereadsThenFails) {
  EthtoolSource source = MakeSource();
  // A broken seam keeps returning 2 values for 3 names.
  EXPECT_CALL(*mock_, StatNames("eth0"))
      .Times(2)
      .WillRepeatedly(Return(kNoPfc));
  EXPECT_CALL(*mock_, StatValues("eth0", 3))
      .Times(2)
      .WillRepeatedly(Return(std::vector<uint64_t>{1, 2}));
  EXPECT_CALL(*mock_, StatNames("eth1"))
      .WillOnce(Return(std::vector<std::string>{"rx_out_of_buffer"}));
  EXPECT_CALL(*mock_, StatValues("eth1", 1))
      .WillOnce(Return(std::vector<uint64_t>{99}));

  Snapshot snap = WithNetdevs({"eth0", "eth1"});
  SourceStatus status = source.Collect(snap.netdevs, &snap);
  EXPECT_FALSE(status.ok);
  EXPECT_EQ(status.errors, 1);
  EXPECT_THAT(status.last_error, HasSubstr("eth0"));
  EXPECT_THAT(status.last_error, HasSubstr("2 ethtool values for 3 names"));
  // Nothing half-labelled from eth0; eth1 unaffected.
  EXPECT_THAT(SampleNames(snap), ElementsAre("rx_out_of_buffer"));
  EXPECT_EQ(source.cached_netdevs(), 1u);
}

TEST_F(EthtoolSourceKernelTest, MismatchOnceRecoversAfterReread) {
  EthtoolSource source = MakeSource();
  ::testing::InSequence seq;
  EXPECT_CALL(*mock_, StatNames("eth0")).WillOnce(Return(kNoPfc));
  EXPECT_CALL(*mock_, StatValues("eth0", 3))
      .WillOnce(Return(std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_CALL(*mock_, StatNames("eth0")).WillOnce(Return(kNoPfc));
  EXPECT_CALL(*mock_, StatValues("eth0", 3))
      .WillOnce(Return(std::vector<uint64_t>{1, 2, 3}));
  Snapshot snap = WithNetdevs({"eth0"});
  EXPECT_TRUE(source.Collect(snap.netdevs, &snap).ok);
  EXPECT_THAT(snap.samples, SizeIs(2));
}

TEST_F(EthtoolSourceKernelTest, OtherErrorsAreCountedPerNetdev) {
  EthtoolSource source = MakeSource();
  EXPECT_CALL(*mock_, StatNames("eth0"))
      .WillOnce(Return(absl::PermissionDeniedError("eth0: EPERM")));
  EXPECT_CALL(*mock_, StatNames("eth1")).WillOnce(Return(kNoPfc));
  EXPECT_CALL(*mock_, StatValues("eth1", 3))
      .WillOnce(Return(absl::UnavailableError("eth1: EBUSY")));
  EXPECT_CALL(*mock_, StatNames("eth2"))
      .WillOnce(Return(std::vector<std::string>{"rx_bytes_phy"}));
  EXPECT_CALL(*mock_, StatValues("eth2", 1))
      .WillOnce(Return(std::vector<uint64_t>{5}));
  Snapshot snap = WithNetdevs({"eth0", "eth1", "eth2"});
  SourceStatus status = source.Collect(snap.netdevs, &snap);
  EXPECT_FALSE(status.ok);
  EXPECT_EQ(status.errors, 2);
  EXPECT_THAT(status.last_error, HasSubstr("eth1"));
  EXPECT_THAT(SampleNames(snap), ElementsAre("rx_bytes_phy"));
}

TEST_F(EthtoolSourceKernelTest, SameCountDifferentNamesIsCaughtByRefresh) {
  // PFC moved from priority 3 to 4: same count, different names.
  EthtoolSource source = MakeSource(RefreshEvery(2));
  ::testing::InSequence seq;
  EXPECT_CALL(*mock_, StatNames("eth0"))
      .WillOnce(Return(std::vector<std::string>{"rx_prio3_pause"}));
  EXPECT_CALL(*mock_, StatValues("eth0", 1))
      .Times(2)
      .WillRepeatedly(Return(std::vector<uint64_t>{1}));
  EXPECT_CALL(*mock_, StatNames("eth0"))
      .WillOnce(Return(std::vector<std::string>{"rx_prio4_pause"}));
  EXPECT_CALL(*mock_, StatValues("eth0", 1))
      .WillOnce(Return(std::vector<uint64_t>{1}));
  Snapshot last;
  for (int i = 0; i < 3; ++i) {
    last = WithNetdevs({"eth0"});
    source.Collect(last.netdevs, &last);
  }
  ASSERT_THAT(last.samples, SizeIs(1));
  EXPECT_EQ(last.samples[0].desc->priority, 4);
}

TEST_F(EthtoolSourceKernelTest, DuplicateNamesAndNetdevsAreEmittedOnce) {
  EthtoolSource source = MakeSource();
  EXPECT_CALL(*mock_, StatNames("eth0"))
      .WillOnce(Return(std::vector<std::string>{"a", "a", "b"}));
  EXPECT_CALL(*mock_, StatValues("eth0", 3))
      .WillOnce(Return(std::vector<uint64_t>{1, 2, 3}));
  Snapshot snap = WithNetdevs({"eth0", "eth0"});
  source.Collect(snap.netdevs, &snap);
  EXPECT_THAT(SampleNames(snap), ElementsAre("a", "b"));
  EXPECT_EQ(Find(snap, "eth0", "a")->raw, 1u);
}

TEST_F(EthtoolSourceKernelTest, EmptyStatSetReadsNoValues) {
  EthtoolSource source = MakeSource();
  EXPECT_CALL(*mock_, StatNames("eth0"))
      .WillOnce(Return(std::vector<std::string>{}));
  EXPECT_CALL(*mock_, StatValues(_, _)).Times(0);
  Snapshot snap = WithNetdevs({"eth0"});
  EXPECT_TRUE(source.Collect(snap.netdevs, &snap).ok);
  EXPECT_THAT(snap.samples, IsEmpty());
}

// ---------------------------------------------------------------------------
// Text mode on a temporary directory.

std::string ReadFixture(const std::string& relative) {
  const char* env = std::getenv("FABRICDIAG_FIXTURES");
  std::string root =
      env != nullptr ? std::string(env)
                     : std::string(FABRICDIAG_SOURCE_DIR) + "/tests/fixtures";
  std::ifstream in(root + "/ethtool/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << relative;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class EthtoolSourceTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/ethtool_text_XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    ASSERT_NE(::mkdtemp(buf.data()), nullptr);
    dir_ = buf.data();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void Write(const std::string& name, const std::string& content) {
    std::ofstream out(dir_ + "/" + name, std::ios::binary);
    out << content;
    ASSERT_TRUE(out.good());
  }
  SourceStatus CollectText(
      const std::vector<std::string>& netdevs, Snapshot* snap,
      EthtoolSourceOptions options = EthtoolSourceOptions()) {
    EthtoolSource source(EthtoolTextDir{dir_}, options);
    *snap = WithNetdevs(netdevs);
    return source.Collect(snap->netdevs, snap);
  }
  std::string dir_;
};

// SYNTHETIC: no real mlx5 capture with per-priority PFC lines exists (see
// tests/fixtures/ethtool/PROVENANCE.md). These lines use the exact names of
// en_stats.c with invented values, appended to the real 5.15 capture.
constexpr char kSyntheticPfcLines[] =
    "     rx_prio3_pause: 1200\n"
    "     rx_prio3_pause_duration: 3500000\n"
    "     rx_prio3_pause_transition: 600\n"
    "     tx_prio3_pause: 80\n"
    "     tx_prio3_pause_duration: 250\n"
    "     tx_pause_storm_warning_events: 2\n"
    "     tx_pause_storm_error_events: 1\n";

TEST_F(EthtoolSourceTextTest, Mlx5CaptureWithSyntheticPfc) {
  std::string text =
      ReadFixture("mlx5/cx6dx_100g_kernel5.15_xdp_nonzero_only.txt");
  if (!text.empty() && text.back() != '\n') text += '\n';
  Write("eth0", text + kSyntheticPfcLines);
  Snapshot snap;
  SourceStatus status = CollectText({"eth0", "eth1"}, &snap);
  EXPECT_TRUE(status.ok) << status.last_error;
  EXPECT_EQ(status.errors, 0);

  const Sample* dur = Find(snap, "eth0", "rx_prio3_pause_duration");
  ASSERT_NE(dur, nullptr);
  EXPECT_EQ(dur->desc->meaning, Meaning::kPfcPauseDuration);
  EXPECT_EQ(dur->desc->priority, 3);
  EXPECT_THAT(dur->BaseValue(), DoubleNear(3.5, 1e-9));
  const Sample* storm = Find(snap, "eth0", "tx_pause_storm_error_events");
  ASSERT_NE(storm, nullptr);
  EXPECT_EQ(storm->desc->meaning, Meaning::kPauseStormError);
  // Real values from the capture, exact.
  const Sample* discards = Find(snap, "eth0", "rx_discards_phy");
  ASSERT_NE(discards, nullptr);
  EXPECT_EQ(discards->raw, 58591428329u);
  EXPECT_EQ(discards->desc->meaning, Meaning::kRxDiscardsPhy);
  const Sample* global = Find(snap, "eth0", "tx_global_pause_duration");
  ASSERT_NE(global, nullptr);
  EXPECT_THAT(global->BaseValue(), DoubleNear(771.103810, 1e-9));
  // Per-ring stats are skipped by default; eth1 has no file: no samples.
  EXPECT_EQ(Find(snap, "eth0", "rx0_packets"), nullptr);
  EXPECT_EQ(Find(snap, "eth0", "ch0_events"), nullptr);
  for (const Sample& s : snap.samples) {
    EXPECT_EQ(s.desc->device, "eth0");
    EXPECT_EQ(s.desc->subsystem, Subsystem::kEthtool);
  }
}

TEST_F(EthtoolSourceTextTest, BnxtCaptureWithPerQueueOption) {
  Write("ens1f0", ReadFixture("bnxt_en/bcm_10gsr85.statistics.txt"));
  Snapshot without;
  CollectText({"ens1f0"}, &without);
  Snapshot with;
  CollectText({"ens1f0"}, &with, PerQueue());
  EXPECT_THAT(without.samples, SizeIs(397 - 192));
  EXPECT_THAT(with.samples, SizeIs(397));
  const Sample* ring = Find(with, "ens1f0", "[0]: rx_ucast_packets");
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->raw, 276347403u);
  const Sample* pfc = Find(without, "ens1f0", "rx_pfc_ena_frames_pri3");
  ASSERT_NE(pfc, nullptr);
  EXPECT_EQ(pfc->desc->meaning, Meaning::kPfcPauseFrames);
  EXPECT_EQ(pfc->desc->priority, 3);
}

TEST_F(EthtoolSourceTextTest, GarbageLinesAreOneErrorAndGoodLinesKept) {
  Write("eth0",
        "NIC statistics:\n     rx_discards_phy: 5\n     bad: -3\n"
        "     worse: x\n     rx_out_of_buffer: 6\n");
  Snapshot snap;
  SourceStatus status = CollectText({"eth0"}, &snap);
  EXPECT_FALSE(status.ok);
  EXPECT_EQ(status.errors, 1);
  EXPECT_THAT(status.last_error, HasSubstr("eth0"));
  EXPECT_THAT(status.last_error, HasSubstr("2 unparseable"));
  EXPECT_THAT(SampleNames(snap),
              ElementsAre("rx_discards_phy", "rx_out_of_buffer"));
}

TEST_F(EthtoolSourceTextTest, EmptyFileMeansNoStatsAndNoError) {
  Write("eth0", "");
  Snapshot snap;
  SourceStatus status = CollectText({"eth0"}, &snap);
  EXPECT_TRUE(status.ok);
  EXPECT_THAT(snap.samples, IsEmpty());
}

TEST_F(EthtoolSourceTextTest, BinaryJunkIsAnErrorNotACrash) {
  std::string junk;
  uint32_t x = 7;
  for (int i = 0; i < 100000; ++i) {
    x = x * 1664525u + 1013904223u;
    junk.push_back(static_cast<char>(x >> 24));
  }
  Write("eth0", junk);
  Write("eth1", "rx_bytes_phy: 1\n");
  Snapshot snap;
  SourceStatus status = CollectText({"eth0", "eth1"}, &snap);
  EXPECT_FALSE(status.ok);
  EXPECT_EQ(status.errors, 1);
  EXPECT_NE(Find(snap, "eth1", "rx_bytes_phy"), nullptr);
}

TEST_F(EthtoolSourceTextTest, HugeLineAndOversizedFile) {
  Write("eth0", std::string(2 << 20, 'a') + ": 1\nrx_bits_phy: 3\n");
  Write("eth1", std::string(4096, '\n') + "rx_bits_phy: 3\n");
  Snapshot snap;
  SourceStatus status = CollectText({"eth0", "eth1"}, &snap, MaxBytes(1 << 22));
  EXPECT_EQ(status.errors, 1);  // eth0's huge name
  EXPECT_NE(Find(snap, "eth0", "rx_bits_phy"), nullptr);

  Snapshot small;
  status = CollectText({"eth0", "eth1"}, &small, MaxBytes(1024));
  EXPECT_EQ(status.errors, 2);  // both files exceed 1 KiB
  EXPECT_THAT(status.last_error, HasSubstr("larger than 1024"));
  EXPECT_THAT(small.samples, IsEmpty());
}

TEST_F(EthtoolSourceTextTest, NonRegularFilesAreErrorsAndFifoDoesNotHang) {
  ASSERT_EQ(::mkdir((dir_ + "/eth0").c_str(), 0755), 0);
  ASSERT_EQ(::mkfifo((dir_ + "/eth1").c_str(), 0644), 0);
  Snapshot snap;
  SourceStatus status = CollectText({"eth0", "eth1"}, &snap);
  EXPECT_EQ(status.errors, 2);
  EXPECT_THAT(status.last_error, HasSubstr("not a regular file"));
}

TEST_F(EthtoolSourceTextTest, NetdevNameCannotEscapeTheDirectory) {
  Write("secret", "rx_bytes_phy: 1\n");
  ASSERT_EQ(::mkdir((dir_ + "/sub").c_str(), 0755), 0);
  EthtoolSource source(EthtoolTextDir{dir_ + "/sub"}, {});
  Snapshot snap = WithNetdevs({"../secret", "..", ""});
  SourceStatus status = source.Collect(snap.netdevs, &snap);
  EXPECT_EQ(status.errors, 3);
  EXPECT_THAT(snap.samples, IsEmpty());
}

TEST_F(EthtoolSourceTextTest, MissingDirectoryIsReported) {
  EthtoolSource source(EthtoolTextDir{dir_ + "/does-not-exist"}, {});
  Snapshot snap = WithNetdevs({"eth0"});
  SourceStatus status = source.Collect(snap.netdevs, &snap);
  EXPECT_FALSE(status.ok);
  EXPECT_THAT(status.last_error, HasSubstr("does-not-exist"));
}

TEST_F(EthtoolSourceTextTest, ReadsTheCurrentFileOnEveryCollect) {
  EthtoolSource source(EthtoolTextDir{dir_}, {});
  Write("eth0", "rx_discards_phy: 1\n");
  Snapshot a = WithNetdevs({"eth0"});
  source.Collect(a.netdevs, &a);
  Write("eth0", "rx_discards_phy: 2\n");
  Snapshot b = WithNetdevs({"eth0"});
  source.Collect(b.netdevs, &b);
  ASSERT_NE(Find(b, "eth0", "rx_discards_phy"), nullptr);
  EXPECT_EQ(Find(b, "eth0", "rx_discards_phy")->raw, 2u);
}

// Text reads reuse the names' classification while the names match, and
// classify afresh when the file's stat set changes (PFC enabled on a
// priority adds its lines; the same count with other names must not keep
// the old meanings).
TEST_F(EthtoolSourceTextTest, NameChangesAreClassifiedAfresh) {
  EthtoolSource source(EthtoolTextDir{dir_}, {});
  Write("eth0", "rx_discards_phy: 1\nrx_prio3_pause: 5\n");
  Snapshot a = WithNetdevs({"eth0"});
  source.Collect(a.netdevs, &a);
  ASSERT_NE(Find(a, "eth0", "rx_prio3_pause"), nullptr);
  EXPECT_EQ(Find(a, "eth0", "rx_prio3_pause")->desc->priority, 3);
  EXPECT_EQ(source.cached_netdevs(), 1u);

  Write("eth0", "rx_discards_phy: 2\nrx_prio4_pause: 7\n");
  Snapshot b = WithNetdevs({"eth0"});
  source.Collect(b.netdevs, &b);
  EXPECT_EQ(Find(b, "eth0", "rx_prio3_pause"), nullptr);
  const Sample* p4 = Find(b, "eth0", "rx_prio4_pause");
  ASSERT_NE(p4, nullptr);
  EXPECT_EQ(p4->desc->meaning, Meaning::kPfcPauseFrames);
  EXPECT_EQ(p4->desc->priority, 4);
  EXPECT_EQ(p4->raw, 7u);
  EXPECT_EQ(Find(b, "eth0", "rx_discards_phy")->desc->meaning,
            Meaning::kRxDiscardsPhy);
  // The first snapshot still describes its samples as they were read: it
  // holds the descriptions the source has since replaced.
  EXPECT_EQ(Find(a, "eth0", "rx_prio3_pause")->desc->priority, 3);

  // The netdev goes away: its cached names are dropped.
  Snapshot c = WithNetdevs({});
  source.Collect(c.netdevs, &c);
  EXPECT_EQ(source.cached_netdevs(), 0u);
}

// One buffer serves every file: a file much larger than the previous one
// (or than its size when opened) is still read whole.
TEST_F(EthtoolSourceTextTest, LargerFileAfterASmallOneIsReadWhole) {
  EthtoolSource source(EthtoolTextDir{dir_}, {});
  Write("eth0", "a: 1\n");
  Snapshot small = WithNetdevs({"eth0"});
  ASSERT_TRUE(source.Collect(small.netdevs, &small).ok);
  std::string big = "NIC statistics:\n";
  for (int i = 0; i < 5000; ++i) {
    big += "     stat_" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  }
  Write("eth0", big);
  Snapshot large = WithNetdevs({"eth0"});
  SourceStatus st = source.Collect(large.netdevs, &large);
  EXPECT_TRUE(st.ok) << st.last_error;
  ASSERT_EQ(large.samples.size(), 5000u);
  EXPECT_EQ(Find(large, "eth0", "stat_4999")->raw, 4999u);
}

// Polling a support bundle or a simulator's files must not keep updating
// their access times.
TEST_F(EthtoolSourceTextTest, ReadsDoNotTouchAccessTimes) {
  Write("eth0", "rx_discards_phy: 1\n");
  const std::string path = dir_ + "/eth0";
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const struct timespec times[2] = {{st.st_mtim.tv_sec - 3600, 0}, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  {
    // Control: relatime updates an atime older than the mtime on a read.
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
  }
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  if (st.st_atim.tv_sec == times[0].tv_sec) {
    GTEST_SKIP() << "this filesystem keeps no access times";
  }
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  Snapshot snap;
  ASSERT_TRUE(CollectText({"eth0"}, &snap).ok);
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_atim.tv_sec, times[0].tv_sec);
}

}  // namespace
}  // namespace fabricdiag::agent
