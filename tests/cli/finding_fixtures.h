// Findings for the CLI unit tests (findings, watch, report): times relative
// to the example time of tests/cli/test_env.h and one finding shape.
//
//   v1::Finding f = MakeFinding("f-1", "pfc_storm", v1::SEVERITY_CRITICAL,
//                               /*first_seen=*/60);   // At(60), last At(65)
#pragma once

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "proto/collector.pb.h"
#include "tests/cli/test_env.h"

namespace fabricdiag::cli::testing {

// kExampleUnixSeconds + `seconds`, in Unix nanoseconds.
inline int64_t At(int seconds) {
  return absl::ToUnixNanos(absl::FromUnixSeconds(kExampleUnixSeconds) +
                           absl::Seconds(seconds));
}

// An active finding of job moe-train-42 on gpu-003 mlx5_2, opened at
// At(first_seen) and last seen 5 s later.
inline v1::Finding MakeFinding(const std::string& id, const std::string& kind,
                               v1::Severity severity, int first_seen) {
  v1::Finding f;
  f.set_id(id);
  f.set_kind(kind);
  f.set_severity(severity);
  f.set_state(v1::FINDING_STATE_ACTIVE);
  f.set_job("moe-train-42");
  f.set_node("gpu-003");
  f.add_nodes("gpu-003");
  f.set_device("mlx5_2");
  f.set_summary(kind + " on gpu-003 mlx5_2");
  f.set_first_seen_unix_nanos(At(first_seen));
  f.set_last_seen_unix_nanos(At(first_seen + 5));
  return f;
}

}  // namespace fabricdiag::cli::testing
