#include "common/posix_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// What the process umask leaves of `mode` for a new file.
mode_t Umasked(mode_t mode) {
  const mode_t mask = umask(0);
  umask(mask);
  return mode & ~mask;
}

// Permission bits, or ~0 when there is no such file.
mode_t ModeOf(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : ~mode_t{0};
}

TEST(ErrnoToStatusTest, MapsErrnoOntoTheCodeACallerActsOn) {
  struct Case {
    int err;
    absl::StatusCode code;
  };
  for (const Case& c : {
           Case{ENOENT, absl::StatusCode::kNotFound},
           Case{EACCES, absl::StatusCode::kPermissionDenied},
           Case{EPERM, absl::StatusCode::kPermissionDenied},
           Case{EROFS, absl::StatusCode::kPermissionDenied},
           Case{ENOSPC, absl::StatusCode::kResourceExhausted},
           Case{EDQUOT, absl::StatusCode::kResourceExhausted},
           Case{EEXIST, absl::StatusCode::kAlreadyExists},
           Case{ENOTDIR, absl::StatusCode::kFailedPrecondition},
           Case{EISDIR, absl::StatusCode::kFailedPrecondition},
           Case{EINVAL, absl::StatusCode::kInvalidArgument},
           Case{EIO, absl::StatusCode::kInternal},
       }) {
    const absl::Status status = ErrnoToStatus(c.err, "cannot open /x");
    EXPECT_EQ(status.code(), c.code) << c.err;
    EXPECT_THAT(
        std::string(status.message()),
        AllOf(HasSubstr("cannot open /x: "), HasSubstr(strerror(c.err))));
  }
}

TEST(WriteFileAtomicallyTest, ReplacesTheContentAndLeavesNoTemporaryFile) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/state.pb";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  ASSERT_TRUE(WriteFileAtomically(path, std::string(100000, 'n')).ok());
  EXPECT_EQ(Slurp(path), std::string(100000, 'n'));
  EXPECT_FALSE(Exists(path + ".tmp"));
  EXPECT_EQ(ModeOf(path), Umasked(0640));
}

TEST(WriteFileAtomicallyTest, StagesWhereTheCallerSaysWithItsMode) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/rx_bytes";
  ASSERT_EQ(mkdir((dir.path() + "/stage").c_str(), 0755), 0);
  AtomicWriteOptions options;
  options.durable = false;
  options.mode = 0644;
  options.tmp_path = dir.path() + "/stage/t0";
  ASSERT_TRUE(WriteFileAtomically(path, "42\n", options).ok());
  EXPECT_EQ(Slurp(path), "42\n");
  EXPECT_FALSE(Exists(options.tmp_path));
  EXPECT_EQ(ModeOf(path), Umasked(0644));
}

TEST(WriteFileAtomicallyTest, AFailedWriteKeepsTheOldContent) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/state.pb";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  // The temporary file cannot be created: its name is taken by a directory.
  ASSERT_EQ(mkdir((path + ".tmp").c_str(), 0755), 0);
  const absl::Status status = WriteFileAtomically(path, "new");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr(path + ".tmp"));
  EXPECT_EQ(Slurp(path), "old");
}

TEST(WriteFileAtomicallyTest, AFailedRenameRemovesTheTemporaryFile) {
  testing::TempDir dir;
  // A non-empty directory where the file should go: rename(2) refuses.
  const std::string path = dir.path() + "/taken";
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  ASSERT_TRUE(WriteFileAtomically(path + "/inside", "x").ok());
  const absl::Status status = WriteFileAtomically(path, "new");
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("cannot rename"));
  EXPECT_FALSE(Exists(path + ".tmp"));
  EXPECT_EQ(Slurp(path + "/inside"), "x");
}

// What a collector whose --state_dir turned read-only sees. Root ignores
// permission bits, so as root the check runs in a child that drops them.
TEST(WriteFileAtomicallyTest, AnUnwritableDirectoryIsPermissionDenied) {
  testing::TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const std::string sub = dir.path() + "/ro";
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  const std::string path = sub + "/state.pb";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  ASSERT_EQ(chmod(sub.c_str(), 0555), 0);
  auto check = [&path] {
    const absl::Status status = WriteFileAtomically(path, "new");
    return status.code() == absl::StatusCode::kPermissionDenied &&
           Slurp(path) == "old" && !Exists(path + ".tmp");
  };
  if (geteuid() != 0) {
    EXPECT_TRUE(check());
  } else {
    EXPECT_EXIT(
        {
          if (setgid(65534) != 0 || setuid(65534) != 0) std::_Exit(3);
          std::_Exit(check() ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
  }
  chmod(sub.c_str(), 0755);
}

TEST(ReadAllTest, ReadsPastOneBufferAndHonoursTheCap) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/big";
  const std::string content(200000, 'b');
  ASSERT_TRUE(WriteFile(path, content, 0644).ok());
  {
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd.valid());
    absl::StatusOr<std::string> all = ReadAll(fd.get(), path, content.size());
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_EQ(*all, content);
  }
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  absl::StatusOr<std::string> capped = ReadAll(fd.get(), path, 1000);
  EXPECT_EQ(capped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(capped.status().message()), HasSubstr(path));
}

TEST(ReadAllTest, AClosedDescriptorIsAnErrorNamingTheFile) {
  UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  const int raw = fd.get();
  ASSERT_TRUE(fd.Close("/dev/null").ok());
  EXPECT_FALSE(fd.valid());
  absl::StatusOr<std::string> r = ReadAll(raw, "/dev/null", 10);
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("cannot read /dev/null"));
}

TEST(MakeDirsTest, CreatesMissingParentsWithTheMode) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/a/b/c";
  ASSERT_TRUE(MakeDirs(path, 0750).ok());
  ASSERT_TRUE(MakeDirs(path, 0750).ok());  // existing: fine
  for (const std::string& p : {dir.path() + "/a", path}) {
    struct stat st;
    ASSERT_EQ(stat(p.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(ModeOf(p), Umasked(0750)) << p;
  }
}

TEST(MakeDirsTest, AFileInTheWayIsFailedPrecondition) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteFile(dir.path() + "/file", "", 0644).ok());
  const absl::Status status = MakeDirs(dir.path() + "/file", 0750);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(dir.path() + "/file exists and is not a directory"));
  EXPECT_EQ(MakeDirs(dir.path() + "/file/sub", 0750).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(FsyncDirTest, AMissingDirectoryIsNotFound) {
  testing::TempDir dir;
  EXPECT_TRUE(FsyncDir(dir.path()).ok());
  EXPECT_EQ(FsyncDir(dir.path() + "/none").code(), absl::StatusCode::kNotFound);
}

TEST(DirOfTest, IsTheDirectoryPart) {
  EXPECT_EQ(DirOf("/var/lib/x.pb"), "/var/lib");
  EXPECT_EQ(DirOf("/x.pb"), "/");
  EXPECT_EQ(DirOf("x.pb"), ".");
}

}  // namespace
}  // namespace fabricdiag
