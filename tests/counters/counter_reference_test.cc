// docs/counters.md carries the counter table as the code has it: the text
// between its counter-table markers is exactly RenderCounterReference().
// After changing the table, regenerate it with
//   FABRICDIAG_UPDATE_DOCS=1 ctest -R CounterReference
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "counters/reference.h"
#include "gtest/gtest.h"

namespace fabricdiag::counters {
namespace {

constexpr char kBegin[] = "<!-- counter-table:begin -->\n";
constexpr char kEnd[] = "<!-- counter-table:end -->";

TEST(CounterReferenceTest, DocsHoldTheTableAsTheCodeHasIt) {
  const std::string path =
      std::string(FABRICDIAG_SOURCE_DIR) + "/docs/counters.md";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  const size_t begin = doc.find(kBegin);
  const size_t end = doc.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << "no begin marker in " << path;
  ASSERT_NE(end, std::string::npos) << "no end marker in " << path;
  ASSERT_LT(begin, end);
  const size_t from = begin + sizeof(kBegin) - 1;
  const std::string want = RenderCounterReference();
  const char* update = std::getenv("FABRICDIAG_UPDATE_DOCS");
  if (update != nullptr && std::string(update) == "1") {
    doc.replace(from, end - from, want);
    std::ofstream(path, std::ios::trunc) << doc;
    GTEST_SUCCEED() << "rewrote the table in " << path;
    return;
  }
  EXPECT_EQ(doc.substr(from, end - from), want)
      << path << " is out of date: run FABRICDIAG_UPDATE_DOCS=1 ctest -R "
      << "CounterReference";
}

TEST(CounterReferenceTest, EveryRowIsRendered) {
  const std::string md = RenderCounterReference();
  EXPECT_NE(md.find("| `rx_prio{p}_pause` | mlx5 | `pfc_pause_frames` | rx |"),
            std::string::npos);
  EXPECT_NE(md.find("| `port_xmit_data` | any | `rdma_bytes` | tx | bytes | "
                    "x 4 | 32/64 |"),
            std::string::npos);
  EXPECT_NE(md.find("| / 1000000 |"), std::string::npos);
}

}  // namespace
}  // namespace fabricdiag::counters
