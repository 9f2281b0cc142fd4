#include "agent/report_encoder.h"

#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "agent/gpu_nic_pairing.h"
#include "agent/lldp_neighbor.h"
#include "common/status_macros.h"
#include "counters/wire.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace fabricdiag::agent {
namespace {

bool ValidSeries(const SeriesDesc& d) {
  return !d.device.empty() &&
         d.device.size() <= ReportEncoder::kMaxDeviceBytes && !d.name.empty() &&
         d.name.size() <= ReportEncoder::kMaxNameBytes &&
         d.unit.size() <= ReportEncoder::kMaxUnitBytes && d.width_bits >= 1 &&
         d.width_bits <= 64 && std::isfinite(d.scale) && d.priority >= -1 &&
         d.priority <= 7;
}

void FillSeries(const SeriesDesc& d, v1::Series* series) {
  series->set_subsystem(counters::ToWire(d.subsystem));
  series->set_device(d.device);
  series->set_port(d.port);
  series->set_name(d.name);
  series->set_unit(d.unit);
  series->set_kind(counters::ToWire(d.kind));
  series->set_width_bits(d.width_bits);
  series->set_scale(d.scale);
  series->set_meaning(counters::ToWire(d.meaning));
  series->set_direction(counters::ToWire(d.direction));
  series->set_priority(d.priority);
}

// True when `series` describes `d` exactly (key and metadata).
bool SameSeries(const v1::Series& series, const SeriesDesc& d) {
  return series.subsystem() == counters::ToWire(d.subsystem) &&
         series.port() == d.port && series.device() == d.device &&
         series.name() == d.name && series.unit() == d.unit &&
         series.kind() == counters::ToWire(d.kind) &&
         series.width_bits() == d.width_bits && series.scale() == d.scale &&
         series.meaning() == counters::ToWire(d.meaning) &&
         series.direction() == counters::ToWire(d.direction) &&
         series.priority() == d.priority;
}

std::string Truncate(const std::string& s, size_t max) {
  return s.size() <= max ? s : s.substr(0, max);
}

// The neighbor set only when the last read succeeded: a failed read (or an
// absent lldpd) says nothing about the cabling, and an empty lldp_source
// tells the collector to keep what it knew. The set is already sorted and
// capped by the monitor (kLldpMaxNeighbors), so an unchanged set encodes to
// the same bytes and triggers no new inventory.
void AddLldp(const Snapshot& snapshot, v1::Inventory* inv) {
  if (snapshot.lldp == nullptr || !snapshot.lldp->up) return;
  inv->set_lldp_source(snapshot.lldp->source);
  for (const LldpNeighbor& n : snapshot.lldp->set.neighbors) {
    v1::LldpNeighbor* p = inv->add_lldp_neighbors();
    p->set_local_port(n.netdev);
    p->set_system_name(n.system_name);
    p->set_chassis_id(n.chassis_id);
    p->set_chassis_id_type(n.chassis_id_type);
    p->set_port_id(n.port_id);
    p->set_port_id_type(n.port_id_type);
    p->set_port_description(n.port_description);
    p->set_management_address(n.management_address);
  }
}

// The pairs only when the walk read the PCI tree: a failed walk leaves
// gpus_read false and the collector keeps the pairs it knew.
void AddGpuNics(const Snapshot& snapshot, v1::Inventory* inv) {
  if (!snapshot.gpus_read) return;
  inv->set_gpus_read(true);
  for (const GpuNicPair& g : snapshot.gpu_nics) {
    v1::GpuNic* p = inv->add_gpu_nics();
    p->set_gpu(static_cast<uint32_t>(g.gpu));
    p->set_gpu_pci(g.gpu_pci);
    p->set_device(g.device);
    p->set_netdev(g.netdev);
    p->set_distance(std::string(PcieDistanceName(g.distance)));
  }
}

v1::Inventory BuildInventory(const Snapshot& snapshot) {
  v1::Inventory inv;
  for (const RdmaDeviceInfo& d : snapshot.rdma_devices) {
    v1::RdmaDevice* p = inv.add_rdma_devices();
    p->set_name(d.name);
    p->set_fw_ver(d.fw_ver);
    p->set_board_id(d.board_id);
    p->set_hca_type(d.hca_type);
    p->set_node_guid(d.node_guid);
    for (const std::string& n : d.netdevs) p->add_netdevs(n);
  }
  for (const RdmaPortInfo& r : snapshot.rdma_ports) {
    v1::RdmaPort* p = inv.add_rdma_ports();
    p->set_device(r.device);
    p->set_port(r.port);
    p->set_state_id(r.state_id);
    p->set_state(r.state);
    p->set_phys_state_id(r.phys_state_id);
    p->set_phys_state(r.phys_state);
    // 0 on the wire means unknown; a NaN would poison the collector's math.
    if (r.rate_bytes_per_second && std::isfinite(*r.rate_bytes_per_second)) {
      p->set_rate_bytes_per_second(*r.rate_bytes_per_second);
    }
    p->set_rate_text(r.rate_text);
    p->set_link_layer(r.link_layer);
    for (const std::string& n : r.netdevs) p->add_netdevs(n);
  }
  for (const NetdevInfo& n : snapshot.netdevs) {
    v1::Netdev* p = inv.add_netdevs();
    p->set_name(n.name);
    p->set_operstate(n.operstate);
    p->set_rdma_device(n.rdma_device);
    p->set_rdma_port(n.rdma_port);
    p->set_speed_bytes_per_second(n.speed_bytes_per_second);
  }
  for (const VerbsPortInfo& v : snapshot.verbs_ports) {
    v1::VerbsPort* p = inv.add_verbs_ports();
    p->set_device(v.device);
    p->set_port(v.port);
    p->set_state(v.state);
    p->set_active_mtu_bytes(v.active_mtu_bytes);
    p->set_active_width_lanes(v.active_width_lanes);
    p->set_lane_gbps(std::isfinite(v.lane_gbps) ? v.lane_gbps : 0);
    p->set_expected_rate_bytes_per_second(
        std::isfinite(v.expected_rate_bytes_per_second)
            ? v.expected_rate_bytes_per_second
            : 0);
    p->set_link_layer(v.link_layer);
  }
  AddLldp(snapshot, &inv);
  AddGpuNics(snapshot, &inv);
  return inv;
}

// One SourceHealth per source, with bounded strings.
void AddSourceHealth(const Snapshot& snapshot, v1::Report* report) {
  for (const SourceStatus& st : snapshot.sources) {
    v1::SourceHealth* h = report->add_sources();
    h->set_source(Truncate(st.source, ReportEncoder::kMaxNameBytes));
    h->set_ok(st.ok);
    h->set_errors(st.errors < 0 ? 0u : static_cast<uint32_t>(st.errors));
    h->set_duration_nanos(absl::ToInt64Nanoseconds(st.duration));
    if (!st.ok) {
      h->set_last_error(Truncate(st.last_error, ReportEncoder::kMaxErrorBytes));
    }
  }
}

}  // namespace

