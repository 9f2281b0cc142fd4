#include "analysis/plan_report.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace fabricdiag::analysis {
namespace {

using Json = nlohmann::ordered_json;

// tp, pp, dp always; cp and dp-cp only with cp > 1 (otherwise they repeat
// 1 and dp); ep and edp only with ep > 1.
std::vector<Dim> ShownDims(const LayoutModel& layout) {
  std::vector<Dim> dims = {Dim::kTp};
  if (layout.Degree(Dim::kCp) > 1) dims.push_back(Dim::kCp);
  dims.push_back(Dim::kPp);
  dims.push_back(Dim::kDp);
  if (layout.Degree(Dim::kCp) > 1) dims.push_back(Dim::kDpCp);
  if (layout.Degree(Dim::kEp) > 1) {
    dims.push_back(Dim::kEp);
    dims.push_back(Dim::kEdp);
  }
  return dims;
}

std::vector<std::string> HostsOf(const LayoutModel& layout, Dim dim,
                                 uint32_t group) {
  std::vector<std::string> hosts;
  for (uint32_t r : layout.Group(dim, group)) {
    const std::string& h = layout.HostName(r);
    if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) {
      hosts.push_back(h);
    }
  }
  return hosts;
}

PlanDimension DescribeDim(const LayoutModel& layout, Dim dim) {
  PlanDimension d;
  d.dim = std::string(DimName(dim));
  d.size = layout.Degree(dim);
  d.count = layout.NumGroups(dim);
  for (uint32_t g = 0; g < d.count && g < kPlanGroupsShown; ++g) {
    PlanGroup group;
    group.name = GroupName({dim, g});
    absl::Span<const uint32_t> members = layout.Group(dim, g);
    group.size = static_cast<uint32_t>(members.size());
    for (size_t i = 0; i < members.size() && i < kPlanMembersShown; ++i) {
      const uint32_t r = members[i];
      group.members.push_back({r, layout.HostName(r), layout.Rank(r).gpu,
                               std::string(layout.NicName(r))});
    }
    d.groups.push_back(std::move(group));
  }
  return d;
}

PlanTraffic Describe(const DimTraffic& t) {
  PlanTraffic p;
  p.dim = std::string(DimName(t.dim));
  p.collective = std::string(CollectiveName(t.collective));
  p.description = t.description;
  p.available = t.available;
  p.unavailable_reason = t.unavailable_reason;
  p.groups = t.num_groups;
  p.groups_crossing = t.groups_crossing;
  p.groups_multi_host = t.groups_multi_host;
  p.calls_per_step = t.calls_per_step;
  p.bytes_per_call = t.bytes_per_call;
  p.bytes_per_rank = t.rank_send_bytes;
  p.nvlink_bytes_per_rank = t.rank_nvlink_bytes;
  p.busiest_nic_bytes = t.nic_bytes;
  p.seconds = t.seconds;
  p.seconds_if_nvlink = t.seconds_if_nvlink;
  return p;
}

std::string Scaled(double value, const char* const units[], int count,
                   double step) {
  int u = 0;
  double v = value;
  while (u + 1 < count && std::fabs(v) >= step) {
    v /= step;
    ++u;
  }
  if (u == 0) return absl::StrFormat("%.0f %s", v, units[0]);
  if (std::fabs(v) >= 100) return absl::StrFormat("%.1f %s", v, units[u]);
  return absl::StrFormat("%.2f %s", v, units[u]);
}

std::string MemberText(const PlanMember& m) {
  std::string s = absl::StrCat("r", m.rank, "=", m.host, "/", m.gpu);
  if (!m.nic.empty()) absl::StrAppend(&s, "/", m.nic);
  return s;
}

// Doubles that are whole numbers print as integers in JSON (352321536,
// not 3.52321536e+08); others keep their fraction.
Json Number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.0e15) {
    return Json(static_cast<int64_t>(v));
  }
  return Json(v);
}

Json DimensionJson(const PlanDimension& d) {
  Json dim;
  dim["dim"] = d.dim;
  dim["size"] = d.size;
  dim["count"] = d.count;
  dim["groups"] = Json::array();
  for (const PlanGroup& g : d.groups) {
    Json group;
    group["name"] = g.name;
    group["size"] = g.size;
    group["members"] = Json::array();
    for (const PlanMember& m : g.members) {
      group["members"].push_back(
          {{"rank", m.rank}, {"host", m.host}, {"gpu", m.gpu}, {"nic", m.nic}});
    }
    dim["groups"].push_back(std::move(group));
  }
  return dim;
}

