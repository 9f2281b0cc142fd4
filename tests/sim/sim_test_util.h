// Shared inputs of the simulator tests: a small MoE job on 4 hosts, a
// two-leaf topology, and a temporary directory.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"
#include "gtest/gtest.h"
#include "sim/fabric.h"

namespace fabricdiag::sim::testing {

// tp=8 inside each host, dp=4 across the 4 hosts, ep=4: the EP group of a
// NIC is the same rail on the 4 hosts.
inline constexpr char kMoeLayout[] = R"(
job: moe-small
gpus_per_node: 8
parallelism: {tp: 8, pp: 1, dp: 4, ep: 4}
hosts: [gpu-000, gpu-001, gpu-002, gpu-003]
rails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7]
model: {params: 2.0e10, hidden: 4096, layers: 16, seq_len: 4096,
        micro_batch: 1, micro_batches: 4, dtype_bytes: 2, experts: 16,
        top_k: 2}
)";

// Rail 0 of every host on leaf-0, rail 1 on leaf-1.
inline constexpr char kTwoLeaves[] = R"(
switches:
  - {name: leaf-0, uplinks: [swp49, swp50, swp51, swp52]}
  - {name: leaf-1, uplinks: [swp49, swp50, swp51, swp52]}
links:
  - {host: gpu-000, nic: mlx5_0, switch: leaf-0, port: swp1}
  - {host: gpu-001, nic: mlx5_0, switch: leaf-0, port: swp2}
  - {host: gpu-002, nic: mlx5_0, switch: leaf-0, port: swp3}
  - {host: gpu-003, nic: mlx5_0, switch: leaf-0, port: swp4}
  - {host: gpu-000, nic: mlx5_1, switch: leaf-1, port: swp1}
  - {host: gpu-001, nic: mlx5_1, switch: leaf-1, port: swp2}
  - {host: gpu-002, nic: mlx5_1, switch: leaf-1, port: swp3}
  - {host: gpu-003, nic: mlx5_1, switch: leaf-1, port: swp4}
)";

inline Fabric BuildFabric(const std::string& layout_text = kMoeLayout,
                          const std::string& topology_text = kTwoLeaves) {
  std::vector<analysis::LayoutModel> layouts;
  if (!layout_text.empty()) {
    auto proto = analysis::ParseLayout(layout_text);
    EXPECT_TRUE(proto.ok()) << proto.status();
    auto model = analysis::LayoutModel::Build(*proto);
    EXPECT_TRUE(model.ok()) << model.status();
    layouts.push_back(*std::move(model));
  }
  v1::Topology topology;
  if (!topology_text.empty()) {
    auto parsed = analysis::ParseTopology(topology_text);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    topology = *parsed;
  }
  auto fabric = Fabric::Build(std::move(layouts), topology);
  EXPECT_TRUE(fabric.ok()) << fabric.status();
  return *std::move(fabric);
}

// A fresh directory, removed with everything in it at destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TEST_TMPDIR");
    std::string pattern =
        std::string(base != nullptr ? base : "/tmp") + "/fabricdiag-sim-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    const char* made = mkdtemp(buf.data());
    EXPECT_NE(made, nullptr);
    path_ = made != nullptr ? made : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file) << text;
    return file;
  }

 private:
  std::string path_;
};

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

}  // namespace fabricdiag::sim::testing
