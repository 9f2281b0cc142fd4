#include "collector/state/state_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

using ScopedTempDir = ::fabricdiag::testing::TempDir;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

// Names in `dir` that start with `prefix` and contain ".corrupt-".
std::vector<std::string> CorruptFiles(const std::string& dir,
                                      const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 &&
        name.find(".corrupt-") != std::string::npos) {
      out.push_back(name);
    }
  }
  return out;
}

v1::Layout NamedLayout(const std::string& job) {
  v1::Layout layout;
  layout.set_job(job);
  layout.set_gpus_per_node(8);
  layout.mutable_parallelism()->set_tp(8);
  layout.mutable_parallelism()->set_pp(1);
  layout.mutable_parallelism()->set_dp(1);
  layout.add_hosts("gpu-000");
  return layout;
}

StoredFinding MakeFinding(uint64_t n, v1::FindingState state) {
  StoredFinding s;
  s.finding.set_id(
      absl::StrCat("f-", std::string(6 - std::to_string(n).size(), '0'), n));
  s.finding.set_kind("pfc_storm");
  s.finding.set_state(state);
  s.finding.set_node(absl::StrCat("gpu-", n));
  s.finding.set_summary(std::string(40, 's'));
  s.source = "pfc";
  return s;
}

class StateStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<StateStore> OpenStore() {
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        StateStore::Open(tmp_.path() + "/state", &clock_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }
  std::string Dir() const { return tmp_.path() + "/state"; }

  ScopedTempDir tmp_;
  FakeClock clock_;
};

TEST(Crc32cTest, MatchesTheStandardCheckValue) {
  // The CRC catalogue's check value for CRC-32C over "123456789".
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST_F(StateStoreTest, OpenCreatesNestedDirectoriesWithMode0750) {
  ScopedTempDir tmp;
  std::string dir = tmp.path() + "/a/b/state";
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      StateStore::Open(dir, &clock_);
  ASSERT_TRUE(store.ok()) << store.status();
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
  ASSERT_EQ(stat((dir + "/layouts").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
}

TEST_F(StateStoreTest, OpenOnARegularFileFailsNamingThePath) {
  std::string file = tmp_.path() + "/not-a-dir";
  WriteFile(file, "x");
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      StateStore::Open(file, &clock_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(),
              AllOf(HasSubstr(file), HasSubstr("not a directory")));

  store = StateStore::Open(file + "/state", &clock_);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr(file));
}

TEST_F(StateStoreTest, OpenOnAnUnwritableDirectoryFailsClearly) {
  // Root ignores permission bits, so the check runs as "nobody" in a child.
  std::string dir = tmp_.path() + "/readonly";
  ASSERT_EQ(mkdir(dir.c_str(), 0555), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0555), 0);
  ASSERT_EQ(chmod(tmp_.path().c_str(), 0755), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
      _exit(2);
    }
    FakeClock clock;
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        StateStore::Open(dir, &clock);
    std::string msg = store.ok() ? "OK" : store.status().ToString();
    if (write(fds[1], msg.data(), msg.size()) < 0) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) msg.append(buf, n);
  close(fds[0]);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 0);
  EXPECT_THAT(msg, AllOf(HasSubstr("PERMISSION_DENIED"), HasSubstr(dir),
                         HasSubstr("not writable")));
}

TEST_F(StateStoreTest, LayoutsAndTopologySurviveReopen) {
  absl::Time t1 = clock_.Now();
  {
    std::unique_ptr<StateStore> store = OpenStore();
    ASSERT_TRUE(store->WriteLayout(NamedLayout("job-b"), t1).ok());
    ASSERT_TRUE(store->WriteLayout(NamedLayout("job-a"), t1).ok());
    v1::Topology topo;
    topo.add_switches()->set_name("leaf-0");
    ASSERT_TRUE(store->WriteTopology(topo, t1 + absl::Seconds(1)).ok());
    // Dropped without any shutdown step: nothing is buffered in the object.
  }
  std::unique_ptr<StateStore> store = OpenStore();
  absl::StatusOr<std::vector<StoredLayout>> layouts = store->ReadLayouts();
  ASSERT_TRUE(layouts.ok()) << layouts.status();
  ASSERT_THAT(*layouts, SizeIs(2));
  EXPECT_EQ((*layouts)[0].layout.job(), "job-a");
  EXPECT_EQ((*layouts)[1].layout.job(), "job-b");
  EXPECT_EQ((*layouts)[0].applied, t1);
  EXPECT_EQ((*layouts)[0].layout.SerializeAsString(),
            NamedLayout("job-a").SerializeAsString());
  absl::StatusOr<std::optional<StoredTopology>> topo = store->ReadTopology();
  ASSERT_TRUE(topo.ok());
  ASSERT_TRUE(topo->has_value());
  EXPECT_EQ((*topo)->topology.switches(0).name(), "leaf-0");
  EXPECT_EQ((*topo)->applied, t1 + absl::Seconds(1));
  EXPECT_THAT(store->problems(), SizeIs(0));
}