absl::StatusOr<EncodedReport> ReportEncoder::Encode(
    const Snapshot& snapshot, const std::vector<SampleRate>& rates) {
  if (rates.size() != snapshot.samples.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReportEncoder: ", rates.size(), " rates for ",
                     snapshot.samples.size(), " samples"));
  }
  EncodedReport out;
  Selection sel;
  if (SameDescriptionsAsLastReport(snapshot)) {
    ReuseLastSelection(snapshot, &sel, &out);
  } else {
    RETURN_IF_ERROR(SelectSamples(snapshot, &sel, &out));
  }
  RememberDescriptions(snapshot, sel.kept, sel.positions);

  v1::Report& report = out.report;
  report.set_schema_id(schema_.schema_id());
  report.set_wall_time_unix_nanos(absl::ToUnixNanos(snapshot.wall_time));
  report.set_monotonic_nanos(snapshot.monotonic_nanos);
  AddValues(snapshot, rates, sel, &report);
  AddSourceHealth(snapshot, &report);
  UpdateInventory(snapshot, &out);
  return out;
}

void ReportEncoder::StartNewSchema(const Snapshot& snapshot, Selection* sel,
                                   EncodedReport* out) {
  NewSchema(snapshot, sel->kept);
  out->new_schema = schema_;
  sel->positions.resize(sel->kept.size());
  for (size_t i = 0; i < sel->kept.size(); ++i) {
    sel->positions[i] = static_cast<uint32_t>(i);
  }
  sel->present.assign(sel->kept.size(), true);
}

