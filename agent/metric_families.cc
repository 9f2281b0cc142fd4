#include "agent/metric_families.h"

#include "absl/strings/str_cat.h"

namespace fabricdiag::agent {

std::string SeriesText(absl::string_view name, const Labels& labels) {
  std::string out;
  AppendSeries(name, labels, &out);
  return out;
}

Labels NoLabels() { return {}; }

Labels PortLabels(const Sample& s) {
  return {{"device", s.desc->device}, {"port", absl::StrCat(s.desc->port)}};
}

std::string Header(const std::string& name, const Families::Family& f) {
  std::string out;
  AppendFamilyHeader(name, f.help, f.type, &out);
  return out;
}

}  // namespace fabricdiag::agent
