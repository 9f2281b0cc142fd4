#include "collector/web/web_api.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "collector/findings/finding_json.h"
#include "common/http_request.h"
#include "common/status_macros.h"

namespace fabricdiag::collector {
namespace {

using Json = nlohmann::ordered_json;

// Rates print with 4 significant digits: the page shows ratios and rounded
// rates, and 17 digits would triple the payload of a large fabric.
Json Number(double v) {
  if (!std::isfinite(v)) return nullptr;
  return std::strtod(absl::StrFormat("%.4g", v).c_str(), nullptr);
}

Json Time(absl::Time t) { return TimeJson(t); }

// A layout's labels (docs/layout-format.md#labels), keys sorted (a proto map
// has no order); `{}` for none.
Json LabelsJson(const v1::Layout& layout) {
  Json o = Json::object();
  const std::map<std::string, std::string> sorted(layout.labels().begin(),
                                                  layout.labels().end());
  for (const auto& [key, value] : sorted) o[key] = value;
  return o;
}

int SeverityRank(v1::Severity s) {
  switch (s) {
    case v1::SEVERITY_CRITICAL:
      return 0;
    case v1::SEVERITY_WARNING:
      return 1;
    case v1::SEVERITY_INFO:
      return 2;
    default:
      return 3;
  }
}

// "mlx5_2" before "mlx5_10": the trailing number compares as a number.
bool NaturalLess(absl::string_view a, absl::string_view b) {
  auto split = [](absl::string_view s) {
    size_t i = s.size();
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
    uint64_t n = 0;
    const bool has =
        i < s.size() && s.size() - i <= 18 && absl::SimpleAtoi(s.substr(i), &n);
    return std::make_tuple(s.substr(0, has ? i : s.size()), has, n);
  };
  auto [pa, ha, na] = split(a);
  auto [pb, hb, nb] = split(b);
  if (pa != pb) return pa < pb;
  if (ha != hb) return !ha;
  if (na != nb) return na < nb;
  return a < b;
}

double Median(std::vector<double> v) {
  if (v.empty()) return analysis::kAbsent;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    m = (m + *std::max_element(v.begin(), v.begin() + static_cast<long>(mid))) /
        2;
  }
  return m;
}

// value / median, when both say something.
Json Ratio(double value, double median) {
  if (!analysis::Usable(value) || !analysis::Usable(median) || median <= 0) {
    return nullptr;
  }
  return Number(value / median);
}

// The heatmap's signals, in the order the page offers them.
struct FabricMetric {
  const char* name;
  const char* title;
  const char* unit;
  double (*value)(const analysis::PortSignals& s);
};

double MaxPause(const analysis::PortSignals& s) {
  double most = analysis::kAbsent;
  for (int p = 0; p < analysis::kPriorities; ++p) {
    for (double v : {s.rx_pause_fraction[p], s.tx_pause_fraction[p]}) {
      if (analysis::Usable(v) && !(most >= v)) most = v;
    }
  }
  return most;
}

constexpr FabricMetric kFabricMetrics[] = {
    {"rx_bytes", "RX", "bytes/s",
     [](const analysis::PortSignals& s) { return s.rx_bytes; }},
    {"tx_bytes", "TX", "bytes/s",
     [](const analysis::PortSignals& s) { return s.tx_bytes; }},
    {"pause_fraction", "PFC pause", "fraction", MaxPause},
    {"cnp_rate", "CNPs sent", "packets/s",
     [](const analysis::PortSignals& s) { return s.cnp_sent; }},
};
constexpr size_t kNumFabricMetrics = std::size(kFabricMetrics);

// What the page shows of a finding beside a cell, bar or group.
Json FindingRef(const v1::Finding& f) {
  return {{"id", f.id()},
          {"kind", f.kind()},
          {"severity", std::string(SeverityName(f.severity()))}};
}

// The findings that name (node, device): the cells and bars to outline.
class Outlines {
 public:
  explicit Outlines(absl::Span<const v1::Finding> active) {
    for (const v1::Finding& f : active) {
      if (f.node().empty() || f.device().empty()) continue;
      by_port_[std::make_pair(f.node(), f.device())].push_back(&f);
      nodes_.insert(f.node());
    }
  }
  // Whether any finding names a port of `node` (most nodes have none: the
  // fabric JSON asks for every one of 68,000 ports).
  bool Names(absl::string_view node) const { return nodes_.contains(node); }
  // Findings naming the port by its device or its netdev.
  Json For(absl::string_view node, absl::string_view device,
           absl::string_view netdev) const {
    Json ids = Json::array();
    AppendIds(node, device, &ids);
    if (netdev != device) AppendIds(node, netdev, &ids);
    return ids;
  }