void ReportEncoder::ReuseLastSelection(const Snapshot& snapshot, Selection* sel,
                                       EncodedReport* out) {
  // Steady state: the sources described the same series with the same
  // (immutable) description objects in the same order, so validity,
  // duplicates and schema positions are what they were.
  sel->kept = last_kept_;
  sel->positions = last_positions_;
  skipped_samples_ += last_skipped_;
  sel->present.assign(static_cast<size_t>(schema_.series_size()), false);
  for (uint32_t p : sel->positions) sel->present[p] = true;
  if (!CommitAbsences(sel->present)) StartNewSchema(snapshot, sel, out);
}

absl::Status ReportEncoder::SelectSamples(const Snapshot& snapshot,
                                          Selection* sel, EncodedReport* out) {
  // Valid samples, first occurrence of each key only.
  sel->kept.reserve(snapshot.samples.size());
  uint64_t skipped = 0;
  {
    absl::flat_hash_set<KeyView> seen;
    seen.reserve(snapshot.samples.size());
    for (size_t i = 0; i < snapshot.samples.size(); ++i) {
      const SeriesDesc& d = *snapshot.samples[i].desc;
      if (!ValidSeries(d) ||
          !seen.emplace(static_cast<int>(d.subsystem), d.device, d.port, d.name)
               .second) {
        ++skipped;
        continue;
      }
      sel->kept.push_back(i);
    }
  }
  if (sel->kept.size() > kMaxSeries) {
    return absl::ResourceExhaustedError(
        absl::StrCat("ReportEncoder: snapshot has ", sel->kept.size(),
                     " series; at most ", kMaxSeries, " are supported"));
  }
  skipped_samples_ += skipped;
  if (!MapToSchema(snapshot, sel->kept, &sel->positions, &sel->present)) {
    StartNewSchema(snapshot, sel, out);
  }
  last_skipped_ = skipped;
  return absl::OkStatus();
}

void ReportEncoder::AddValues(const Snapshot& snapshot,
                              const std::vector<SampleRate>& rates,
                              const Selection& sel, v1::Report* report) {
  // Gather per schema index, then emit the parallel arrays in index order.
  const size_t n = static_cast<size_t>(schema_.series_size());
  report->mutable_raw()->Resize(static_cast<int>(n), 0);
  std::vector<const SampleRate*> rate_of(n, nullptr);
  std::vector<uint8_t> saturated(n, 0);
  for (size_t k = 0; k < sel.kept.size(); ++k) {
    const uint32_t idx = sel.positions[k];
    const Sample& s = snapshot.samples[sel.kept[k]];
    report->set_raw(static_cast<int>(idx), s.raw);
    rate_of[idx] = &rates[sel.kept[k]];
    saturated[idx] = s.saturated;
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (!sel.present[i]) report->add_absent(i);
    const SampleRate* r = rate_of[i];
    bool has_rate = r != nullptr && r->per_second.has_value();
    if (has_rate && !std::isfinite(*r->per_second)) {
      ++invalid_rates_;
      has_rate = false;
    }
    if (has_rate) {
      report->add_rate(*r->per_second);
    } else {
      report->add_no_rate(i);
    }
    if (r != nullptr && r->reset) report->add_reset(i);
    if (saturated[i]) report->add_saturated(i);
    if (r != nullptr && r->wrapped) report->add_wrapped(i);
  }
}

void ReportEncoder::UpdateInventory(const Snapshot& snapshot,
                                    EncodedReport* out) {
  v1::Inventory inventory = BuildInventory(snapshot);
  std::string serialized;
  // Deterministic so that equal inventories serialize to equal bytes.
  {
    google::protobuf::io::StringOutputStream raw_out(&serialized);
    google::protobuf::io::CodedOutputStream coded(&raw_out);
    coded.SetSerializationDeterministic(true);
    inventory.SerializeToCodedStream(&coded);
  }
  if (!has_inventory_ || serialized != last_inventory_) {
    has_inventory_ = true;
    last_inventory_ = std::move(serialized);
    out->new_inventory = std::move(inventory);
  }
}

