#include "agent/netdev_source.h"

#include <regex.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "agent/counter_desc.h"
#include "agent/sysfs_parse.h"
#include "counters/counter_table.h"

namespace fabricdiag::agent {
namespace {

constexpr absl::string_view kNetDir = "class/net";
constexpr uint64_t kBytesPerSecondPerMbps = 125000;  // 1e6 bits / 8

uint32_t Append(std::vector<SeriesDesc>* table, SeriesDesc desc) {
  table->push_back(std::move(desc));
  return static_cast<uint32_t>(table->size() - 1);
}

}  // namespace

absl::StatusOr<std::unique_ptr<NetdevSource>> NetdevSource::Create(
    SysfsReader* reader) {
  return Create(reader, Options());
}

class NetdevSource::Regex {
 public:
  Regex() = default;
  ~Regex() {
    if (compiled_) regfree(&re_);
  }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  absl::Status Compile(const std::string& pattern) {
    int rc = regcomp(&re_, pattern.c_str(), REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char msg[256];
      regerror(rc, &re_, msg, sizeof(msg));
      return absl::InvalidArgumentError(
          absl::StrCat("bad netdev exclude regex \"", pattern, "\": ", msg));
    }
    compiled_ = true;
    return absl::OkStatus();
  }
  bool Search(const std::string& text) const {
    return regexec(&re_, text.c_str(), 0, nullptr, 0) == 0;
  }

