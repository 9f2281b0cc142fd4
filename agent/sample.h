// The agent's domain model: one snapshot of everything a node's NICs count.
//
// Every source (RDMA sysfs, netdev sysfs, ethtool, verbs) appends to a
// Snapshot. A value the kernel does not expose is absent from the snapshot,
// never a zero. Raw values are kept exactly as the kernel printed them; the
// scale factor that turns them into base units comes from the counter table
// (counters/counter_table.h: IB port_*_data counts 4-octet words, scale 4;
// mlx5 pause durations are microseconds, scale 1e-6).
//
// A sample is a value and a pointer to its series' description
// (SeriesDesc), which the source built once, so a snapshot of thousands of
// counters costs no string copies.
//
//   Snapshot snap;
//   rdma_source.Collect(&snap);
//   for (const Sample& s : snap.samples) { ... s.desc->name, s.BaseValue() }
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "agent/gpu_nic_pairing.h"
#include "agent/lldp_neighbor.h"
#include "counters/vocabulary.h"

namespace fabricdiag::agent {

// The counter vocabulary is shared with the collector, the simulator and
// the tests (counters/vocabulary.h).
using counters::Direction;
using counters::DirectionName;
using counters::Kind;
using counters::Meaning;
using counters::MeaningName;
using counters::Subsystem;
using counters::SubsystemName;

// What one series is: its identity and how to read its values. A source
// builds the descriptions when it scans a device and keeps them unchanged
// until the next scan, so every snapshot of a series points at the same
// immutable object and a sampling round copies no names.
struct SeriesDesc {
  // The numbers first: every pass over a snapshot reads them, the strings
  // only rarely, so they share one cache line.
  Subsystem subsystem = Subsystem::kRdmaPortCounters;
  uint32_t port = 0;  // RDMA port number; 0 for device-level and netdevs
  // Bits the kernel keeps for this counter: 64, 32 (mlx5 Q-counters, IB PMA
  // without extended width), 16/8/4 (IB error counters). A decrease below
  // 2^width is a wrap; all-ones in a PMA counter means saturated.
  uint32_t width_bits = 64;
  Kind kind = Kind::kCounter;
  Meaning meaning = Meaning::kNone;
  Direction direction = Direction::kNone;
  int priority = -1;   // 0..7 for per-priority counters, else -1
  double scale = 1.0;  // base-unit value = raw * scale
  std::string device;  // RDMA device ("mlx5_0") or netdev ("eth0", "swp1")
  std::string name;    // exactly as the kernel spells it ("port_xmit_data")
  std::string unit;    // base unit after scaling: "bytes", "packets", ...

  // `raw` in base units.
  double BaseValue(uint64_t raw) const {
    // Dividing by the exact integer divisor keeps microseconds exact in
    // decimal (940000 us -> 0.94 s, where 940000 * 1e-6 gives 0.9399...).
    if (scale > 0 && scale < 1) {
      return static_cast<double>(raw) / std::round(1.0 / scale);
    }
    return static_cast<double>(raw) * scale;
  }

  // Identity of the series.
  auto Key() const { return std::tie(subsystem, device, port, name); }

  friend bool operator==(const SeriesDesc& a, const SeriesDesc& b) {
    return a.Key() == b.Key() && a.width_bits == b.width_bits &&
           a.scale == b.scale && a.unit == b.unit && a.kind == b.kind &&
           a.meaning == b.meaning && a.direction == b.direction &&
           a.priority == b.priority;
  }
  friend bool operator!=(const SeriesDesc& a, const SeriesDesc& b) {
    return !(a == b);
  }
};

// One value read from the kernel.
//
// `desc` points into storage that the snapshot holding the sample keeps
// alive (Snapshot::series_owners), or into `owned`. A Sample copied out of
// its snapshot is only valid while that snapshot lives, unless it owns its
// description (Sample::Of).
struct Sample {
  Sample() = default;
  // A sample of a series described in a table that the snapshot keeps alive.
  Sample(const SeriesDesc* series, uint64_t value, bool is_saturated = false)
      : desc(series), raw(value), saturated(is_saturated) {}

