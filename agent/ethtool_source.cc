#include "agent/ethtool_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "agent/ethtool_text.h"

namespace fabricdiag::agent {
namespace {

absl::Status ErrnoError(int err, const std::string& path) {
  return absl::Status(absl::ErrnoToStatusCode(err),
                      absl::StrCat(path, ": ", std::strerror(err)));
}

// A netdev name used as a file name must not escape the directory.
bool IsSafeFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

// Reads a regular file of at most `max_bytes`. kNotFound when it is absent.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO planted in the directory must not hang.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoError(errno, path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError(err, path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": not a regular file"));
  }
  std::string data;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoError(err, path);
    }
    if (n == 0) break;
    if (data.size() + static_cast<size_t>(n) > max_bytes) {
      ::close(fd);
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": larger than ", max_bytes, " bytes"));
    }
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

}  // namespace

EthtoolSource::EthtoolSource(std::unique_ptr<EthtoolStats> stats,
                             EthtoolSourceOptions options)
    : stats_(std::move(stats)), options_(options) {}

EthtoolSource::EthtoolSource(EthtoolTextDir dir, EthtoolSourceOptions options)
    : text_dir_(std::move(dir.path)), options_(options) {}

SourceStatus EthtoolSource::Collect(Snapshot* snapshot) {
  SourceStatus status;
  status.source = "ethtool";
  auto fail = [&status](const absl::Status& error) {
    status.ok = false;
    ++status.errors;
    status.last_error = std::string(error.message());
  };

  if (stats_ == nullptr) {
    // A missing directory would otherwise look like "no netdev has stats".
    struct stat st;
    if (::stat(text_dir_.c_str(), &st) != 0) {
      const int err = errno;
      fail(ErrnoError(err, absl::StrCat("--ethtool_dir ", text_dir_)));
      return status;
    }
    if (!S_ISDIR(st.st_mode)) {
      fail(absl::FailedPreconditionError(
          absl::StrCat("--ethtool_dir ", text_dir_, ": not a directory")));
      return status;
    }
  }

  absl::flat_hash_set<std::string> present;
  for (const NetdevInfo& netdev : snapshot->netdevs) {
    // Only snapshot->samples grows below; netdevs is not touched.
    const std::string& ifname = netdev.name;
    if (!present.insert(ifname).second) continue;  // listed twice
    absl::Status result = stats_ != nullptr ? CollectKernel(ifname, snapshot)
                                            : CollectText(ifname, snapshot);
    if (!result.ok()) fail(result);
  }
  // Forget netdevs that are gone, so a re-created one is read afresh.
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (present.contains(it->first)) {
      ++it;
    } else {
      cache_.erase(it++);
    }
  }
  return status;
}

EthtoolSource::NameCache EthtoolSource::BuildCache(
    std::vector<std::string> names) const {
  NameCache cache;
  cache.semantics.reserve(names.size());
  cache.emit.reserve(names.size());
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& name : names) {
    cache.semantics.push_back(ClassifyEthtoolStat(name));
    // A duplicate name would make two series with one identity; keep the
    // first (drivers are not supposed to repeat names, text files may).
    bool emit = seen.insert(name).second &&
                (options_.include_per_queue || !IsPerQueueStat(name));
    cache.emit.push_back(emit);
  }
  // `seen` holds views into `names`; it dies before `names` is moved.
  seen.clear();
  cache.names = std::move(names);
  return cache;
}

