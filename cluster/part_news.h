// What one collector's rate analysis parts tell every other collector each
// pass, and its wire form (v1::PartNews).
//
// Cut into parts (analysis/rate_parts.h), one collector's findings excuse
// others' (an incast in a job shard explains a port's congestion on the
// node's collector), and each collector's port part compares congestion
// with the whole fabric's medians. Each pass every collector sends what
// its parts' findings excuse and the histogram of its own ports' congestion
// signals; each merges what the others sent with its own (one pass late).
// A few hundred bytes: the excuses name only ports with findings, a
// histogram holds the few hundred 1%-wide buckets its values fall in.
//
//   v1::PartNews wire = ToProto(news);
//   absl::StatusOr<PartNews> back = FromProto(wire);  // refuses damage
//
// Pure; thread-compatible.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "analysis/congestion.h"
#include "analysis/rate_parts.h"
#include "proto/cluster.pb.h"

namespace fabricdiag::cluster {

// The news itself is analysis::PartNews (analysis/rate_parts.h): what a
// collector's parts found, apart from how it travels.
using analysis::PartNews;
using analysis::ViewNews;

// Most entries of each excuse list, and most buckets of a histogram, a
// message may hold: far more than a pass finds (a finding per port of a
// 1M-GPU fabric is 1M), few enough that a hostile message costs little.
inline constexpr size_t kMaxNewsEntries = size_t{1} << 20;
// The longest node or device name accepted (a hostname is at most 253).
inline constexpr size_t kMaxNewsNameBytes = 255;

v1::PartNews ToProto(const PartNews& news);

// InvalidArgument naming what is wrong (and in which view): no collector
// id, columns of different lengths, an empty or overlong name, more than
// kMaxNewsEntries, histogram buckets not strictly ascending, a zero count,
// or counts past 2^48 in all; TP groups not strictly ascending, a rate
// negative or not finite, a link rate not positive (NaN: none), no NIC.
// Nothing of a refused message is used.
absl::StatusOr<PartNews> FromProto(const v1::PartNews& wire);

}  // namespace fabricdiag::cluster