// Only an available prediction carries numbers; an unavailable one says why.
Json TrafficJson(const PlanTraffic& t) {
  Json x = {{"dim", t.dim},
            {"collective", t.collective},
            {"description", t.description},
            {"available", t.available}};
  if (!t.available) {
    x["unavailable_reason"] = t.unavailable_reason;
  } else {
    x["groups"] = t.groups;
    x["groups_crossing_nvlink"] = t.groups_crossing;
    x["groups_multi_host"] = t.groups_multi_host;
    x["calls_per_step"] = Number(t.calls_per_step);
    x["bytes_per_call"] = Number(t.bytes_per_call);
    x["bytes_per_rank"] = Number(t.bytes_per_rank);
    x["nvlink_bytes_per_rank"] = Number(t.nvlink_bytes_per_rank);
    x["busiest_nic_bytes"] = Number(t.busiest_nic_bytes);
    x["seconds"] = t.seconds;
    x["seconds_if_nvlink"] = t.seconds_if_nvlink;
  }
  return x;
}

}  // namespace

std::string FormatBytes(double bytes) {
  static const char* const kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  return Scaled(bytes, kUnits, 6, 1000);
}

std::string FormatSeconds(double seconds) {
  if (seconds == 0) return "0 s";
  if (std::fabs(seconds) >= 1) return absl::StrFormat("%.2f s", seconds);
  if (std::fabs(seconds) >= 1e-3) {
    return absl::StrFormat("%.1f ms", seconds * 1e3);
  }
  return absl::StrFormat("%.1f us", seconds * 1e6);
}

absl::StatusOr<PlanReport> BuildPlanReport(const LayoutModel& layout,
                                           const LinkParams& link) {
  absl::StatusOr<TrafficModel> traffic = TrafficModel::Predict(layout, link);
  if (!traffic.ok()) return traffic.status();

  PlanReport r;
  const v1::Layout& l = layout.layout();
  r.job = layout.job();
  r.ranks = layout.WorldSize();
  r.hosts = static_cast<uint32_t>(layout.Hosts().size());
  r.gpus_per_node = layout.GpusPerNode();
  r.nvlink_domain = layout.NvlinkDomainSize();
  r.nvlink_domains = layout.NumNvlinkDomains();
  r.tp = l.parallelism().tp();
  r.pp = l.parallelism().pp();
  r.dp = l.parallelism().dp();
  r.cp = l.parallelism().cp();
  r.ep = l.parallelism().ep();
  r.order = l.parallelism().order();
  r.link = link;

  for (Dim dim : ShownDims(layout)) {
    r.dimensions.push_back(DescribeDim(layout, dim));
  }

  r.tp_groups = layout.NumGroups(Dim::kTp);
  absl::Span<const uint32_t> crossing = layout.TpGroupsCrossingNvlink();
  absl::Span<const GroupTime> times = traffic->TpCrossings();
  r.tp_groups_crossing = static_cast<uint32_t>(crossing.size());
  for (size_t i = 0; i < crossing.size() && i < kPlanCrossingsShown; ++i) {
    const uint32_t g = crossing[i];
    PlanTpCrossing c;
    c.group = GroupName({Dim::kTp, g});
    c.domains = layout.DomainsSpanned(Dim::kTp, g);
    c.hosts = HostsOf(layout, Dim::kTp, g);
    // TpCrossings() lists the same groups in the same order when available.
    if (i < times.size() && times[i].group == g) {
      c.extra_seconds_per_step = times[i].seconds - times[i].seconds_if_nvlink;
    }
    r.tp_crossings.push_back(std::move(c));
  }

  r.has_model = traffic->has_model();
  bool any_available = false;
  for (const DimTraffic& t : traffic->Dimensions()) {
    r.traffic.push_back(Describe(t));
    if (t.available) {
      any_available = true;
    } else {
      r.unavailable.push_back(
          absl::StrCat(DimName(t.dim), ": ", t.unavailable_reason));
    }
  }
  if (any_available) r.serial_seconds = traffic->SerialSeconds();

  r.nics = static_cast<uint32_t>(traffic->Nics().size());
  std::vector<const NicTraffic*> nics;
  for (const NicTraffic& n : traffic->Nics()) {
    if (n.total.tx > 0 || n.total.rx > 0) nics.push_back(&n);
  }
  auto load = [](const NicTraffic* n) {
    return std::max(n->total.tx, n->total.rx);
  };
  // Stable: equally loaded NICs stay in layout order.
  std::stable_sort(nics.begin(), nics.end(),
                   [&](const NicTraffic* a, const NicTraffic* b) {
                     return load(a) > load(b);
                   });
  for (size_t i = 0; i < nics.size() && i < kPlanNicsShown; ++i) {
    r.busiest_nics.push_back({nics[i]->host_name, nics[i]->nic_name,
                              nics[i]->total.tx, nics[i]->total.rx});
  }
  return r;
}