absl::Status EthtoolSource::CollectKernel(const std::string& ifname,
                                          Snapshot* snapshot) {
  absl::Status last_change;
  // Two attempts: if the stat set changed since the names were cached, the
  // names are re-read once and the values with them.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto it = cache_.find(ifname);
    if (it != cache_.end() && options_.names_refresh_reads > 0 &&
        it->second.reads >= options_.names_refresh_reads) {
      cache_.erase(it);
      it = cache_.end();
    }
    if (it == cache_.end()) {
      absl::StatusOr<std::vector<std::string>> names =
          stats_->StatNames(ifname);
      if (!names.ok()) {
        if (absl::IsUnimplemented(names.status()) ||
            absl::IsNotFound(names.status())) {
          return absl::OkStatus();  // no ethtool stats / netdev gone
        }
        return names.status();
      }
      it = cache_.insert_or_assign(ifname, BuildCache(*std::move(names))).first;
    }
    const size_t count = it->second.names.size();
    if (count == 0) return absl::OkStatus();

    absl::StatusOr<std::vector<uint64_t>> values =
        stats_->StatValues(ifname, count);
    if (values.ok() && values->size() == count) {
      ++it->second.reads;
      Emit(ifname, it->second, *values, snapshot);
      return absl::OkStatus();
    }
    cache_.erase(it);
    if (values.ok()) {
      // The seam broke its contract; treat it like a changed set.
      last_change = absl::InternalError(
          absl::StrCat(ifname, ": got ", values->size(), " ethtool values for ",
                       count, " names"));
      continue;
    }
    if (absl::IsAborted(values.status())) {
      last_change = values.status();
      continue;
    }
    if (absl::IsUnimplemented(values.status()) ||
        absl::IsNotFound(values.status())) {
      return absl::OkStatus();
    }
    return values.status();
  }
  return absl::AbortedError(absl::StrCat(
      ifname, ": ethtool stat set changed again after re-reading its names: ",
      last_change.message()));
}

absl::Status EthtoolSource::CollectText(const std::string& ifname,
                                        Snapshot* snapshot) {
  if (!IsSafeFileName(ifname)) {
    return absl::InvalidArgumentError(
        absl::StrCat("netdev name \"", ifname, "\" is not a file name"));
  }
  const std::string path = absl::StrCat(text_dir_, "/", ifname);
  absl::StatusOr<std::string> text =
      ReadSmallFile(path, options_.max_text_file_bytes);
  if (absl::IsNotFound(text.status())) return absl::OkStatus();
  if (!text.ok()) return text.status();

  EthtoolText parsed = ParseEthtoolStatsText(*text);
  std::vector<std::string> names;
  std::vector<uint64_t> values;
  names.reserve(parsed.stats.size());
  values.reserve(parsed.stats.size());
  for (auto& [name, value] : parsed.stats) {
    names.push_back(std::move(name));
    values.push_back(value);
  }
  // Classifying ~200 names is most of the cost of a text read; the names of
  // a netdev rarely change, so reuse the classification while they match.
  auto it = cache_.find(ifname);
  if (it == cache_.end() || it->second.names != names) {
    it = cache_.insert_or_assign(ifname, BuildCache(std::move(names))).first;
  }
  Emit(ifname, it->second, values, snapshot);

  if (parsed.errors.empty()) return absl::OkStatus();
  const size_t bad = parsed.errors.size() + parsed.dropped_errors;
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": ", bad, " unparseable line(s); line ",
                   parsed.errors[0].line, ": ", parsed.errors[0].message));
}

void EthtoolSource::Emit(const std::string& ifname, const NameCache& cache,
                         const std::vector<uint64_t>& values,
                         Snapshot* snapshot) const {
  for (size_t i = 0; i < cache.names.size(); ++i) {
    if (!cache.emit[i]) continue;
    const StatSemantics& sem = cache.semantics[i];
    Sample sample;
    sample.subsystem = Subsystem::kEthtool;
    sample.device = ifname;
    sample.port = 0;
    sample.name = cache.names[i];
    sample.raw = values[i];
    sample.width_bits = sem.width_bits;
    sample.scale = sem.scale;
    sample.unit = sem.unit;
    sample.kind = sem.kind;
    sample.meaning = sem.meaning;
    sample.direction = sem.direction;
    sample.priority = sem.priority;
    snapshot->samples.push_back(std::move(sample));
  }
}

}  // namespace fabricdiag::agent
