// The version of every fabricdiag program and of what they put on the wire
// (Hello.agent_version, `--version`, the build_info metrics, the packages).
// It is the CMake project version, so it is set in one place.
#pragma once

namespace fabricdiag {

inline constexpr char kVersion[] = FABRICDIAG_VERSION;

}  // namespace fabricdiag
