// The real LibibverbsApi against this host's kernel. On a host without RDMA
// (CI, this build machine: no /sys/class/infiniband_verbs, so
// ibv_get_device_list() fails with ENOSYS) it must report zero devices, not
// an error. On an RDMA host it must be able to query what it lists.
#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/sample.h"
#include "agent/verbs.h"
#include "agent/verbs_port_source.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::agent {
namespace {

using ::testing::IsEmpty;

bool KernelHasUverbs() {
  struct stat st;
  return stat("/sys/class/infiniband_verbs", &st) == 0;
}

TEST(LibibverbsApiTest, ListDevicesIsOk) {
  LibibverbsApi verbs;
  absl::StatusOr<std::vector<std::string>> devices = verbs.ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  if (!KernelHasUverbs()) {
    EXPECT_THAT(*devices, IsEmpty());
  }
}

TEST(LibibverbsApiTest, ListedDevicesCanBeQueried) {
  LibibverbsApi verbs;
  absl::StatusOr<std::vector<std::string>> devices = verbs.ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  for (const std::string& device : *devices) {
    absl::StatusOr<VerbsDeviceAttr> attr = verbs.QueryDevice(device);
    ASSERT_TRUE(attr.ok()) << attr.status();
    EXPECT_GE(attr->phys_port_cnt, 1u) << device;
    absl::StatusOr<VerbsPortAttr> port = verbs.QueryPort(device, 1);
    EXPECT_TRUE(port.ok()) << port.status();
  }
}

TEST(LibibverbsApiTest, MissingDeviceIsNotFound) {
  LibibverbsApi verbs;
  const char* kMissing = "fabricdiag_no_such_device";
  EXPECT_EQ(verbs.QueryDevice(kMissing).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(verbs.QueryPort(kMissing, 1).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(LibibverbsApiTest, PortOutsideVerbsRangeIsInvalidArgument) {
  LibibverbsApi verbs;
  // 256 would silently become port 0 in ibv_query_port's uint8_t.
  EXPECT_EQ(verbs.QueryPort("mlx5_0", 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(verbs.QueryPort("mlx5_0", 256).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LibibverbsApiTest, SourceOnHostWithoutRdmaIsOkAndEmpty) {
  if (KernelHasUverbs()) GTEST_SKIP() << "host has RDMA support";
  VerbsPortSource source(std::make_unique<LibibverbsApi>());
  Snapshot snapshot;
  SourceStatus status = source.Collect(&snapshot);
  EXPECT_TRUE(status.ok) << status.last_error;
  EXPECT_EQ(status.errors, 0);
  EXPECT_THAT(snapshot.samples, IsEmpty());
  EXPECT_THAT(snapshot.verbs_ports, IsEmpty());
}

}  // namespace
}  // namespace fabricdiag::agent
