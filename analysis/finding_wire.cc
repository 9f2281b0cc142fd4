#include "analysis/finding_wire.h"

#include <cmath>
#include <string>
#include <vector>

namespace fabricdiag::analysis {
namespace {

struct SeverityRow {
  Severity severity;
  v1::Severity wire;
  const char* name;  // docs/findings.md "The finding object"
};

constexpr SeverityRow kSeverities[] = {
    {Severity::kInfo, v1::SEVERITY_INFO, "info"},
    {Severity::kWarning, v1::SEVERITY_WARNING, "warning"},
    {Severity::kCritical, v1::SEVERITY_CRITICAL, "critical"},
};

const SeverityRow* RowOf(v1::Severity wire) {
  for (const SeverityRow& row : kSeverities) {
    if (row.wire == wire) return &row;
  }
  return nullptr;
}

}  // namespace

v1::Severity SeverityToWire(Severity severity) {
  for (const SeverityRow& row : kSeverities) {
    if (row.severity == severity) return row.wire;
  }
  return v1::SEVERITY_WARNING;  // unreachable: every Severity has a row
}

Severity SeverityFromWire(v1::Severity severity) {
  const SeverityRow* row = RowOf(severity);
  return row != nullptr ? row->severity : Severity::kWarning;
}

absl::string_view SeverityName(v1::Severity severity,
                               absl::string_view otherwise) {
  const SeverityRow* row = RowOf(severity);
  return row != nullptr ? absl::string_view(row->name) : otherwise;
}

std::vector<std::string> WireNodes(const Finding& finding) {
  if (finding.nodes.empty() && !finding.node.empty()) return {finding.node};
  return finding.nodes;
}

void FillWireFinding(const Finding& finding, v1::Finding* wire) {
  wire->set_kind(finding.kind);
  wire->set_severity(SeverityToWire(finding.severity));
  wire->set_job(finding.job);
  wire->set_node(finding.node);
  wire->clear_nodes();
  for (const std::string& node : WireNodes(finding)) wire->add_nodes(node);
  wire->set_device(finding.device);
  wire->set_group(finding.group);
  wire->set_summary(finding.summary);
  wire->clear_evidence();
  for (const auto& [name, value] : finding.evidence) {
    if (std::isfinite(value)) (*wire->mutable_evidence())[name] = value;
  }
  wire->clear_evidence_text();
  for (const auto& [name, text] : finding.evidence_text) {
    (*wire->mutable_evidence_text())[name] = text;
  }
  wire->clear_labels();
  for (const auto& [key, value] : finding.labels) {
    (*wire->mutable_labels())[key] = value;
  }
}

Finding FindingFromWire(const v1::Finding& wire) {
  Finding out;
  out.kind = wire.kind();
  out.severity = SeverityFromWire(wire.severity());
  out.job = wire.job();
  out.node = wire.node();
  out.nodes.assign(wire.nodes().begin(), wire.nodes().end());
  out.device = wire.device();
  out.group = wire.group();
  out.summary = wire.summary();
  out.evidence.insert(wire.evidence().begin(), wire.evidence().end());
  out.evidence_text.insert(wire.evidence_text().begin(),
                           wire.evidence_text().end());
  out.labels.insert(wire.labels().begin(), wire.labels().end());
  return out;
}

}  // namespace fabricdiag::analysis