TEST_F(StateStoreTest, ObjectFilesHoldThePlainProtobufAfterTheHeader) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_TRUE(store->WriteLayout(NamedLayout("job-a"), clock_.Now()).ok());
  std::string data = ReadFile(Dir() + "/layouts/job-a.pb");
  ASSERT_GT(data.size(), 20u);
  EXPECT_EQ(data.substr(0, 4), "FDS1");
  v1::Layout parsed;
  ASSERT_TRUE(parsed.ParseFromString(data.substr(20)));
  EXPECT_EQ(parsed.job(), "job-a");
}

TEST_F(StateStoreTest, RemoveLayoutDeletesTheFileAndReportsMissingJobs) {
  std::unique_ptr<StateStore> store = OpenStore();
  ASSERT_TRUE(store->WriteLayout(NamedLayout("job-a"), clock_.Now()).ok());
  ASSERT_TRUE(store->RemoveLayout("job-a").ok());
  EXPECT_FALSE(std::filesystem::exists(Dir() + "/layouts/job-a.pb"));
  absl::Status again = store->RemoveLayout("job-a");
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(again.message(), HasSubstr("job-a"));
  EXPECT_EQ(store->RemoveLayout("../etc").code(), absl::StatusCode::kNotFound);
}

TEST_F(StateStoreTest, WriteLayoutRejectsJobNamesThatAreNotSafeFileNames) {
  std::unique_ptr<StateStore> store = OpenStore();
  absl::Status status =
      store->WriteLayout(NamedLayout("../../etc/passwd"), clock_.Now());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("job"));
}

TEST_F(StateStoreTest, CorruptLayoutIsMovedAsideAndTheOthersLoad) {
  {
    std::unique_ptr<StateStore> store = OpenStore();
    for (const char* job : {"job-a", "job-b", "job-c"}) {
      ASSERT_TRUE(store->WriteLayout(NamedLayout(job), clock_.Now()).ok());
    }
  }
  std::string victim = Dir() + "/layouts/job-b.pb";
  std::string data = ReadFile(victim);
  data[data.size() - 3] ^= 0x5a;  // one flipped byte in the payload
  WriteFile(victim, data);
  // A truncated file too (cut between protobuf fields it would still parse).
  std::string cut = Dir() + "/layouts/job-c.pb";
  std::string cut_data = ReadFile(cut);
  WriteFile(cut, cut_data.substr(0, cut_data.size() - 2));

  std::unique_ptr<StateStore> store = OpenStore();
  absl::StatusOr<std::vector<StoredLayout>> layouts = store->ReadLayouts();
  ASSERT_TRUE(layouts.ok()) << layouts.status();
  ASSERT_THAT(*layouts, SizeIs(1));
  EXPECT_EQ((*layouts)[0].layout.job(), "job-a");
  EXPECT_FALSE(std::filesystem::exists(victim));
  EXPECT_THAT(CorruptFiles(Dir() + "/layouts", "job-b.pb"), SizeIs(1));
  EXPECT_THAT(CorruptFiles(Dir() + "/layouts", "job-c.pb"), SizeIs(1));
  ASSERT_THAT(store->problems(), SizeIs(2));
  EXPECT_THAT(store->problems()[0],
              AllOf(HasSubstr(victim), HasSubstr("checksum mismatch"),
                    HasSubstr("moved aside")));
  EXPECT_THAT(store->problems()[1], HasSubstr(cut));
  // The next load is clean: the damaged files no longer look like layouts.
  store.reset();  // releases the directory's lock
  std::unique_ptr<StateStore> again = OpenStore();
  ASSERT_THAT(*again->ReadLayouts(), SizeIs(1));
  EXPECT_THAT(again->problems(), SizeIs(0));
}

