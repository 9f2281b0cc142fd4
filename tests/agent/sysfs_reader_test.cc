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
#include "tests/testing/fake_sysfs.h"

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

// Reads `attr` into a fresh buffer; the text or the error code.
std::string ReadText(SysfsAttribute& attr) {
  std::string buf;
  absl::StatusOr<absl::string_view> v = attr.Read(&buf);
  if (!v.ok()) return absl::StatusCodeToString(v.status().code());
  return std::string(*v);
}

// Sets the access time of `path` an hour before its modification time, so
// that relatime updates it on the next ordinary read. Returns that atime, or
// -1 when this filesystem does not update access times at all (noatime).
int64_t MakeAtimeStale(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  const struct timespec times[2] = {{st.st_mtim.tv_sec - 3600, 0}, st.st_mtim};
  if (utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) return -1;
  // Control: an ordinary read must update it here, or the test means nothing.
  int fd = open(path.c_str(), O_RDONLY);
  char c;
  if (fd < 0 || read(fd, &c, 1) < 0) return -1;
  close(fd);
  if (stat(path.c_str(), &st) != 0 || st.st_atim.tv_sec == times[0].tv_sec) {
    return -1;
  }
  if (utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) return -1;
  return times[0].tv_sec;
}

TEST_F(SysfsReaderTest, ReadsDoNotTouchAccessTimesOfRegularFiles) {
  Write("counter", "1\n");
  const std::string path = tmp_.path() + "/counter";
  const int64_t stale = MakeAtimeStale(path);
  if (stale < 0) GTEST_SKIP() << "this filesystem keeps no access times";
  for (FdCachePolicy policy : {FdCachePolicy::kNever, FdCachePolicy::kAlways}) {
    SysfsReader reader(tmp_.path(), Policy(policy));
    ASSERT_TRUE(reader.ReadAttribute("counter").ok());
    SysfsAttribute attr = reader.Attribute("counter");
    std::string buf;
    ASSERT_TRUE(attr.Read(&buf).ok());
    ASSERT_TRUE(attr.Read(&buf).ok());
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_atim.tv_sec, stale);
  }
}

TEST_F(SysfsReaderTest, AutoPolicyDoesNotCacheOnARegularFilesystem) {
  Write("counter", "1\n");
  SysfsReader reader(tmp_.path());  // kAuto
  EXPECT_FALSE(reader.caches_fds());
  SysfsAttribute attr = reader.Attribute("counter");
  EXPECT_EQ(ReadText(attr), "1\n");
  EXPECT_FALSE(attr.kept_open());
  Write("counter", "2\n");  // atomic rename: a new inode
  EXPECT_EQ(ReadText(attr), "2\n");
  EXPECT_EQ(reader.ReadAttribute("counter").value(), "2\n");
  EXPECT_EQ(reader.cached_fd_count(), 0u);
}

TEST_F(SysfsReaderTest, NeverPolicyReturnsFreshDataAfterAtomicRename) {
  Write("counter", "1\n");
  SysfsReader reader(tmp_.path(), Policy(FdCachePolicy::kNever));
  SysfsAttribute attr = reader.Attribute("counter");
  EXPECT_EQ(ReadText(attr), "1\n");
  Write("counter", "2\n");
  EXPECT_EQ(ReadText(attr), "2\n");
  EXPECT_EQ(reader.cached_fd_count(), 0u);
}

TEST_F(SysfsReaderTest, AlwaysPolicyKeepsTheDescriptorOfAnAttribute) {
  Write("counter", "1\n");
  SysfsReader reader(tmp_.path(), Policy(FdCachePolicy::kAlways));
  EXPECT_TRUE(reader.caches_fds());
  // One-shot reads never keep a descriptor.
  EXPECT_EQ(reader.ReadAttribute("counter").value(), "1\n");
  EXPECT_EQ(reader.cached_fd_count(), 0u);
  {
    SysfsAttribute attr = reader.Attribute("counter");
    EXPECT_EQ(ReadText(attr), "1\n");
    EXPECT_TRUE(attr.kept_open());
    EXPECT_EQ(reader.cached_fd_count(), 1u);
    // In-place rewrite of the same inode: the kept fd re-reads from 0.
    {
      int fd = open((tmp_.path() + "/counter").c_str(), O_WRONLY | O_TRUNC);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(write(fd, "12345\n", 6), 6);
      close(fd);
    }
    EXPECT_EQ(ReadText(attr), "12345\n");
    // Atomic rename replaces the inode: the kept fd still shows the old
    // one. This is exactly why kAuto does not keep descriptors on regular
    // filesystems.
    Write("counter", "3\n");
    EXPECT_EQ(ReadText(attr), "12345\n");
    // Moving the handle moves the descriptor; nothing leaks or closes twice.
    SysfsAttribute moved = std::move(attr);
    EXPECT_TRUE(moved.kept_open());
    EXPECT_EQ(reader.cached_fd_count(), 1u);
    EXPECT_EQ(ReadText(moved), "12345\n");
  }
  // Destroying the handle closes its descriptor.
  EXPECT_EQ(reader.cached_fd_count(), 0u);
  SysfsAttribute fresh = reader.Attribute("counter");
  EXPECT_EQ(ReadText(fresh), "3\n");
}

