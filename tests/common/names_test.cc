#include "common/names.h"

#include <string>

#include "gtest/gtest.h"

namespace fabricdiag {
namespace {

TEST(NamesTest, JobNamesStartWithALetterOrDigit) {
  for (const char* ok : {"moe-train-42", "a", "slurm.12345", "A_b-9"}) {
    EXPECT_TRUE(IsValidJobName(ok)) << ok;
  }
  // "." and ".." would be stored as hidden files or escape the layouts dir.
  for (const char* bad :
       {"", ".", "..", ".hidden", "-rf", "_x", "a/b", "a b", "caf\xc3\xa9"}) {
    EXPECT_FALSE(IsValidJobName(bad)) << bad;
  }
  EXPECT_TRUE(IsValidJobName(std::string(64, 'j')));
  EXPECT_FALSE(IsValidJobName(std::string(65, 'j')));
}

// One rule for the agent's --node, ingest's Hello.node and the hosts of a
// layout: a layout cannot name a host no agent can report as.
TEST(NamesTest, NodeNamesAreDnsLike) {
  for (const char* ok : {"gpu-001.rack_2", "leaf-0", "0node"}) {
    EXPECT_TRUE(IsValidNodeName(ok)) << ok;
  }
  for (const char* bad : {"", "-gpu", ".gpu", "gpu 1", "gpu/1", "gpu\n"}) {
    EXPECT_FALSE(IsValidNodeName(bad)) << bad;
  }
  EXPECT_TRUE(IsValidNodeName(std::string(253, 'a')));
  EXPECT_FALSE(IsValidNodeName(std::string(254, 'a')));
}

TEST(NamesTest, DeviceNamesIncludeSwitchPortSpellings) {
  for (const char* ok :
       {"mlx5_0", "ens1f0np0", "swp49", "Ethernet1/1", "eth0.100", "ib0:1"}) {
    EXPECT_TRUE(IsValidDeviceName(ok)) << ok;
  }
  for (const char* bad : {"", "/dev", "a b", "-x"}) {
    EXPECT_FALSE(IsValidDeviceName(bad)) << bad;
  }
  EXPECT_FALSE(IsValidDeviceName(std::string(65, 'd')));
}

TEST(NamesTest, QuoteForMessageEscapesAndCuts) {
  EXPECT_EQ(QuoteForMessage("gpu-0\x01"), "\"gpu-0\\x01\"");
  const std::string long_name(100, 'x');
  EXPECT_EQ(QuoteForMessage(long_name), "\"" + std::string(64, 'x') + "...\"");
}

}  // namespace
}  // namespace fabricdiag
