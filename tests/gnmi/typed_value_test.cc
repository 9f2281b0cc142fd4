#include "gnmi/typed_value.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/gnmi/fixtures.h"

namespace fabricdiag::gnmi {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

using Type = Scalar::Type;

// Every leaf as (path text, value text), and the status.
struct Decoded {
  DecodeStatus status;
  std::vector<std::pair<std::string, std::string>> leaves;
};

std::string Show(const Scalar& s) {
  switch (s.type) {
    case Type::kUnsigned:
      return absl::StrCat(s.number);
    case Type::kNegative:
      return "negative";
    case Type::kFloat:
      return "float";
    case Type::kBool:
      return "bool";
    case Type::kOutOfRange:
      return absl::StrCat("out_of_range:", s.text);
    case Type::kText:
      return absl::StrCat("text:", s.text);
  }
  return "?";
}

Decoded Decode(const ::gnmi::TypedValue& v, absl::string_view at = "/a") {
  ::gnmi::Path p = *ParsePath(at);
  PathView path;
  path.Append(p);
  Decoded d;
  d.status = DecodeValue(v, &path, [&](const PathView& leaf, const Scalar& s) {
    d.leaves.emplace_back(leaf.ToString(), Show(s));
  });
  EXPECT_EQ(path.size(), static_cast<size_t>(p.elem_size()))
      << "the path is restored";
  return d;
}

::gnmi::TypedValue Json(absl::string_view text) {
  ::gnmi::TypedValue v;
  v.set_json_ietf_val(std::string(text));
  return v;
}

TEST(DecodeValueTest, Scalars) {
  ::gnmi::TypedValue v;
  v.set_uint_val(18446744073709551615u);
  EXPECT_THAT(Decode(v).leaves,
              ElementsAre(Pair("/a", "18446744073709551615")));
  v.set_int_val(7);
  EXPECT_THAT(Decode(v).leaves, ElementsAre(Pair("/a", "7")));
  v.set_int_val(-7);
  EXPECT_THAT(Decode(v).leaves, ElementsAre(Pair("/a", "negative")));
  v.set_double_val(1.5);
  EXPECT_THAT(Decode(v).leaves, ElementsAre(Pair("/a", "float")));
  v.set_bool_val(true);
  EXPECT_THAT(Decode(v).leaves, ElementsAre(Pair("/a", "bool")));
}

TEST(DecodeValueTest, StringsAreNumbersOnlyWhenAllDigits) {
  // SONiC sends every counter as a decimal string.
  EXPECT_EQ(ScalarFromString("0").type, Type::kUnsigned);
  EXPECT_EQ(ScalarFromString("2585214196").number, 2585214196u);
  EXPECT_EQ(ScalarFromString("18446744073709551615").number,
            18446744073709551615u);
  EXPECT_EQ(ScalarFromString("18446744073709551616").type, Type::kOutOfRange);
  for (const char* text : {"", "-1", "1.5", "1e3", " 5", "5 ", "0x10", "drop",
                           "operational", "+5"}) {
    EXPECT_EQ(ScalarFromString(text).type, Type::kText) << text;
  }
}

TEST(DecodeValueTest, JsonIetfSubtreeWithModulePrefixes) {
  // The Arista gnmic get of interfaces/interface[name=Ethernet1]/state.
  ::gnmi::GetResponse r =
      testing::ReadNotifications("arista_get_ethernet1_state.textproto");
  ASSERT_EQ(r.notification_size(), 1);
  const ::gnmi::Update& u = r.notification(0).update(0);
  PathView path;
  path.Append(u.path());
  std::vector<std::pair<std::string, std::string>> leaves;
  EXPECT_EQ(DecodeValue(u.val(), &path,
                        [&](const PathView& leaf, const Scalar& s) {
                          leaves.emplace_back(leaf.ToString(), Show(s));
                        }),
            DecodeStatus::kOk);
  EXPECT_THAT(leaves, ::testing::Contains(
                          Pair("/interfaces/interface[name=Ethernet1]/state/"
                               "openconfig-interfaces:counters/in-octets",
                               "111398")));
  EXPECT_THAT(leaves, ::testing::Contains(
                          Pair("/interfaces/interface[name=Ethernet1]/state/"
                               "openconfig-interfaces:oper-status",
                               "text:UP")));
  EXPECT_THAT(leaves, ::testing::Contains(
                          Pair("/interfaces/interface[name=Ethernet1]/state/"
                               "arista-intf-augments:inactive",
                               "bool")));
  EXPECT_EQ(leaves.size(), 23u);  // 13 counters + 10 other leaves
}

TEST(DecodeValueTest, JsonListsBecomeKeyedElements) {
  Decoded d = Decode(Json(R"({"openconfig-interfaces:interface": [
                {"name": "Ethernet1", "state": {"counters": {"in-octets": "5"}}},
                {"name": "Ethernet2", "state": {"counters": {"in-octets": "6"}}}]})"),
                     "/interfaces");
  EXPECT_THAT(d.leaves,
              ElementsAre(Pair("/interfaces/openconfig-interfaces:interface"
                               "[name=Ethernet1]/state/counters/in-octets",
                               "5"),
                          Pair("/interfaces/openconfig-interfaces:interface"
                               "[name=Ethernet2]/state/counters/in-octets",
                               "6")));
  // Numeric keys, several keys, and a list whose key the bridge guesses.
  d = Decode(Json(R"({"tx-queue": [{"index": 3, "queue-type": "UNICAST",
                      "state": {"stuck-count": 2}}],
                      "widget": [{"id": 9, "count": "4"}]})"),
             "/w");
  EXPECT_THAT(d.leaves,
              ElementsAre(Pair("/w/tx-queue[index=3][queue-type=UNICAST]/"
                               "state/stuck-count",
                               "2"),
                          Pair("/w/widget[id=9]/count", "4")));
}