namespace {

// One line per group of each dimension, cut to the groups the report kept.
void AppendGroups(const PlanReport& r, std::string* out) {
  *out += "groups:\n";
  for (const PlanDimension& d : r.dimensions) {
    absl::StrAppend(out, "  ", d.dim, ": ", d.count,
                    d.count == 1 ? " group" : " groups", " of ", d.size,
                    d.size == 1 ? " rank\n" : " ranks\n");
    for (const PlanGroup& g : d.groups) {
      std::vector<std::string> shown;
      for (const PlanMember& m : g.members) shown.push_back(MemberText(m));
      absl::StrAppend(out, "    ", g.name, "  ", absl::StrJoin(shown, " "));
      if (g.size > g.members.size()) {
        absl::StrAppend(out, " ... (+", g.size - g.members.size(), " more)");
      }
      *out += "\n";
    }
    if (d.count > d.groups.size()) {
      absl::StrAppend(out, "    ... (+", d.count - d.groups.size(),
                      " more groups)\n");
    }
  }
}

// TP groups spanning NVLink domains: their tensor-parallel traffic crosses the
// network.
void AppendTpCrossings(const PlanReport& r, std::string* out) {
  if (r.tp_groups_crossing == 0) {
    *out += "TP groups leaving their NVLink domain: none\n";
  } else {
    absl::StrAppend(out, "TP groups leaving their NVLink domain: ",
                    r.tp_groups_crossing, " of ", r.tp_groups,
                    " (tensor-parallel traffic crosses the network)\n");
    for (const PlanTpCrossing& c : r.tp_crossings) {
      absl::StrAppend(out, "  ", c.group, " spans ", c.domains,
                      " NVLink domains on hosts ",
                      absl::StrJoin(c.hosts, ", "));
      if (c.extra_seconds_per_step) {
        absl::StrAppend(out, "; +", FormatSeconds(*c.extra_seconds_per_step),
                        " per step vs inside NVLink");
      }
      *out += "\n";
    }
    if (r.tp_groups_crossing > r.tp_crossings.size()) {
      absl::StrAppend(out, "  ... (+",
                      r.tp_groups_crossing - r.tp_crossings.size(), " more)\n");
    }
  }
}

// The per-step traffic table, then one line per dimension saying what it
// carries.
void AppendTraffic(const PlanReport& r, std::string* out) {
  absl::StrAppend(out, "traffic per training step (NVLink ",
                  FormatBytes(r.link.nvlink_bytes_per_second), "/s, NIC ",
                  FormatBytes(r.link.nic_bytes_per_second), "/s, alpha ",
                  FormatSeconds(r.link.alpha_nvlink), " / ",
                  FormatSeconds(r.link.alpha_nic), "):\n");
  if (r.traffic.empty()) {
    *out += "  none: every parallel degree is 1\n";
  }
  bool header = false;
  for (const PlanTraffic& t : r.traffic) {
    if (!t.available) continue;
    if (!header) {
      *out += absl::StrFormat("  %-6s %-10s %9s %11s %11s %11s %10s %10s\n",
                              "dim", "collective", "calls", "per call",
                              "per rank", "busiest NIC", "time", "if NVLink");
      header = true;
    }
    *out += absl::StrFormat(
        "  %-6s %-10s %9.0f %11s %11s %11s %10s %10s\n", t.dim, t.collective,
        t.calls_per_step, FormatBytes(t.bytes_per_call),
        FormatBytes(t.bytes_per_rank), FormatBytes(t.busiest_nic_bytes),
        FormatSeconds(t.seconds), FormatSeconds(t.seconds_if_nvlink));
  }
  for (const PlanTraffic& t : r.traffic) {
    if (!t.available) continue;
    absl::StrAppend(out, "  ", t.dim, ": ", t.description);
    if (t.groups_crossing > 0) {
      absl::StrAppend(out, "; ", t.groups_crossing, " of ", t.groups,
                      " groups cross NVLink domains");
    }
    *out += "\n";
  }
  if (r.serial_seconds) {
    absl::StrAppend(out, "  total if nothing overlaps: ",
                    FormatSeconds(*r.serial_seconds), "\n");
  }
  for (const std::string& u : r.unavailable) {
    absl::StrAppend(out, "  not predicted: ", u, "\n");
  }
}

// The NICs that carry the most bytes per step.
void AppendBusiestNics(const PlanReport& r, std::string* out) {
  if (!r.busiest_nics.empty()) {
    absl::StrAppend(out, "\nbusiest NICs per step (of ", r.nics, "):\n");
    for (const PlanNic& n : r.busiest_nics) {
      absl::StrAppend(out, "  ", n.host, " ", n.nic, "  tx ",
                      FormatBytes(n.tx_bytes), "  rx ", FormatBytes(n.rx_bytes),
                      "\n");
    }
  }
}

}  // namespace

