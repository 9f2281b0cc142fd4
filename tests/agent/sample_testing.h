// Helpers for tests that build samples by hand.
//
//   Sample s = TestSample(Subsystem::kRdmaPortCounters, "mlx5_0", 1,
//                         "port_xmit_data", 10);
//   Sample narrow = Edited(s, [](SeriesDesc& d) { d.width_bits = 32; });
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "agent/sample.h"

namespace fabricdiag::agent {

// A counter sample that owns its description (unit "bytes").
inline Sample TestSample(Subsystem subsystem, std::string device, uint32_t port,
                         std::string name, uint64_t raw) {
  SeriesDesc d;
  d.subsystem = subsystem;
  d.device = std::move(device);
  d.port = port;
  d.name = std::move(name);
  d.unit = "bytes";
  return Sample::Of(std::move(d), raw);
}

// A copy of `s` with its own description: `*s.desc` changed by `edit`.
template <typename Edit>
Sample Edited(const Sample& s, Edit edit) {
  SeriesDesc d = *s.desc;
  edit(d);
  Sample out = Sample::Of(std::move(d), s.raw);
  out.saturated = s.saturated;
  return out;
}

}  // namespace fabricdiag::agent
