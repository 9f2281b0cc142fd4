#include "gnmi/switch_state.h"

#include <algorithm>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "counters/counter_table.h"

namespace fabricdiag::gnmi {
namespace {

using Kind = LeafTarget::Kind;

// SONiC PORT_TABLE `speed` is in Mb/s.
constexpr double kBytesPerSecondPerMbps = 1e6 / 8;

// The port a deleted path names, or "" when it names none: OpenConfig
// interface[name=P], SONiC COUNTERS/P or PORT_TABLE/P (a concrete name, not
// a wildcard).
absl::string_view DeletedPort(Dialect dialect, const PathView& p) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (dialect == Dialect::kOpenConfig) {
      absl::string_view name = p[i].Key("name");
      if (name.empty()) name = p[i].Key("interface-id");
      if (!name.empty() && ElemName(p[i].name) == "interface") return name;
    } else if (i > 0 && !absl::StrContains(p[i].name, '*') &&
               (p[0].name == "COUNTERS" || p[0].name == "PORT_TABLE")) {
      return p[i].name;
    }
  }
  return {};
}

// Series descriptions shared by every switch of the process: the switches
// of a fabric name their ports alike (Ethernet0, ...), so 1,500 switches
// of 64 ports need one description per (dialect, port, series), not one
// per switch. Entries live while a switch uses them; expired ones are
// dropped whenever the table has doubled since the last sweep.
class DescCache {
 public:
  static DescCache& Get() {
    static auto* const cache = new DescCache();
    return *cache;
  }

  template <typename Make>
  std::shared_ptr<const agent::SeriesDesc> Find(Dialect dialect,
                                                absl::string_view device,
                                                absl::string_view name,
                                                const Make& make) {
    std::string key =
        absl::StrCat(DialectName(dialect), "|", device, "|", name);
    std::lock_guard<std::mutex> lock(mu_);
    std::weak_ptr<const agent::SeriesDesc>& slot = table_[key];
    std::shared_ptr<const agent::SeriesDesc> desc = slot.lock();
    if (desc == nullptr) {
      desc = make();
      slot = desc;
      if (table_.size() >= 2 * swept_size_) {
        absl::erase_if(
            table_, [](const auto& entry) { return entry.second.expired(); });
        swept_size_ = std::max<size_t>(table_.size(), 1024);
      }
    }
    return desc;
  }

 private:
  std::mutex mu_;
  absl::flat_hash_map<std::string, std::weak_ptr<const agent::SeriesDesc>>
      table_;
  size_t swept_size_ = 1024;
};

}  // namespace

void SwitchState::Apply(const ::gnmi::Notification& notification,
                        absl::string_view db, int64_t rx_nanos) {
  const absl::string_view target =
      notification.prefix().target().empty()
          ? db
          : absl::string_view(notification.prefix().target());
  for (const ::gnmi::Path& path : notification.delete_()) {
    ApplyDelete(notification.prefix(), path, target);
  }
  const Stamp stamp{rx_nanos, notification.timestamp()};
  for (const ::gnmi::Update& update : notification.update()) {
    ApplyUpdate(update, notification.prefix(), target, stamp);
  }
}

void SwitchState::ApplyUpdate(const ::gnmi::Update& update,
                              const ::gnmi::Path& prefix, absl::string_view db,
                              Stamp stamp) {
  path_.Truncate(0);
  path_.Append(prefix);
  path_.Append(update.path());
  const DecodeStatus status = DecodeValue(
      update.val(), &path_, [&](const PathView& leaf, const Scalar& value) {
        ApplyLeaf(db, leaf, value, stamp);
      });
  if (status != DecodeStatus::kOk) CountError(DecodeStatusName(status));
}

