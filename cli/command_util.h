// Helpers shared by the command implementations (not part of the CLI's API).
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "analysis/layout_model.h"
#include "cli/commands.h"
#include "proto/layout.pb.h"

namespace fabricdiag::cli {

// The exit status for a failed `status`: kExitInvalid for InvalidArgument
// (the input named in the message is at fault, locally or as judged by the
// collector), kExitNotFound for NotFound (what the command names does not
// exist), kExitCollector for everything else.
int ExitStatusOf(const absl::Status& status);

// Prints "fabricdiag: <message>" on env.err and returns
// ExitStatusOf(status). `status` must not be OK.
int ReportError(const absl::Status& status, const CommandEnv& env);

// Same with a prefix naming the input: "fabricdiag: FILE: <message>".
int ReportInputError(absl::string_view input, const absl::Status& status,
                     const CommandEnv& env);

// Prints a document that analysis/ rendered as one-line JSON: indented JSON
// with --json, YAML otherwise.
int PrintDocument(const std::string& json, const CommandOptions& options,
                  const CommandEnv& env);

// The name used for FILE in messages ("<stdin>" for "-").
std::string InputName(absl::string_view path);

// A layout file as every command taking one starts: FILE ("-": standard
// input) read, parsed and its model built, so that a typo is reported here,
// against the file's name, and an invalid layout never leaves this host.
struct LayoutFile {
  v1::Layout layout;
  analysis::LayoutModel model;
};
// The layout in `file`; nullopt after reporting the error on env.err, with
// *exit_code set to the status to exit with.
std::optional<LayoutFile> ReadLayoutFile(absl::string_view file,
                                         const CommandEnv& env, int* exit_code);

}  // namespace fabricdiag::cli