 private:
  regex_t re_;
  bool compiled_ = false;
};

absl::StatusOr<std::unique_ptr<NetdevSource>> NetdevSource::Create(
    SysfsReader* reader, Options options) {
  std::unique_ptr<Regex> exclude;
  if (!options.exclude_regex.empty()) {
    exclude = std::make_unique<Regex>();
    absl::Status st = exclude->Compile(options.exclude_regex);
    if (!st.ok()) return st;
  }
  return std::unique_ptr<NetdevSource>(
      new NetdevSource(reader, std::move(options), std::move(exclude)));
}

NetdevSource::NetdevSource(SysfsReader* reader, Options options,
                           std::unique_ptr<Regex> exclude)
    : reader_(reader),
      options_(std::move(options)),
      exclude_(std::move(exclude)) {}

NetdevSource::~NetdevSource() = default;

bool NetdevSource::Excluded(const std::string& netdev) {
  auto it = excluded_.find(netdev);
  if (it != excluded_.end()) return it->second;
  bool excluded = exclude_ != nullptr && exclude_->Search(netdev);
  excluded_.emplace(netdev, excluded);
  return excluded;
}

SourceStatus NetdevSource::Collect(Snapshot* snapshot) {
  SourceStatus status;
  status.source = std::string(name());
  ++calls_;

  absl::StatusOr<std::vector<std::string>> names =
      reader_->ListDir(kNetDir);  // no per-entry stat: see Excluded()
  if (!names.ok()) {
    netdevs_.clear();
    if (names.status().code() != absl::StatusCode::kNotFound) {
      RecordSourceError(&status, names.status());
    }
    return status;
  }
  // Interface names churn (a veth per container): keep the exclude cache to
  // the names that exist now.
  if (excluded_.size() > 2 * names->size() + 64) {
    absl::flat_hash_map<std::string, bool> kept;
    for (const std::string& n : *names) {
      auto it = excluded_.find(n);
      if (it != excluded_.end()) kept.emplace(n, it->second);
    }
    excluded_ = std::move(kept);
  }
  for (auto it = netdevs_.begin(); it != netdevs_.end();) {
    if (!std::binary_search(names->begin(), names->end(), it->first)) {
      it = netdevs_.erase(it);  // closes its descriptors
    } else {
      ++it;
    }
  }

  for (const std::string& netdev : *names) {
    if (Excluded(netdev)) continue;
    auto known = netdevs_.find(netdev);
    if (known == netdevs_.end() &&
        !reader_->IsDir(absl::StrCat(kNetDir, "/", netdev))) {
      // class/net/bonding_masters is a file; a dangling link is a netdev
      // being torn down. Neither is an interface. Known interfaces skip
      // this check, so the cost is one open per non-interface entry.
      continue;
    }
    NetdevLayout& layout = netdevs_[netdev];
    if (layout.scanned_at_call == 0 || layout.needs_rescan ||
        calls_ - layout.scanned_at_call >=
            static_cast<uint64_t>(std::max(1, options_.rescan_every_n_calls))) {
      AttributeRecycler recycler(reader_);
      Recycle(&layout, &recycler);
      layout = Scan(netdev, &recycler, &status);
    }
    CollectNetdev(netdev, &layout, snapshot, &status);
  }
  return status;
}

void NetdevSource::Recycle(NetdevLayout* layout, AttributeRecycler* recycler) {
  for (CounterFile& c : layout->statistics) recycler->Add(std::move(c.file));
  for (CounterFile& c : layout->flap_counters) recycler->Add(std::move(c.file));
  recycler->Add(std::move(layout->mtu.file));
  recycler->Add(std::move(layout->carrier.file));
  recycler->Add(std::move(layout->speed));
  recycler->Add(std::move(layout->operstate));
}

NetdevSource::NetdevLayout NetdevSource::Scan(const std::string& netdev,
                                              AttributeRecycler* recycler,
                                              SourceStatus* status) {
  NetdevLayout layout;
  layout.scanned_at_call = calls_;
  auto table = std::make_shared<std::vector<SeriesDesc>>();
  const std::string dir = absl::StrCat(kNetDir, "/", netdev, "/");
  absl::StatusOr<std::vector<std::string>> stats =
      reader_->ListFiles(dir + "statistics");
  if (stats.ok()) {
    for (std::string& name : *stats) {
      SeriesDesc d = DescribeCounter(Subsystem::kNetdevStatistics,
                                     counters::Driver::kAny, netdev, 0, name);
      layout.statistics.push_back(
          {recycler->Attribute(absl::StrCat(dir, "statistics/", name)),
           Append(table.get(), std::move(d))});
    }
  } else if (stats.status().code() != absl::StatusCode::kNotFound) {
    RecordSourceError(status, stats.status());
  }
  // Attributes that do not exist here (carrier_up_count before Linux 4.16,
  // a fixture without speed) are not planned: a planned file that vanishes
  // later means the interface changed and is worth a rescan.
  absl::StatusOr<std::vector<std::string>> files = reader_->ListFiles(dir);
  auto exists = [&files](absl::string_view name) {
    return files.ok() && std::binary_search(files->begin(), files->end(), name);
  };
  // Counter attributes (carrier_changes, ...): every one the table knows.
  for (const counters::CounterSpec* row : counters::RowsFor(
           counters::Family::kNetdevAttribute, counters::Driver::kAny)) {
    const std::string name(row->name);
    if (!exists(name)) continue;
    SeriesDesc d = DescribeCounter(Subsystem::kNetdevAttribute,
                                   counters::Driver::kAny, netdev, 0, name);
    layout.flap_counters.push_back(
        {recycler->Attribute(dir + name), Append(table.get(), std::move(d))});
  }
  std::vector<SeriesDesc> gauges = NetdevAttributeDescs(netdev);
  if (exists("speed")) layout.speed = recycler->Attribute(dir + "speed");
  layout.speed_desc = Append(table.get(), std::move(gauges[0]));
  if (exists("mtu")) layout.mtu.file = recycler->Attribute(dir + "mtu");
  layout.mtu.desc = Append(table.get(), std::move(gauges[1]));
  if (exists("carrier")) {
    layout.carrier.file = recycler->Attribute(dir + "carrier");
  }
  layout.carrier.desc = Append(table.get(), std::move(gauges[2]));
  if (exists("operstate")) {
    layout.operstate = recycler->Attribute(dir + "operstate");
  }
  layout.table = std::move(table);
  return layout;
}

std::optional<uint64_t> NetdevSource::ReadCounter(CounterFile* counter,
                                                  NetdevLayout* layout,
                                                  SourceStatus* status) {
  if (counter->file.relpath().empty()) return std::nullopt;  // not planned
  CounterRead r =
      InterpretCounterRead(counter->file.relpath(), counter->file.Read(&buf_));
  if (r.result == CounterReadResult::kGone) layout->needs_rescan = true;
  if (r.result == CounterReadResult::kError) RecordSourceError(status, r.error);
  if (r.result != CounterReadResult::kValue) return std::nullopt;
  return r.value;
}

void NetdevSource::CollectNetdev(const std::string& netdev,
                                 NetdevLayout* layout, Snapshot* snapshot,
                                 SourceStatus* status) {
  const std::vector<SeriesDesc>& table = *layout->table;
  snapshot->series_owners.push_back(layout->table);
  for (auto* files : {&layout->statistics, &layout->flap_counters}) {
    for (CounterFile& c : *files) {
      if (std::optional<uint64_t> v = ReadCounter(&c, layout, status)) {
        snapshot->samples.push_back(Sample{&table[c.desc], *v});
      }
    }
  }

  // speed: Mb/s; -1 (SPEED_UNKNOWN), empty or EINVAL while the link is down.
  double speed_bytes_per_second = 0;
  if (!layout->speed.relpath().empty()) {
    const std::string& path = layout->speed.relpath();
    absl::StatusOr<absl::string_view> text = layout->speed.Read(&buf_);
    if (text.ok() && !TrimValue(*text).empty()) {
      absl::StatusOr<int64_t> mbps = ParseI64(*text);
      constexpr int64_t kMaxMbps = static_cast<int64_t>(
          std::numeric_limits<uint64_t>::max() / kBytesPerSecondPerMbps);
      if (!mbps.ok()) {
        RecordSourceError(
            status,
            absl::Status(mbps.status().code(),
                         absl::StrCat(path, ": ", mbps.status().message())));
      } else if (*mbps > kMaxMbps) {
        RecordSourceError(status, absl::OutOfRangeError(absl::StrCat(
                                      path, ": implausible speed ", *mbps)));
      } else if (*mbps >= 0) {
        speed_bytes_per_second =
            static_cast<double>(*mbps) * kBytesPerSecondPerMbps;
        snapshot->samples.push_back(
            Sample{&table[layout->speed_desc],
                   static_cast<uint64_t>(*mbps) * kBytesPerSecondPerMbps});
      }
    } else if (!text.ok()) {
      CounterRead r = InterpretCounterRead(path, text);
      if (r.result == CounterReadResult::kError)
        RecordSourceError(status, r.error);
    }
  }
  if (std::optional<uint64_t> mtu = ReadCounter(&layout->mtu, layout, status)) {
    snapshot->samples.push_back(Sample{&table[layout->mtu.desc], *mtu});
  }
  // carrier: EINVAL while the interface is administratively down.
  if (std::optional<uint64_t> carrier =
          ReadCounter(&layout->carrier, layout, status)) {
    snapshot->samples.push_back(Sample{&table[layout->carrier.desc], *carrier});
  }

  NetdevInfo info;
  info.name = netdev;
  info.speed_bytes_per_second = speed_bytes_per_second;
  if (!layout->operstate.relpath().empty()) {
    absl::StatusOr<absl::string_view> operstate = layout->operstate.Read(&buf_);
    if (operstate.ok()) info.operstate = std::string(TrimValue(*operstate));
  }
  snapshot->netdevs.push_back(std::move(info));
}

}  // namespace fabricdiag::agent
