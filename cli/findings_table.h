// The human table of findings, shared by `findings` and `layout apply`.
//
//   SortFindings(&findings);
//   PrintFindingsTable(findings, /*with_state=*/false, env);
//   // SEVERITY  KIND       JOB           GROUP  NODE     DEVICE  AGE  SUMMARY
//   // critical  pfc_storm  moe-train-42  -      gpu-003  mlx5_2  5s   gpu-003
//   ...
#pragma once

#include <string>
#include <vector>

#include "cli/commands.h"
#include "proto/collector.pb.h"

namespace fabricdiag::cli {

// "[acked by alice] ", "[silenced s-5f3a…] ", both, or "" for an unmarked
// finding: what the table and the watch lines put before the summary, so
// that a marked finding reads as marked without a new column.
std::string MarkPrefix(const v1::Finding& finding);

// "kind=pfc_storm,node=leaf-3": a silence's matchers as `silence
// --matcher` takes them.
std::string SilenceMatchersText(const v1::Silence& silence);

// Most severe first, then oldest first, then by id: what needs attention
// first is on top and the order is stable between runs.
void SortFindings(std::vector<v1::Finding>* findings);

// Columns SEVERITY [STATE] KIND JOB GROUP NODE DEVICE AGE SUMMARY; AGE is
// env.clock's now minus first_seen.
void PrintFindingsTable(const std::vector<v1::Finding>& findings,
                        bool with_state, const CommandEnv& env);

}  // namespace fabricdiag::cli
