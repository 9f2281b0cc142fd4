// libibverbs behind a seam: RDMA device and port attributes with raw IB
// encodings, and pure helpers that decode them.
//
// `VerbsApi` is the small interface the verbs source talks to; tests inject
// a gmock of it, production injects `LibibverbsApi`, the only code of the
// agent that calls libibverbs. Attributes are kept exactly as the kernel
// encodes them (`active_width` 2 means 4X, `active_speed` 128 means NDR); the
// helpers below turn them into lanes, Gb/s, bytes and names.
//
//   LibibverbsApi verbs;
//   absl::StatusOr<std::vector<std::string>> devices = verbs.ListDevices();
//   if (!devices.ok()) return devices.status();
//   for (const std::string& device : *devices) {
//     ASSIGN_OR_RETURN(VerbsDeviceAttr dev, verbs.QueryDevice(device));
//     for (uint32_t port = 1; port <= dev.phys_port_cnt; ++port) {
//       ASSIGN_OR_RETURN(VerbsPortAttr attr, verbs.QueryPort(device, port));
//       std::optional<double> rate = ExpectedRateBytesPerSecond(
//           attr.active_width, attr.active_speed);
//     }
//   }
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::agent {

// Device attributes from ibv_query_device().
struct VerbsDeviceAttr {
  std::string fw_ver;           // "28.39.1002"; "" when the driver has none
  uint64_t node_guid = 0;       // host byte order
  uint32_t vendor_id = 0;       // IEEE OUI (0x02c9 = Mellanox)
  uint32_t vendor_part_id = 0;  // PCI device id (4129 = ConnectX-7)
  uint32_t hw_ver = 0;
  uint32_t phys_port_cnt = 0;  // ports are numbered 1..phys_port_cnt
};

// Port attributes from ibv_query_port(), in the kernel's raw encodings
// (include/rdma/ib_verbs.h and the IBA PortInfo attribute).
struct VerbsPortAttr {
  int state = 0;              // enum ibv_port_state: 4 = ACTIVE
  int phys_state = 0;         // 5 = LinkUp (IBA PortPhysicalState)
  int max_mtu = 0;            // enum ibv_mtu: 1..5 = 256..4096 bytes
  int active_mtu = 0;         // enum ibv_mtu
  uint32_t active_width = 0;  // IB_WIDTH_*: 1 = 1X, 2 = 4X, 16 = 2X, ...
  // IB_SPEED_*: 1 = SDR ... 128 = NDR, 256 = XDR. XDR does not fit the 8-bit
  // `active_speed` of struct ibv_port_attr; newer rdma-core reports it in
  // `active_speed_ex`, which LibibverbsApi prefers when the installed header
  // has it, so this field always holds the full encoding.
  uint32_t active_speed = 0;
  int link_layer = 0;  // IBV_LINK_LAYER_*: 0 unspecified, 1 IB, 2 Eth
  uint32_t lid = 0;    // 0 on RoCE ports
  uint32_t sm_lid = 0;
  uint32_t port_cap_flags = 0;
};

// The libibverbs calls the agent needs. Implementations return canonical
// codes: NotFound when the device does not exist or vanished during the
// call, InvalidArgument for a port number outside 1..255, other codes from
// errno (absl::ErrnoToStatus) otherwise.
class VerbsApi {
 public:
  virtual ~VerbsApi() = default;

  // Names of the RDMA devices ("mlx5_0", ...). A host without RDMA support
  // in the kernel has zero devices: that is OK and empty, not an error.
  virtual absl::StatusOr<std::vector<std::string>> ListDevices() = 0;

  virtual absl::StatusOr<VerbsDeviceAttr> QueryDevice(
      absl::string_view device) = 0;

  // `port` is 1-based.
  virtual absl::StatusOr<VerbsPortAttr> QueryPort(absl::string_view device,
                                                  uint32_t port) = 0;
};

// The real libibverbs. Stateless: every call lists the devices and opens
// (then closes) the one it needs, so hot-plugged or removed NICs are seen
// on the next call and no file descriptor is held between snapshots. The
// price is one ibv_open_device() per query; at one query per port per
// second that is negligible next to the MADs sysfs counter reads issue.
// Thread-safe (libibverbs is; this class has no state).
class LibibverbsApi final : public VerbsApi {
 public:
  absl::StatusOr<std::vector<std::string>> ListDevices() override;
  absl::StatusOr<VerbsDeviceAttr> QueryDevice(
      absl::string_view device) override;
  absl::StatusOr<VerbsPortAttr> QueryPort(absl::string_view device,
                                          uint32_t port) override;
};

// --- pure decoders of IB encodings -----------------------------------------
// The tables follow include/rdma/ib_verbs.h (enum ib_port_width,
// enum ib_port_speed, ib_mtu_enum_to_int) and rate_show() in
// drivers/infiniband/core/sysfs.c, so that a rate computed here equals the
// port's sysfs `rate` file.

// Lanes of an IB_WIDTH_* value: 1->1, 2->4, 4->8, 8->12, 16->2. nullopt for
// anything else (the kernel prints -1 then).
std::optional<int> IbWidthToLanes(uint32_t active_width);

// Per-lane signalling rate in Gb/s of an IB_SPEED_* value, as the kernel's
// `rate` file counts it: SDR 2.5, DDR 5, QDR 10, FDR10 10, FDR 14, EDR 25,
// HDR 50, NDR 100, XDR 200. nullopt for an unknown encoding (rate_show()
// falls back to SDR there; we report nothing rather than a wrong rate).
std::optional<double> IbSpeedToLaneGbps(uint32_t active_speed);

// "SDR", "DDR", ..., "XDR"; "" for an unknown encoding.
const char* IbSpeedName(uint32_t active_speed);

// lanes x Gb/s per lane x 125e6, in bytes per second: 4X NDR = 400 Gb/s =
// 5e10 bytes/s, the value the sysfs file "400 Gb/sec (4X NDR)" parses to.
// nullopt when either encoding is unknown.
std::optional<double> ExpectedRateBytesPerSecond(uint32_t active_width,
                                                 uint32_t active_speed);

// Bytes of an enum ibv_mtu value: 1..5 -> 256..4096. nullopt otherwise.
std::optional<int> IbMtuToBytes(int mtu);

// "NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER" as the sysfs
// `state` file spells them; "UNKNOWN" otherwise.
const char* IbPortStateName(int state);

// "InfiniBand", "Ethernet", "Unknown" as the sysfs `link_layer` file spells
// them. IBV_LINK_LAYER_UNSPECIFIED (0) is InfiniBand: libibverbs reports it
// for kernels that predate the field, which only had IB ports.
const char* IbLinkLayerName(int link_layer);

}  // namespace fabricdiag::agent
