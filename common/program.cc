#include "common/program.h"

#include <string>

#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/version.h"

namespace fabricdiag {
namespace {

// Our binaries define their flags in their main file (agent_main.cc,
// cli/main.cc, ...) and in the shared flag blocks they link
// (client/tls_flags.cc, client/stream_flags.cc); Abseil's default filter
// looks for a file named after the program ("fabricdiag-agent.cc") and would
// list none.
bool IsMainFile(absl::string_view filename) {
  return absl::EndsWith(filename, "main.cc") ||
         absl::EndsWith(filename, "_flags.cc");
}

}  // namespace

void InitProgram(absl::string_view program, absl::string_view usage) {
  absl::FlagsUsageConfig config;
  config.contains_helpshort_flags = IsMainFile;
  config.contains_help_flags = IsMainFile;
  std::string version = absl::StrCat(program, " ", kVersion, "\n");
  config.version_string = [version] { return version; };
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(usage);
}

}  // namespace fabricdiag
