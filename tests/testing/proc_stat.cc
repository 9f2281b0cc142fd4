#include "tests/testing/proc_stat.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace fabricdiag::testing {
namespace {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

absl::StatusOr<ProcessCpu> ParseProcStatCpu(absl::string_view stat,
                                            int64_t ticks_per_second) {
  const size_t paren = stat.rfind(')');
  if (paren == absl::string_view::npos || ticks_per_second <= 0) {
    return absl::InvalidArgumentError("malformed /proc/PID/stat: no ')'");
  }
  // After ") " come field 3 (state), 4, ... ; utime is field 14, stime 15.
  const std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(paren + 1), ' ', absl::SkipEmpty());
  constexpr size_t kUtime = 14 - 3;
  constexpr size_t kStime = 15 - 3;
  uint64_t utime = 0;
  uint64_t stime = 0;
  if (fields.size() <= kStime || !absl::SimpleAtoi(fields[kUtime], &utime) ||
      !absl::SimpleAtoi(fields[kStime], &stime)) {
    return absl::InvalidArgumentError(
        "malformed /proc/PID/stat: no numeric utime/stime");
  }
  const auto ticks = [ticks_per_second](uint64_t t) {
    return absl::Seconds(static_cast<double>(t) /
                         static_cast<double>(ticks_per_second));
  };
  return ProcessCpu{ticks(utime), ticks(stime)};
}

absl::StatusOr<ProcessCpu> ReadProcessCpu(pid_t pid) {
  absl::StatusOr<std::string> stat =
      ReadWholeFile(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat.ok()) return stat.status();
  return ParseProcStatCpu(*stat, sysconf(_SC_CLK_TCK));
}

absl::StatusOr<ProcessMemory> ParseProcStatusMemory(absl::string_view status) {
  ProcessMemory mem;
  bool have_rss = false;
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    uint64_t* field = nullptr;
    if (absl::ConsumePrefix(&line, "VmRSS:")) {
      field = &mem.rss;
      have_rss = true;
    } else if (absl::ConsumePrefix(&line, "RssAnon:")) {
      field = &mem.anon;
    } else if (absl::ConsumePrefix(&line, "RssFile:")) {
      field = &mem.file;
    } else {
      continue;
    }
    line = absl::StripAsciiWhitespace(line);
    uint64_t kb = 0;
    if (!absl::ConsumeSuffix(&line, "kB") ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kb)) {
      return absl::InvalidArgumentError("malformed /proc/PID/status line");
    }
    *field = kb * 1024;
  }
  if (!have_rss) return absl::NotFoundError("no VmRSS line");
  return mem;
}

absl::StatusOr<ProcessMemory> ReadProcessMemory(pid_t pid) {
  absl::StatusOr<std::string> status =
      ReadWholeFile(absl::StrCat("/proc/", pid, "/status"));
  if (!status.ok()) return status.status();
  return ParseProcStatusMemory(*status);
}

}  // namespace fabricdiag::testing