void SwitchState::ApplyLeaf(absl::string_view db, const PathView& path,
                            const Scalar& value, Stamp stamp) {
  const LeafTarget t = MapLeaf(dialect_, db, path, oids_, &name_);
  switch (t.kind) {
    case Kind::kIgnored:
      return;
    case Kind::kBadPath:
      CountError("bad_path");
      return;
    case Kind::kSeries:
      ApplySeries(t.device, t.last_clear, value, stamp);
      return;
    case Kind::kOperStatus:
      ports_[std::string(t.device)].operstate = OperState(value.text);
      break;
    case Kind::kLldp:
      ApplyLldp(t, value);
      break;
    case Kind::kPortSpeed:
      if (value.type == Scalar::Type::kUnsigned) {
        ports_[std::string(t.device)].speed =
            static_cast<double>(value.number) * kBytesPerSecondPerMbps;
      } else {
        ports_[std::string(t.device)].speed =
            SpeedIdentityBytesPerSecond(value.text);
      }
      break;
    case Kind::kNegotiatedSpeed:
      ports_[std::string(t.device)].negotiated_speed =
          SpeedIdentityBytesPerSecond(value.text);
      break;
    case Kind::kBootTime: {
      const std::string boot = value.type == Scalar::Type::kUnsigned
                                   ? std::to_string(value.number)
                                   : std::string(value.text);
      if (!boot_time_.empty() && boot != boot_time_) {
        reload_ = true;
        ResetSeries("", stamp.rx_nanos);
      }
      boot_time_ = boot;
      break;
    }
    case Kind::kPortOid: {
      const std::string oid(value.text);
      const std::string port(t.device);
      auto it = oids_.find(oid);
      if (it == oids_.end() || it->second != port) {
        oids_[oid] = port;
        // Series keyed by the object id before the map arrived.
        for (auto s = series_.begin(); s != series_.end();) {
          s = s->first.first == oid ? series_.erase(s) : std::next(s);
        }
        ports_.erase(oid);
      }
      break;
    }
  }
  ++updates_;
  last_update_nanos_ = stamp.rx_nanos;
}

void SwitchState::ApplySeries(absl::string_view device, bool last_clear,
                              const Scalar& value, Stamp stamp) {
  const int64_t rx_nanos = stamp.rx_nanos;
  switch (value.type) {
    case Scalar::Type::kUnsigned:
      break;
    case Scalar::Type::kOutOfRange:
      CountError("out_of_range");
      return;
    case Scalar::Type::kNegative:
      CountError("negative");
      return;
    default:
      CountError("not_a_number");
      return;
  }
  ++updates_;
  last_update_nanos_ = rx_nanos;
  if (last_clear) {
    Port& port = ports_[std::string(device)];
    const std::string clear = std::to_string(value.number);
    if (!port.last_clear.empty() && port.last_clear != clear) {
      ResetSeries(device, rx_nanos);
    }
    port.last_clear = clear;
  }
  auto it = series_.find(KeyView(device, name_));
  if (it == series_.end()) {
    Series& s = series_[Key(std::string(device), name_)];
    s.desc = Describe(device, name_);
    s.raw = value.number;
    s.rx_nanos = rx_nanos;
    s.timestamp_nanos = stamp.timestamp_nanos;
    return;
  }
  Series& s = it->second;
  if (s.stale_baseline) {
    s.stale_baseline = false;
    s.raw = value.number;
    s.rx_nanos = rx_nanos;
    s.timestamp_nanos = stamp.timestamp_nanos;
    return;
  }
  if (rx_nanos <= s.rx_nanos) {
    // The same instant (one notification repeating a leaf): the latest
    // value wins, the rate stays.
    s.raw = value.number;
    return;
  }
  if (s.desc->kind == agent::Kind::kCounter) {
    bool wrapped = false;
    std::optional<uint64_t> delta =
        agent::CounterDelta(s.raw, value.number, s.desc->width_bits, &wrapped);
    if (!delta.has_value()) {
      ++resets_;
      s.reset_pending = true;
      s.per_second.reset();
      s.delta.reset();
    } else {
      const int64_t received = rx_nanos - s.rx_nanos;
      // Both timestamps positive: their difference cannot overflow.
      const bool stamped_both =
          s.timestamp_nanos > 0 && stamp.timestamp_nanos > 0;
      const int64_t stamped =
          stamped_both ? stamp.timestamp_nanos - s.timestamp_nanos : 0;
      const bool stamps_count =
          stamped > received &&
          stamped - received <= absl::ToInt64Nanoseconds(kMaxTimestampLead);
      const double seconds =
          static_cast<double>(stamps_count ? stamped : received) / 1e9;
      s.delta = *delta;
      s.per_second = s.desc->BaseValue(*delta) / seconds;
      s.wrapped = s.wrapped || wrapped;
    }
  }
  s.raw = value.number;
  s.rx_nanos = rx_nanos;
  s.timestamp_nanos = stamp.timestamp_nanos;
}

