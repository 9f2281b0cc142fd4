// What every fabricdiag binary does before it reads its flags: the usage
// line, `--help` listing the program's own flags (defined in its *main.cc
// and the *_flags.cc flag blocks it links),
// and `--version`.
//
//   int main(int argc, char** argv) {
//     fabricdiag::InitProgram("fabricdiag-agent", "Reads every RDMA ...");
//     std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
//
// Call once, before absl::ParseCommandLine; not thread-safe.
#pragma once

#include "absl/strings/string_view.h"

namespace fabricdiag {

void InitProgram(absl::string_view program, absl::string_view usage);

}  // namespace fabricdiag
