#include "cli/text_output.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag::cli {
namespace {

bool IsScalarList(const YAML::Node& node) {
  for (const YAML::Node& item : node) {
    if (!item.IsScalar() && !item.IsNull()) return false;
  }
  return true;
}

// Flow style for short things a human reads on one line, block otherwise.
void SetStyles(YAML::Node node, bool inside_flow) {
  if (node.IsMap()) {
    node.SetStyle(inside_flow ? YAML::EmitterStyle::Flow
                              : YAML::EmitterStyle::Block);
    for (auto it = node.begin(); it != node.end(); ++it) {
      SetStyles(it->second, inside_flow);
    }
  } else if (node.IsSequence()) {
    const bool flat = IsScalarList(node);
    node.SetStyle(flat || inside_flow ? YAML::EmitterStyle::Flow
                                      : YAML::EmitterStyle::Block);
    for (YAML::Node item : node) {
      // Entries that are mappings (ranks, links) fit on one line each.
      SetStyles(item, /*inside_flow=*/true);
    }
  }
}

}  // namespace

std::string Printable(absl::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  return out;
}

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {}

void Table::AddRow(std::vector<std::string> row) {
  row.resize(header_.size());
  for (std::string& cell : row) {
    cell = cell.empty() ? "-" : Printable(cell);
  }
  rows_.push_back(std::move(row));
}

void Table::Print(std::ostream& out) const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) {
        line.append(width[c] - row[c].size() + 2, ' ');
      }
    }
    out << line << "\n";
  };
  print_row(header_);
  for (const auto& row : rows_) print_row(row);
}

absl::StatusOr<std::string> JsonToYaml(absl::string_view json) {
  try {
    // JSON is YAML (flow style); re-emit it in block style.
    YAML::Node root = YAML::Load(std::string(json));
    SetStyles(root, /*inside_flow=*/false);
    YAML::Emitter emitter;
    emitter << root;
    if (!emitter.good()) {
      return absl::InternalError(
          absl::StrCat("cannot emit YAML: ", emitter.GetLastError()));
    }
    return absl::StrCat(emitter.c_str(), "\n");
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a JSON document: ", e.what()));
  }
}

}  // namespace fabricdiag::cli
