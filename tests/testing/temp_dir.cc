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
  // A test may have taken its own permissions away from a directory inside
  // (to see a write fail); give them back so everything can be removed.
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           path_, std::filesystem::directory_options::skip_permission_denied,
           ec);
       !ec && it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code ignored;
    if (it->is_directory(ignored)) {
      std::filesystem::permissions(it->path(),
                                   std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, ignored);
    }
  }
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path_, ec);
}

}  // namespace fabricdiag::testing
