#include "collector/web/topology_json.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "collector/topology/topology_adopt.h"
#include "collector/web/web_api.h"

namespace fabricdiag::collector {
namespace {

using Json = nlohmann::ordered_json;

// null in a declared or a discovered topology, where the view says it all.
Json SourceJson(v1::LinkSource source) {
  switch (source) {
    case v1::LINK_SOURCE_DECLARED:
      return "declared";
    case v1::LINK_SOURCE_DISCOVERED:
      return "discovered";
    default:
      return nullptr;
  }
}

}  // namespace

absl::StatusOr<Json> TopologyJson(const TopologyViews& views,
                                  absl::string_view view) {
  TopologyKind kind;
  if (view.empty() || view == "declared") {
    kind = TopologyKind::kDeclared;
  } else if (view == "discovered") {
    kind = TopologyKind::kDiscovered;
  } else if (view == "effective") {
    kind = TopologyKind::kEffective;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("view: '", view,
                     "' is not a topology view (declared, discovered, "
                     "effective)"));
  }
  absl::StatusOr<std::shared_ptr<const v1::Topology>> topology =
      TopologyOfView(views, kind);
  if (!topology.ok()) return topology.status();
  const v1::Topology& t = **topology;
  Json j;
  j["api_version"] = kWebApiVersion;
  j["view"] = view.empty() ? "declared" : std::string(view);
  j["declared_version"] = views.declared_version;
  Json switches = Json::array();
  for (const v1::Switch& sw : t.switches()) {
    Json s;
    s["name"] = sw.name();
    s["tier"] = sw.tier() != 0 ? Json(sw.tier()) : Json(nullptr);
    s["chassis_id"] =
        sw.chassis_id().empty() ? Json(nullptr) : Json(sw.chassis_id());
    s["uplinks"] = Json(
        std::vector<std::string>(sw.uplinks().begin(), sw.uplinks().end()));
    switches.push_back(std::move(s));
  }
  j["switches"] = std::move(switches);
  Json links = Json::array();
  for (const v1::Link& l : t.links()) {
    links.push_back({{"host", l.host()},
                     {"nic", l.nic()},
                     {"switch", l.switch_()},
                     {"port", l.port()},
                     {"source", SourceJson(l.source())}});
  }
  j["links"] = std::move(links);
  Json switch_links = Json::array();
  for (const v1::SwitchLink& l : t.switch_links()) {
    switch_links.push_back({{"switch_a", l.switch_a()},
                            {"port_a", l.port_a()},
                            {"switch_b", l.switch_b()},
                            {"port_b", l.port_b()},
                            {"source", SourceJson(l.source())}});
  }
  j["switch_links"] = std::move(switch_links);
  j["problems"] = views.problems;
  return j;
}

}  // namespace fabricdiag::collector
