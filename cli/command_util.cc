#include "cli/command_util.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "analysis/layout_parse.h"
#include "cli/text_output.h"

namespace fabricdiag::cli {

int ExitStatusOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return kExitInvalid;
    case absl::StatusCode::kNotFound:
      return kExitNotFound;
    default:
      return kExitCollector;
  }
}

int ReportError(const absl::Status& status, const CommandEnv& env) {
  *env.err << "fabricdiag: " << Printable(status.message()) << "\n";
  return ExitStatusOf(status);
}

int ReportInputError(absl::string_view input, const absl::Status& status,
                     const CommandEnv& env) {
  *env.err << "fabricdiag: " << input << ": " << Printable(status.message())
           << "\n";
  return ExitStatusOf(status);
}

int PrintDocument(const std::string& json, const CommandOptions& options,
                  const CommandEnv& env) {
  if (options.json) {
    nlohmann::ordered_json doc = nlohmann::ordered_json::parse(
        json, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
      return ReportError(absl::InternalError("cannot render the document"),
                         env);
    }
    *env.out << doc.dump(2) << "\n";
    return kExitOk;
  }
  absl::StatusOr<std::string> yaml = JsonToYaml(json);
  if (!yaml.ok())
    return ReportError(absl::InternalError(yaml.status().message()), env);
  *env.out << *yaml;
  return kExitOk;
}

std::string InputName(absl::string_view path) {
  return path == "-" ? std::string("<stdin>") : std::string(path);
}

absl::StatusOr<std::string> ReadInputFile(absl::string_view path,
                                          size_t max_bytes,
                                          const CommandEnv& env) {
  const size_t limit = max_bytes;
  std::string data;
  if (path == "-") {
    char buf[65536];
    while (env.in != nullptr && data.size() <= limit &&
           env.in->read(buf, sizeof(buf)).gcount() > 0) {
      data.append(buf, static_cast<size_t>(env.in->gcount()));
    }
    if (env.in != nullptr && env.in->bad()) {
      return absl::InvalidArgumentError("cannot read standard input");
    }
  } else {
    const std::string name(path);
    std::FILE* f = std::fopen(name.c_str(), "rb");
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read: ", std::strerror(errno)));
    }
    char buf[65536];
    size_t n = 0;
    while (data.size() <= limit &&
           (n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
      data.append(buf, n);
    }
    const bool failed = std::ferror(f) != 0;
    const int read_errno = errno;
    std::fclose(f);
    if (failed) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read: ", std::strerror(read_errno)));
    }
  }
  if (data.size() > limit) {
    return absl::InvalidArgumentError(
        absl::StrCat("larger than ", limit, " bytes"));
  }
  return data;
}

std::optional<LayoutFile> ReadLayoutFile(absl::string_view file,
                                         const CommandEnv& env,
                                         int* exit_code) {
  const std::string name = InputName(file);
  absl::StatusOr<std::string> text =
      ReadInputFile(file, analysis::kMaxDocumentBytes, env);
  if (!text.ok()) {
    *exit_code = ReportInputError(name, text.status(), env);
    return std::nullopt;
  }
  absl::StatusOr<v1::Layout> layout = analysis::ParseLayout(*text);
  if (!layout.ok()) {
    *exit_code = ReportInputError(name, layout.status(), env);
    return std::nullopt;
  }
  absl::StatusOr<analysis::LayoutModel> model =
      analysis::LayoutModel::Build(*layout);
  if (!model.ok()) {
    *exit_code = ReportInputError(name, model.status(), env);
    return std::nullopt;
  }
  return LayoutFile{*std::move(layout), *std::move(model)};
}

}  // namespace fabricdiag::cli
