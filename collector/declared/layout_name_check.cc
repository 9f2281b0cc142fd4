#include "collector/declared/layout_name_check.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "common/prom_text.h"

namespace fabricdiag::collector {

std::vector<std::string> UnreportedNames(
    const v1::Layout& layout, const analysis::FabricView& view,
    const absl::flat_hash_set<std::string>& hosts_elsewhere) {
  std::vector<std::string> out;
  if (view.ports().empty() && hosts_elsewhere.empty()) return out;
  size_t more = 0;
  auto warn = [&](std::string w) {
    if (out.size() < kMaxNameWarnings - 1) {
      out.push_back(std::move(w));
    } else {
      ++more;
    }
  };
  std::set<std::string> hosts_warned;
  std::set<std::pair<std::string, std::string>> nics_checked;
  auto check = [&](const char* field, const std::string& host,
                   const std::string& nic) {
    if (hosts_warned.count(host) > 0) return;
    const analysis::FabricView::NodePorts ports = view.PortsOfNode(host);
    if (ports.begin == ports.end) {
      if (hosts_elsewhere.contains(host)) return;
      hosts_warned.insert(host);
      warn(absl::StrCat(field, ": host ", QuoteForMessage(host),
                        " is reported by no agent"));
      return;
    }
    if (nic.empty() || !nics_checked.insert({host, nic}).second) return;
    if (view.FindIn(ports, nic) == nullptr) {
      warn(absl::StrCat(field, ": NIC ", QuoteForMessage(nic),
                        " is reported by no agent on ", QuoteForMessage(host)));
    }
  };
  if (layout.ranks_size() > 0) {
    for (const v1::RankPlacement& r : layout.ranks()) {
      std::string nic = r.nic();
      if (nic.empty() && static_cast<int>(r.gpu()) < layout.rails_size()) {
        nic = layout.rails(static_cast<int>(r.gpu()));
      }
      check("ranks", r.host(), nic);
    }
  } else {
    for (const std::string& host : layout.hosts()) {
      if (layout.rails_size() == 0) check("hosts", host, "");
      for (const std::string& rail : layout.rails()) {
        check("hosts", host, rail);
      }
    }
  }
  if (more > 0) {
    out.push_back(
        absl::StrCat("... and ", more, " more names no agent reports"));
  }
  return out;
}

std::vector<std::string> LayoutNameCheck::Check(const v1::Layout& layout) {
  ReportedNames names = names_ ? names_() : ReportedNames{};
  analysis::FabricView no_ports;
  if (names.ports == nullptr) no_ports.Finish();
  std::vector<std::string> warnings = UnreportedNames(
      layout, names.ports ? *names.ports : no_ports, names.hosts_elsewhere);
  if (!warnings.empty()) {
    ++warned_layouts_;
    warnings_ += warnings.size();
  }
  return warnings;
}

void LayoutNameCheck::AppendMetrics(std::string* out) const {
  PromWriter w(out);
  w.Family("fabricdiag_layout_name_warnings_total",
           "Warnings about host or NIC names no agent reports, given with the "
           "layouts declared since start.",
           PromType::kCounter);
  w.Sample(static_cast<double>(warnings_.load()));
  w.Family("fabricdiag_layouts_with_name_warnings_total",
           "Layouts declared since start that name a host or NIC no agent "
           "reports.",
           PromType::kCounter);
  w.Sample(static_cast<double>(warned_layouts_.load()));
}

}  // namespace fabricdiag::collector
