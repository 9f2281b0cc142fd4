// The real SIOCETHTOOL path against a veth pair in a network namespace the
// test creates (and always deletes). Skipped when namespaces cannot be
// created (not root, no `ip`, EPERM in a container).
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/ethtool_ioctl.h"
#include "agent/ethtool_source.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::agent {
namespace {

using ::testing::Contains;

// Runs a shell command quietly; returns its exit status (-1 if it did not
// exit normally).
int RunQuietly(const std::string& command) {
  int rc = std::system((command + " >/dev/null 2>&1").c_str());
  if (rc == -1 || !WIFEXITED(rc)) return -1;
  return WEXITSTATUS(rc);
}

TEST(SplitEthtoolStringsTest, HandlesPaddingAndUnterminatedNames) {
  // Three 32-byte slots: NUL-padded, exactly 32 characters (no NUL), and a
  // slot with bytes after the terminator (left over by a driver).
  std::string data;
  data += std::string("rx_prio3_pause") + std::string(18, '\0');
  data += std::string(32, 'n');
  data += std::string("tx\0garbage", 10) + std::string(22, 'x');
  data += "partial slot";  // not a whole slot: ignored
  EXPECT_THAT(
      SplitEthtoolStrings(data, 3),
      ::testing::ElementsAre("rx_prio3_pause", std::string(32, 'n'), "tx"));
  // A count larger than the data never reads past it.
  EXPECT_THAT(SplitEthtoolStrings(data, 100), ::testing::SizeIs(3));
  EXPECT_THAT(SplitEthtoolStrings("", 5), ::testing::IsEmpty());
}

class EthtoolVethTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root to create a network namespace";
    }
    if (RunQuietly("ip -V") != 0) {
      GTEST_SKIP() << "the `ip` command (iproute2) is not installed";
    }
    ns_ = "fdtest-" + std::to_string(::getpid());
    if (RunQuietly("ip netns add " + ns_) != 0) {
      GTEST_SKIP() << "cannot create network namespace " << ns_
                   << " (EPERM? no netns support?)";
    }
    created_ = true;
    // No addresses: the ethtool ioctls do not need any.
    ASSERT_EQ(
        RunQuietly("ip -n " + ns_ + " link add vA type veth peer name vB"), 0)
        << "cannot create a veth pair (veth module missing?)";
    ASSERT_EQ(RunQuietly("ip -n " + ns_ + " link set vA up"), 0);
    ASSERT_EQ(RunQuietly("ip -n " + ns_ + " link set vB up"), 0);
  }

  void TearDown() override {
    if (created_) {
      EXPECT_EQ(RunQuietly("ip netns del " + ns_), 0) << "leaked netns " << ns_;
    }
  }

  // Runs `fn` on a thread that has entered the test namespace. Returns
  // false (with `error_`) when setns failed.
  bool InNamespace(const std::function<void()>& fn) {
    bool ok = false;
    std::thread thread([&] {
      std::string path = "/run/netns/" + ns_;
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        error_ = path + ": " + std::strerror(errno);
        return;
      }
      // Only this thread moves; it exits right after `fn`.
      int rc = ::setns(fd, CLONE_NEWNET);
      int err = errno;
      ::close(fd);
      if (rc != 0) {
        error_ = std::string("setns: ") + std::strerror(err);
        return;
      }
      ok = true;
      fn();
    });
    thread.join();
    return ok;
  }

  std::string ns_;
  bool created_ = false;
  std::string error_;
};

