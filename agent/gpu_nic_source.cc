#include "agent/gpu_nic_source.h"

#include "agent/pci_sysfs.h"

namespace fabricdiag::agent {

SourceStatus GpuNicSource::Collect(Snapshot* snapshot) {
  const int64_t now = clock_.MonotonicNanos();
  if (!last_scan_nanos_.has_value() ||
      now - *last_scan_nanos_ >=
          absl::ToInt64Nanoseconds(options_.rescan_interval)) {
    PciScan scan = ScanPci(reader_);
    pairs_ = PairGpusWithNics(scan.functions, scan.nics);
    errors_ = static_cast<int>(scan.errors.size());
    last_error_ = scan.errors.empty() ? std::string() : scan.errors.back();
    last_scan_nanos_ = now;
    ++scans_;
  }
  snapshot->gpu_nics = pairs_;
  snapshot->gpus_read = errors_ == 0 || !pairs_.empty();
  SourceStatus status;
  status.source = std::string(name());
  status.ok = errors_ == 0;
  status.errors = errors_;
  status.last_error = last_error_;
  return status;
}

}  // namespace fabricdiag::agent