TEST_F(SysfsReaderTest, AttributeOfAMissingFileReadsOnceItAppears) {
  // A planned file that is not there (a device going away) reports
  // kNotFound and keeps nothing; when the path exists again (the device came
  // back) the same handle reads it and keeps its descriptor. The ENODEV of a
  // kept descriptor on real kernfs is covered by sysfs_kernfs_test.
  SysfsReader reader(tmp_.path(), Policy(FdCachePolicy::kAlways));
  SysfsAttribute attr =
      reader.Attribute("class/infiniband/mlx5_0/hw_counters/x");
  EXPECT_EQ(ReadText(attr), "NOT_FOUND");
  EXPECT_FALSE(attr.kept_open());
  EXPECT_EQ(reader.cached_fd_count(), 0u);
  Write("class/infiniband/mlx5_0/hw_counters/x", "2\n");
  EXPECT_EQ(ReadText(attr), "2\n");
  EXPECT_TRUE(attr.kept_open());
  EXPECT_EQ(reader.cached_fd_count(), 1u);
}

TEST_F(SysfsReaderTest, AttributeErrorsNameThePath) {
  Write("class/net/eth0/mtu", "1500\n");
  SysfsReader reader(tmp_.path(), Policy(FdCachePolicy::kAlways));
  std::string buf;
  SysfsAttribute dir = reader.Attribute("class/net/eth0");
  absl::StatusOr<absl::string_view> v = dir.Read(&buf);
  EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(v.status().message(), HasSubstr("class/net/eth0"));
  EXPECT_FALSE(dir.kept_open());
  SysfsAttribute escape = reader.Attribute("../etc/passwd");
  EXPECT_EQ(escape.Read(&buf).status().code(),
            absl::StatusCode::kInvalidArgument);
  SysfsAttribute unbound;
  EXPECT_EQ(unbound.Read(&buf).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(reader.cached_fd_count(), 0u);
}

TEST_F(SysfsReaderTest, OneBufferServesAttributesOfAnySize) {
  SysfsReader::Options o = Policy(FdCachePolicy::kAlways);
  o.max_attribute_bytes = 20000;
  Write("small", "7\n");
  Write("page", std::string(4096, '8'));    // exactly the first read
  Write("large", std::string(10000, '9'));  // needs the buffer to grow
  Write("toolarge", std::string(20001, '1'));
  SysfsReader reader(tmp_.path(), o);
  SysfsAttribute small = reader.Attribute("small");
  SysfsAttribute page = reader.Attribute("page");
  SysfsAttribute large = reader.Attribute("large");
  SysfsAttribute toolarge = reader.Attribute("toolarge");
  std::string buf;
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(large.Read(&buf).value(), std::string(10000, '9'));
    EXPECT_EQ(small.Read(&buf).value(), "7\n");
    EXPECT_EQ(page.Read(&buf).value(), std::string(4096, '8'));
    EXPECT_EQ(toolarge.Read(&buf).status().code(),
              absl::StatusCode::kOutOfRange);
  }
}

TEST_F(SysfsReaderTest, RecyclerHandsKeptDescriptorsToTheNewPlan) {
  Write("a", "1\n");
  Write("b", "2\n");
  SysfsReader reader(tmp_.path(), Policy(FdCachePolicy::kAlways));
  SysfsAttribute a = reader.Attribute("a");
  SysfsAttribute b = reader.Attribute("b");
  ASSERT_EQ(ReadText(a), "1\n");
  ASSERT_EQ(ReadText(b), "2\n");
  ASSERT_EQ(reader.cached_fd_count(), 2u);
  {
    AttributeRecycler recycler(&reader);
    recycler.Add(std::move(a));
    recycler.Add(std::move(b));
    recycler.Add(SysfsAttribute());  // unbound: dropped
    SysfsAttribute again = recycler.Attribute("a");
    EXPECT_TRUE(again.kept_open());  // the same descriptor, not reopened
    SysfsAttribute other = recycler.Attribute("c");
    EXPECT_FALSE(other.kept_open());
    EXPECT_EQ(reader.cached_fd_count(), 2u);
  }  // "b" was not taken: closed with the recycler; "a" with its handle
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

TEST_F(SysfsReaderTest, KeptDescriptorsAreBounded) {
  SysfsReader::Options o = Policy(FdCachePolicy::kAlways);
  o.max_cached_fds = 4;
  for (int i = 0; i < 10; ++i) Write(absl::StrCat("f", i), absl::StrCat(i));
  SysfsReader reader(tmp_.path(), o);
  std::vector<SysfsAttribute> attrs;
  attrs.reserve(10);
  for (int i = 0; i < 10; ++i)
    attrs.push_back(reader.Attribute(absl::StrCat("f", i)));
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 10; ++i) {
      // Past the bound an attribute still reads, opening the file each time.
      EXPECT_EQ(ReadText(attrs[static_cast<size_t>(i)]), absl::StrCat(i));
      EXPECT_LE(reader.cached_fd_count(), 4u);
    }
  }
  EXPECT_EQ(reader.cached_fd_count(), 4u);
  attrs.clear();
  EXPECT_EQ(reader.cached_fd_count(), 0u);
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

TEST_F(SysfsReaderTest, ReadLinkBasename) {
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
  SysfsAttribute attr = reader.Attribute("class/net/lo/statistics/rx_packets");
  std::string buf;
  uint64_t before = std::stoull(std::string(attr.Read(&buf).value()));
  EXPECT_TRUE(attr.kept_open());
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
  uint64_t after = std::stoull(std::string(attr.Read(&buf).value()));
  EXPECT_EQ(reader.cached_fd_count(), 1u);
  EXPECT_GT(after, before);
}

}  // namespace
}  // namespace fabricdiag::agent