 private:
  void AppendIds(absl::string_view node, absl::string_view name,
                 Json* ids) const {
    if (name.empty()) return;
    auto it =
        by_port_.find(std::make_pair(std::string(node), std::string(name)));
    if (it == by_port_.end()) return;
    for (const v1::Finding* f : it->second) ids->push_back(FindingRef(*f));
  }

  std::map<std::pair<std::string, std::string>, std::vector<const v1::Finding*>>
      by_port_;
  absl::flat_hash_set<std::string> nodes_;
};

// A collector of a sharded cluster (FabricScope::kCollector) lists the
// switches whose agents stream to it: another's uplinks are on its page, not
// unreported here.
Json FabricSwitches(const analysis::FabricView& view, FabricScope scope,
                    const v1::Topology& topology, const Outlines& outlines) {
  Json switches = Json::array();
  for (const v1::Switch& sw : topology.switches()) {
    if (sw.uplinks().empty()) continue;
    if (scope == FabricScope::kCollector && view.PortsOf(sw.name()).empty()) {
      continue;
    }
    Json uplinks = Json::array();
    double tx_max = 0;
    double tx_sum = 0;
    int tx_n = 0;
    for (const std::string& port : sw.uplinks()) {
      const analysis::PortView* p = view.Find(sw.name(), port);
      const double tx = p != nullptr ? p->s.tx_bytes : analysis::kAbsent;
      const double rx = p != nullptr ? p->s.rx_bytes : analysis::kAbsent;
      if (analysis::Usable(tx)) {
        tx_max = std::max(tx_max, tx);
        tx_sum += tx;
        ++tx_n;
      }
      Json u;
      u["port"] = port;
      u["reported"] = p != nullptr;
      u["tx_bytes"] = Number(analysis::UsableOrAbsent(tx));
      u["rx_bytes"] = Number(analysis::UsableOrAbsent(rx));
      u["findings"] = outlines.For(sw.name(), port, p ? p->netdev : "");
      uplinks.push_back(std::move(u));
    }
    Json s;
    s["switch"] = sw.name();
    s["uplinks"] = std::move(uplinks);
    const double mean = tx_n > 0 ? tx_sum / tx_n : analysis::kAbsent;
    s["tx_mean"] = Number(mean);
    s["tx_max"] = tx_n > 0 ? Number(tx_max) : Json(nullptr);
    s["tx_max_over_mean"] = Ratio(tx_max, mean);
    switches.push_back(std::move(s));
  }
  return switches;
}

// The first `limit` ranks of a list, and how many there were.
Json Ranks(const std::vector<uint32_t>& ranks) {
  constexpr size_t kShown = 16;
  Json j = Json::array();
  for (size_t i = 0; i < ranks.size() && i < kShown; ++i) j.push_back(ranks[i]);
  return j;
}

// Rails: every device name a host port has, in natural order; nodes in the
// order the view lists their host ports.
void ListRailsAndNodes(const analysis::FabricView& view,
                       std::vector<std::string>* rails,
                       std::vector<std::string>* nodes) {
  std::set<std::string> seen;
  for (const analysis::PortView& p : view.ports()) {
    if (p.is_switch_port) continue;
    seen.insert(p.device);
    if (nodes->empty() || nodes->back() != p.node) nodes->push_back(p.node);
  }
  rails->assign(seen.begin(), seen.end());
  std::sort(rails->begin(), rails->end(), NaturalLess);
}

// cells[metric][node][rail].
using Cells = std::vector<std::vector<std::vector<double>>>;

// Stands for "values" in the JSON that FabricJsonText splices the grid into:
// a string no name can hold (names are validated and hold no control
// character).
constexpr char kValuesPlaceholder[] = "\x01values\x01";
constexpr char kValuesPlaceholderDumped[] = "\"\\u0001values\\u0001\"";

// Per metric, the node x rail grid of values (as JSON, or the placeholder
// when `inline_values` is false) and each rail's median over the nodes that
// report it.
void AddValuesAndMedians(const Cells& cells, size_t num_rails,
                         bool inline_values, Json* j) {
  Json values = Json::object();
  Json medians = Json::object();
  for (size_t m = 0; m < kNumFabricMetrics; ++m) {
    if (inline_values) {
      Json rows = Json::array();
      for (const std::vector<double>& row : cells[m]) {
        Json r = Json::array();
        for (double v : row) r.push_back(Number(v));
        rows.push_back(std::move(r));
      }
      values[kFabricMetrics[m].name] = std::move(rows);
    }
    Json med = Json::array();
    for (size_t r = 0; r < num_rails; ++r) {
      std::vector<double> column;
      for (const std::vector<double>& row : cells[m]) {
        if (analysis::Usable(row[r])) column.push_back(row[r]);
      }
      med.push_back(Number(Median(std::move(column))));
    }
    medians[kFabricMetrics[m].name] = std::move(med);
  }
  if (inline_values) {
    (*j)["values"] = std::move(values);
  } else {
    (*j)["values"] = kValuesPlaceholder;
  }
  (*j)["rail_medians"] = std::move(medians);
}

// What Number(v) writes, without a JSON value per cell: 4 significant
// digits (as %.4g), null when not finite.
void AppendNumber(double v, std::string* out) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  char buf[32];
  const std::to_chars_result r =
      std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, 4);
  out->append(buf, r.ptr);
}

