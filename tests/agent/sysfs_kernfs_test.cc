// Kept descriptors on real kernfs: the agent keeps one descriptor per
// counter file and relies on the kernel failing reads through it with ENODEV
// once the device is gone. This test checks that on a real sysfs, with a
// veth pair that it creates, deletes and re-creates inside a network
// namespace of its own (and always deletes).
//
// The check runs in a child process that enters the namespace, unshares its
// mount namespace and mounts a private sysfs (a sysfs mounted inside a
// network namespace lists that namespace's interfaces), so that the test
// binary's own namespaces are never touched. Skipped when namespaces cannot
// be created (not root, no `ip`, EPERM in a container).
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/netdev_source.h"
#include "agent/sysfs_reader.h"
#include "gtest/gtest.h"

namespace fabricdiag::agent {
namespace {

int RunQuietly(const std::string& command) {
  int rc = std::system((command + " >/dev/null 2>&1").c_str());
  if (rc == -1 || !WIFEXITED(rc)) return -1;
  return WEXITSTATUS(rc);
}

// What the child found wrong, one line per problem.
class Problems {
 public:
  void Check(bool ok, const std::string& what) {
    if (!ok) text_ += what + "\n";
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

int CountSamplesOf(const Snapshot& snap, const std::string& netdev) {
  int n = 0;
  for (const Sample& s : snap.samples) n += s.desc->device == netdev;
  return n;
}

// The child: enter `ns`, mount a private sysfs, and exercise a kept
// descriptor and the netdev source across delete and re-create.
std::string RunInNamespace(const std::string& ns) {
  Problems p;
  int nsfd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) return "setns failed\n";
  close(nsfd);
  if (unshare(CLONE_NEWNS) != 0 ||
      mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return "cannot make a private mount namespace\n";
  }
  char dir[] = "/tmp/fdkernfs.XXXXXX";
  if (mkdtemp(dir) == nullptr) return "mkdtemp failed\n";
  if (mount("sysfs", dir, "sysfs", 0, nullptr) != 0) {
    rmdir(dir);
    return "cannot mount sysfs\n";
  }
  {
    SysfsReader reader(dir);  // kAuto: sysfs, so descriptors are kept
    p.Check(reader.caches_fds(), "kAuto does not keep descriptors on sysfs");
    auto source = NetdevSource::Create(&reader, NetdevSource::Options{"", 60});
    p.Check(source.ok(), "NetdevSource::Create failed");

    SysfsAttribute rx = reader.Attribute("class/net/fdk0/statistics/rx_bytes");
    std::string buf;
    absl::StatusOr<absl::string_view> v = rx.Read(&buf);
    p.Check(v.ok(), "first read failed: " + v.status().ToString());
    p.Check(rx.kept_open(), "descriptor not kept on sysfs");
    Snapshot before;
    (*source)->Collect(&before);
    p.Check(CountSamplesOf(before, "fdk0") > 20,
            "netdev source read no statistics of fdk0");

    // Deleting one end of a veth pair deletes both.
    p.Check(RunQuietly("ip link del fdk0") == 0, "ip link del failed");
    v = rx.Read(&buf);
    p.Check(!v.ok() && v.status().code() == absl::StatusCode::kNotFound,
            "read of a deleted netdev through a kept descriptor: " +
                v.status().ToString());
    p.Check(!rx.kept_open(), "dead descriptor still kept");
    Snapshot gone;
    SourceStatus st = (*source)->Collect(&gone);
    p.Check(st.ok, "netdev source reported an error for a deleted netdev: " +
                       st.last_error);
    p.Check(CountSamplesOf(gone, "fdk0") == 0, "deleted netdev still reported");

    // Re-created under the same name: a new kernfs node behind the path.
    p.Check(RunQuietly("ip link add fdk0 type veth peer name fdk1") == 0,
            "ip link add failed");
    v = rx.Read(&buf);
    p.Check(v.ok(), "read after re-create failed: " + v.status().ToString());
    p.Check(rx.kept_open(), "descriptor not kept after re-create");
    Snapshot back;
    st = (*source)->Collect(&back);
    p.Check(st.ok, "netdev source error after re-create: " + st.last_error);
    p.Check(CountSamplesOf(back, "fdk0") > 20,
            "re-created netdev not reported");
  }
  umount2(dir, MNT_DETACH);
  rmdir(dir);
  return p.text();
}

class KernfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace";
    if (RunQuietly("ip -V") != 0) GTEST_SKIP() << "no `ip` (iproute2)";
    ns_ = absl::StrCat("fdkfs-", getpid());
    if (RunQuietly("ip netns add " + ns_) != 0) {
      GTEST_SKIP() << "cannot create network namespace " << ns_;
    }
    created_ = true;
    ASSERT_EQ(
        RunQuietly("ip -n " + ns_ + " link add fdk0 type veth peer name fdk1"),
        0)
        << "cannot create a veth pair (veth module missing?)";
  }
  void TearDown() override {
    if (created_) RunQuietly("ip netns del " + ns_);
  }

  std::string ns_;
  bool created_ = false;
};

TEST_F(KernfsTest, KeptDescriptorOfADeletedNetdevFailsAndIsReopened) {
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pipefd[0]);
    std::string problems = RunInNamespace(ns_);
    if (!problems.empty()) {
      ssize_t unused = write(pipefd[1], problems.data(), problems.size());
      (void)unused;
    }
    _exit(problems.empty() ? 0 : 1);
  }
  close(pipefd[1]);
  std::string problems;
  char chunk[512];
  ssize_t n;
  while ((n = read(pipefd[0], chunk, sizeof(chunk))) > 0) {
    problems.append(chunk, static_cast<size_t>(n));
  }
  close(pipefd[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << problems;
}

}  // namespace
}  // namespace fabricdiag::agent
