// Reading YAML (and JSON, its subset) input files strictly, with errors that
// name the offending field: layouts, topology, scenarios, analyzer configs.
//
// Every error is InvalidArgument and starts with the path of the field
// ("parallelism.tp: expected an integer, got the string \"8\"",
// "ranks[3]: unknown key"). A document is bounded BEFORE yaml-cpp builds a
// tree (size, nesting depth, number of values, one document only), so a
// hostile file costs a bounded amount of memory and time. yaml-cpp throws;
// nothing is thrown from here.
//
//   ASSIGN_OR_RETURN(YAML::Node root, LoadDocument(text, "layout", {}));
//   ASSIGN_OR_RETURN(Fields f, Fields::Read(root, "", "layout", {"job"}));
//   ASSIGN_OR_RETURN(YAML::Node job, f.Require("job"));
//   ASSIGN_OR_RETURN(std::string name, ReadString(job, f.Path("job")));
//
// Pure functions; thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"

namespace fabricdiag::yaml {

struct Limits {
  size_t max_bytes = 16 << 20;  // 16 MiB of text
  // The deepest a valid input file of ours nests is 4 (ranks -> [i] ->
  // {...}); anything far deeper is hostile.
  int max_depth = 32;
  // Scalars + collections + aliases in the event stream. yaml-cpp needs
  // about 450 bytes and 4 us per node (measured: 1M list entries, 457 MB,
  // 3.7 s), so the default bounds the tree it builds to ~0.5 GB.
  uint64_t max_values = uint64_t{1000} * 1000;
};

// Parses `text` (one YAML or JSON document) into a tree after checking it
// against `limits` while streaming; `what` names the document in errors
// ("layout: the text nests deeper than 32 levels (line 7)"), unless empty.
absl::StatusOr<YAML::Node> LoadDocument(absl::string_view text,
                                        absl::string_view what,
                                        const Limits& limits);

// InvalidArgument "<path>: <message>" ("<message>" when `path` is empty).
absl::Status FieldError(absl::string_view path, absl::string_view message);
// "a.b" (or "b" when `path` is empty), "a[3]".
std::string Join(absl::string_view path, absl::string_view key);
std::string Index(absl::string_view path, size_t i);
// What a node is, for "expected X, got Y": "a list", "null", "the string
// \"8\"", "12".
std::string Describe(const YAML::Node& node);

// A plain (unquoted) integer 0..2^32-1: "8" quoted, "8.0", "-1" and "1e9"
// are errors that say which.
absl::StatusOr<uint32_t> ReadUint(const YAML::Node& node,
                                  absl::string_view path);
// A plain finite number.
absl::StatusOr<double> ReadNumber(const YAML::Node& node,
                                  absl::string_view path);
// ReadNumber, and not negative.
absl::StatusOr<double> ReadNonNegativeNumber(const YAML::Node& node,
                                             absl::string_view path);
// Plain `true` or `false` only: a quoted "true" is a string, and YAML
// 1.1's "yes" surprises people.
absl::StatusOr<bool> ReadBool(const YAML::Node& node, absl::string_view path);
// Any scalar.
absl::StatusOr<std::string> ReadString(const YAML::Node& node,
                                       absl::string_view path);
// A list of at most `max_entries` entries.
absl::Status CheckList(const YAML::Node& node, absl::string_view path,
                       uint32_t max_entries);

// Calls add(std::string) for every string of a list.
template <typename AddFn>
absl::Status ReadStringList(const YAML::Node& node, absl::string_view path,
                            uint32_t max_entries, AddFn add) {
  RETURN_IF_ERROR(CheckList(node, path, max_entries));
  size_t i = 0;
  for (const YAML::Node& item : node) {
    ASSIGN_OR_RETURN(std::string s, ReadString(item, Index(path, i)));
    add(std::move(s));
    ++i;
  }
  return absl::OkStatus();
}

// The entries of one mapping, checked against the keys it may have: an
// unknown key, a key given twice or a non-string key is an error.
class Fields {
 public:
  // `path` is where the mapping is ("" at the top); `root` names the
  // document in errors about the top-level mapping itself.
  static absl::StatusOr<Fields> Read(
      const YAML::Node& node, std::string path, absl::string_view root,
      std::initializer_list<absl::string_view> allowed);

  std::optional<YAML::Node> Get(absl::string_view key) const;
  // NotFound is reported as "<path>: required".
  absl::StatusOr<YAML::Node> Require(absl::string_view key) const;
  std::string Path(absl::string_view key) const { return Join(path_, key); }

 private:
  std::string path_;
  std::vector<std::pair<std::string, YAML::Node>> entries_;
};

}  // namespace fabricdiag::yaml
