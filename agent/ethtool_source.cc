#include "agent/ethtool_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "agent/counter_desc.h"
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

}  // namespace

EthtoolSource::EthtoolSource(std::unique_ptr<EthtoolStats> stats,
                             EthtoolSourceOptions options)
    : stats_(std::move(stats)), options_(options) {}

EthtoolSource::EthtoolSource(EthtoolTextDir dir, EthtoolSourceOptions options)
    : text_dir_(std::move(dir.path)), options_(options) {}

SourceStatus EthtoolSource::Collect(absl::Span<const NetdevInfo> netdevs,
                                    Snapshot* snapshot) {
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
  for (const NetdevInfo& netdev : netdevs) {
    // Only snapshot->samples grows below, so `netdevs` may be
    // snapshot->netdevs.
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
    const std::string& ifname, std::vector<std::string> names) const {
  NameCache cache;
  cache.desc.reserve(names.size());
  auto table = std::make_shared<std::vector<SeriesDesc>>();
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& name : names) {
    // A duplicate name would make two series with one identity; keep the
    // first (drivers are not supposed to repeat names, text files may).
    const bool emit = seen.insert(name).second &&
                      (options_.include_per_queue || !IsPerQueueStat(name));
    if (!emit) {
      cache.desc.push_back(-1);
      continue;
    }
    // The driver is not known here (text files carry no driver name);
    // ethtool spellings are distinct per driver, so the table's first row
    // for the name is the right one.
    SeriesDesc d = DescribeCounter(Subsystem::kEthtool,
                                   counters::Driver::kUnknown, ifname, 0, name);
    cache.desc.push_back(static_cast<int32_t>(table->size()));
    table->push_back(std::move(d));
  }
  // `seen` holds views into `names`; it dies before `names` is moved.
  seen.clear();
  cache.names = std::move(names);
  cache.table = std::move(table);
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
      it =
          cache_.insert_or_assign(ifname, BuildCache(ifname, *std::move(names)))
              .first;
    }
    const size_t count = it->second.names.size();
    if (count == 0) return absl::OkStatus();

    absl::StatusOr<std::vector<uint64_t>> values =
        stats_->StatValues(ifname, count);
    if (values.ok() && values->size() == count) {
      ++it->second.reads;
      const std::vector<uint64_t>& v = *values;
      Emit(
          it->second, [&v](size_t i) { return v[i]; }, snapshot);
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

absl::Status EthtoolSource::ReadTextFile(const std::string& ifname) {
  const std::string path = absl::StrCat(text_dir_, "/", ifname);
  // O_NONBLOCK: opening a FIFO planted in the directory must not hang.
  // O_NOATIME: polling a support bundle or a simulator's files every
  // interval must not keep updating their access times (only permitted on
  // files the agent's user owns; others are read without it).
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
  int fd = ::open(path.c_str(), kFlags | (text_noatime_ ? O_NOATIME : 0));
  if (fd < 0 && errno == EPERM && text_noatime_) {
    text_noatime_ = false;
    fd = ::open(path.c_str(), kFlags);
  }
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
  // Room for the whole file plus one byte, so that one read normally gets
  // everything and comes back short: a short read of a regular file means
  // its end. A file that grew meanwhile takes more reads.
  const size_t limit = options_.max_text_file_bytes;
  const size_t expected =
      std::min(static_cast<size_t>(std::max<off_t>(st.st_size, 0)), limit) + 1;
  if (text_buf_.capacity() > (size_t{1} << 20) && expected < (1 << 18)) {
    std::string().swap(text_buf_);  // a huge file once must not pin memory
  }
  if (text_buf_.size() < expected) text_buf_.resize(expected);
  size_t len = 0;
  while (true) {
    const size_t room = text_buf_.size() - len;
    ssize_t n = ::read(fd, text_buf_.data() + len, room);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoError(err, path);
    }
    len += static_cast<size_t>(n);
    if (len > limit) {
      ::close(fd);
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": larger than ", limit, " bytes"));
    }
    if (static_cast<size_t>(n) < room) break;
    text_buf_.resize(std::min(text_buf_.size() * 2, limit + 1));
  }
  ::close(fd);
  text_len_ = len;
  return absl::OkStatus();
}

absl::Status EthtoolSource::CollectText(const std::string& ifname,
                                        Snapshot* snapshot) {
  if (!IsSafeFileName(ifname)) {
    return absl::InvalidArgumentError(
        absl::StrCat("netdev name \"", ifname, "\" is not a file name"));
  }
  absl::Status read = ReadTextFile(ifname);
  if (absl::IsNotFound(read)) return absl::OkStatus();
  if (!read.ok()) return read;

  // Classifying ~200 names is most of the cost of a text read; the names of
  // a netdev rarely change, so reuse the descriptions while they match.
  auto it = cache_.find(ifname);
  ParseEthtoolStatsText(absl::string_view(text_buf_.data(), text_len_),
                        &parsed_,
                        it != cache_.end() ? &it->second.names : nullptr);
  if (!parsed_.matches_expected) {
    std::vector<std::string> names;
    names.reserve(parsed_.stats.size());
    for (const auto& stat : parsed_.stats) names.emplace_back(stat.first);
    it = cache_.insert_or_assign(ifname, BuildCache(ifname, std::move(names)))
             .first;
  }
  Emit(
      it->second, [this](size_t i) { return parsed_.stats[i].second; },
      snapshot);

  if (parsed_.errors.empty()) return absl::OkStatus();
  const size_t bad = parsed_.errors.size() + parsed_.dropped_errors;
  return absl::InvalidArgumentError(absl::StrCat(
      text_dir_, "/", ifname, ": ", bad, " unparseable line(s); line ",
      parsed_.errors[0].line, ": ", parsed_.errors[0].message));
}

template <typename ValueAt>
void EthtoolSource::Emit(const NameCache& cache, ValueAt value,
                         Snapshot* snapshot) const {
  const std::vector<SeriesDesc>& table = *cache.table;
  if (table.empty()) return;
  snapshot->series_owners.push_back(cache.table);
  for (size_t i = 0; i < cache.desc.size(); ++i) {
    if (cache.desc[i] < 0) continue;
    snapshot->samples.push_back(
        Sample{&table[static_cast<size_t>(cache.desc[i])], value(i)});
  }
}

}  // namespace fabricdiag::agent
