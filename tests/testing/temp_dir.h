// A fresh directory for one test, removed with everything in it when the
// object goes away. Under $TEST_TMPDIR, $TMPDIR or /tmp.
//
//   testing::TempDir dir;
//   WriteFile(dir.path() + "/layout.yaml", ...);
//
// Not thread-safe.
#pragma once

#include <string>

namespace fabricdiag::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace fabricdiag::testing
