#include "common/decimal.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace fabricdiag {
namespace {

struct Case {
  std::string text;
  bool ok;
  uint64_t value;
  bool overflow;
};

class ParseDecimalU64Test : public ::testing::TestWithParam<Case> {};

TEST_P(ParseDecimalU64Test, ParsesStrictDecimal) {
  const Case& c = GetParam();
  uint64_t value = 12345;  // must stay untouched on failure
  bool overflow = !c.overflow;
  EXPECT_EQ(ParseDecimalU64(c.text, &value, &overflow), c.ok) << c.text;
  EXPECT_EQ(overflow, c.overflow) << c.text;
  EXPECT_EQ(value, c.ok ? c.value : 12345u) << c.text;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseDecimalU64Test,
    ::testing::Values(
        Case{"0", true, 0, false}, Case{"7", true, 7, false},
        Case{"18126345378", true, 18126345378ULL, false},
        // 19 digits: the unchecked part's largest input.
        Case{"9999999999999999999", true, 9999999999999999999ULL, false},
        Case{"18446744073709551615", true, UINT64_MAX, false},
        Case{"18446744073709551616", false, 0, true},
        Case{"99999999999999999999", false, 0, true},
        Case{"100000000000000000000", false, 0, true},
        // Leading zeros do not count towards the 20 digits.
        Case{"000000000000000000000042", true, 42, false},
        Case{"0000000000000000000018446744073709551615", true, UINT64_MAX,
             false},
        Case{"", false, 0, false}, Case{"-1", false, 0, false},
        Case{"+1", false, 0, false}, Case{" 1", false, 0, false},
        Case{"1 ", false, 0, false}, Case{"0x10", false, 0, false},
        Case{"12a", false, 0, false},
        Case{std::string("1\0"
                         "2",
                         3),
             false, 0, false},
        Case{"\xff", false, 0, false},
        // A non-digit after 19 digits is still rejected, not an overflow.
        Case{"1234567890123456789x", false, 0, false}));

}  // namespace
}  // namespace fabricdiag