TEST_F(StateStoreTest, LayoutFileRenamedToAnotherJobIsRejected) {
  {
    std::unique_ptr<StateStore> store = OpenStore();
    ASSERT_TRUE(store->WriteLayout(NamedLayout("job-a"), clock_.Now()).ok());
  }
  std::filesystem::rename(Dir() + "/layouts/job-a.pb",
                          Dir() + "/layouts/job-z.pb");
  std::unique_ptr<StateStore> store = OpenStore();
  EXPECT_THAT(*store->ReadLayouts(), SizeIs(0));
  ASSERT_THAT(store->problems(), SizeIs(1));
  EXPECT_THAT(store->problems()[0], HasSubstr("job-z.pb"));
}

TEST_F(StateStoreTest, LeftoverTempFilesOfAnInterruptedWriteAreIgnored) {
  {
    std::unique_ptr<StateStore> store = OpenStore();
    ASSERT_TRUE(store->WriteLayout(NamedLayout("job-a"), clock_.Now()).ok());
  }
  WriteFile(Dir() + "/layouts/job-a.pb.tmp", "half a new vers");
  std::unique_ptr<StateStore> store = OpenStore();
  absl::StatusOr<std::vector<StoredLayout>> layouts = store->ReadLayouts();
  ASSERT_THAT(*layouts, SizeIs(1));
  EXPECT_EQ((*layouts)[0].layout.job(), "job-a");
  EXPECT_FALSE(std::filesystem::exists(Dir() + "/layouts/job-a.pb.tmp"));
  EXPECT_THAT(store->problems(), SizeIs(0));
}

TEST_F(StateStoreTest, DamagedTopologyIsMovedAside) {
  {
    std::unique_ptr<StateStore> store = OpenStore();
    v1::Topology topo;
    topo.add_switches()->set_name("leaf-0");
    ASSERT_TRUE(store->WriteTopology(topo, clock_.Now()).ok());
  }
  WriteFile(Dir() + "/topology.pb", "garbage");
  std::unique_ptr<StateStore> store = OpenStore();
  absl::StatusOr<std::optional<StoredTopology>> topo = store->ReadTopology();
  ASSERT_TRUE(topo.ok());
  EXPECT_FALSE(topo->has_value());
  EXPECT_THAT(CorruptFiles(Dir(), "topology.pb"), SizeIs(1));
  ASSERT_THAT(store->problems(), SizeIs(1));
  EXPECT_THAT(store->problems()[0], HasSubstr("topology.pb"));
}

TEST_F(StateStoreTest, FindingsLogReplaysTheLatestVersionOfEachFinding) {
  {
    std::unique_ptr<StateStore> store = OpenStore();
    ASSERT_TRUE(store->ReadFindings().ok());
    StoredFinding a = MakeFinding(1, v1::FINDING_STATE_ACTIVE);
    StoredFinding b = MakeFinding(2, v1::FINDING_STATE_ACTIVE);
    ASSERT_TRUE(store->AppendFindings({a, b}, true).ok());
    a.finding.set_state(v1::FINDING_STATE_RESOLVED);
    ASSERT_TRUE(store->AppendFindings({a}, false).ok());
  }
  std::unique_ptr<StateStore> store = OpenStore();
  absl::StatusOr<LoadedFindings> loaded = store->ReadFindings();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_THAT(loaded->findings, SizeIs(2));
  EXPECT_EQ(loaded->findings[0].finding.id(), "f-000001");
  EXPECT_EQ(loaded->findings[0].finding.state(), v1::FINDING_STATE_RESOLVED);
  EXPECT_EQ(loaded->findings[0].source, "pfc");
  EXPECT_EQ(loaded->findings[1].finding.state(), v1::FINDING_STATE_ACTIVE);
  EXPECT_EQ(loaded->next_id, 3u);
  EXPECT_FALSE(loaded->dropped_torn_record);
}

