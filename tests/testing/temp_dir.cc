#include "tests/testing/temp_dir.h"

#include <stdio.h>
#include <stdlib.h>

#include <filesystem>
#include <system_error>

namespace fabricdiag::testing {

TempDir::TempDir() {
  const char* base = getenv("TEST_TMPDIR");
  if (base == nullptr) base = getenv("TMPDIR");
  if (base == nullptr) base = "/tmp";
  std::string templ = std::string(base) + "/fabricdiag_test_XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    perror("mkdtemp");
    abort();  // a test cannot run without its directory
  }
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace fabricdiag::testing
