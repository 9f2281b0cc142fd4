#include "gnmi/gnmi_path.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::gnmi {
namespace {

using ::testing::HasSubstr;

TEST(ParsePathTest, ElementsAndKeys) {
  absl::StatusOr<::gnmi::Path> p = ParsePath(
      "/qos/interfaces/interface[interface-id=swp1]/output/queues/"
      "queue[name=3]/state");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->elem_size(), 7);
  EXPECT_EQ(p->elem(2).name(), "interface");
  EXPECT_EQ(p->elem(2).key().at("interface-id"), "swp1");
  EXPECT_EQ(p->elem(5).key().at("name"), "3");
  EXPECT_TRUE(p->origin().empty());
}

TEST(ParsePathTest, SeveralKeysEscapesAndOrigin) {
  absl::StatusOr<::gnmi::Path> p = ParsePath(
      "openconfig:/a/tx-queue[queue-type=UNICAST][index=3]/b[k=x\\]y\\\\z]");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->origin(), "openconfig");
  EXPECT_EQ(p->elem(1).key().at("index"), "3");
  EXPECT_EQ(p->elem(1).key().at("queue-type"), "UNICAST");
  EXPECT_EQ(p->elem(2).key().at("k"), "x]y\\z");
  // Printed back with keys sorted and the same escapes.
  EXPECT_EQ(PathToString(*p),
            "openconfig:/a/tx-queue[index=3][queue-type=UNICAST]/"
            "b[k=x\\]y\\\\z]");
}

TEST(ParsePathTest, RootAndSonicWildcards) {
  absl::StatusOr<::gnmi::Path> root = ParsePath("/");
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->elem_size(), 0);
  EXPECT_EQ(PathToString(*root), "/");
  absl::StatusOr<::gnmi::Path> sonic = ParsePath("/COUNTERS/Ethernet*/Queues");
  ASSERT_TRUE(sonic.ok());
  EXPECT_EQ(sonic->elem(1).name(), "Ethernet*");
}

TEST(ParsePathTest, BadPathsAreRejected) {
  for (const char* bad : {"", "interfaces", "/a//b", "/a/", "/a[k]", "/a[=v]",
                          "/a[k=v", "/a[k=v]x", "noslash:"}) {
    absl::StatusOr<::gnmi::Path> p = ParsePath(bad);
    EXPECT_FALSE(p.ok()) << bad;
    if (!p.ok()) {
      EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    }
  }
  EXPECT_THAT(std::string(ParsePath("/a[k").status().message()),
              HasSubstr("key without '='"));
}

TEST(PathViewTest, JoinsPrefixAndPathAndDropsModulePrefixes) {
  ::gnmi::Path prefix = *ParsePath("/interfaces/interface[name=Ethernet1]");
  ::gnmi::Path path = *ParsePath("/openconfig-interfaces:state/counters");
  PathView v;
  v.Append(prefix);
  v.Append(path);
  EXPECT_EQ(v.ToString(),
            "/interfaces/interface[name=Ethernet1]/"
            "openconfig-interfaces:state/counters");
  std::string rest;
  AppendElems(v, 2, &rest);
  EXPECT_EQ(rest, "/state/counters");
  EXPECT_EQ(v[1].Key("name"), "Ethernet1");
  EXPECT_EQ(v[1].Key("other"), "");
  EXPECT_EQ(ElemName("a:b"), "b");
  EXPECT_EQ(ElemName("b"), "b");
}

}  // namespace
}  // namespace fabricdiag::gnmi
