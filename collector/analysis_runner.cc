#include "collector/analysis_runner.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "analysis/finding.h"
#include "analysis/tp_cross_node.h"
#include "common/log.h"

namespace fabricdiag::collector {
namespace {

v1::Severity ToProto(analysis::Severity s) {
  switch (s) {
    case analysis::Severity::kInfo:
      return v1::SEVERITY_INFO;
    case analysis::Severity::kWarning:
      return v1::SEVERITY_WARNING;
    case analysis::Severity::kCritical:
      return v1::SEVERITY_CRITICAL;
  }
  return v1::SEVERITY_WARNING;
}

FindingReport ToReport(analysis::Finding f) {
  FindingReport r;
  r.kind = std::move(f.kind);
  r.severity = ToProto(f.severity);
  r.job = std::move(f.job);
  r.node = std::move(f.node);
  r.nodes = std::move(f.nodes);
  r.device = std::move(f.device);
  r.group = std::move(f.group);
  r.summary = std::move(f.summary);
  r.evidence = std::move(f.evidence);
  r.evidence_text = std::move(f.evidence_text);
  return r;
}

constexpr char kLayoutSource[] = "layout_analyzers";

}  // namespace

AnalysisRunner::AnalysisRunner(const SeriesStore* series,
                               const LayoutRegistry* registry,
                               FindingsStore* findings, AnalysisStats* stats,
                               const Clock& clock, Options options)
    : series_(series),
      registry_(registry),
      findings_(findings),
      stats_(stats),
      clock_(clock),
      options_(options) {}

AnalysisRunner::~AnalysisRunner() { Stop(); }

void AnalysisRunner::Start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      lock.unlock();
      RunOnce();
      lock.lock();
      cv_.wait_for(
          lock,
          std::chrono::nanoseconds(absl::ToInt64Nanoseconds(options_.interval)),
          [this] { return stopping_; });
    }
  });
}

void AnalysisRunner::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AnalysisRunner::Persisted(const absl::Status& status) {
  if (status.ok()) return;
  if (stats_->persist_errors.fetch_add(1) == 0) {
    LogError(absl::StrCat("cannot persist findings: ", status.ToString()));
  }
}

void AnalysisRunner::RunLiveness(absl::Time now) {
  std::vector<NodeLiveness> nodes;
  // Any node that reported at all is "up" for ListNodes' purpose here; the
  // liveness rule itself (3 missed intervals) is AgentDownFindings'.
  for (const NodeStatus& n : series_->ListNodes(absl::InfiniteDuration())) {
    NodeLiveness l;
    l.node = n.info.node;
    l.last_report = n.info.last_report;
    l.interval = absl::Milliseconds(n.info.interval_ms);
    l.ever_reported = n.info.last_report != absl::InfinitePast();
    nodes.push_back(std::move(l));
  }
  Persisted(findings_->Update(AgentDownFindings(nodes, now, options_.liveness),
                              now, kAgentLivenessSource));
}

void AnalysisRunner::RunLayoutAnalyzers(absl::Time now) {
  std::vector<FindingReport> reports;
  std::shared_ptr<const RegistrySnapshot> snapshot = registry_->Snapshot();
  for (const auto& [job, entry] : snapshot->layouts) {
    for (analysis::Finding& f : analysis::TpCrossNodeFindings(entry->model)) {
      reports.push_back(ToReport(std::move(f)));
    }
  }
  Persisted(findings_->Update(reports, now, kLayoutSource));
}

void AnalysisRunner::RunOnce() {
  std::lock_guard<std::mutex> lock(pass_mu_);
  const int64_t start = clock_.MonotonicNanos();
  const absl::Time now = clock_.Now();
  RunLiveness(now);
  RunLayoutAnalyzers(now);
  stats_->passes.fetch_add(1);
  stats_->last_pass_nanos.store(clock_.MonotonicNanos() - start);
}

std::vector<v1::Finding> AnalysisRunner::RunLayoutPass(const std::string& job) {
  {
    std::lock_guard<std::mutex> lock(pass_mu_);
    RunLayoutAnalyzers(clock_.Now());
  }
  FindingsFilter filter;
  filter.job = job;
  return findings_->List(filter);
}

}  // namespace fabricdiag::collector
