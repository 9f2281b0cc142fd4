#include "common/address_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fabricdiag {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Error(absl::string_view value) {
  absl::StatusOr<std::vector<std::string>> list =
      SplitAddressList("collector", value);
  EXPECT_FALSE(list.ok()) << value;
  EXPECT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(list.status().message());
}

TEST(SplitAddressListTest, KeepsOrderAndDropsSurroundingWhitespace) {
  EXPECT_THAT(*SplitAddressList("collector", "c0:9811"),
              ElementsAre("c0:9811"));
  EXPECT_THAT(*SplitAddressList("collector", "c0:9811,c1:9811,[::1]:9811"),
              ElementsAre("c0:9811", "c1:9811", "[::1]:9811"));
  EXPECT_THAT(*SplitAddressList("collector", " c1:9811 ,\tc0:9811 "),
              ElementsAre("c1:9811", "c0:9811"));
}

TEST(SplitAddressListTest, RejectsEmptyEntriesNamingTheirPosition) {
  EXPECT_THAT(Error(""), HasSubstr("--collector: empty address list"));
  EXPECT_THAT(Error("  "), HasSubstr("empty address list"));
  EXPECT_THAT(Error("c0:9811,,c1:9811"),
              HasSubstr("--collector=c0:9811,,c1:9811: entry 2 is empty"));
  EXPECT_THAT(Error("c0:9811,"), HasSubstr("entry 2 is empty"));
  EXPECT_THAT(Error(",c0:9811"), HasSubstr("entry 1 is empty"));
  EXPECT_THAT(Error("c0:9811, ,c1:9811"), HasSubstr("entry 2 is empty"));
}

TEST(SplitAddressListTest, RejectsDuplicates) {
  EXPECT_THAT(Error("c0:9811,c1:9811,c0:9811"),
              HasSubstr("\"c0:9811\" is listed twice"));
  // Whitespace does not hide a duplicate.
  EXPECT_THAT(Error("c0:9811, c0:9811"), HasSubstr("listed twice"));
}

TEST(SplitAddressListTest, RejectsWhitespaceInsideAnEntry) {
  EXPECT_THAT(Error("c0 :9811"),
              HasSubstr("entry \"c0 :9811\" contains a space"));
  EXPECT_THAT(Error("c0:9811,c1\x01:9811"), HasSubstr("control character"));
}

TEST(CheckHostPortTest, NeedsHostAndPortInRange) {
  EXPECT_TRUE(CheckHostPort("collector", "c0:9811", false).ok());
  EXPECT_TRUE(CheckHostPort("collector", "[::1]:1", false).ok());
  EXPECT_TRUE(CheckHostPort("listen", "0.0.0.0:0", true).ok());
  EXPECT_THAT(CheckHostPort("collector", "c0", false).message(),
              HasSubstr("--collector=c0: expected HOST:PORT"));
  EXPECT_THAT(CheckHostPort("collector", ":9811", false).message(),
              HasSubstr("expected HOST:PORT"));
  EXPECT_THAT(CheckHostPort("collector", "c0:0", false).message(),
              HasSubstr("--collector=c0:0: the port must be a number in "
                        "1..65535"));
  EXPECT_THAT(CheckHostPort("collector", "c0:65536", false).message(),
              HasSubstr("1..65535"));
  EXPECT_THAT(CheckHostPort("collector", "c0:http", false).message(),
              HasSubstr("1..65535"));
}

}  // namespace
}  // namespace fabricdiag