std::string RenderPlanText(const PlanReport& r) {
  std::string out;
  absl::StrAppend(&out, "layout ", r.job, ": ", r.ranks, " ranks on ", r.hosts,
                  " hosts, ", r.gpus_per_node,
                  " GPUs per node, NVLink domain of ", r.nvlink_domain,
                  " GPUs (", r.nvlink_domains, " domains)\n");
  absl::StrAppend(&out, "parallelism: tp=", r.tp, " pp=", r.pp, " dp=", r.dp,
                  " cp=", r.cp, " ep=", r.ep, " order=", r.order, "\n\n");

  AppendGroups(r, &out);
  out += "\n";

  AppendTpCrossings(r, &out);
  out += "\n";

  AppendTraffic(r, &out);
  AppendBusiestNics(r, &out);
  return out;
}

std::string RenderPlanJson(const PlanReport& r) {
  Json j;
  j["job"] = r.job;
  j["ranks"] = r.ranks;
  j["hosts"] = r.hosts;
  j["gpus_per_node"] = r.gpus_per_node;
  j["nvlink_domain"] = r.nvlink_domain;
  j["nvlink_domains"] = r.nvlink_domains;
  j["parallelism"] = {{"tp", r.tp}, {"pp", r.pp}, {"dp", r.dp},
                      {"cp", r.cp}, {"ep", r.ep}, {"order", r.order}};
  j["link"] = {
      {"nvlink_bytes_per_second", Number(r.link.nvlink_bytes_per_second)},
      {"nic_bytes_per_second", Number(r.link.nic_bytes_per_second)},
      {"alpha_nvlink_seconds", r.link.alpha_nvlink},
      {"alpha_nic_seconds", r.link.alpha_nic}};
  j["dimensions"] = Json::array();
  for (const PlanDimension& d : r.dimensions) {
    j["dimensions"].push_back(DimensionJson(d));
  }
  j["tp_groups"] = r.tp_groups;
  j["tp_groups_crossing_nvlink"] = r.tp_groups_crossing;
  j["tp_crossings"] = Json::array();
  for (const PlanTpCrossing& c : r.tp_crossings) {
    Json x = {{"group", c.group}, {"domains", c.domains}, {"hosts", c.hosts}};
    x["extra_seconds_per_step"] =
        c.extra_seconds_per_step ? Json(*c.extra_seconds_per_step) : Json();
    j["tp_crossings"].push_back(std::move(x));
  }
  j["has_model"] = r.has_model;
  j["traffic"] = Json::array();
  for (const PlanTraffic& t : r.traffic) {
    j["traffic"].push_back(TrafficJson(t));
  }
  j["unavailable"] = r.unavailable;
  j["serial_seconds"] = r.serial_seconds ? Json(*r.serial_seconds) : Json();
  j["nics"] = r.nics;
  j["busiest_nics"] = Json::array();
  for (const PlanNic& n : r.busiest_nics) {
    j["busiest_nics"].push_back({{"host", n.host},
                                 {"nic", n.nic},
                                 {"tx_bytes", Number(n.tx_bytes)},
                                 {"rx_bytes", Number(n.rx_bytes)}});
  }
  // Names are validated to a safe alphabet, but never let a stray byte
  // throw out of here.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace fabricdiag::analysis