void SwitchState::ResetSeries(absl::string_view device, int64_t rx_nanos) {
  ++resets_;
  for (auto& [key, s] : series_) {
    if (!device.empty() && key.first != device) continue;
    s.reset_pending = true;
    s.per_second.reset();
    s.delta.reset();
    // A value of this very notification is already counted from the reset;
    // an older one is not.
    s.stale_baseline = s.rx_nanos != rx_nanos;
  }
}

void SwitchState::ApplyLldp(const LeafTarget& t, const Scalar& value) {
  // A SONiC hash holds strings; an OpenConfig target may send a numeric
  // port id as a number.
  const std::string number =
      value.type == Scalar::Type::kUnsigned && value.text.empty()
          ? std::to_string(value.number)
          : std::string();
  const LldpTable::SetResult r =
      lldp_.Set(t.device, t.neighbor, t.lldp_field,
                number.empty() ? value.text : absl::string_view(number));
  if (r.truncated) CountError("lldp_truncated");
  if (r.refused) CountError("lldp_too_many");
}

bool SwitchState::ApplyLldpDelete(absl::string_view db, const PathView& p) {
  if (p.empty()) return false;
  if (dialect_ == Dialect::kSonic) {
    if (db != "APPL_DB" || p[0].name != "LLDP_ENTRY_TABLE") return false;
    size_t i = 1;
    if (i < p.size() && absl::StrContains(p[i].name, '*')) ++i;
    if (i >= p.size()) {
      lldp_.Remove("", "");  // the whole table
    } else if (i + 1 == p.size()) {
      lldp_.Remove(p[i].name, "");
    } else {
      const LeafTarget t = MapLeaf(dialect_, db, p, oids_, &name_);
      if (t.kind == Kind::kLldp) lldp_.Set(t.device, "", t.lldp_field, "");
    }
    return true;
  }
  if (ElemName(p[0].name) != "lldp") return false;
  const LeafTarget t = MapLeaf(dialect_, db, p, oids_, &name_);
  if (t.kind == Kind::kLldp) {
    lldp_.Set(t.device, t.neighbor, t.lldp_field, "");
    return true;
  }
  // Only a deleted container or list entry removes neighbors: the whole
  // of /lldp, an interface, its neighbors, one neighbor. Other deletes
  // (global state, a neighbor's capabilities or TLVs) leave them.
  const absl::string_view last = ElemName(p[p.size() - 1].name);
  if (last != "lldp" && last != "interfaces" && last != "interface" &&
      last != "neighbors" && last != "neighbor") {
    return true;
  }
  absl::string_view port;
  absl::string_view neighbor;
  for (size_t i = 1; i < p.size(); ++i) {
    const absl::string_view name = ElemName(p[i].name);
    if (name == "interface") port = p[i].Key("name");
    if (name == "neighbor") neighbor = p[i].Key("id");
  }
  // An interface or neighbor without its key is every one of them.
  if (port.empty() && p.size() >= 3) {
    lldp_.Remove("", "");
    return true;
  }
  lldp_.Remove(port, neighbor);
  return true;
}

void SwitchState::ApplyDelete(const ::gnmi::Path& prefix,
                              const ::gnmi::Path& path, absl::string_view db) {
  PathView p;
  p.Append(prefix);
  p.Append(path);
  // Before the port deletes below: an LLDP interface names a port too, and
  // its neighbor going away leaves the port's counters.
  if (ApplyLldpDelete(db, p)) return;
  const LeafTarget t = MapLeaf(dialect_, db, p, oids_, &name_);
  if (t.kind == Kind::kSeries) {
    series_.erase(Key(std::string(t.device), name_));
    return;
  }
  const std::string port(DeletedPort(dialect_, p));
  if (port.empty()) return;
  for (auto s = series_.begin(); s != series_.end();) {
    s = s->first.first == port ? series_.erase(s) : std::next(s);
  }
  ports_.erase(port);
}

