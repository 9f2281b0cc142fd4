#include "agent/verbs.h"

#include <endian.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace fabricdiag::agent {
namespace {

struct DeviceListDeleter {
  void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};
using DeviceList = std::unique_ptr<ibv_device*, DeviceListDeleter>;

struct ContextCloser {
  void operator()(ibv_context* context) const { ibv_close_device(context); }
};
using Context = std::unique_ptr<ibv_context, ContextCloser>;

// An errno from libibverbs as a Status. ENODEV/ENXIO/ENOENT mean the device
// is gone; EIO is what uverbs returns for every command on a device that was
// hot-removed (disassociated) while we held it open
// (drivers/infiniband/core/uverbs_main.c). All of them are NotFound: the NIC
// vanished, which is an expected runtime event, not a bug.
absl::Status VerbsError(int err, absl::string_view call,
                        absl::string_view device) {
  absl::Status status =
      absl::ErrnoToStatus(err, absl::StrCat(call, "(", device, ")"));
  if (err == EIO || err == ENODEV || err == ENXIO || err == ENOENT) {
    // ENOENT also comes from ibv_open_device() when /dev/infiniband/uverbsN
    // is missing (a sandbox hiding /dev), hence the hedged wording.
    return absl::NotFoundError(absl::StrCat(
        status.message(), " (device vanished or its uverbs node is missing)"));
  }
  return status;
}

// ibv_get_device_list() as a list and a count; the list is null when there
// are no devices at all.
struct Devices {
  DeviceList list;
  int count = 0;
};

absl::StatusOr<Devices> GetDevices() {
  int count = 0;
  errno = 0;
  ibv_device** raw = ibv_get_device_list(&count);
  if (raw == nullptr) {
    const int err = errno;
    // libibverbs fails with ENOSYS when the kernel has no uverbs support at
    // all (no /sys/class/infiniband_verbs/abi_version): a host without RDMA
    // hardware or drivers. That host has zero devices; it is not broken.
    if (err == ENOSYS) return Devices{};
    if (err == 0) {
      return absl::UnknownError("ibv_get_device_list failed without errno");
    }
    return absl::ErrnoToStatus(err, "ibv_get_device_list");
  }
  return Devices{DeviceList(raw), count < 0 ? 0 : count};
}

// Opens `device` by name. The returned context keeps the device alive after
// the list is freed (libibverbs refcounts it).
absl::StatusOr<Context> OpenDevice(absl::string_view device) {
  ASSIGN_OR_RETURN(Devices devices, GetDevices());
  for (int i = 0; i < devices.count; ++i) {
    ibv_device* dev = devices.list.get()[i];
    const char* name = ibv_get_device_name(dev);
    if (name == nullptr || device != name) continue;
    errno = 0;
    ibv_context* context = ibv_open_device(dev);
    if (context == nullptr) {
      const int err = errno == 0 ? ENODEV : errno;
      return VerbsError(err, "ibv_open_device", device);
    }
    return Context(context);
  }
  return absl::NotFoundError(absl::StrCat("no RDMA device ", device));
}

// Newer rdma-core (v48+) adds `uint32_t active_speed_ex` to ibv_port_attr
// for XDR, whose encoding (256) does not fit `uint8_t active_speed`. Detect
// the member at compile time so the code builds against both.
template <typename T, typename = void>
struct HasActiveSpeedEx : std::false_type {};
template <typename T>
struct HasActiveSpeedEx<
    T, std::void_t<decltype(std::declval<T&>().active_speed_ex)>>
    : std::true_type {};

template <typename Attr>
uint32_t FullActiveSpeed(const Attr& attr) {
  if constexpr (HasActiveSpeedEx<Attr>::value) {
    if (attr.active_speed_ex != 0) return attr.active_speed_ex;
  }
  return attr.active_speed;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> LibibverbsApi::ListDevices() {
  ASSIGN_OR_RETURN(Devices devices, GetDevices());
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(devices.count));
  for (int i = 0; i < devices.count; ++i) {
    const char* name = ibv_get_device_name(devices.list.get()[i]);
    if (name != nullptr) names.emplace_back(name);
  }
  return names;
}

absl::StatusOr<VerbsDeviceAttr> LibibverbsApi::QueryDevice(
    absl::string_view device) {
  ASSIGN_OR_RETURN(Context context, OpenDevice(device));
  ibv_device_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  // Returns the errno value itself, not -1 (ibv_query_device(3)).
  const int err = ibv_query_device(context.get(), &attr);
  if (err != 0) return VerbsError(err, "ibv_query_device", device);
  VerbsDeviceAttr out;
  out.fw_ver.assign(attr.fw_ver, strnlen(attr.fw_ver, sizeof(attr.fw_ver)));
  out.node_guid = be64toh(attr.node_guid);
  out.vendor_id = attr.vendor_id;
  out.vendor_part_id = attr.vendor_part_id;
  out.hw_ver = attr.hw_ver;
  out.phys_port_cnt = attr.phys_port_cnt;
  return out;
}

absl::StatusOr<VerbsPortAttr> LibibverbsApi::QueryPort(absl::string_view device,
                                                       uint32_t port) {
  // ibv_query_port() takes a uint8_t; refuse rather than truncate 257 to 1.
  if (port < 1 || port > 255) {
    return absl::InvalidArgumentError(
        absl::StrCat("port ", port, " of ", device, " is outside 1..255"));
  }
  ASSIGN_OR_RETURN(Context context, OpenDevice(device));
  ibv_port_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  const int err =
      ibv_query_port(context.get(), static_cast<uint8_t>(port), &attr);
  if (err != 0) {
    return VerbsError(err, "ibv_query_port", absl::StrCat(device, ", ", port));
  }
  VerbsPortAttr out;
  out.state = attr.state;
  out.phys_state = attr.phys_state;
  out.max_mtu = attr.max_mtu;
  out.active_mtu = attr.active_mtu;
  out.active_width = attr.active_width;
  out.active_speed = FullActiveSpeed(attr);
  out.link_layer = attr.link_layer;
  out.lid = attr.lid;
  out.sm_lid = attr.sm_lid;
  out.port_cap_flags = attr.port_cap_flags;
  return out;
}

std::optional<int> IbWidthToLanes(uint32_t active_width) {
  // enum ib_port_width: the values are bits of the IBA LinkWidthActive
  // field, not lane counts, and 2X (16) was added after 12X (8).
  switch (active_width) {
    case 1:
      return 1;
    case 2:
      return 4;
    case 4:
      return 8;
    case 8:
      return 12;
    case 16:
      return 2;
  }
  return std::nullopt;
}

std::optional<double> IbSpeedToLaneGbps(uint32_t active_speed) {
  // rate_show() in drivers/infiniband/core/sysfs.c. These are the nominal
  // rates the kernel prints, not the encoded data rates (FDR is 14.0625 on
  // the wire, FDR10 is QDR's 10 with 64b/66b): keeping the kernel's numbers
  // makes this comparable 1:1 with the sysfs `rate` file.
  switch (active_speed) {
    case 1:  // SDR
      return 2.5;
    case 2:  // DDR
      return 5.0;
    case 4:  // QDR
    case 8:  // FDR10
      return 10.0;
    case 16:  // FDR
      return 14.0;
    case 32:  // EDR
      return 25.0;
    case 64:  // HDR
      return 50.0;
    case 128:  // NDR
      return 100.0;
    case 256:  // XDR
      return 200.0;
  }
  return std::nullopt;
}

const char* IbSpeedName(uint32_t active_speed) {
  switch (active_speed) {
    case 1:
      return "SDR";
    case 2:
      return "DDR";
    case 4:
      return "QDR";
    case 8:
      return "FDR10";
    case 16:
      return "FDR";
    case 32:
      return "EDR";
    case 64:
      return "HDR";
    case 128:
      return "NDR";
    case 256:
      return "XDR";
  }
  return "";
}

std::optional<double> ExpectedRateBytesPerSecond(uint32_t active_width,
                                                 uint32_t active_speed) {
  const std::optional<int> lanes = IbWidthToLanes(active_width);
  const std::optional<double> gbps = IbSpeedToLaneGbps(active_speed);
  if (!lanes.has_value() || !gbps.has_value()) return std::nullopt;
  // 1 Gb/s = 1e9 bits/s = 125e6 bytes/s. Every product of the tables above
  // is a whole number of bytes/s (the smallest, 1X SDR, is 312,500,000) and
  // exact in a double, so callers may store it as uint64_t.
  return static_cast<double>(*lanes) * *gbps * 125e6;
}

std::optional<int> IbMtuToBytes(int mtu) {
  // enum ibv_mtu / ib_mtu_enum_to_int(): 1 = 256 ... 5 = 4096.
  if (mtu < 1 || mtu > 5) return std::nullopt;
  return 128 << mtu;
}

const char* IbPortStateName(int state) {
  switch (state) {
    case 0:
      return "NOP";
    case 1:
      return "DOWN";
    case 2:
      return "INIT";
    case 3:
      return "ARMED";
    case 4:
      return "ACTIVE";
    case 5:
      return "ACTIVE_DEFER";
  }
  return "UNKNOWN";
}

const char* IbLinkLayerName(int link_layer) {
  switch (link_layer) {
    case 0:  // IBV_LINK_LAYER_UNSPECIFIED
    case 1:
      return "InfiniBand";
    case 2:
      return "Ethernet";
  }
  return "Unknown";
}

}  // namespace fabricdiag::agent
