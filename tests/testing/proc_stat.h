// CPU time and memory of another process, from procfs, for benchmarks that
// compare what two exporter processes cost.
//
// CPU comes from /proc/PID/stat fields 14 (utime) and 15 (stime), which sum
// every thread of the process, in clock ticks (sysconf(_SC_CLK_TCK), 100 on
// Linux: a 10 ms resolution, so measure over many operations). Memory is
// VmRSS from /proc/PID/status (proc(5)).
//
//   absl::StatusOr<ProcessCpu> before = ReadProcessCpu(pid);
//   ... let the process work ...
//   absl::StatusOr<ProcessCpu> after = ReadProcessCpu(pid);
//   absl::Duration used = after->total() - before->total();
//
// Thread safety: the functions are thread-safe (no shared state).
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace fabricdiag::testing {

struct ProcessCpu {
  absl::Duration user;
  absl::Duration system;
  absl::Duration total() const { return user + system; }
};

// Parses the content of /proc/PID/stat. The command name (field 2) is in
// parentheses and may itself hold spaces and ')', so fields are counted from
// the LAST ')'. kInvalidArgument on malformed text.
absl::StatusOr<ProcessCpu> ParseProcStatCpu(absl::string_view stat,
                                            int64_t ticks_per_second);

// CPU time used so far by process `pid` (all its threads). kNotFound when
// the process is gone.
absl::StatusOr<ProcessCpu> ReadProcessCpu(pid_t pid);

// Resident memory in bytes from /proc/PID/status: VmRSS = RssAnon (heap,
// stacks) + RssFile (mapped binary and shared libraries, shared with other
// processes) + RssShmem.
struct ProcessMemory {
  uint64_t rss = 0;
  uint64_t anon = 0;
  uint64_t file = 0;
};

// Parses the content of /proc/PID/status. kNotFound without a VmRSS line (a
// zombie, a kernel thread).
absl::StatusOr<ProcessMemory> ParseProcStatusMemory(absl::string_view status);

absl::StatusOr<ProcessMemory> ReadProcessMemory(pid_t pid);

}  // namespace fabricdiag::testing
