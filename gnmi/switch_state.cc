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
                        absl::string_view db, int64_t rx_nanos, size_t group) {
  const absl::string_view target =
      notification.prefix().target().empty()
          ? db
          : absl::string_view(notification.prefix().target());
  for (const ::gnmi::Path& path : notification.delete_()) {
    ApplyDelete(notification.prefix(), path, target);
  }
  const Stamp stamp{rx_nanos, notification.timestamp(), group};
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
      SetSpeed(t.device,
               value.type == Scalar::Type::kUnsigned
                   ? static_cast<double>(value.number) * kBytesPerSecondPerMbps
                   : SpeedIdentityBytesPerSecond(value.text),
               false);
      break;
    case Kind::kNegotiatedSpeed:
      SetSpeed(t.device, SpeedIdentityBytesPerSecond(value.text), true);
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
    s.Rebase(stamp);
    s.group = stamp.group;
    return;
  }
  Series& s = it->second;
  if (stamp.group != s.group) {
    // Another group's copy of the leaf, sampled at its own moment: no
    // baseline for a rate while the series' own group still delivers it.
    if (rx_nanos - s.rx_nanos <= handover_nanos_) return;
    s.group = stamp.group;
    s.stale_baseline = true;
    s.per_second.reset();
    s.delta.reset();
  }
  if (s.stale_baseline) {
    s.stale_baseline = false;
    s.base_is_change = false;
    s.raw = value.number;
    s.rx_nanos = rx_nanos;
    s.Rebase(stamp);
    return;
  }
  if (rx_nanos <= s.rx_nanos) {
    // The same instant (one notification repeating a leaf): the latest
    // value wins, the rate stays.
    s.raw = value.number;
    return;
  }
  if (s.desc->kind != agent::Kind::kCounter) {
    s.raw = value.number;
    s.rx_nanos = rx_nanos;
    s.Rebase(stamp);
    return;
  }
  const int64_t since_sample = rx_nanos - s.rx_nanos;
  const int64_t since_change = rx_nanos - s.base_rx_nanos;
  const bool moving = s.per_second.value_or(0) > 0;
  s.rx_nanos = rx_nanos;
  if (value.number == s.raw) {
    // A moving counter that did not move: the switch has not polled it
    // since (SONiC polls port statistics every second, queues and PFC
    // every ten). The rate holds; the baseline stays at the last change.
    s.repeated = true;
    if (moving && s.cadence_nanos > 0 &&
        2 * since_change < 3 * s.cadence_nanos) {
      return;
    }
    s.delta = 0;
    s.per_second = 0;
    return;
  }
  bool wrapped = false;
  std::optional<uint64_t> delta =
      agent::CounterDelta(s.raw, value.number, s.desc->width_bits, &wrapped);
  s.raw = value.number;
  if (!delta.has_value()) {
    ++resets_;
    s.reset_pending = true;
    s.per_second.reset();
    s.delta.reset();
    s.base_is_change = false;
    s.Rebase(stamp);
    return;
  }
  // The time the increase accrued over (the class comment, "Refresh
  // cadence").
  const int64_t max_refresh = absl::ToInt64Nanoseconds(kMaxRefresh);
  int64_t received = since_sample;
  if (moving || (s.cadence_nanos == 0 && s.base_is_change &&
                 since_change <= max_refresh)) {
    received = since_change;
  } else if (s.cadence_nanos > 0) {
    received = std::min(since_change, std::max(since_sample, s.cadence_nanos));
  }
  const int64_t cadence = s.cadence_nanos;
  if (s.base_is_change && (moving || s.cadence_nanos == 0) &&
      since_change <= max_refresh) {
    s.cadence_nanos = since_change;
  }
  // Both timestamps positive: their difference cannot overflow. They span
  // the time since the last change, so they count only for a rate over it.
  const bool stamped_both = received == since_change &&
                            s.base_timestamp_nanos > 0 &&
                            stamp.timestamp_nanos > 0;
  const int64_t stamped =
      stamped_both ? stamp.timestamp_nanos - s.base_timestamp_nanos : 0;
  const bool stamps_count =
      stamped > received &&
      stamped - received <= absl::ToInt64Nanoseconds(kMaxTimestampLead);
  int64_t span = stamps_count ? stamped : received;
  if (moving && s.repeated && cadence > 0 && received == since_change) {
    // One poll's increase (the class comment, "A polled counter's change").
    const bool after_late =
        4 * s.last_span_nanos > 5 * cadence && 2 * span >= cadence;
    const bool one_poll = 4 * span >= 3 * cadence && 2 * span < 3 * cadence;
    s.last_span_nanos = span;
    if (one_poll || after_late) {
      s.cadence_nanos = cadence + (span - cadence) / 8;
      span = cadence;
    }
  } else {
    s.last_span_nanos = span;
  }
  const double seconds = static_cast<double>(span) / 1e9;
  const double per_second = s.desc->BaseValue(*delta) / seconds;
  if (Possible(s, device, per_second)) {
    s.delta = *delta;
    s.per_second = per_second;
    s.wrapped = s.wrapped || wrapped;
  } else {
    s.delta.reset();
    s.per_second.reset();
  }
  s.base_is_change = true;
  s.Rebase(stamp);
}

void SwitchState::Series::Rebase(const Stamp& stamp) {
  base_rx_nanos = stamp.rx_nanos;
  base_timestamp_nanos = stamp.timestamp_nanos;
  repeated = false;
}

void SwitchState::SetSpeed(absl::string_view device, double bytes_per_second,
                           bool negotiated) {
  Port& port = ports_[std::string(device)];
  (negotiated ? port.negotiated_speed : port.speed) = bytes_per_second;
  port.fastest = std::max(port.fastest, bytes_per_second);
}

bool SwitchState::Possible(const Series& s, absl::string_view device,
                           double per_second) {
  if (s.desc->unit != "bytes") return true;
  auto it = ports_.find(device);
  // A port that never said its speed (or said SPEED_UNKNOWN) has no limit
  // we know of.
  if (it == ports_.end() || it->second.fastest <= 0) return true;
  if (per_second <= it->second.fastest * kLineRateSlack) return true;
  CountError("above_line_rate");
  return false;
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
