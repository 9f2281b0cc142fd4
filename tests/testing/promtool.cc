#include "tests/testing/promtool.h"

#include <cstdlib>
#include <fstream>

#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::testing {

bool PromtoolInstalled() {
  return std::system("command -v promtool >/dev/null 2>&1") == 0;
}

bool PromtoolAccepts(const std::string& exposition, std::string* output) {
  const TempDir dir;
  const std::string path = dir.path() + "/metrics.prom";
  std::ofstream(path) << exposition;
  RunResult r =
      RunCommand({"/bin/sh", "-c", "promtool check metrics < " + path});
  *output = r.out + r.err;
  return r.exit_code == 0 && output->empty();
}

}  // namespace fabricdiag::testing
