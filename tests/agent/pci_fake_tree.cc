#include "tests/agent/pci_fake_tree.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/testing/fake_sysfs.h"

namespace fabricdiag::agent {

namespace {

struct Line {
  std::string pci_class;
  std::string vendor;
  std::string numa;
  std::string rdma;
  std::string net;
};

// "../" repeated `n` times.
std::string Up(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += "../";
  return s;
}

}  // namespace

absl::Status BuildPciTree(const std::string& root,
                          absl::string_view description) {
  // Path below devices/ -> what to write; bridges filled in afterwards.
  std::map<std::string, Line> functions;
  for (absl::string_view raw : absl::StrSplit(description, '\n')) {
    absl::string_view text = raw.substr(0, raw.find('#'));
    std::vector<absl::string_view> fields =
        absl::StrSplit(text, ' ', absl::SkipWhitespace());
    if (fields.empty()) continue;
    if (fields.size() < 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad fixture line: ", raw));
    }
    Line line{std::string(fields[1]), std::string(fields[2]),
              std::string(fields[3]), "", ""};
    for (size_t i = 4; i < fields.size(); ++i) {
      absl::string_view f = fields[i];
      if (absl::ConsumePrefix(&f, "rdma=")) {
        line.rdma = std::string(f);
      } else if (absl::ConsumePrefix(&f, "net=")) {
        line.net = std::string(f);
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("bad fixture field: ", fields[i]));
      }
    }
    functions[std::string(fields[0])] = line;
  }
  // The bridges (every component but the host bridge and the function).
  std::map<std::string, Line> all = functions;
  for (const auto& [path, line] : functions) {
    std::vector<std::string> parts = absl::StrSplit(path, '/');
    for (size_t n = 2; n < parts.size(); ++n) {
      std::string bridge = absl::StrJoin(parts.begin(), parts.begin() + n, "/");
      // A bridge is on its function's NUMA node (junk stays on the line).
      const bool number =
          line.numa.find_first_not_of("-0123456789") == std::string::npos;
      all.try_emplace(bridge, Line{"0x060400", "0x1000",
                                   number ? line.numa : "-1", "", ""});
    }
  }
  FakeSysfs fs(root);
  // Links made by an earlier call (a tree grown by hotplug) are kept.
  auto link = [&fs, &root](const std::string& target,
                           const std::string& relpath) {
    std::error_code ec;
    if (std::filesystem::is_symlink(std::filesystem::path(root) / relpath,
                                    ec)) {
      return absl::OkStatus();
    }
    return fs.Symlink(target, relpath);
  };
  for (const auto& [path, line] : all) {
    const std::string dir = absl::StrCat("devices/", path);
    const std::string address = path.substr(path.rfind('/') + 1);
    absl::Status st = fs.MakeDir(dir);
    for (const auto& [name, value] :
         {std::pair<const char*, const std::string*>{"class", &line.pci_class},
          {"vendor", &line.vendor},
          {"numa_node", &line.numa}}) {
      if (st.ok() && *value != "-") {
        st = fs.WriteFile(absl::StrCat(dir, "/", name), *value + "\n");
      }
    }
    if (st.ok()) {
      st = link(absl::StrCat("../../../", dir),
                absl::StrCat("bus/pci/devices/", address));
    }
    if (st.ok() && !line.net.empty()) {
      st = fs.MakeDir(absl::StrCat(dir, "/net/", line.net));
      if (st.ok()) {
        st = link(absl::StrCat("../../", dir, "/net/", line.net),
                  absl::StrCat("class/net/", line.net));
      }
    }
    if (st.ok() && !line.rdma.empty()) {
      const std::string ib = absl::StrCat(dir, "/infiniband/", line.rdma);
      st = fs.MakeDir(ib);
      if (st.ok()) {
        st = link(absl::StrCat(Up(3), address), absl::StrCat(ib, "/device"));
      }
      if (st.ok()) {
        st = link(absl::StrCat("../../", ib),
                  absl::StrCat("class/infiniband/", line.rdma));
      }
    }
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status BuildPciTreeFromFixture(const std::string& root,
                                     const std::string& name) {
  const std::string file =
      absl::StrCat(FABRICDIAG_SOURCE_DIR, "/tests/fixtures/pci/", name);
  std::ifstream in(file);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", file));
  std::stringstream text;
  text << in.rdbuf();
  return BuildPciTree(root, text.str());
}

}  // namespace fabricdiag::agent
