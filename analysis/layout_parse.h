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
// Inputs are bounded: at most kMaxDocumentBytes of text, kMaxRanks ranks or
// hosts, yaml-cpp's own nesting limit. yaml-cpp throws; nothing is thrown
// from here. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/layout.pb.h"

namespace fabricdiag::analysis {

inline constexpr size_t kMaxDocumentBytes = 16 << 20;  // 16 MiB

absl::StatusOr<v1::Layout> ParseLayout(absl::string_view text);
absl::StatusOr<v1::Topology> ParseTopology(absl::string_view text);

// Names are valid and unique (switch names, uplinks within a switch,
// (host, nic) and (switch, port) across links), every link's switch is
// declared in `switches`, no port is both an uplink and a host link, and a
// switch's gnmi block is complete (see ValidateGnmiTarget).
absl::Status ValidateTopology(const v1::Topology& topology);

// A gnmi block (docs/topology-format.md): address is HOST:PORT; dialect is
// "openconfig" or "sonic"; tls_ca is given unless insecure is true, and not
// with it; credentials travel only over TLS; file paths are absolute. Does
// not touch the files (the bridge reads them, on its own host). Errors
// start with `path` ("switches[1].gnmi.tls_ca: ...").
absl::Status ValidateGnmiTarget(const v1::GnmiTarget& gnmi,
                                absl::string_view path);

// One JSON object, field names as in the file format; ParseLayout and
// ParseTopology read it back.
std::string LayoutToJson(const v1::Layout& layout);
std::string TopologyToJson(const v1::Topology& topology);

}  // namespace fabricdiag::analysis
