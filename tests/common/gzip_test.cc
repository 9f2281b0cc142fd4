#include "common/gzip.h"

#include <string>

#include "gtest/gtest.h"

namespace fabricdiag {
namespace {

TEST(GzipTest, RoundTripsAndBoundsOutput) {
  std::string text;
  for (int i = 0; i < 10000; ++i) {
    text += "fabricdiag_rdma_port_received_bytes_total{device=\"mlx5_0\"} 42\n";
  }
  absl::StatusOr<std::string> z = GzipCompress(text);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(static_cast<unsigned char>((*z)[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>((*z)[1]), 0x8b);
  EXPECT_LT(z->size(), text.size() / 20);
  absl::StatusOr<std::string> back = GzipDecompress(*z, text.size());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, text);
  EXPECT_EQ(GzipDecompress(*z, 1000).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(GzipDecompress(z->substr(0, z->size() / 2), 1 << 30).ok());
  EXPECT_FALSE(GzipDecompress("not gzip", 1 << 20).ok());
  absl::StatusOr<std::string> empty = GzipCompress("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*GzipDecompress(*empty, 10), "");
}

}  // namespace
}  // namespace fabricdiag
