// plan FILE: the offline view of a layout (no collector): its groups, the TP
// groups that leave their NVLink domain, and the traffic and time each
// parallelism dimension costs per training step. The report itself is
// analysis/plan_report.h; this command only reads the file and prints it.
#include <optional>

#include "analysis/layout_model.h"
#include "analysis/plan_report.h"
#include "analysis/traffic_model.h"
#include "cli/command_util.h"
#include "cli/commands.h"

namespace fabricdiag::cli {

int PlanCommand(absl::string_view file, const CommandOptions& options,
                const CommandEnv& env) {
  int exit_code = kExitOk;
  std::optional<LayoutFile> input = ReadLayoutFile(file, env, &exit_code);
  if (!input.has_value()) return exit_code;
  absl::StatusOr<analysis::PlanReport> report =
      analysis::BuildPlanReport(input->model, analysis::LinkParams{});
  if (!report.ok()) {
    return ReportInputError(InputName(file), report.status(), env);
  }
  *env.out << (options.json ? analysis::RenderPlanJson(*report)
                            : analysis::RenderPlanText(*report));
  env.out->flush();
  return kExitOk;
}

}  // namespace fabricdiag::cli
