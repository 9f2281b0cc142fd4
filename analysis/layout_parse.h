// Layout and topology files (YAML or JSON; docs/layout-format.md,
// docs/topology-format.md) <-> proto.
//
// Parsing checks structure and types: unknown or duplicate keys, a list where
// a scalar belongs, "8.0" or "8" (quoted) where an integer belongs, negative
// numbers, sizes. Every error is InvalidArgument and starts with the path of
// the offending field ("parallelism.tp: ...", "ranks[3].gpu: ...").
// ParseLayout does not check meaning (degrees against ranks, order strings,
// names): LayoutModel::Build does, so always build what you parsed:
//
//   ASSIGN_OR_RETURN(v1::Layout layout, ParseLayout(file_text));
//   ASSIGN_OR_RETURN(LayoutModel model, LayoutModel::Build(layout));
//   std::string shown = LayoutToJson(model.layout());
//
// ParseTopology checks the topology completely (see ValidateTopology).
// Inputs are bounded: a layout is at most kMaxDocumentBytes of text and
// kMaxRanks ranks or hosts, a topology at most kMaxTopologyBytes,
// kMaxTopologyValues values, kMaxTopologyLinks links and
// kMaxTopologySwitches switches; both nest at most 32 levels. yaml-cpp throws;
// nothing is thrown from here. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/layout.pb.h"

namespace fabricdiag::analysis {

// A layout file.
inline constexpr size_t kMaxDocumentBytes = 16 << 20;  // 16 MiB

// A topology file, sized for twice a 200,000-GPU fabric (25,000 nodes x 8
// NICs = 200,000 links, ~1,600 leaves): 400,000 links. Each link is 9 values
// (a mapping of 4 keys and 4 strings), each switch with its name and 4
// uplinks 9, so the value bound holds that many links plus 65,536 such
// switches. yaml-cpp's tree costs ~0.5 KB per value: the CLI applying a
// 200,000-GPU topology peaks at ~1 GB, one at the bounds would need ~2 GB
// (bench/topology_scale.py measures it). switch_links are bounded by
// kMaxTopologyLinks on their own (a fabric has far fewer of them than host
// links; ~7,000 for 1,500 switches in 3 tiers).
inline constexpr uint32_t kMaxTopologyLinks = 400 * 1000;
inline constexpr uint32_t kMaxTopologySwitches = 64 * 1024;
inline constexpr uint64_t kMaxTopologyValues =
    9ull * (kMaxTopologyLinks + kMaxTopologySwitches);
inline constexpr size_t kMaxTopologyBytes = 64 << 20;  // 64 MiB

absl::StatusOr<v1::Layout> ParseLayout(absl::string_view text);
absl::StatusOr<v1::Topology> ParseTopology(absl::string_view text);

// Names are valid and unique (switch names, uplinks within a switch,
// (host, nic) and (switch, port) across links), every link's and switch
// link's switch is declared in `switches`, no port is both an uplink and a
// host link, no port has two switch links or a switch link and a host link,
// chassis ids are printable and unique (ignoring case), and a switch's gnmi
// block is complete (see ValidateGnmiTarget).
absl::Status ValidateTopology(const v1::Topology& topology);

// A gnmi block (docs/topology-format.md): address is HOST:PORT; dialect is
// "openconfig" or "sonic"; tls_ca is given unless insecure is true, and not
// with it; credentials travel only over TLS; file paths are absolute. Does
// not touch the files (the bridge reads them, on its own host). Errors
// start with `path` ("switches[1].gnmi.tls_ca: ...").
absl::Status ValidateGnmiTarget(const v1::GnmiTarget& gnmi,
                                absl::string_view path);

// What TopologyToJson prints: the file format, which ParseTopology reads
// back, or that plus what is derived and never read from a file (each
// switch's tier, each link's source in an effective topology), for display.
enum class TopologyJson { kFile, kWithDerived };

// One JSON object, field names as in the file format; ParseLayout and
// ParseTopology read it back (for a topology, when printed as kFile). A
// topology's empty fields are left out (a switch without uplinks or
// chassis id), a layout's are printed (rank 0).
std::string LayoutToJson(const v1::Layout& layout);
std::string TopologyToJson(const v1::Topology& topology,
                           TopologyJson what = TopologyJson::kFile);

}  // namespace fabricdiag::analysis