// {"rx_bytes":[[...],...],...}: the grid of AddValuesAndMedians.
std::string ValuesText(const Cells& cells) {
  std::string out = "{";
  for (size_t m = 0; m < kNumFabricMetrics; ++m) {
    if (m > 0) out.push_back(',');
    absl::StrAppend(&out, "\"", kFabricMetrics[m].name, "\":[");
    for (size_t n = 0; n < cells[m].size(); ++n) {
      if (n > 0) out.push_back(',');
      out.push_back('[');
      for (size_t r = 0; r < cells[m][n].size(); ++r) {
        if (r > 0) out.push_back(',');
        AppendNumber(cells[m][n][r], &out);
      }
      out.push_back(']');
    }
    out.push_back(']');
  }
  out.push_back('}');
  return out;
}

// FabricJson, with the grid left to the caller when `cells` is not null
// ("values" holds the placeholder then).
Json FabricJsonImpl(const analysis::FabricView* view, FabricScope scope,
                    const v1::Topology* topology,
                    absl::Span<const v1::Finding> active, absl::Time now,
                    Cells* grid) {
  Json j;
  j["api_version"] = kWebApiVersion;
  j["generated"] = Time(now);
  j["window_seconds"] =
      view != nullptr ? Number(view->window_seconds) : nullptr;
  j["scope"] = scope == FabricScope::kFabric ? "fabric" : "collector";
  j["metrics"] = Json::array();
  for (const FabricMetric& m : kFabricMetrics) {
    j["metrics"].push_back(
        {{"name", m.name}, {"title", m.title}, {"unit", m.unit}});
  }

  std::vector<std::string> rails;
  std::vector<std::string> nodes;
  if (view != nullptr) ListRailsAndNodes(*view, &rails, &nodes);
  absl::flat_hash_map<std::string, size_t> rail_index;
  for (size_t i = 0; i < rails.size(); ++i) rail_index[rails[i]] = i;

  // A cell stays absent unless a host port of its node and rail reports.
  Cells cells(
      kNumFabricMetrics,
      std::vector<std::vector<double>>(
          nodes.size(), std::vector<double>(rails.size(), analysis::kAbsent)));
  const Outlines outlines(active);
  Json outlined = Json::array();
  Json down = Json::array();
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (const analysis::PortView& p : view->PortsOf(nodes[n])) {
      if (p.is_switch_port) continue;
      const size_t r = rail_index.at(p.device);
      for (size_t m = 0; m < kNumFabricMetrics; ++m) {
        cells[m][n][r] = analysis::UsableOrAbsent(kFabricMetrics[m].value(p.s));
      }
      if (!p.s.link_up) down.push_back({{"node", p.node}, {"rail", p.device}});
      if (!outlines.Names(p.node)) continue;
      Json ids = outlines.For(p.node, p.device, p.netdev);
      if (!ids.empty()) {
        outlined.push_back({{"node", p.node},
                            {"rail", p.device},
                            {"findings", std::move(ids)}});
      }
    }
  }
  j["rails"] = rails;
  j["nodes"] = nodes;
  AddValuesAndMedians(cells, rails.size(), grid == nullptr, &j);
  j["outlined"] = std::move(outlined);
  j["links_down"] = std::move(down);
  j["switches"] = view != nullptr && topology != nullptr
                      ? FabricSwitches(*view, scope, *topology, outlines)
                      : Json::array();
  if (grid != nullptr) *grid = std::move(cells);
  return j;
}

}  // namespace

