#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"

namespace fabricdiag {
namespace {

std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};

absl::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarning:
      return "WARNING";
    case LogLevel::kError:
      return "ERROR";
  }
  return "?";
}

}  // namespace

void SetMinLogLevel(LogLevel level) {
  min_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

void Log(LogLevel level, absl::string_view message) {
  if (static_cast<int>(level) < min_level.load(std::memory_order_relaxed)) {
    return;
  }
  std::string line = absl::StrCat(LevelName(level), " ", message, "\n");
  // One write(2) keeps concurrent lines from interleaving. A failed write to
  // stderr has nowhere better to be reported.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace fabricdiag
