#include "common/yaml_reader.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/mark.h>

#include <cmath>
#include <exception>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/names.h"

namespace fabricdiag::yaml {
namespace {

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Streams the events of the text once, without building nodes, to bound
// nesting, size and the number of documents before yaml-cpp builds a tree.
class Prescan : public YAML::EventHandler {
 public:
  struct Abort {
    std::string message;
  };

  explicit Prescan(const Limits& limits) : limits_(limits) {}

  void OnDocumentStart(const YAML::Mark&) override {
    if (++documents_ > 1) throw Abort{"holds more than one YAML document"};
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { Count(); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { Count(); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Count();
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&,
                       YAML::anchor_t, YAML::EmitterStyle::value) override {
    Enter(mark);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Enter(mark);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void Count() {
    if (++values_ > limits_.max_values) {
      throw Abort{
          absl::StrCat("has more than ", limits_.max_values, " values")};
    }
  }
  void Enter(const YAML::Mark& mark) {
    Count();
    if (++depth_ > limits_.max_depth) {
      throw Abort{absl::StrCat("nests deeper than ", limits_.max_depth,
                               " levels (line ", mark.line + 1, ")")};
    }
  }

  const Limits& limits_;
  int documents_ = 0;
  int depth_ = 0;
  uint64_t values_ = 0;
};

// yaml-cpp's scanner reads ahead over open flow collections (it cannot
// tell a simple key before the collection closes), so 15 MB of "[" costs it
// gigabytes before the first event reaches Prescan. This pass bounds flow
// nesting on the raw text first, in one linear scan with no allocation:
// a '[' or '{' opens a collection inside a flow collection (where plain
// scalars cannot hold them) or where a node starts in block context (after
// a line's indentation, "- ", "? " or ": "); quoted scalars and comments are
// skipped. The same pass counts the values it sees in flow context (each
// collection and each ',' separated entry), as the scanner also reads a
// whole flat flow collection ahead. Outside block scalars both counts are
// never above the real parse's. Block scalars (`|`, `>`) are not
// recognised: one whose lines start with more than max_depth '[' would be
// refused as too deep. None of our formats has a free-text field (every
// string is a validated name), so such a file is refused later anyway.
struct FlowScan {
  int too_deep_line = 0;  // 1-based line of the first collection too deep
  bool too_many_values = false;
};

FlowScan ScanFlow(absl::string_view text, const Limits& limits) {
  FlowScan result;
  const int max_depth = limits.max_depth;
  uint64_t values = 0;
  int depth = 0;
  int line = 1;
  bool node_start = true;  // only white space since a node could start
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      node_start = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') continue;
    if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' ||
                     text[i - 1] == '\n')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if ((c == '\'' || c == '"') && node_start) {
      // A quoted scalar: '' escapes a single quote, \ escapes in double.
      for (++i; i < text.size(); ++i) {
        if (text[i] == '\n') ++line;
        if (c == '"' && text[i] == '\\') {
          if (i + 1 < text.size() && text[i + 1] == '\n') ++line;
          ++i;
        } else if (text[i] == c) {
          if (c == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
            ++i;
          } else {
            break;
          }
        }
      }
      node_start = false;
      continue;
    }
    if ((c == '[' || c == '{') && (depth > 0 || node_start)) {
      if (++depth > max_depth) {
        result.too_deep_line = line;
        return result;
      }
      if (++values > limits.max_values) {
        result.too_many_values = true;
        return result;
      }
      node_start = true;
      continue;
    }
    if (c == ',' && depth > 0 && ++values > limits.max_values) {
      result.too_many_values = true;
      return result;
    }
    if ((c == ']' || c == '}') && depth > 0) {
      --depth;
      node_start = false;
      continue;
    }
    // "- ", "? ", ": " and, in flow context, "," start a node.
    const bool indicator =
        (c == '-' || c == '?' || c == ':') &&
        (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n' ||
         (depth > 0 &&
          (text[i + 1] == ',' || text[i + 1] == '[' || text[i + 1] == '{')));
    node_start = indicator || (depth > 0 && (c == ',' || c == ':'));
  }
  return result;
}

}  // namespace

absl::StatusOr<YAML::Node> LoadDocument(absl::string_view text,
                                        absl::string_view what,
                                        const Limits& limits) {
  if (text.size() > limits.max_bytes) {
    return FieldError(
        what, absl::StrCat("the text is ", text.size(), " bytes; the limit is ",
                           limits.max_bytes));
  }
  const FlowScan flow = ScanFlow(text, limits);
  if (flow.too_deep_line > 0) {
    return FieldError(
        what, absl::StrCat("the text nests deeper than ", limits.max_depth,
                           " levels (line ", flow.too_deep_line, ")"));
  }
  if (flow.too_many_values) {
    return FieldError(what, absl::StrCat("the text has more than ",
                                         limits.max_values, " values"));
  }
  try {
    {
      std::istringstream in{std::string(text)};
      YAML::Parser parser(in);
      Prescan scan(limits);
      while (parser.HandleNextDocument(scan)) {
      }
    }
    return YAML::Load(std::string(text));
  } catch (const Prescan::Abort& e) {
    return FieldError(what, absl::StrCat("the text ", e.message));
  } catch (const YAML::Exception& e) {
    // e.what() carries the line and column.
    return FieldError(what, absl::StrCat("not valid YAML or JSON: ", e.what()));
  } catch (const std::exception& e) {
    return FieldError(what, absl::StrCat("cannot be parsed: ", e.what()));
  }
}

absl::Status FieldError(absl::string_view path, absl::string_view message) {
  if (path.empty()) return absl::InvalidArgumentError(message);
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

std::string Join(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

std::string Index(absl::string_view path, size_t i) {
  return absl::StrCat(path, "[", i, "]");
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
      return "nothing";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      break;
  }
  const bool quoted = node.Tag() != "?";
  return absl::StrCat(quoted ? "the string " : "",
                      QuoteForMessage(node.Scalar()));
}

absl::StatusOr<uint32_t> ReadUint(const YAML::Node& node,
                                  absl::string_view path) {
  // Quoted scalars ("8") are strings: the file's author meant something else,
  // or a tool wrote the wrong type; either way, say so.
  if (!node.IsScalar() || node.Tag() != "?") {
    return FieldError(
        path, absl::StrCat("expected an integer, got ", Describe(node)));
  }
  const std::string& s = node.Scalar();
  if (s.size() > 1 && s[0] == '-' && AllDigits(s.substr(1))) {
    return FieldError(path, absl::StrCat("must not be negative, got ", s));
  }
  uint64_t value = 0;
  if (AllDigits(s)) {
    if (s.size() > 12 || !absl::SimpleAtoi(s, &value) || value > UINT32_MAX) {
      return FieldError(
          path, absl::StrCat(QuoteForMessage(s), " is too large (at most ",
                             UINT32_MAX, ")"));
    }
    return static_cast<uint32_t>(value);
  }
  double d = 0;
  if (absl::SimpleAtod(s, &d)) {
    return FieldError(
        path, absl::StrCat("expected an integer, got ", QuoteForMessage(s)));
  }
  return FieldError(path,
                    absl::StrCat("expected an integer, got ", Describe(node)));
}

absl::StatusOr<double> ReadNumber(const YAML::Node& node,
                                  absl::string_view path) {
  double d = 0;
  if (!node.IsScalar() || node.Tag() != "?" ||
      !absl::SimpleAtod(node.Scalar(), &d) || !std::isfinite(d)) {
    return FieldError(path,
                      absl::StrCat("expected a number, got ", Describe(node)));
  }
  return d;
}

absl::StatusOr<double> ReadNonNegativeNumber(const YAML::Node& node,
                                             absl::string_view path) {
  ASSIGN_OR_RETURN(double d, ReadNumber(node, path));
  if (d < 0) {
    return FieldError(
        path, absl::StrCat("must not be negative, got ", node.Scalar()));
  }
  return d;
}

absl::StatusOr<bool> ReadBool(const YAML::Node& node, absl::string_view path) {
  if (node.IsScalar() && node.Tag() == "?") {
    if (node.Scalar() == "true") return true;
    if (node.Scalar() == "false") return false;
  }
  return FieldError(
      path, absl::StrCat("expected true or false, got ", Describe(node)));
}

absl::StatusOr<std::string> ReadString(const YAML::Node& node,
                                       absl::string_view path) {
  if (!node.IsScalar()) {
    return FieldError(path,
                      absl::StrCat("expected a string, got ", Describe(node)));
  }
  return node.Scalar();
}

absl::Status CheckList(const YAML::Node& node, absl::string_view path,
                       uint32_t max_entries) {
  if (!node.IsSequence()) {
    return FieldError(path,
                      absl::StrCat("expected a list, got ", Describe(node)));
  }
  if (node.size() > max_entries) {
    return FieldError(path,
                      absl::StrCat(node.size(), " entries exceed the limit of ",
                                   max_entries));
  }
  return absl::OkStatus();
}

absl::StatusOr<Fields> Fields::Read(
    const YAML::Node& node, std::string path, absl::string_view root,
    std::initializer_list<absl::string_view> allowed) {
  const std::string where = path.empty() ? std::string(root) : path;
  if (!node.IsMap()) {
    return FieldError(where,
                      absl::StrCat("expected a mapping, got ", Describe(node)));
  }
  Fields f;
  f.path_ = std::move(path);
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) {
      return FieldError(where, absl::StrCat("a key must be a string, got ",
                                            Describe(it->first)));
    }
    const std::string& key = it->first.Scalar();
    bool known = false;
    for (absl::string_view a : allowed) known = known || a == key;
    if (!known) {
      return FieldError(Join(f.path_, absl::CHexEscape(key.substr(0, 64))),
                        "unknown key");
    }
    // yaml-cpp keeps both entries of a repeated key; YAML forbids it.
    for (const auto& [k, v] : f.entries_) {
      if (k == key) return FieldError(Join(f.path_, key), "given twice");
    }
    f.entries_.emplace_back(key, it->second);
  }
  return f;
}

std::optional<YAML::Node> Fields::Get(absl::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return v;
  }
  return std::nullopt;
}

absl::StatusOr<YAML::Node> Fields::Require(absl::string_view key) const {
  std::optional<YAML::Node> v = Get(key);
  if (!v.has_value()) return FieldError(Path(key), "required");
  return *v;
}

}  // namespace fabricdiag::yaml