Json TimeJson(absl::Time t) {
  if (t == absl::InfinitePast() || t == absl::UnixEpoch()) return nullptr;
  return FormatRfc3339(absl::ToUnixNanos(t));
}

Json FindingsJson(absl::Span<const v1::Finding> active,
                  absl::Span<const v1::Finding> resolved,
                  const FindingsStaleness& staleness, absl::Time now) {
  std::vector<const v1::Finding*> open;
  open.reserve(active.size());
  for (const v1::Finding& f : active) open.push_back(&f);
  std::sort(open.begin(), open.end(),
            [](const v1::Finding* a, const v1::Finding* b) {
              return std::make_tuple(SeverityRank(a->severity()),
                                     a->first_seen_unix_nanos(), a->id()) <
                     std::make_tuple(SeverityRank(b->severity()),
                                     b->first_seen_unix_nanos(), b->id());
            });
  Json j;
  j["api_version"] = kWebApiVersion;
  j["generated"] = Time(now);
  j["staleness"] = {
      {"stale", staleness.stale},
      {"age_seconds", Number(absl::ToDoubleSeconds(staleness.age))}};
  j["active"] = Json::array();
  for (const v1::Finding* f : open) {
    Json o = FindingToJson(*f);
    o["duration_seconds"] = Number(std::max<double>(
        0, absl::ToDoubleSeconds(
               now - absl::FromUnixNanos(f->first_seen_unix_nanos()))));
    j["active"].push_back(std::move(o));
  }
  j["resolved"] = Json::array();
  for (const v1::Finding& f : resolved) {
    Json o = FindingToJson(f);
    o["duration_seconds"] = Number(std::max<double>(
        0, 1e-9 * static_cast<double>(f.resolved_unix_nanos() -
                                      f.first_seen_unix_nanos())));
    j["resolved"].push_back(std::move(o));
  }
  return j;
}

Json FabricJson(const analysis::FabricView* view, FabricScope scope,
                const v1::Topology* topology,
                absl::Span<const v1::Finding> active, absl::Time now) {
  return FabricJsonImpl(view, scope, topology, active, now, nullptr);
}

