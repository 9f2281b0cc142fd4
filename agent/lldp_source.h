// Where the agent learns its LLDP neighbors, and how often.
//
// An LldpReader reads the neighbors of every local interface: from lldpd's
// control socket (LldpdReader, through the LldpctlApi seam) or from a file
// holding `lldpcli -f json show neighbors` output (LldpFileReader, re-read
// only when its mtime, size or inode changes). LldpMonitor asks its reader
// at most once per period, keeps the neighbors of the netdevs the agent
// watches, counts what it dropped and publishes an LldpState with each
// snapshot; its neighbor set's version changes only when the set does.
//
//   LldpMonitor monitor(std::make_unique<LldpdReader>(
//                           NewLldpctlApi("/run/lldpd.socket")),
//                       absl::Seconds(10), clock);
//   snapshot.lldp = monitor.Update(snapshot.netdevs);  // each tick; cheap
//
// Not thread-safe: Update() is called from the sampling thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/lldp_lldpctl.h"
#include "agent/lldp_neighbor.h"
#include "agent/lldp_parse.h"
#include "agent/sample.h"
#include "common/clock.h"

namespace fabricdiag::agent {

class LldpReader {
 public:
  virtual ~LldpReader() = default;
  // "lldpd" or "file": the source label of the metrics.
  virtual const char* kind() const = 0;
  // The current neighbors (sanitized, normalized), or nullopt when nothing
  // changed since the previous call. UnavailableError: no lldpd (no
  // neighbors, not a failure); any other error: the read failed.
  virtual absl::StatusOr<std::optional<LldpParsed>> Read() = 0;
};

class LldpdReader final : public LldpReader {
 public:
  explicit LldpdReader(std::unique_ptr<LldpctlApi> api);
  const char* kind() const override { return "lldpd"; }
  absl::StatusOr<std::optional<LldpParsed>> Read() override;

 private:
  std::unique_ptr<LldpctlApi> api_;
};

class LldpFileReader final : public LldpReader {
 public:
  explicit LldpFileReader(std::string path);
  const char* kind() const override { return "file"; }
  absl::StatusOr<std::optional<LldpParsed>> Read() override;

 private:
  struct Stamp {
    bool exists = false;
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_nanos = 0;
    bool operator==(const Stamp& o) const {
      return exists == o.exists && dev == o.dev && ino == o.ino &&
             size == o.size && mtime_nanos == o.mtime_nanos;
    }
  };
  std::string path_;
  std::optional<Stamp> last_;  // of the previous read, good or bad
};

class LldpMonitor {
 public:
  // Reads through `reader` at most once per `period` (the first Update
  // reads at once).
  LldpMonitor(std::unique_ptr<LldpReader> reader, absl::Duration period,
              const Clock& clock);

  // Reads when due, then returns the state with the neighbors of the
  // netdevs in `netdevs` (those of other interfaces are dropped, counted as
  // unknown_netdev once per read). An absent lldpd means no neighbors; a
  // failed read keeps the neighbors of the last good one.
  std::shared_ptr<const LldpState> Update(
      const std::vector<NetdevInfo>& netdevs);

 private:
  void Read();
  std::vector<LldpNeighbor> Known(const std::vector<NetdevInfo>& netdevs,
                                  LldpIssues* issues) const;

  std::unique_ptr<LldpReader> reader_;
  absl::Duration period_;
  const Clock& clock_;
  std::optional<int64_t> last_read_nanos_;
  int64_t last_read_cost_nanos_ = 0;  // of the most recent read, for the log
  bool fresh_ = false;  // read since the last Update: count unknown netdevs
  bool logged_unavailable_ = false;
  std::string logged_error_;
  std::string logged_unknown_;
  std::vector<LldpNeighbor> heard_;  // of the last good read
  LldpState state_;
  std::shared_ptr<const LldpState> published_;
};

}  // namespace fabricdiag::agent
