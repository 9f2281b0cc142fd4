#include "collector/access/access_control.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kRead[] = "read-0123456789abcdef";
constexpr char kAdmin[] = "admin-0123456789abcdef";

AccessControl Tokens() {
  return AccessControl(
      {{"grafana", static_cast<uint8_t>(Scope::kRead), kRead},
       {"oncall", static_cast<uint8_t>(Scope::kAdmin), kAdmin}});
}

std::string Bearer(const std::string& token) { return "Bearer " + token; }

TEST(AccessControlTest, OpenLetsEveryCallInAsNobody) {
  AccessControl open;
  EXPECT_TRUE(open.open());
  std::string metrics;
  open.AppendMetrics(&metrics);
  EXPECT_EQ(metrics, "");
  for (Scope s : {Scope::kRead, Scope::kDeclare, Scope::kAdmin}) {
    absl::StatusOr<std::string> who = open.Authorize("", s);
    ASSERT_TRUE(who.ok()) << who.status();
    EXPECT_EQ(*who, "");
  }
}

TEST(AccessControlTest, TheTokenNamesTheCallerWhenItHasTheScope) {
  AccessControl access = Tokens();
  EXPECT_FALSE(access.open());
  EXPECT_EQ(*access.Authorize(Bearer(kRead), Scope::kRead), "grafana");
  EXPECT_EQ(*access.Authorize(Bearer(kAdmin), Scope::kRead), "oncall");
  EXPECT_EQ(*access.Authorize("bearer " + std::string(kAdmin), Scope::kAdmin),
            "oncall");
  EXPECT_EQ(*access.Authorize(Bearer(kAdmin), Scope::kDeclare), "oncall");
}

TEST(AccessControlTest, MissingOrWrongTokenIsUnauthenticated) {
  AccessControl access = Tokens();
  for (const std::string& header :
       {std::string(""), std::string("  "), Bearer("nope-0123456789abcdef"),
        Bearer(std::string(kRead) + "x"), "Basic " + std::string(kRead),
        std::string(kRead)}) {
    absl::StatusOr<std::string> who = access.Authorize(header, Scope::kRead);
    ASSERT_FALSE(who.ok()) << header;
    EXPECT_TRUE(absl::IsUnauthenticated(who.status())) << who.status();
    EXPECT_THAT(who.status().message(), Not(HasSubstr(kRead)));
  }
  EXPECT_EQ(access.unauthenticated(), 6u);
  EXPECT_EQ(access.denied(), 0u);
  std::string metrics;
  access.AppendMetrics(&metrics);
  EXPECT_THAT(metrics,
              HasSubstr("# TYPE fabricdiag_api_refused_total counter"));
  EXPECT_THAT(metrics, HasSubstr("fabricdiag_api_refused_total{reason="
                                 "\"unauthenticated\"} 6\n"));
  EXPECT_THAT(metrics,
              HasSubstr("fabricdiag_api_refused_total{reason=\"scope\"} 0\n"));
  EXPECT_THAT(metrics, HasSubstr("fabricdiag_token_file_errors_total 0\n"));
}

TEST(AccessControlTest, TokenWithoutTheScopeIsDeniedNamingIt) {
  AccessControl access = Tokens();
  absl::StatusOr<std::string> who =
      access.Authorize(Bearer(kRead), Scope::kAdmin);
  ASSERT_FALSE(who.ok());
  EXPECT_TRUE(absl::IsPermissionDenied(who.status())) << who.status();
  EXPECT_THAT(who.status().message(), HasSubstr("\"grafana\""));
  EXPECT_THAT(who.status().message(), HasSubstr("needs the admin scope"));
  EXPECT_THAT(who.status().message(), Not(HasSubstr(kRead)));
  EXPECT_TRUE(absl::IsPermissionDenied(
      access.Authorize(Bearer(kRead), Scope::kDeclare).status()));
  EXPECT_EQ(access.denied(), 2u);
}

class AccessFileTest : public ::testing::Test {
 protected:
  void Write(const std::string& text) {
    // A new file renamed over the old one, as editors and config
    // management do: a new inode even within the same second.
    const std::string tmp = path_ + ".new";
    std::ofstream(tmp, std::ios::binary) << text;
    ASSERT_EQ(chmod(tmp.c_str(), 0600), 0);
    ASSERT_EQ(std::rename(tmp.c_str(), path_.c_str()), 0);
  }

  testing::TempDir dir_;
  const std::string path_ = dir_.path() + "/tokens";
  FakeClock clock_;
};

TEST_F(AccessFileTest, ReadsTheFileAndAgainWhenItChangesAtMostEverySecond) {
  Write(std::string("grafana read ") + kRead + "\n");
  absl::StatusOr<std::shared_ptr<AccessControl>> access =
      AccessControl::FromFile("--auth_token_file", path_, &clock_);
  ASSERT_TRUE(access.ok()) << access.status();
  AccessControl& a = **access;
  EXPECT_EQ(*a.Authorize(Bearer(kRead), Scope::kRead), "grafana");
  EXPECT_FALSE(a.Authorize(Bearer(kAdmin), Scope::kRead).ok());

  // The read token is rotated out, an admin token added.
  Write(std::string("oncall admin ") + kAdmin + "\n");
  // Not looked at again within the second...
  EXPECT_TRUE(a.Authorize(Bearer(kRead), Scope::kRead).ok());
  clock_.Advance(absl::Seconds(1));
  // ...but after it.
  EXPECT_TRUE(absl::IsUnauthenticated(
      a.Authorize(Bearer(kRead), Scope::kRead).status()));
  EXPECT_EQ(*a.Authorize(Bearer(kAdmin), Scope::kAdmin), "oncall");
}

TEST_F(AccessFileTest, BrokenFileKeepsTheTokensInForce) {
  Write(std::string("oncall admin ") + kAdmin + "\n");
  absl::StatusOr<std::shared_ptr<AccessControl>> access =
      AccessControl::FromFile("--auth_token_file", path_, &clock_);
  ASSERT_TRUE(access.ok()) << access.status();
  Write("oncall admin short\n");
  clock_.Advance(absl::Seconds(2));
  EXPECT_EQ(*(*access)->Authorize(Bearer(kAdmin), Scope::kAdmin), "oncall");
  EXPECT_EQ((*access)->reload_errors(), 1u);
  // Read once per change, not on every call.
  clock_.Advance(absl::Seconds(2));
  EXPECT_TRUE((*access)->Authorize(Bearer(kAdmin), Scope::kAdmin).ok());
  EXPECT_EQ((*access)->reload_errors(), 1u);
}

TEST_F(AccessFileTest, StartupRefusesBadOrExposedFiles) {
  Write("ci read short\n");
  absl::StatusOr<std::shared_ptr<AccessControl>> bad =
      AccessControl::FromFile("--auth_token_file", path_, &clock_);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_THAT(bad.status().message(),
              HasSubstr("--auth_token_file=" + path_ + ": line 1:"));

  Write(std::string("ci read ") + kRead + "\n");
  ASSERT_EQ(chmod(path_.c_str(), 0644), 0);
  absl::StatusOr<std::shared_ptr<AccessControl>> exposed =
      AccessControl::FromFile("--auth_token_file", path_, &clock_);
  ASSERT_FALSE(exposed.ok());
  EXPECT_THAT(exposed.status().message(), HasSubstr("chmod 600"));

  EXPECT_FALSE(AccessControl::FromFile("--auth_token_file",
                                       dir_.path() + "/none", &clock_)
                   .ok());
}

}  // namespace
}  // namespace fabricdiag::collector