std::string FabricJsonText(const analysis::FabricView* view, FabricScope scope,
                           const v1::Topology* topology,
                           absl::Span<const v1::Finding> active,
                           absl::Time now) {
  Cells cells;
  std::string text = FabricJsonImpl(view, scope, topology, active, now, &cells)
                         .dump(-1, ' ', false, Json::error_handler_t::replace);
  // The first occurrence is the "values" key's: the keys before it hold
  // numbers, metric descriptions and validated names only.
  const size_t at = text.find(kValuesPlaceholderDumped);
  if (at != std::string::npos) {
    text.replace(at, std::strlen(kValuesPlaceholderDumped), ValuesText(cells));
  }
  return text;
}

Json JobsJson(const RegistrySnapshot& snapshot) {
  Json j;
  j["api_version"] = kWebApiVersion;
  j["jobs"] = Json::array();
  for (const auto& [job, entry] : snapshot.layouts) {
    const analysis::LayoutModel& model = entry->model;
    Json o;
    o["job"] = job;
    o["parallelism"] = ParallelismSummary(model);
    o["ranks"] = model.WorldSize();
    o["hosts"] = model.Hosts().size();
    o["applied"] = Time(entry->applied);
    const v1::LayoutDeclaration& d = entry->applied_layout.declaration();
    o["source"] = d.source();
    o["owner"] = d.owner();
    o["expires"] = d.lease_seconds() == 0
                       ? Json(nullptr)
                       : Time(absl::FromUnixNanos(d.expires_unix_nanos()));
    o["labels"] = LabelsJson(entry->applied_layout);
    j["jobs"].push_back(std::move(o));
  }
  return j;
}

absl::StatusOr<JobQuery> ParseJobQuery(absl::string_view query) {
  JobQuery q;
  absl::StatusOr<std::vector<QueryParam>> params = ParseQuery(query);
  if (!params.ok()) return params.status();
  for (const auto& [key, value] : *params) {
    if (key == "dim") {
      std::optional<analysis::Dim> dim = analysis::DimFromName(value);
      if (!dim.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("dim: '", value,
                         "' is not a dimension (tp, cp, dp, pp, dp-cp, ep, "
                         "edp)"));
      }
      q.dim = *dim;
    } else if (key == "group") {
      q.group = value;
    } else if (key == "offset") {
      if (!absl::SimpleAtoi(value, &q.offset)) {
        return absl::InvalidArgumentError(
            absl::StrCat("offset: '", value, "' is not a count"));
      }
    } else if (key == "limit") {
      if (!absl::SimpleAtoi(value, &q.limit) || q.limit == 0 ||
          q.limit > kMaxGroupsPerPage) {
        return absl::InvalidArgumentError(absl::StrCat(
            "limit: '", value, "' is not between 1 and ", kMaxGroupsPerPage));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown parameter '", key, "' (dim, group, offset, limit)"));
    }
  }
  return q;
}

