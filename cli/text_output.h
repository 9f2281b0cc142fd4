// Plain-text output helpers: aligned tables and JSON -> YAML for humans.
//
//   Table table({"JOB", "RANKS"});
//   table.AddRow({"moe-train-42", "64"});
//   table.Print(out);
//   // JOB           RANKS
//   // moe-train-42  64
//
//   absl::StatusOr<std::string> yaml = JsonToYaml(LayoutToJson(layout));
//
// Thread-compatible.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::cli {

// Columns separated by two spaces, each as wide as its widest cell; the last
// column is not padded (summaries are long). Empty cells print as "-" so
// that `awk` sees a constant number of fields in all but the last column.
// Control characters in cells (a hostile collector) print as '?'.
class Table {
 public:
  explicit Table(std::vector<std::string> header);
  void AddRow(std::vector<std::string> row);
  size_t rows() const { return rows_.size(); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Replaces control characters with '?' so that text from the collector
// cannot move the terminal's cursor or fake lines.
std::string Printable(absl::string_view text);

// Block-style YAML of a JSON document (mappings in blocks, lists of scalars
// inline: `hosts: [gpu-000, gpu-001]`, list entries that are mappings inline
// too: `- {rank: 0, host: gpu-000, ...}`). InvalidArgument when `json` does
// not parse.
absl::StatusOr<std::string> JsonToYaml(absl::string_view json);

}  // namespace fabricdiag::cli
