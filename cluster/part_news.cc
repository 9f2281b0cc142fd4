#include "cluster/part_news.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag::cluster {
namespace {

// Past this many values in all, a histogram is not a fabric's ports.
constexpr uint64_t kMaxHistogramCount = uint64_t{1} << 48;

void PortsToProto(const std::set<analysis::RateExcuses::Port>& ports,
                  google::protobuf::RepeatedPtrField<std::string>* nodes,
                  google::protobuf::RepeatedPtrField<std::string>* devices) {
  nodes->Reserve(static_cast<int>(ports.size()));
  devices->Reserve(static_cast<int>(ports.size()));
  for (const auto& [node, device] : ports) {
    *nodes->Add() = node;
    *devices->Add() = device;
  }
}

void HistogramToProto(const analysis::CongestionHistogram& h,
                      v1::CongestionHistogramProto* out) {
  out->set_zeros(h.zeros());
  for (const auto& [bucket, count] : h.buckets()) {
    out->add_bucket(bucket);
    out->add_count(count);
  }
}

absl::Status CheckName(const std::string& name, absl::string_view what) {
  if (name.empty() || name.size() > kMaxNewsNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": a name of ", name.size(), " bytes (1 to ",
                     kMaxNewsNameBytes, " allowed)"));
  }
  return absl::OkStatus();
}

absl::Status PortsFromProto(
    const google::protobuf::RepeatedPtrField<std::string>& nodes,
    const google::protobuf::RepeatedPtrField<std::string>& devices,
    absl::string_view what, std::set<analysis::RateExcuses::Port>* out) {
  if (nodes.size() != devices.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", nodes.size(), " nodes but ", devices.size(), " devices"));
  }
  if (static_cast<size_t>(nodes.size()) > kMaxNewsEntries) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", nodes.size(), " ports (at most ", kMaxNewsEntries, ")"));
  }
  for (int i = 0; i < nodes.size(); ++i) {
    if (absl::Status s = CheckName(nodes[i], what); !s.ok()) return s;
    if (absl::Status s = CheckName(devices[i], what); !s.ok()) return s;
    out->emplace(nodes[i], devices[i]);
  }
  return absl::OkStatus();
}

absl::Status HistogramFromProto(const v1::CongestionHistogramProto& wire,
                                absl::string_view what,
                                analysis::CongestionHistogram* out) {
  if (wire.bucket_size() != wire.count_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", wire.bucket_size(), " buckets but ",
                     wire.count_size(), " counts"));
  }
  if (static_cast<size_t>(wire.bucket_size()) > kMaxNewsEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", wire.bucket_size(), " buckets (at most ",
                     kMaxNewsEntries, ")"));
  }
  uint64_t total = wire.zeros();
  if (total > kMaxHistogramCount) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", total, " zeros"));
  }
  for (int i = 0; i < wire.bucket_size(); ++i) {
    if (i > 0 && wire.bucket(i) <= wire.bucket(i - 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": bucket ", wire.bucket(i), " after ",
                       wire.bucket(i - 1), " (buckets ascend, each once)"));
    }
    const uint64_t n = wire.count(i);
    if (n == 0 || n > kMaxHistogramCount - total) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": a count of ", n, " in bucket ", wire.bucket(i),
                       n == 0 ? "" : " (too many values in all)"));
    }
    total += n;
  }
  out->AddZeros(wire.zeros());
  for (int i = 0; i < wire.bucket_size(); ++i) {
    out->AddToBucket(wire.bucket(i), wire.count(i));
  }
  return absl::OkStatus();
}

void ViewToProto(const ViewNews& view, v1::PartViewNews* out) {
  PortsToProto(view.excuses.congestion, out->mutable_congestion_excused_node(),
               out->mutable_congestion_excused_device());
  for (const std::string& node : view.excuses.ecmp) {
    out->add_ecmp_excused(node);
  }
  PortsToProto(view.excuses.straggler, out->mutable_straggler_excused_node(),
               out->mutable_straggler_excused_device());
  HistogramToProto(view.congestion.hosts, out->mutable_host_congestion());
  HistogramToProto(view.congestion.switches, out->mutable_switch_congestion());
}

absl::Status ViewFromProto(const v1::PartViewNews& wire, absl::string_view view,
                           ViewNews* out) {
  if (absl::Status s = PortsFromProto(
          wire.congestion_excused_node(), wire.congestion_excused_device(),
          absl::StrCat(view, ".congestion_excused"), &out->excuses.congestion);
      !s.ok()) {
    return s;
  }
  const std::string ecmp = absl::StrCat(view, ".ecmp_excused");
  if (static_cast<size_t>(wire.ecmp_excused_size()) > kMaxNewsEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat(ecmp, ": ", wire.ecmp_excused_size(), " nodes (at most ",
                     kMaxNewsEntries, ")"));
  }
  for (const std::string& node : wire.ecmp_excused()) {
    if (absl::Status s = CheckName(node, ecmp); !s.ok()) return s;
    out->excuses.ecmp.insert(node);
  }
  if (absl::Status s = PortsFromProto(
          wire.straggler_excused_node(), wire.straggler_excused_device(),
          absl::StrCat(view, ".straggler_excused"), &out->excuses.straggler);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = HistogramFromProto(
          wire.host_congestion(), absl::StrCat(view, ".host_congestion"),
          &out->congestion.hosts);
      !s.ok()) {
    return s;
  }
  return HistogramFromProto(wire.switch_congestion(),
                            absl::StrCat(view, ".switch_congestion"),
                            &out->congestion.switches);
}

