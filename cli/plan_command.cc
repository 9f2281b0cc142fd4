// plan FILE: the offline view of a layout (no collector): its groups, the TP
// groups that leave their NVLink domain, and the traffic and time each
// parallelism dimension costs per training step. The report itself is
// analysis/plan_report.h; this command only reads the file and prints it.
#include <string>

#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"
#include "analysis/plan_report.h"
#include "analysis/traffic_model.h"
#include "cli/command_util.h"
#include "cli/commands.h"

namespace fabricdiag::cli {

int PlanCommand(absl::string_view file, const CommandOptions& options,
                const CommandEnv& env) {
  const std::string name = InputName(file);
  absl::StatusOr<std::string> text =
      ReadInputFile(file, analysis::kMaxDocumentBytes, env);
  if (!text.ok()) return ReportInputError(name, text.status(), env);
  absl::StatusOr<v1::Layout> layout = analysis::ParseLayout(*text);
  if (!layout.ok()) return ReportInputError(name, layout.status(), env);
  absl::StatusOr<analysis::LayoutModel> model =
      analysis::LayoutModel::Build(*layout);
  if (!model.ok()) return ReportInputError(name, model.status(), env);
  absl::StatusOr<analysis::PlanReport> report =
      analysis::BuildPlanReport(*model, analysis::LinkParams{});
  if (!report.ok()) return ReportInputError(name, report.status(), env);
  *env.out << (options.json ? analysis::RenderPlanJson(*report)
                            : analysis::RenderPlanText(*report));
  env.out->flush();
  return kExitOk;
}

}  // namespace fabricdiag::cli