  const SeriesDesc* desc = nullptr;
  uint64_t raw = 0;  // exactly as the kernel printed it
  // True when a fixed-width PMA counter sits at all-ones: it has stopped
  // counting (IBA 16.1.3.5) and its value is a floor, not traffic.
  bool saturated = false;
  // Set by Of(): the sample keeps its own description alive. Null on the
  // sources' hot paths, where the description belongs to a shared table.
  std::shared_ptr<const SeriesDesc> owned;

  // A sample that owns its description: for sources with a handful of
  // values (verbs) and for tests.
  static Sample Of(SeriesDesc desc, uint64_t raw) {
    Sample s;
    s.owned = std::make_shared<const SeriesDesc>(std::move(desc));
    s.desc = s.owned.get();
    s.raw = raw;
    return s;
  }

  double BaseValue() const { return desc->BaseValue(raw); }
};

// A port of an RDMA device as sysfs describes it.
struct RdmaPortInfo {
  std::string device;
  uint32_t port = 0;
  int state_id = -1;       // 4 = ACTIVE; -1 when unreadable
  std::string state;       // "ACTIVE"
  int phys_state_id = -1;  // 5 = LinkUp
  std::string phys_state;  // "LinkUp"
  std::optional<double> rate_bytes_per_second;
  std::string rate_text;             // "400 Gb/sec (4X NDR)"
  std::string link_layer;            // "InfiniBand", "Ethernet"
  std::vector<std::string> netdevs;  // from gid_attrs/ndevs/*
};

struct RdmaDeviceInfo {
  std::string name;  // "mlx5_0"
  std::string fw_ver;
  std::string board_id;
  std::string hca_type;
  std::string node_guid;
  std::vector<std::string> netdevs;  // from device/net/*
};

struct NetdevInfo {
  std::string name;
  std::string operstate;    // "up", "down", ...; "" when unreadable
  std::string rdma_device;  // "" when the netdev has no RDMA device
  uint32_t rdma_port = 0;
  double speed_bytes_per_second = 0;  // from `speed`; 0 when unknown
};

// Port attributes from libibverbs (ibv_query_port).
struct VerbsPortInfo {
  std::string device;
  uint32_t port = 0;
  int state = 0;               // enum ibv_port_state
  int active_mtu_bytes = 0;    // 256..4096
  int active_width_lanes = 0;  // 1, 2, 4, 8, 12
  double lane_gbps = 0;        // per-lane signalling rate after encoding
  double expected_rate_bytes_per_second = 0;
  std::string link_layer;  // "InfiniBand", "Ethernet"
};

// How one source fared in one snapshot.
struct SourceStatus {
  std::string source;  // "rdma_sysfs", "netdev", "ethtool", "verbs"
  bool ok = true;      // false when something could not be read
  absl::Duration duration;
  int errors = 0;          // files or devices that failed
  std::string last_error;  // the most recent error, for logs and JSON
};

struct Snapshot {
  absl::Time wall_time;
  int64_t monotonic_nanos = 0;
  std::vector<Sample> samples;
  // Keep the descriptions that `samples` point into alive (a source's table
  // of one device, shared with the source and later snapshots).
  std::vector<std::shared_ptr<const void>> series_owners;
  std::vector<RdmaDeviceInfo> rdma_devices;
  std::vector<RdmaPortInfo> rdma_ports;
  std::vector<NetdevInfo> netdevs;
  std::vector<VerbsPortInfo> verbs_ports;
  // Each GPU and its nearest RDMA NIC (agent/gpu_nic_pairing.h), in GPU
  // index order; empty on a host without GPUs.
  std::vector<GpuNicPair> gpu_nics;
  // True when the GPU walk ran and either read the PCI tree without an
  // error or paired GPUs despite one, so that an empty gpu_nics means "no
  // GPUs" rather than "could not tell" (the collector then keeps the pairs
  // it knew).
  bool gpus_read = false;
  std::vector<SourceStatus> sources;
  // The LLDP neighbors of the netdevs (agent/lldp_source.h); null when the
  // agent does not read LLDP (tests).
  std::shared_ptr<const LldpState> lldp;
};

}  // namespace fabricdiag::agent