absl::Status TpLoadsFromProto(const v1::JobTpLoadsProto& wire,
                              analysis::JobTpLoads* out) {
  if (absl::Status s = CheckName(wire.job(), "tp_loads.job"); !s.ok()) {
    return s;
  }
  const std::string what = absl::StrCat("tp_loads of job ", wire.job());
  const int n = wire.group_size();
  if (wire.tx_bytes_per_second_size() != n || wire.link_rate_size() != n ||
      wire.nics_size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", n, " groups but ", wire.tx_bytes_per_second_size(),
        " rates, ", wire.link_rate_size(), " link rates and ", wire.nics_size(),
        " NIC counts"));
  }
  if (wire.members_size() != 0 && wire.members_size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", n, " groups but ", wire.members_size(), " members"));
  }
  out->job = wire.job();
  out->groups.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    analysis::TpGroupLoad load;
    load.group = wire.group(i);
    load.tx = wire.tx_bytes_per_second(i);
    load.link_rate = wire.link_rate(i);
    if (i > 0 && load.group <= wire.group(i - 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": group ", load.group, " after ",
                       wire.group(i - 1), " (groups ascend, each once)"));
    }
    if (!std::isfinite(load.tx) || load.tx < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": group ", load.group, " sends ", load.tx, " bytes/s"));
    }
    if (!std::isnan(load.link_rate) &&
        (!std::isfinite(load.link_rate) || load.link_rate <= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": group ", load.group, " has a link rate of ",
                       load.link_rate, " bytes/s"));
    }
    if (wire.nics(i) == 0 ||
        wire.nics(i) > static_cast<uint32_t>(kMaxNewsEntries)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": group ", load.group, " measured over ",
                       wire.nics(i), " NICs"));
    }
    load.nics = static_cast<int>(wire.nics(i));
    if (wire.members_size() != 0) load.members = wire.members(i);
    out->groups.push_back(load);
  }
  return absl::OkStatus();
}

}  // namespace

v1::PartNews ToProto(const PartNews& news) {
  v1::PartNews out;
  out.set_collector_id(news.collector_id);
  out.set_published_unix_nanos(absl::ToUnixNanos(news.published));
  ViewToProto(news.window, out.mutable_window());
  if (news.recent.has_value()) ViewToProto(*news.recent, out.mutable_recent());
  for (const analysis::JobTpLoads& job : news.tp_loads) {
    v1::JobTpLoadsProto* wire = out.add_tp_loads();
    wire->set_job(job.job);
    for (const analysis::TpGroupLoad& g : job.groups) {
      wire->add_group(g.group);
      wire->add_tx_bytes_per_second(g.tx);
      wire->add_link_rate(g.link_rate);
      wire->add_nics(static_cast<uint32_t>(g.nics));
      wire->add_members(g.members);
    }
  }
  return out;
}

absl::StatusOr<PartNews> FromProto(const v1::PartNews& wire) {
  PartNews news;
  if (absl::Status s = CheckName(wire.collector_id(), "collector_id");
      !s.ok()) {
    return s;
  }
  news.collector_id = wire.collector_id();
  news.published = absl::FromUnixNanos(wire.published_unix_nanos());
  if (absl::Status s = ViewFromProto(wire.window(), "window", &news.window);
      !s.ok()) {
    return s;
  }
  if (wire.has_recent()) {
    news.recent.emplace();
    if (absl::Status s = ViewFromProto(wire.recent(), "recent", &*news.recent);
        !s.ok()) {
      return s;
    }
  }
  size_t groups = 0;
  for (const v1::JobTpLoadsProto& job : wire.tp_loads()) {
    groups += static_cast<size_t>(job.group_size());
  }
  if (groups > kMaxNewsEntries) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tp_loads: ", groups, " groups (at most ", kMaxNewsEntries, ")"));
  }
  news.tp_loads.reserve(static_cast<size_t>(wire.tp_loads_size()));
  for (const v1::JobTpLoadsProto& job : wire.tp_loads()) {
    if (absl::Status s = TpLoadsFromProto(job, &news.tp_loads.emplace_back());
        !s.ok()) {
      return s;
    }
  }
  return news;
}

}  // namespace fabricdiag::cluster
