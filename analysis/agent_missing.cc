#include "analysis/agent_missing.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "analysis/agent_down.h"

namespace fabricdiag::analysis {
namespace {

// A name as an operator would not tell apart: lower case, without a domain.
std::string Plain(absl::string_view name) {
  return absl::AsciiStrToLower(name.substr(0, name.find('.')));
}

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", t, absl::UTCTimeZone());
}

}  // namespace

std::vector<Finding> AgentMissingFindings(
    absl::Span<const ExpectedHost> hosts,
    absl::Span<const std::string> reporting, absl::Time now,
    const AgentMissingConfig& config) {
  std::vector<Finding> out;
  if (config.after_seconds <= 0) return out;
  const absl::Duration after = absl::Seconds(config.after_seconds);
  // Built only when some host is missing: the common case is none.
  absl::flat_hash_map<std::string, const std::string*> near;
  bool near_built = false;
  for (const ExpectedHost& host : hosts) {
    const absl::Duration unheard = now - host.unheard_since;
    if (!host.open && unheard < after) continue;
    if (!near_built) {
      for (const std::string& name : reporting) {
        near.try_emplace(Plain(name), &name);
      }
      near_built = true;
    }
    Finding f;
    f.kind = kAgentMissingKind;
    f.severity = Severity::kWarning;
    f.node = host.node;
    f.nodes = {host.node};
    const std::string cabled =
        host.switches.empty()
            ? ""
            : absl::StrCat(", cabled to ", absl::StrJoin(host.switches, ", "));
    f.summary = absl::StrCat(
        host.node, " is in the topology (", host.links,
        host.links == 1 ? " link" : " links", cabled,
        ") but no fabricdiag agent has reported from it for ",
        HumanDuration(unheard), ": its NICs are not being watched.");
    auto it = near.find(Plain(host.node));
    if (it != near.end()) {
      absl::StrAppend(&f.summary, " An agent reports as ", *it->second,
                      ", which the topology does not list: give that agent "
                      "--node=",
                      host.node, ", or name the host ", *it->second,
                      " in the topology.");
      f.evidence_text["reporting_as"] = *it->second;
    } else {
      absl::StrAppend(&f.summary, " Start fabricdiag-agent on ", host.node,
                      " (its --node must be ", host.node,
                      " and its --collector this cluster's), or remove the "
                      "host from the topology.");
    }
    f.evidence["links"] = host.links;
    f.evidence["unheard_seconds"] = absl::ToDoubleSeconds(unheard);
    f.evidence_text["unheard_since"] = Rfc3339(host.unheard_since);
    f.evidence_text["switches"] = absl::StrJoin(host.switches, ",");
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace fabricdiag::analysis