TEST_F(EthtoolVethTest, KernelStatsOfVethInsideNamespace) {
  std::unique_ptr<KernelEthtoolStats> stats;
  absl::Status create_status;
  absl::StatusOr<std::vector<std::string>> names;
  absl::StatusOr<std::vector<uint64_t>> values;
  unsigned peer_ifindex = 0;
  absl::StatusOr<std::vector<std::string>> lo_names;
  absl::StatusOr<std::vector<uint64_t>> lo_values;
  absl::StatusOr<std::vector<std::string>> missing_names;
  absl::StatusOr<std::vector<uint64_t>> missing_values;
  absl::StatusOr<std::vector<uint64_t>> wrong_count;

  ASSERT_TRUE(InNamespace([&] {
    absl::StatusOr<std::unique_ptr<KernelEthtoolStats>> created =
        KernelEthtoolStats::Create();
    create_status = created.status();
    if (!created.ok()) return;
    stats = *std::move(created);
    names = stats->StatNames("vA");
    if (names.ok()) {
      values = stats->StatValues("vA", names->size());
      wrong_count = stats->StatValues("vA", names->size() + 1);
    }
    peer_ifindex = ::if_nametoindex("vB");
    lo_names = stats->StatNames("lo");
    lo_values = stats->StatValues("lo", 0);
    missing_names = stats->StatNames("fdnope0");
    missing_values = stats->StatValues("fdnope0", 3);
  })) << error_;

  ASSERT_TRUE(create_status.ok()) << create_status;
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, Contains("peer_ifindex"));
  ASSERT_TRUE(values.ok()) << values.status();
  ASSERT_EQ(values->size(), names->size());
  ASSERT_NE(peer_ifindex, 0u);
  size_t index = static_cast<size_t>(
      std::find(names->begin(), names->end(), "peer_ifindex") - names->begin());
  EXPECT_EQ((*values)[index], peer_ifindex);

  // A stale count is reported so the caller re-reads the names.
  EXPECT_TRUE(absl::IsAborted(wrong_count.status())) << wrong_count.status();
  // lo has no ethtool statistics.
  EXPECT_TRUE(absl::IsUnimplemented(lo_names.status())) << lo_names.status();
  EXPECT_TRUE(absl::IsUnimplemented(lo_values.status())) << lo_values.status();
  // A netdev that does not exist.
  EXPECT_TRUE(absl::IsNotFound(missing_names.status()))
      << missing_names.status();
  EXPECT_TRUE(absl::IsNotFound(missing_values.status()))
      << missing_values.status();
  EXPECT_THAT(std::string(missing_names.status().message()),
              ::testing::HasSubstr("fdnope0"));

  // The socket stays in the namespace it was created in: from this thread
  // (host namespace, which has no vA) the same object still sees vA.
  absl::StatusOr<std::vector<std::string>> again = stats->StatNames("vA");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *names);
}

TEST_F(EthtoolVethTest, SourceEndToEndInsideNamespace) {
  std::unique_ptr<EthtoolSource> source;
  unsigned peer_ifindex = 0;
  ASSERT_TRUE(InNamespace([&] {
    absl::StatusOr<std::unique_ptr<KernelEthtoolStats>> created =
        KernelEthtoolStats::Create();
    if (!created.ok()) return;
    source = std::make_unique<EthtoolSource>(*std::move(created),
                                             EthtoolSourceOptions());
    peer_ifindex = ::if_nametoindex("vB");
  })) << error_;
  ASSERT_NE(source, nullptr);

  Snapshot snap;
  for (const char* name : {"vA", "lo", "fdnope0"}) {
    NetdevInfo info;
    info.name = name;
    snap.netdevs.push_back(info);
  }
  SourceStatus status = source->Collect(snap.netdevs, &snap);
  // lo (no stats) and fdnope0 (gone) are not errors.
  EXPECT_TRUE(status.ok) << status.last_error;
  EXPECT_EQ(status.errors, 0);
  const Sample* peer = nullptr;
  for (const Sample& s : snap.samples) {
    EXPECT_EQ(s.desc->device, "vA");
    // Per-queue rx_queue_0_* are skipped by default.
    EXPECT_EQ(s.desc->name.rfind("rx_queue_", 0), std::string::npos)
        << s.desc->name;
    if (s.desc->name == "peer_ifindex") peer = &s;
  }
  ASSERT_NE(peer, nullptr);
  EXPECT_EQ(peer->raw, peer_ifindex);
  EXPECT_EQ(peer->desc->kind, Kind::kGauge);
  EXPECT_EQ(peer->desc->subsystem, Subsystem::kEthtool);
}

}  // namespace
}  // namespace fabricdiag::agent