namespace {

using NicKey = std::pair<std::string, std::string>;  // (host, NIC)

// The groups [begin, end) a page shows: one named group, or a slice.
absl::StatusOr<std::pair<uint32_t, uint32_t>> GroupRange(
    const analysis::LayoutModel& model, const JobQuery& query) {
  const uint32_t num_groups = model.NumGroups(query.dim);
  if (query.group.empty()) {
    const uint32_t begin = std::min(query.offset, num_groups);
    const uint32_t end = static_cast<uint32_t>(
        std::min<uint64_t>(uint64_t{begin} + query.limit, num_groups));
    return std::make_pair(begin, end);
  }
  absl::StatusOr<analysis::GroupId> id = analysis::ParseGroupName(query.group);
  if (!id.ok() || id->dim != query.dim || id->index >= num_groups) {
    return absl::NotFoundError(
        absl::StrCat("job ", model.job(), " has no group '", query.group,
                     "' in ", analysis::DimName(query.dim)));
  }
  return std::make_pair(id->index, id->index + 1);
}

// The traffic model's prediction for `dim` (null without one), and the
// bytes per step it predicts through each NIC when available.
Json PredictionJson(
    const analysis::TrafficModel* traffic, analysis::Dim dim,
    absl::flat_hash_map<NicKey, analysis::NicBytes>* predicted) {
  if (traffic == nullptr) return nullptr;
  const analysis::DimTraffic* d = traffic->Find(dim);
  if (d == nullptr) return nullptr;
  Json prediction = Json::object();
  prediction["collective"] =
      std::string(analysis::CollectiveName(d->collective));
  prediction["description"] = d->description;
  prediction["available"] = d->available;
  prediction["unavailable_reason"] = d->unavailable_reason;
  prediction["nic_bytes_per_step"] = Number(d->nic_bytes);
  prediction["seconds_per_step"] = Number(d->seconds);
  if (d->available) {
    for (const analysis::NicTraffic& n : traffic->Nics()) {
      (*predicted)[{n.host_name, n.nic_name}] =
          n.by_dim[static_cast<size_t>(dim)];
    }
  }
  return prediction;
}

// What a group page shows besides the layout, looked up per group and NIC.
struct GroupContext {
  const analysis::FabricView* view = nullptr;
  absl::flat_hash_map<NicKey, analysis::NicBytes> predicted;
  // Findings of this job, by group and by (host, NIC).
  std::map<std::string, Json> by_group;
  std::map<NicKey, Json> by_nic;
};

void IndexFindings(absl::Span<const v1::Finding> active, const std::string& job,
                   GroupContext* context) {
  for (const v1::Finding& f : active) {
    if (f.job() != job) continue;
    const Json ref = FindingRef(f);
    if (!f.group().empty()) context->by_group[f.group()].push_back(ref);
    if (!f.device().empty()) {
      context->by_nic[{f.node(), f.device()}].push_back(ref);
    }
  }
}

// One NIC of a group: its ranks and the bytes it moved in the window.
struct GroupMember {
  std::string host;
  std::string nic;
  const std::vector<uint32_t>* ranks;
  double rx;
  double tx;
};

// The group's ranks per NIC, in rank order.
using NicRanks = std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>>;

std::vector<GroupMember> GroupMembers(const analysis::LayoutModel& model,
                                      const NicRanks& nic_ranks,
                                      const analysis::FabricView* view) {
  std::vector<GroupMember> members;
  for (const auto& [ref, ranks] : nic_ranks) {
    GroupMember m{std::string(model.Hosts()[ref.first]),
                  ref.second == analysis::kNoNic
                      ? std::string()
                      : std::string(model.Nics()[ref.second]),
                  &ranks, analysis::kAbsent, analysis::kAbsent};
    const analysis::PortView* p =
        view != nullptr && !m.nic.empty() ? view->Find(m.host, m.nic) : nullptr;
    if (p != nullptr) {
      m.rx = analysis::UsableOrAbsent(p->s.rx_bytes);
      m.tx = analysis::UsableOrAbsent(p->s.tx_bytes);
    }
    members.push_back(std::move(m));
  }
  return members;
}

Json MemberJson(const GroupMember& m, double rx_median, double tx_median,
                const GroupContext& context) {
  Json mo;
  mo["host"] = m.host;
  mo["nic"] = m.nic;
  mo["ranks"] = Ranks(*m.ranks);
  mo["rank_count"] = m.ranks->size();
  mo["rx_bytes"] = Number(m.rx);
  mo["tx_bytes"] = Number(m.tx);
  mo["rx_ratio"] = Ratio(m.rx, rx_median);
  mo["tx_ratio"] = Ratio(m.tx, tx_median);
  auto pit = context.predicted.find({m.host, m.nic});
  mo["predicted_rx_bytes_per_step"] =
      pit != context.predicted.end() ? Number(pit->second.rx) : Json(nullptr);
  mo["predicted_tx_bytes_per_step"] =
      pit != context.predicted.end() ? Number(pit->second.tx) : Json(nullptr);
  auto fit = context.by_nic.find({m.host, m.nic});
  mo["findings"] = fit != context.by_nic.end() ? fit->second : Json::array();
  return mo;
}

Json GroupJson(const analysis::LayoutModel& model, analysis::Dim dim,
               uint32_t g, const GroupContext& context) {
  const std::string name = analysis::GroupName({dim, g});
  NicRanks nic_ranks;
  for (uint32_t r : model.Group(dim, g)) {
    const analysis::RankInfo& info = model.Rank(r);
    nic_ranks[{info.host, info.nic}].push_back(r);
  }
  const std::vector<GroupMember> members =
      GroupMembers(model, nic_ranks, context.view);
  std::vector<double> rx_values;
  std::vector<double> tx_values;
  for (const GroupMember& m : members) {
    if (analysis::Has(m.rx)) rx_values.push_back(m.rx);
    if (analysis::Has(m.tx)) tx_values.push_back(m.tx);
  }
  const double rx_median = Median(rx_values);
  const double tx_median = Median(tx_values);

  Json o;
  o["name"] = name;
  o["size"] = model.Degree(dim);
  o["hosts_spanned"] = model.HostsSpanned(dim, g);
  o["nvlink_domains_spanned"] = model.DomainsSpanned(dim, g);
  o["crosses_nvlink"] = model.DomainsSpanned(dim, g) > 1;
  auto found = context.by_group.find(name);
  o["findings"] =
      found != context.by_group.end() ? found->second : Json::array();
  o["median_rx_bytes"] = Number(rx_median);
  o["median_tx_bytes"] = Number(tx_median);
  Json ms = Json::array();
  for (const GroupMember& m : members) {
    ms.push_back(MemberJson(m, rx_median, tx_median, context));
  }
  o["members"] = std::move(ms);
  return o;
}

// The dimensions a job page offers: those with a degree above 1, and the
// one shown.
Json DimsJson(const analysis::LayoutModel& model, analysis::Dim shown) {
  Json dims = Json::array();
  for (analysis::Dim d : analysis::kAllDims) {
    if (model.Degree(d) <= 1 && d != shown) continue;
    dims.push_back({{"dim", std::string(analysis::DimName(d))},
                    {"size", model.Degree(d)},
                    {"groups", model.NumGroups(d)}});
  }
  return dims;
}

}  // namespace

