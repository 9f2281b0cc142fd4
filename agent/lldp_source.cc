#include "agent/lldp_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace fabricdiag::agent {

LldpdReader::LldpdReader(std::unique_ptr<LldpctlApi> api)
    : api_(std::move(api)) {}

absl::StatusOr<std::optional<LldpParsed>> LldpdReader::Read() {
  absl::StatusOr<std::vector<LldpNeighbor>> heard = api_->Neighbors();
  if (!heard.ok()) return heard.status();
  LldpParsed out;
  for (LldpNeighbor& n : *heard) {
    if (SanitizeLldpNeighbor(&n, &out.issues)) {
      out.neighbors.push_back(std::move(n));
    }
  }
  NormalizeLldpNeighbors(&out.neighbors, &out.issues);
  return std::optional<LldpParsed>(std::move(out));
}

LldpFileReader::LldpFileReader(std::string path) : path_(std::move(path)) {}

absl::StatusOr<std::optional<LldpParsed>> LldpFileReader::Read() {
  Stamp stamp;
  struct stat st;
  if (::stat(path_.c_str(), &st) == 0) {
    stamp.exists = true;
    stamp.dev = st.st_dev;
    stamp.ino = st.st_ino;
    stamp.size = st.st_size;
    stamp.mtime_nanos =
        int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  }
  const int stat_errno = errno;
  if (last_.has_value() && *last_ == stamp) return std::nullopt;
  last_ = stamp;
  if (!stamp.exists) {
    return absl::NotFoundError(
        absl::StrCat("--lldp_file=", path_, ": ", std::strerror(stat_errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lldp_file=", path_, ": not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > kLldpMaxTextBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lldp_file=", path_, ": ", st.st_size,
                     " bytes, more than the ", kLldpMaxTextBytes, " accepted"));
  }
  std::ifstream in(path_, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (in.bad() || !in.is_open()) {
    return absl::PermissionDeniedError(
        absl::StrCat("--lldp_file=", path_, ": cannot read"));
  }
  absl::StatusOr<LldpParsed> parsed = ParseLldpcliJson(text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lldp_file=", path_, ": ", parsed.status().message()));
  }
  return std::optional<LldpParsed>(*std::move(parsed));
}

LldpMonitor::LldpMonitor(std::unique_ptr<LldpReader> reader,
                         absl::Duration period, const Clock& clock)
    : reader_(std::move(reader)), period_(period), clock_(clock) {
  state_.source = reader_->kind();
}

void LldpMonitor::Read() {
  absl::StatusOr<std::optional<LldpParsed>> read = reader_->Read();
  if (read.ok() && !read->has_value()) return;  // unchanged file
  fresh_ = true;
  if (read.ok()) {
    ++state_.reads_ok;
    state_.up = true;
    state_.last_error.clear();
    state_.issues.Add((*read)->issues);
    if (!(*read)->issues.last.empty()) {
      LogWarning(absl::StrCat("lldp: ", (*read)->issues.last));
    }
    heard_ = std::move((*read)->neighbors);
    logged_unavailable_ = false;
    logged_error_.clear();
    return;
  }
  state_.up = false;
  if (absl::IsUnavailable(read.status())) {
    // No lldpd: nothing to learn, and nothing is wrong with this node.
    ++state_.reads_unavailable;
    heard_.clear();
    if (!logged_unavailable_) {
      LogInfo(absl::StrCat("lldp: no lldpd (", read.status().message(),
                           "): no LLDP neighbors until it answers"));
      logged_unavailable_ = true;
    }
    return;
  }
  ++state_.reads_failed;
  state_.last_error = std::string(read.status().message());
  if (absl::IsNotFound(read.status())) heard_.clear();
  if (logged_error_ != state_.last_error) {
    LogWarning(absl::StrCat("lldp: ", state_.last_error));
    logged_error_ = state_.last_error;
  }
}

std::vector<LldpNeighbor> LldpMonitor::Known(
    const std::vector<NetdevInfo>& netdevs, LldpIssues* issues) const {
  absl::flat_hash_set<absl::string_view> names;
  names.reserve(netdevs.size());
  for (const NetdevInfo& n : netdevs) names.insert(n.name);
  std::vector<LldpNeighbor> out;
  out.reserve(heard_.size());
  for (const LldpNeighbor& n : heard_) {
    if (names.contains(n.netdev)) {
      out.push_back(n);
    } else {
      ++issues->unknown_netdev;
      issues->last = absl::StrCat("neighbor ", n.system_name, " on ", n.netdev,
                                  ": not a netdev the agent watches");
    }
  }
  return out;
}

std::shared_ptr<const LldpState> LldpMonitor::Update(
    const std::vector<NetdevInfo>& netdevs) {
  const int64_t now = clock_.MonotonicNanos();
  if (!last_read_nanos_.has_value() ||
      now - *last_read_nanos_ >= absl::ToInt64Nanoseconds(period_)) {
    last_read_nanos_ = now;
    Read();
    last_read_cost_nanos_ = clock_.MonotonicNanos() - now;
  }
  LldpIssues unknown;
  std::vector<LldpNeighbor> known = Known(netdevs, &unknown);
  bool changed = published_ == nullptr || last_read_nanos_ == now;
  if (fresh_) {
    // Counted once per read, not once per tick.
    fresh_ = false;
    state_.issues.Add(unknown);
    if (!unknown.last.empty() && unknown.last != logged_unknown_) {
      LogWarning(absl::StrCat("lldp: ", unknown.last));
      logged_unknown_ = unknown.last;
    }
  }
  if (known != state_.set.neighbors || state_.set.version == 0) {
    state_.set.neighbors = std::move(known);
    ++state_.set.version;
    changed = true;
    LogInfo(absl::StrCat(
        "lldp: ", state_.set.neighbors.size(), " neighbors from ",
        state_.source, " (version ", state_.set.version, ", read in ",
        absl::FormatDuration(absl::Nanoseconds(last_read_cost_nanos_)), ")"));
  }
  // The state moves on reads only; a tick without one republishes it.
  if (changed) published_ = std::make_shared<const LldpState>(state_);
  return published_;
}

}  // namespace fabricdiag::agent
