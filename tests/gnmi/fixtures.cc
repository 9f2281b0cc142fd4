#include "tests/gnmi/fixtures.h"

#include <google/protobuf/text_format.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gnmi/gnmi_path.h"
#include "gtest/gtest.h"

namespace fabricdiag::gnmi::testing {

std::string ReadFixture(absl::string_view name) {
  const std::string path =
      absl::StrCat(FABRICDIAG_SOURCE_DIR, "/tests/fixtures/gnmi/", name);
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

::gnmi::GetResponse ReadNotifications(absl::string_view name) {
  ::gnmi::GetResponse response;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(ReadFixture(name),
                                                            &response))
      << name;
  return response;
}

::gnmi::Notification ValueNotification(absl::string_view path,
                                       const ::gnmi::TypedValue& value,
                                       int64_t timestamp) {
  ::gnmi::Notification n;
  n.set_timestamp(timestamp);
  ::gnmi::Update* u = n.add_update();
  absl::StatusOr<::gnmi::Path> p = ParsePath(path);
  EXPECT_TRUE(p.ok()) << p.status();
  if (p.ok()) *u->mutable_path() = *p;
  *u->mutable_val() = value;
  return n;
}

::gnmi::Notification JsonNotification(absl::string_view target,
                                      absl::string_view path,
                                      absl::string_view json,
                                      int64_t timestamp) {
  ::gnmi::TypedValue v;
  v.set_json_ietf_val(std::string(json));
  ::gnmi::Notification n = ValueNotification(path, v, timestamp);
  if (!target.empty()) n.mutable_prefix()->set_target(std::string(target));
  return n;
}

::gnmi::Notification UintNotification(absl::string_view path, uint64_t value,
                                      int64_t timestamp) {
  ::gnmi::TypedValue v;
  v.set_uint_val(value);
  return ValueNotification(path, v, timestamp);
}

}  // namespace fabricdiag::gnmi::testing