TEST_F(StateStoreTest, TornLastRecordIsDroppedAndAppendsContinueCleanly) {
  uint64_t first_end = 0;
  {
    std::unique_ptr<StateStore> store = OpenStore();
    ASSERT_TRUE(store->ReadFindings().ok());
    ASSERT_TRUE(
        store->AppendFindings({MakeFinding(1, v1::FINDING_STATE_ACTIVE)}, true)
            .ok());
    first_end = store->findings_log_bytes();
    ASSERT_TRUE(
        store->AppendFindings({MakeFinding(2, v1::FINDING_STATE_ACTIVE)}, true)
            .ok());
  }
  std::string log = Dir() + "/findings.log";
  std::string data = ReadFile(log);
  // Crashes mid-payload, mid-header, and with only the length written.
  for (size_t keep :
       {size_t{first_end + 20}, size_t{first_end + 6}, size_t{first_end + 4}}) {
    SCOPED_TRACE(keep);
    ASSERT_LT(keep, data.size());
    WriteFile(log, data.substr(0, keep));
    std::unique_ptr<StateStore> store = OpenStore();
    absl::StatusOr<LoadedFindings> loaded = store->ReadFindings();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_TRUE(loaded->dropped_torn_record);
    ASSERT_THAT(loaded->findings, SizeIs(1));
    EXPECT_EQ(loaded->findings[0].finding.id(), "f-000001");
    EXPECT_THAT(store->problems(), SizeIs(0));
    ASSERT_TRUE(
        store->AppendFindings({MakeFinding(3, v1::FINDING_STATE_ACTIVE)}, true)
            .ok());
    store.reset();  // releases the directory's lock
    std::unique_ptr<StateStore> again = OpenStore();
    absl::StatusOr<LoadedFindings> reloaded = again->ReadFindings();
    ASSERT_TRUE(reloaded.ok());
    EXPECT_FALSE(reloaded->dropped_torn_record);
    ASSERT_THAT(reloaded->findings, SizeIs(2));
    EXPECT_EQ(reloaded->findings[1].finding.id(), "f-000003");
  }
}

TEST_F(StateStoreTest, DamageInsideTheLogCostsOnlyTheDamagedRecord) {
  size_t first_record_end = 0;
  {
    std::unique_ptr<StateStore> store = OpenStore();
    ASSERT_TRUE(store->ReadFindings().ok());
    ASSERT_TRUE(
        store->AppendFindings({MakeFinding(1, v1::FINDING_STATE_ACTIVE)}, true)
            .ok());
    first_record_end = store->findings_log_bytes();
    ASSERT_TRUE(store
                    ->AppendFindings({MakeFinding(2, v1::FINDING_STATE_ACTIVE),
                                      MakeFinding(3, v1::FINDING_STATE_ACTIVE)},
                                     true)
                    .ok());
  }
  std::string log = Dir() + "/findings.log";
  std::string data = ReadFile(log);
  data[first_record_end + 12] ^= 0x01;  // inside record 2, not the last one
  WriteFile(log, data);

  std::unique_ptr<StateStore> store = OpenStore();
  absl::StatusOr<LoadedFindings> loaded = store->ReadFindings();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_THAT(loaded->findings, SizeIs(2));
  EXPECT_EQ(loaded->findings[0].finding.id(), "f-000001");
  EXPECT_EQ(loaded->findings[1].finding.id(), "f-000003");
  EXPECT_EQ(loaded->next_id, 4u);
  // The damaged log is kept for a human, the problem says where.
  EXPECT_THAT(CorruptFiles(Dir(), "findings.log"), SizeIs(1));
  ASSERT_THAT(store->problems(), SizeIs(1));
  EXPECT_THAT(store->problems()[0],
              AllOf(HasSubstr(log),
                    HasSubstr(absl::StrCat("at byte ", first_record_end)),
                    HasSubstr("kept the 2 findings")));
  // The fresh log holds the survivors and accepts appends.
  ASSERT_TRUE(
      store->AppendFindings({MakeFinding(4, v1::FINDING_STATE_ACTIVE)}, true)
          .ok());
  store.reset();
  std::unique_ptr<StateStore> again = OpenStore();
  absl::StatusOr<LoadedFindings> reloaded = again->ReadFindings();
  ASSERT_TRUE(reloaded.ok());
  ASSERT_THAT(reloaded->findings, SizeIs(3));
  EXPECT_EQ(reloaded->next_id, 5u);
  EXPECT_THAT(again->problems(), SizeIs(0));
}

