#include "agent/sysfs_reader.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/fake_sysfs.h"

namespace fabricdiag::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

SysfsReader::Options Policy(FdCachePolicy policy) {
  SysfsReader::Options o;
  o.cache_policy = policy;
  return o;
}

class SysfsReaderTest : public ::testing::Test {
 protected:
  SysfsReaderTest() : fake_(tmp_.path()) {}
  void Write(const std::string& rel, absl::string_view text) {
    ASSERT_TRUE(fake_.WriteFile(rel, text).ok());
  }
  ScopedTempDir tmp_;
  FakeSysfs fake_;
};

TEST_F(SysfsReaderTest, ReadsAttributeExactly) {
  Write("class/net/eth0/mtu", "1500\n");
  SysfsReader reader(tmp_.path());
  absl::StatusOr<std::string> v = reader.ReadAttribute("class/net/eth0/mtu");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "1500\n");
}

TEST_F(SysfsReaderTest, MissingFileIsNotFoundAndNamesThePath) {
  SysfsReader reader(tmp_.path());
  absl::StatusOr<std::string> v = reader.ReadAttribute("class/net/nope/mtu");
  EXPECT_EQ(v.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(v.status().message(), HasSubstr("class/net/nope/mtu"));
}

TEST_F(SysfsReaderTest, MissingRootIsNotFound) {
  SysfsReader reader(tmp_.path() + "/does-not-exist");
  EXPECT_EQ(reader.ListDir("class").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(SysfsReaderTest, RejectsPathsThatLeaveTheRoot) {
  SysfsReader reader(tmp_.path());
  for (const char* bad :
       {"../etc/passwd", "/etc/passwd", "class/../../x", ".."}) {
    EXPECT_EQ(reader.ReadAttribute(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST_F(SysfsReaderTest, SymlinksCannotEscapeTheRoot) {
  // A secret next to (not inside) the root, and links aiming at it.
  ScopedTempDir outside;
  FakeSysfs outside_fake(outside.path());
  ASSERT_TRUE(outside_fake.WriteFile("secret", "top secret\n").ok());
  ASSERT_TRUE(fake_.Symlink(outside.path() + "/secret", "abs_link").ok());
  ASSERT_TRUE(fake_
                  .Symlink("../../../../../../../../../../../" +
                               outside.path() + "/secret",
                           "class/rel_link")
                  .ok());
  SysfsReader reader(tmp_.path());
  for (const char* link : {"abs_link", "class/rel_link"}) {
    absl::StatusOr<std::string> v = reader.ReadAttribute(link);
    EXPECT_FALSE(v.ok()) << link << " read " << *v;
  }
}

TEST_F(SysfsReaderTest, SymlinkLoopFailsInsteadOfHanging) {
  ASSERT_TRUE(fake_.Symlink("self", "self").ok());
  ASSERT_TRUE(fake_.Symlink("b", "a").ok());
  ASSERT_TRUE(fake_.Symlink("a", "b").ok());
  SysfsReader reader(tmp_.path());
  for (const char* path : {"self", "a", "a/x", "self/counters"}) {
    absl::StatusOr<std::string> v = reader.ReadAttribute(path);
    EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition)
        << path << ": " << v.status();
  }
  EXPECT_EQ(reader.ListDir("self").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(SysfsReaderTest, ReadingADirectoryIsFailedPrecondition) {
  ASSERT_TRUE(fake_.MakeDir("class/infiniband/mlx5_0").ok());
  SysfsReader reader(tmp_.path(), Policy(FdCachePolicy::kAlways));
  absl::StatusOr<std::string> v =
      reader.ReadAttribute("class/infiniband/mlx5_0");
  EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(reader.cached_fd_count(), 0u);
}

TEST_F(SysfsReaderTest, FifoDoesNotBlock) {
  std::string fifo = tmp_.path() + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  SysfsReader reader(tmp_.path());
  EXPECT_EQ(reader.ReadAttribute("fifo").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(SysfsReaderTest, OversizedAttributeIsRejected) {
  SysfsReader::Options o;
  o.max_attribute_bytes = 16;
  Write("small", std::string(16, '7'));
  Write("big", std::string(17, '7'));
  Write("huge", std::string(200000, '7'));
  SysfsReader reader(tmp_.path(), o);
  EXPECT_EQ(reader.ReadAttribute("small").value(), std::string(16, '7'));
  EXPECT_EQ(reader.ReadAttribute("big").status().code(),
            absl::StatusCode::kOutOfRange);
  SysfsReader default_reader(tmp_.path());
  EXPECT_EQ(default_reader.ReadAttribute("huge").status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(SysfsReaderTest, AutoPolicyDoesNotCacheOnARegularFilesystem) {
  Write("counter", "1\n");
  SysfsReader reader(tmp_.path());  // kAuto
  EXPECT_FALSE(reader.caches_fds());
  EXPECT_EQ(reader.ReadAttribute("counter").value(), "1\n");
  Write("counter", "2\n");  // atomic rename: a new inode
  EXPECT_EQ(reader.ReadAttribute("counter").value(), "2\n");
  EXPECT_EQ(reader.cached_fd_count(), 0u);
}

TEST_F(SysfsReaderTest, NeverPolicyReturnsFreshDataAfterAtomicRename) {
  Write("counter", "1\n");
  SysfsReader reader(tmp_.path(), Policy(FdCachePolicy::kNever));
  EXPECT_EQ(reader.ReadAttribute("counter").value(), "1\n");
  Write("counter", "2\n");
  EXPECT_EQ(reader.ReadAttribute("counter").value(), "2\n");
  EXPECT_EQ(reader.cached_fd_count(), 0u);
}

TEST_F(SysfsReaderTest, AlwaysPolicyReusesTheDescriptor) {
  Write("counter", "1\n");
  SysfsReader reader(tmp_.path(), Policy(FdCachePolicy::kAlways));
  EXPECT_TRUE(reader.caches_fds());
  EXPECT_EQ(reader.ReadAttribute("counter").value(), "1\n");
  EXPECT_EQ(reader.cached_fd_count(), 1u);
  // In-place rewrite of the same inode: the kept fd re-reads from offset 0.
  {
    int fd = open((tmp_.path() + "/counter").c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "12345\n", 6), 6);
    close(fd);
  }
  EXPECT_EQ(reader.ReadAttribute("counter").value(), "12345\n");
  // Atomic rename replaces the inode: the kept fd still shows the old one.
  // This is exactly why kAuto does not cache on regular filesystems.
  Write("counter", "3\n");
  EXPECT_EQ(reader.ReadAttribute("counter").value(), "12345\n");
  reader.DropFdCacheUnder("coun");
  EXPECT_EQ(reader.cached_fd_count(), 0u);
  EXPECT_EQ(reader.ReadAttribute("counter").value(), "3\n");
  // ReadAttributeOnce never keeps a descriptor.
  reader.DropFdCache();
  EXPECT_EQ(reader.ReadAttributeOnce("counter").value(), "3\n");
  EXPECT_EQ(reader.cached_fd_count(), 0u);
}

TEST_F(SysfsReaderTest, VanishedFileIsNotFound) {
  Write("class/infiniband/mlx5_0/hw_counters/x", "1\n");
  SysfsReader reader(tmp_.path(), Policy(FdCachePolicy::kNever));
  EXPECT_TRUE(
      reader.ReadAttribute("class/infiniband/mlx5_0/hw_counters/x").ok());
  ASSERT_TRUE(fake_.Remove("class/infiniband/mlx5_0").ok());
  EXPECT_EQ(reader.ReadAttribute("class/infiniband/mlx5_0/hw_counters/x")
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

TEST_F(SysfsReaderTest, FdCacheIsBounded) {
  SysfsReader::Options o = Policy(FdCachePolicy::kAlways);
  o.max_cached_fds = 4;
  for (int i = 0; i < 10; ++i) Write(absl::StrCat("f", i), absl::StrCat(i));
  SysfsReader reader(tmp_.path(), o);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(reader.ReadAttribute(absl::StrCat("f", i)).value(),
                absl::StrCat(i));
      EXPECT_LE(reader.cached_fd_count(), 4u);
    }
  }
}

// openat2(RESOLVE_IN_ROOT) fails with EAGAIN when any rename on the system
// races with the lookup; the reader must retry instead of reporting the
// counter as unreadable. A second thread renames files as fast as it can.
TEST_F(SysfsReaderTest, ReadsSurviveConcurrentRenamesElsewhere) {
  Write("class/net/eth0/statistics/rx_bytes", "42\n");
  ScopedTempDir other;
  FakeSysfs churn(other.path());
  std::atomic<bool> stop{false};
  std::thread renamer([&] {
    while (!stop.load()) {
      // WriteFile is write-temp-then-rename: one rename per call.
      (void)churn.WriteFile("x", "1\n");
    }
  });
  SysfsReader reader(tmp_.path());
  int failures = 0;
  std::string last_error;
  for (int i = 0; i < 20000; ++i) {
    absl::StatusOr<std::string> v =
        reader.ReadAttribute("class/net/eth0/statistics/rx_bytes");
    if (!v.ok()) {
      ++failures;
      last_error = v.status().ToString();
    }
  }
  stop = true;
  renamer.join();
  EXPECT_EQ(failures, 0) << last_error;
}

TEST_F(SysfsReaderTest, ListsSortedAndClassifiesSymlinks) {
  Write("devices/pci0000:00/0000:17:00.0/infiniband/mlx5_1/fw_ver", "1\n");
  Write("devices/pci0000:00/0000:27:00.0/infiniband/mlx5_0/fw_ver", "1\n");
  ASSERT_TRUE(
      fake_
          .Symlink("../../devices/pci0000:00/0000:17:00.0/infiniband/mlx5_1",
                   "class/infiniband/mlx5_1")
          .ok());
  ASSERT_TRUE(
      fake_
          .Symlink("../../devices/pci0000:00/0000:27:00.0/infiniband/mlx5_0",
                   "class/infiniband/mlx5_0")
          .ok());
  ASSERT_TRUE(fake_.MakeDir("class/infiniband/a_real_dir").ok());
  Write("class/infiniband/zz_file", "x");
  ASSERT_TRUE(fake_.Symlink("nowhere", "class/infiniband/dangling").ok());
  ASSERT_TRUE(fake_.Symlink("loop", "class/infiniband/loop").ok());

  SysfsReader reader(tmp_.path());
  EXPECT_THAT(reader.ListDir("class/infiniband").value(),
              ElementsAre("a_real_dir", "dangling", "loop", "mlx5_0", "mlx5_1",
                          "zz_file"));
  EXPECT_THAT(reader.ListSubdirs("class/infiniband").value(),
              ElementsAre("a_real_dir", "mlx5_0", "mlx5_1"));
  // Loops stay visible as files so that reading them reports the loop.
  EXPECT_THAT(reader.ListFiles("class/infiniband").value(),
              ElementsAre("loop", "zz_file"));
  EXPECT_TRUE(reader.IsDir("class/infiniband/mlx5_0"));
  EXPECT_FALSE(reader.IsDir("class/infiniband/zz_file"));
  EXPECT_FALSE(reader.IsDir("class/infiniband/loop"));
  EXPECT_EQ(reader.ReadAttribute("class/infiniband/mlx5_1/fw_ver").value(),
            "1\n");
  EXPECT_EQ(reader.ListDir("class/infiniband/zz_file").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(SysfsReaderTest, ReadLinkBasenameAndStat) {
  ASSERT_TRUE(fake_
                  .Symlink("../../../bus/pci/drivers/mlx5_core",
                           "devices/pci0000:00/0000:17:00.0/driver")
                  .ok());
  SysfsReader reader(tmp_.path());
  EXPECT_EQ(
      reader.ReadLinkBasename("devices/pci0000:00/0000:17:00.0/driver").value(),
      "mlx5_core");
  EXPECT_EQ(reader.ReadLinkBasename("devices/pci0000:00/0000:17:00.0")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);  // a dir, not a link
  absl::StatusOr<FileIdentity> a = reader.Stat("devices");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(fake_.Remove("devices").ok());
  ASSERT_TRUE(fake_.MakeDir("devices").ok());
  absl::StatusOr<FileIdentity> b = reader.Stat("devices");
  ASSERT_TRUE(b.ok());
  EXPECT_NE(*a, *b);
}

// On real sysfs, pread(fd, buf, n, 0) on a kept descriptor must re-run the
// attribute's show(): send a datagram over loopback and watch the kept
// rx_packets descriptor move.
TEST(SysfsReaderRealSysfsTest, KeptDescriptorSeesNewValues) {
  struct statfs fs;
  if (statfs("/sys", &fs) != 0 ||
      static_cast<int64_t>(fs.f_type) != kSysfsMagic ||
      access("/sys/class/net/lo/statistics/rx_packets", R_OK) != 0) {
    GTEST_SKIP() << "no sysfs with class/net/lo here";
  }
  SysfsReader reader("/sys");  // kAuto
  ASSERT_TRUE(reader.caches_fds());
  const char* path = "class/net/lo/statistics/rx_packets";
  uint64_t before = std::stoull(reader.ReadAttribute(path).value());
  EXPECT_EQ(reader.cached_fd_count(), 1u);

  int s = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(9);  // discard; an ICMP error is traffic too
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 3; ++i) {
    sendto(s, "x", 1, 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  close(s);
  uint64_t after = std::stoull(reader.ReadAttribute(path).value());
  EXPECT_EQ(reader.cached_fd_count(), 1u);
  EXPECT_GT(after, before);
}

}  // namespace
}  // namespace fabricdiag::agent
