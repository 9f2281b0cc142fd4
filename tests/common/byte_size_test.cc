#include "common/byte_size.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag {
namespace {

using ::testing::HasSubstr;

TEST(ByteSizeTest, ParsesBinaryDecimalAndBareSizes) {
  const std::pair<const char*, uint64_t> cases[] = {
      {"0", 0},
      {"4096", 4096},
      {"17B", 17},
      {"1KiB", 1024},
      {"64MiB", 64ull << 20},
      {"64mib", 64ull << 20},
      {"2GiB", 2ull << 30},
      {"1TiB", 1ull << 40},
      {"100MB", 100'000'000},
      {"3kB", 3000},
      {"3KB", 3000},
      {"8GB", 8'000'000'000},
  };
  for (const auto& [text, bytes] : cases) {
    absl::StatusOr<uint64_t> n = ParseByteSize(text);
    ASSERT_TRUE(n.ok()) << text << ": " << n.status();
    EXPECT_EQ(*n, bytes) << text;
  }
}

TEST(ByteSizeTest, RefusesWhatIsNotASize) {
  for (const char* text :
       {"", "MiB", "-1MiB", "1.5GiB", "64 MiB", " 64MiB", "64MiBx", "64M",
        "0x10", "99999999999999999999", "9000000TiB", "64\nMiB"}) {
    absl::StatusOr<uint64_t> n = ParseByteSize(text);
    ASSERT_FALSE(n.ok()) << text;
    EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(n.status().message()), HasSubstr("e.g. 64MiB"));
  }
}

TEST(ByteSizeTest, FormatsWithTheLargestExactBinaryUnit) {
  EXPECT_EQ(FormatByteSize(64ull << 20), "64MiB");
  EXPECT_EQ(FormatByteSize(1536 * 1024), "1536KiB");
  EXPECT_EQ(FormatByteSize(1000), "1000B");
  EXPECT_EQ(FormatByteSize(0), "0B");
  for (uint64_t n : {1ull, 1023ull, 1024ull, 3ull << 30, 5ull << 40}) {
    EXPECT_EQ(*ParseByteSize(FormatByteSize(n)), n);
  }
}

}  // namespace
}  // namespace fabricdiag