absl::StatusOr<Json> JobJson(
    const LayoutEntry& entry, const analysis::TrafficModel* traffic,
    const JobQuery& query, const analysis::FabricView* view, FabricScope scope,
    absl::Span<const v1::Finding> active, absl::Time now) {
  const analysis::LayoutModel& model = entry.model;
  const analysis::Dim dim = query.dim;
  ASSIGN_OR_RETURN(const auto range, GroupRange(model, query));
  GroupContext context;
  context.view = view;
  Json prediction = PredictionJson(traffic, dim, &context.predicted);
  IndexFindings(active, model.job(), &context);
  Json groups = Json::array();
  for (uint32_t g = range.first; g < range.second; ++g) {
    groups.push_back(GroupJson(model, dim, g, context));
  }

  Json j;
  j["api_version"] = kWebApiVersion;
  j["generated"] = Time(now);
  j["job"] = model.job();
  j["parallelism"] = ParallelismSummary(model);
  j["ranks"] = model.WorldSize();
  j["hosts"] = model.Hosts().size();
  j["applied"] = Time(entry.applied);
  j["revision"] = LayoutRevision(entry);
  j["labels"] = LabelsJson(entry.applied_layout);
  j["dims"] = DimsJson(model, dim);
  j["dim"] = std::string(analysis::DimName(dim));
  j["groups_total"] = model.NumGroups(dim);
  j["offset"] = range.first;
  j["prediction"] = std::move(prediction);
  j["window_seconds"] =
      view != nullptr ? Number(view->window_seconds) : nullptr;
  j["scope"] = scope == FabricScope::kFabric ? "fabric" : "collector";
  j["groups"] = std::move(groups);
  return j;
}

}  // namespace fabricdiag::collector
