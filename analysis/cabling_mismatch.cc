#include "analysis/cabling_mismatch.h"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "proto/layout.pb.h"

namespace fabricdiag::analysis {
namespace {

using PortRef = std::pair<absl::string_view, absl::string_view>;

// The cable of `near` goes to `observed` (LLDP) instead of `declared`.
Finding SwitchPortMismatch(PortRef near, PortRef declared, PortRef observed) {
  Finding f;
  f.kind = kCablingMismatchKind;
  f.severity = Severity::kWarning;
  f.node = std::string(near.first);
  f.device = std::string(near.second);
  f.nodes = {f.node};
  if (declared.first != near.first) f.nodes.emplace_back(declared.first);
  if (observed.first != near.first && observed.first != declared.first) {
    f.nodes.emplace_back(observed.first);
  }
  f.summary = absl::StrCat(
      near.first, " ", near.second, " is cabled to ", observed.first, " ",
      observed.second, " (LLDP), but the topology declares ", declared.first,
      " ", declared.second, ": move the cable back to ", declared.first, " ",
      declared.second,
      ", or adopt the discovered topology: fabricdiag topology adopt");
  f.evidence_text["declared_switch"] = std::string(declared.first);
  f.evidence_text["declared_port"] = std::string(declared.second);
  f.evidence_text["observed_switch"] = std::string(observed.first);
  f.evidence_text["observed_port"] = std::string(observed.second);
  return f;
}

// Each end of each declared switch link whose port LLDP cables to another
// far end. Views into both topologies, which outlive the call.
void SwitchLinkMismatches(const v1::Topology& declared,
                          const v1::Topology& discovered,
                          std::vector<Finding>* out) {
  absl::flat_hash_map<PortRef, PortRef> far_end;
  far_end.reserve(2 * static_cast<size_t>(discovered.switch_links_size()));
  for (const v1::SwitchLink& link : discovered.switch_links()) {
    const PortRef a(link.switch_a(), link.port_a());
    const PortRef b(link.switch_b(), link.port_b());
    far_end.try_emplace(a, b);
    far_end.try_emplace(b, a);
  }
  for (const v1::SwitchLink& want : declared.switch_links()) {
    const PortRef a(want.switch_a(), want.port_a());
    const PortRef b(want.switch_b(), want.port_b());
    for (const auto& [near, far] : {std::pair(a, b), std::pair(b, a)}) {
      auto it = far_end.find(near);
      if (it == far_end.end()) continue;  // not reported: not a mismatch
      if (it->second == far) continue;
      out->push_back(SwitchPortMismatch(near, far, it->second));
    }
  }
}

}  // namespace

CablingMismatches CablingMismatchesOf(const v1::Topology& declared,
                                      const v1::Topology& discovered) {
  CablingMismatches out;
  // (host, NIC) -> the link LLDP reports; views into the discovered
  // topology, which outlives this call.
  absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>,
                      const v1::Link*>
      observed;
  observed.reserve(static_cast<size_t>(discovered.links_size()));
  for (const v1::Link& link : discovered.links()) {
    observed.try_emplace({link.host(), link.nic()}, &link);
  }
  if (!observed.empty()) {
    for (const v1::Link& want : declared.links()) {
      auto it = observed.find({want.host(), want.nic()});
      if (it == observed.end()) continue;  // not reported: not a mismatch
      const v1::Link& seen = *it->second;
      if (seen.switch_() == want.switch_() && seen.port() == want.port()) {
        continue;
      }
      Finding f;
      f.kind = kCablingMismatchKind;
      f.severity = Severity::kWarning;
      f.node = want.host();
      f.device = want.nic();
      f.nodes = {want.host(), want.switch_()};
      if (seen.switch_() != want.switch_()) f.nodes.push_back(seen.switch_());
      f.summary = absl::StrCat(
          want.host(), " ", want.nic(), " is cabled to ", seen.switch_(), " ",
          seen.port(), " (LLDP), but the topology declares ", want.switch_(),
          " ", want.port(), ": move the cable back to ", want.switch_(), " ",
          want.port(),
          ", or adopt the discovered topology: fabricdiag topology adopt");
      f.evidence_text["declared_switch"] = want.switch_();
      f.evidence_text["declared_port"] = want.port();
      f.evidence_text["observed_switch"] = seen.switch_();
      f.evidence_text["observed_port"] = seen.port();
      out.host_links.push_back(std::move(f));
    }
  }
  SwitchLinkMismatches(declared, discovered, &out.switch_links);
  return out;
}

std::vector<Finding> CablingMismatchFindings(const AnalysisInput& in) {
  std::vector<Finding> out;
  if (in.declared_topology == nullptr || in.discovered_topology == nullptr) {
    return out;
  }
  std::optional<CablingMismatches> local;
  const CablingMismatches& found =
      in.cabling_mismatches != nullptr
          ? *in.cabling_mismatches
          : local.emplace(CablingMismatchesOf(*in.declared_topology,
                                              *in.discovered_topology));
  out.reserve(found.host_links.size() + found.switch_links.size());
  for (const Finding& host_link : found.host_links) {
    Finding& f = out.emplace_back(host_link);
    std::string job = JobOfNic(in, f.node, f.device, "");
    if (!job.empty()) f.evidence_text["job"] = std::move(job);
  }
  out.insert(out.end(), found.switch_links.begin(), found.switch_links.end());
  std::sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.node, a.device) < std::tie(b.node, b.device);
  });
  return out;
}

}  // namespace fabricdiag::analysis