// Property: whichever byte of the log flips, at most the record holding it
// is lost (a flipped magic loses none), and loading never fails.
TEST_F(StateStoreTest, AnyFlippedByteLosesAtMostItsOwnRecord) {
  constexpr int kRecords = 6;
  std::vector<size_t> ends;  // byte after each record
  {
    std::unique_ptr<StateStore> store = OpenStore();
    ASSERT_TRUE(store->ReadFindings().ok());
    for (int i = 1; i <= kRecords; ++i) {
      ASSERT_TRUE(store
                      ->AppendFindings(
                          {MakeFinding(i, v1::FINDING_STATE_ACTIVE)}, false)
                      .ok());
      ends.push_back(store->findings_log_bytes());
    }
  }
  const std::string log = Dir() + "/findings.log";
  const std::string pristine = ReadFile(log);
  for (size_t at = 0; at < pristine.size(); at += 3) {
    SCOPED_TRACE(absl::StrCat("flipped byte ", at));
    std::string data = pristine;
    data[at] ^= 0x20;
    WriteFile(log, data);
    std::unique_ptr<StateStore> store = OpenStore();
    absl::StatusOr<LoadedFindings> loaded = store->ReadFindings();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    // The record that holds byte `at` (none for the magic).
    int hit = 0;
    for (int r = 0; r < kRecords; ++r) {
      if (at >= (r == 0 ? 4 : ends[r - 1]) && at < ends[r]) hit = r + 1;
    }
    std::vector<std::string> ids;
    for (const StoredFinding& f : loaded->findings) {
      ids.push_back(f.finding.id());
    }
    for (int i = 1; i <= kRecords; ++i) {
      if (i == hit) continue;
      EXPECT_THAT(ids, ::testing::Contains(absl::StrCat("f-00000", i)));
    }
    store.reset();
    WriteFile(log, pristine);
  }
}

TEST_F(StateStoreTest, RewriteKeepsTheNextIdEvenForDroppedFindings) {
  {
    std::unique_ptr<StateStore> store = OpenStore();
    ASSERT_TRUE(store->ReadFindings().ok());
    ASSERT_TRUE(
        store->RewriteFindings({MakeFinding(7, v1::FINDING_STATE_ACTIVE)}, 42)
            .ok());
  }
  std::unique_ptr<StateStore> store = OpenStore();
  absl::StatusOr<LoadedFindings> loaded = store->ReadFindings();
  ASSERT_TRUE(loaded.ok());
  ASSERT_THAT(loaded->findings, SizeIs(1));
  EXPECT_EQ(loaded->next_id, 42u);
}

TEST_F(StateStoreTest, GarbageLogIsMovedAsideWithoutCrashing) {
  { std::unique_ptr<StateStore> store = OpenStore(); }
  WriteFile(Dir() + "/findings.log", std::string(1000, '\xff'));
  std::unique_ptr<StateStore> store = OpenStore();
  absl::StatusOr<LoadedFindings> loaded = store->ReadFindings();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(loaded->findings, SizeIs(0));
  EXPECT_THAT(store->problems(), ElementsAre(HasSubstr("bad header")));
}

TEST_F(StateStoreTest, AppendBeforeReadIsAnError) {
  std::unique_ptr<StateStore> store = OpenStore();
  EXPECT_EQ(
      store->AppendFindings({MakeFinding(1, v1::FINDING_STATE_ACTIVE)}, true)
          .code(),
      absl::StatusCode::kFailedPrecondition);
}

TEST_F(StateStoreTest, ASecondStoreOnTheSameDirectoryIsRefused) {
  std::unique_ptr<StateStore> first = OpenStore();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(ReadFile(Dir() + "/LOCK"), absl::StrCat(getpid(), "\n"));
  absl::StatusOr<std::unique_ptr<StateStore>> second =
      StateStore::Open(Dir(), &clock_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(),
              AllOf(HasSubstr(Dir()), HasSubstr("in use by another"),
                    HasSubstr(absl::StrCat("pid ", getpid()))));
  // The lock goes with its holder; the LOCK file that stays is no obstacle.
  first.reset();
  EXPECT_NE(OpenStore(), nullptr);
}

TEST_F(StateStoreTest, LastWriteStatusReportsThePresentNotThePast) {
  std::unique_ptr<StateStore> store = OpenStore();
  EXPECT_TRUE(store->last_write_status().ok());
  // Make layouts/ unusable (root ignores permission bits; a file does not).
  std::filesystem::rename(Dir() + "/layouts", Dir() + "/layouts.away");
  WriteFile(Dir() + "/layouts", "not a directory");
  EXPECT_FALSE(store->WriteLayout(NamedLayout("job-a"), clock_.Now()).ok());
  EXPECT_FALSE(store->last_write_status().ok());
  EXPECT_THAT(store->last_write_status().message(), HasSubstr("job-a"));
  // Room again: the next write that succeeds makes the store healthy.
  std::filesystem::remove(Dir() + "/layouts");
  std::filesystem::rename(Dir() + "/layouts.away", Dir() + "/layouts");
  ASSERT_TRUE(store->WriteLayout(NamedLayout("job-a"), clock_.Now()).ok());
  EXPECT_TRUE(store->last_write_status().ok());
  EXPECT_EQ(store->write_errors(), 1u);
}

}  // namespace
}  // namespace fabricdiag::collector
