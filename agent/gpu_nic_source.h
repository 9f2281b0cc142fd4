// GpuNicSource: the GPU to NIC pairing (agent/gpu_nic_pairing.h) as a
// source of the agent's snapshots (Snapshot::gpu_nics).
//
// The PCI tree changes only on hotplug, so the walk (agent/pci_sysfs.h)
// runs on the first call and then at most every `rescan_interval`; the calls
// in between copy the last pairing and report the last walk's errors. A host
// without GPUs gets no pairs and no error.
//
//   SysfsReader reader("/sys");
//   GpuNicSource source(&reader, clock);
//   Snapshot snap;
//   SourceStatus status = source.Collect(&snap);  // snap.gpu_nics
//
// Thread safety: Collect() must not be called concurrently (Source contract).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/gpu_nic_pairing.h"
#include "agent/sample.h"
#include "agent/source.h"
#include "agent/sysfs_reader.h"
#include "common/clock.h"

namespace fabricdiag::agent {

class GpuNicSource : public Source {
 public:
  struct Options {
    absl::Duration rescan_interval = absl::Seconds(60);
  };

  // `reader` and `clock` must outlive the source.
  GpuNicSource(SysfsReader* reader, const Clock& clock)
      : GpuNicSource(reader, clock, Options()) {}
  GpuNicSource(SysfsReader* reader, const Clock& clock, Options options)
      : reader_(reader), clock_(clock), options_(options) {}

  absl::string_view name() const override { return "gpu_nic"; }
  SourceStatus Collect(Snapshot* snapshot) override;

  // Walks done so far.
  uint64_t scans() const { return scans_; }

 private:
  SysfsReader* const reader_;
  const Clock& clock_;
  const Options options_;
  std::optional<int64_t> last_scan_nanos_;
  std::vector<GpuNicPair> pairs_;
  int errors_ = 0;
  std::string last_error_;
  uint64_t scans_ = 0;
};

}  // namespace fabricdiag::agent
