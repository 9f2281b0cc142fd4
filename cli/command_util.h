// Helpers shared by the command implementations (not part of the CLI's API).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cli/commands.h"

namespace fabricdiag::cli {

// Prints "fabricdiag: <message>" on env.err and returns the exit status for
// `status`: kExitInvalid for InvalidArgument (the input named in the message
// is at fault, locally or as judged by the collector), kExitCollector for
// everything else. `status` must not be OK.
int ReportError(const absl::Status& status, const CommandEnv& env);

// Same with a prefix naming the input: "fabricdiag: FILE: <message>".
int ReportInputError(absl::string_view input, const absl::Status& status,
                     const CommandEnv& env);

// The name used for FILE in messages ("<stdin>" for "-").
std::string InputName(absl::string_view path);

}  // namespace fabricdiag::cli
