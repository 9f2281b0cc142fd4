#include "common/gzip.h"

#include <cstdint>
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

// A tail compressed once, behind heads that change: every result is one
// gzip member that decompresses (CRC-32 and length checked by zlib) to
// head + tail, whatever the sizes.
TEST(GzipTailTest, HeadPlusOnceCompressedTailIsOneGzipMember) {
  std::string json_tail;
  for (int i = 0; i < 20000; ++i) {
    json_tail += ",{\"node\":\"gpu-" + std::to_string(i) + "\",\"rx\":1.5e9}";
  }
  std::string random_tail;
  uint32_t x = 12345;
  for (int i = 0; i < 100000; ++i) {
    x = x * 1103515245 + 12345;
    random_tail.push_back(static_cast<char>(x >> 24));
  }
  const std::string long_head(70000, 'h');  // two stored blocks
  for (const std::string* tail : {&json_tail, &random_tail}) {
    for (const std::string& t : {*tail, std::string()}) {
      absl::StatusOr<GzipTail> z = GzipTail::Compress(t);
      ASSERT_TRUE(z.ok()) << z.status();
      for (const std::string& head :
           {std::string("{\"generated\":\"2026-11-26T10:00:00Z\""),
            std::string(), long_head, std::string(65535, 'x')}) {
        const std::string gz = z->WithHead(head);
        EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
        EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
        const size_t stored_blocks = (head.size() + 65534) / 65535;
        EXPECT_EQ(gz.size(), 10 + stored_blocks * 5 + head.size() +
                                 z->compressed_bytes() + 8);
        absl::StatusOr<std::string> back = GzipDecompress(gz, 1 << 24);
        ASSERT_TRUE(back.ok())
            << back.status() << " head " << head.size() << " tail " << t.size();
        EXPECT_TRUE(*back == head + t)
            << "head " << head.size() << " tail " << t.size();
      }
    }
  }
  absl::StatusOr<GzipTail> z = GzipTail::Compress(json_tail);
  ASSERT_TRUE(z.ok());
  EXPECT_LT(z->compressed_bytes(), json_tail.size() / 5);
  // The trailer covers the head too: a corrupted head byte is refused.
  std::string gz = z->WithHead("{\"generated\":1");
  gz[10 + 5] ^= 0x20;
  EXPECT_FALSE(GzipDecompress(gz, 1 << 24).ok());
}

}  // namespace
}  // namespace fabricdiag
