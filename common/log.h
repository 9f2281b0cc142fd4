// A small leveled logger writing one line per message to stderr.
//
// Abseil 20220623 has no absl/log. Daemons run under systemd, whose journal
// adds timestamps and the unit name, so a line is just "LEVEL message":
//
//   fabricdiag::Log(fabricdiag::LogLevel::kWarning,
//                   absl::StrCat("cannot read ", path, ": ",
//                   status.message()));
//
// Thread-safe: each message is written with a single write(2).
#pragma once

#include "absl/strings/string_view.h"

namespace fabricdiag {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Messages below `level` are dropped. Default: kInfo.
void SetMinLogLevel(LogLevel level);

void Log(LogLevel level, absl::string_view message);

inline void LogInfo(absl::string_view message) {
  Log(LogLevel::kInfo, message);
}
inline void LogWarning(absl::string_view message) {
  Log(LogLevel::kWarning, message);
}
inline void LogError(absl::string_view message) {
  Log(LogLevel::kError, message);
}

}  // namespace fabricdiag