TEST(DecodeValueTest, LeafListsNullsAndEntriesWithoutKeysYieldNothing) {
  Decoded d = Decode(Json(R"({"list": [1, 2, 3], "n": null, "e": {},
                            "q": [{"name": "a", "x": "1"}, {"x": "2"}],
                            "k": "3"})"));
  // "q" is skipped whole: its key cannot be told when an entry lacks it.
  EXPECT_THAT(d.leaves, ElementsAre(Pair("/a/k", "3")));
}

TEST(DecodeValueTest, BareJsonValues) {
  EXPECT_THAT(Decode(Json("\"42\"")).leaves, ElementsAre(Pair("/a", "42")));
  EXPECT_THAT(Decode(Json("18446744073709551615")).leaves,
              ElementsAre(Pair("/a", "18446744073709551615")));
  EXPECT_THAT(Decode(Json("-3")).leaves, ElementsAre(Pair("/a", "negative")));
  EXPECT_THAT(Decode(Json("2.5")).leaves, ElementsAre(Pair("/a", "float")));
  ::gnmi::TypedValue plain;  // json_val, as some targets send
  plain.set_json_val(R"({"in-octets": 10})");
  EXPECT_THAT(Decode(plain).leaves, ElementsAre(Pair("/a/in-octets", "10")));
}

TEST(DecodeValueTest, BadValuesAreRejectedWithAReason) {
  EXPECT_EQ(Decode(::gnmi::TypedValue()).status, DecodeStatus::kEmptyValue);
  EXPECT_EQ(Decode(Json("{\"a\": ")).status, DecodeStatus::kBadJson);
  EXPECT_EQ(Decode(Json("not json")).status, DecodeStatus::kBadJson);
  EXPECT_EQ(Decode(Json("")).status, DecodeStatus::kBadJson);
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "{\"a\":";
  deep += "1";
  for (int i = 0; i < 40; ++i) deep += "}";
  EXPECT_EQ(Decode(Json(deep)).status, DecodeStatus::kTooDeep);
  // Brackets inside strings do not count as nesting.
  EXPECT_EQ(
      Decode(Json(R"({"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})")).status,
      DecodeStatus::kOk);
  ::gnmi::TypedValue v;
  v.set_bytes_val("\x01\x02");
  EXPECT_EQ(Decode(v).status, DecodeStatus::kUnsupportedType);
  v.set_proto_bytes("\x08\x01");
  EXPECT_EQ(Decode(v).status, DecodeStatus::kUnsupportedType);
  v.set_ascii_val("in-octets 5");
  EXPECT_EQ(Decode(v).status, DecodeStatus::kUnsupportedType);
  v.mutable_leaflist_val()->add_element()->set_uint_val(1);
  EXPECT_EQ(Decode(v).status, DecodeStatus::kUnsupportedType);
  v.mutable_any_val()->set_type_url("type.googleapis.com/x");
  EXPECT_EQ(Decode(v).status, DecodeStatus::kUnsupportedType);
  EXPECT_STREQ(DecodeStatusName(DecodeStatus::kTooDeep), "too_deep");
}

}  // namespace
}  // namespace fabricdiag::gnmi