bool ReportEncoder::MapToSchema(const Snapshot& snapshot,
                                const std::vector<size_t>& kept,
                                std::vector<uint32_t>* positions,
                                std::vector<bool>* present) {
  if (!has_schema_) return false;
  const size_t n = static_cast<size_t>(schema_.series_size());
  positions->assign(kept.size(), 0);
  present->assign(n, false);

  // Fast path: the sources listed the same series in the same order as last
  // time (the steady state), so no hashing is needed.
  bool same_order = kept.size() == n;
  for (size_t i = 0; same_order && i < n; ++i) {
    same_order = SameSeries(schema_.series(static_cast<int>(i)),
                            *snapshot.samples[kept[i]].desc);
  }
  if (same_order) {
    for (size_t i = 0; i < n; ++i) (*positions)[i] = static_cast<uint32_t>(i);
    present->assign(n, true);
    absent_streak_.assign(n, 0);
    return true;
  }

  for (size_t k = 0; k < kept.size(); ++k) {
    const SeriesDesc& d = *snapshot.samples[kept[k]].desc;
    auto it = index_.find(
        Key(static_cast<int>(d.subsystem), d.device, d.port, d.name));
    if (it == index_.end()) return false;  // a new series
    if (!SameSeries(schema_.series(static_cast<int>(it->second)), d)) {
      return false;  // metadata changed (driver reload, new width)
    }
    (*positions)[k] = it->second;
    (*present)[it->second] = true;
  }
  return CommitAbsences(*present);
}

bool ReportEncoder::CommitAbsences(const std::vector<bool>& present) {
  const size_t n = present.size();
  for (size_t i = 0; i < n; ++i) {
    if (present[i]) continue;
    if (absent_streak_[i] >= options_.max_absent_reports) return false;
  }
  // Commit the streaks only once the schema is known to be kept.
  for (size_t i = 0; i < n; ++i) {
    absent_streak_[i] = present[i] ? 0 : absent_streak_[i] + 1;
  }
  return true;
}

bool ReportEncoder::SameDescriptionsAsLastReport(
    const Snapshot& snapshot) const {
  if (!has_schema_ || last_schema_mapped_ != schema_.schema_id() ||
      snapshot.samples.size() != last_descs_.size()) {
    return false;
  }
  for (size_t i = 0; i < last_descs_.size(); ++i) {
    if (snapshot.samples[i].desc != last_descs_[i]) return false;
  }
  return true;
}

void ReportEncoder::RememberDescriptions(
    const Snapshot& snapshot, const std::vector<size_t>& kept,
    const std::vector<uint32_t>& positions) {
  // The owners keep the remembered descriptions alive, so that an equal
  // address next time is the same object, never a recycled one.
  last_owners_ = snapshot.series_owners;
  last_descs_.resize(snapshot.samples.size());
  for (size_t i = 0; i < snapshot.samples.size(); ++i) {
    const Sample& s = snapshot.samples[i];
    last_descs_[i] = s.desc;
    if (s.owned != nullptr) last_owners_.push_back(s.owned);
  }
  if (&kept != &last_kept_) last_kept_ = kept;
  if (&positions != &last_positions_) last_positions_ = positions;
  last_schema_mapped_ = schema_.schema_id();
}

void ReportEncoder::NewSchema(const Snapshot& snapshot,
                              const std::vector<size_t>& kept) {
  schema_.Clear();
  schema_.set_schema_id(++last_schema_id_);
  index_.clear();
  index_.reserve(kept.size());
  for (size_t k = 0; k < kept.size(); ++k) {
    const SeriesDesc& d = *snapshot.samples[kept[k]].desc;
    FillSeries(d, schema_.add_series());
    index_.emplace(Key(static_cast<int>(d.subsystem), d.device, d.port, d.name),
                   static_cast<uint32_t>(k));
  }
  absent_streak_.assign(kept.size(), 0);
  has_schema_ = true;
  ++schemas_emitted_;
}

}  // namespace fabricdiag::agent