std::shared_ptr<const agent::SeriesDesc> SwitchState::Describe(
    absl::string_view device, const std::string& name) {
  return DescCache::Get().Find(
      dialect_, device, name, [&] { return MakeDesc(dialect_, device, name); });
}

std::shared_ptr<const agent::SeriesDesc> SwitchState::MakeDesc(
    Dialect dialect, absl::string_view device, const std::string& name) {
  const counters::Family family = dialect == Dialect::kSonic
                                      ? counters::Family::kGnmiSonic
                                      : counters::Family::kGnmiOpenConfig;
  const counters::CounterInfo info =
      counters::Classify(family, counters::Driver::kUnknown, name);
  auto desc = std::make_shared<agent::SeriesDesc>();
  desc->subsystem = agent::Subsystem::kGnmi;
  desc->width_bits = info.width_bits;
  desc->kind = info.kind;
  desc->meaning = info.meaning;
  desc->direction = info.direction;
  desc->priority = info.priority;
  desc->scale = info.scale;
  desc->device = std::string(device);
  desc->name = name;
  desc->unit = info.unit;
  return desc;
}

void SwitchState::Build(int64_t now_nanos, absl::Time wall,
                        absl::Duration stale_after, agent::Snapshot* snapshot,
                        std::vector<agent::SampleRate>* rates) {
  snapshot->wall_time = wall;
  snapshot->monotonic_nanos = now_nanos;
  const int64_t oldest = now_nanos - absl::ToInt64Nanoseconds(stale_after);
  std::map<std::string, agent::NetdevInfo> netdevs;
  for (auto& [key, s] : series_) {
    if (s.rx_nanos < oldest) continue;
    snapshot->samples.emplace_back(s.desc.get(), s.raw);
    snapshot->series_owners.push_back(s.desc);
    agent::SampleRate r;
    r.per_second = s.per_second;
    r.delta = s.delta;
    r.reset = s.reset_pending;
    r.wrapped = s.wrapped;
    s.reset_pending = false;
    s.wrapped = false;
    rates->push_back(r);
    netdevs[key.first].name = key.first;
  }
  for (const auto& [name, port] : ports_) {
    auto it = netdevs.find(name);
    if (it == netdevs.end()) continue;  // attributes alone: no port yet
    it->second.operstate = port.operstate;
    it->second.speed_bytes_per_second =
        port.negotiated_speed > 0 ? port.negotiated_speed : port.speed;
  }
  for (auto& [name, info] : netdevs) {
    snapshot->netdevs.push_back(std::move(info));
  }
  snapshot->lldp = LldpSnapshot();
}

void SwitchState::StartLldp() {
  lldp_.Clear();
  lldp_synced_ = false;
}

std::shared_ptr<const agent::LldpState> SwitchState::LldpSnapshot() {
  if (lldp_state_ != nullptr && lldp_state_->up == lldp_synced_ &&
      lldp_built_generation_ == lldp_.generation()) {
    return lldp_state_;
  }
  auto state = std::make_shared<agent::LldpState>();
  state->source = "gnmi";
  state->up = lldp_synced_;
  state->set.neighbors = lldp_.Complete();
  state->set.version = lldp_state_ == nullptr ? 1 : lldp_state_->set.version;
  if (lldp_state_ != nullptr &&
      state->set.neighbors != lldp_state_->set.neighbors) {
    ++state->set.version;
  }
  state->issues.missing_field = lldp_.incomplete();
  lldp_neighbor_count_ = state->set.neighbors.size();
  lldp_built_generation_ = lldp_.generation();
  lldp_state_ = std::move(state);
  return lldp_state_;
}

bool SwitchState::TakeReload() {
  const bool reload = reload_;
  reload_ = false;
  return reload;
}

}  // namespace fabricdiag::gnmi
