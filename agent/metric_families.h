// The agent's metric families while they are assembled, before the
// renderer prepares their text (agent/exposition.h): the name tables
// (agent/counter_families.h) and the families decided per snapshot
// (agent/dynamic_families.h) add series to a Families, which keeps them
// sorted by family name.
//
//   Families f;
//   f.set_sample(i);
//   f.Add("fabricdiag_netdev_mtu_bytes", "MTU of the netdev.",
//         PromType::kGauge, {{"netdev", "eth0"}}, Base());
//
// Used by the exposition's own files only. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/sample.h"
#include "common/prom_text.h"

namespace fabricdiag::agent {

using Labels = PromLabels;

// Where a series' value comes from: the sample being mapped, in base units
// or exactly as the kernel printed it.
enum class ValueRef { kBase, kRaw };
inline ValueRef Base() { return ValueRef::kBase; }
inline ValueRef Raw() { return ValueRef::kRaw; }

// "name{k="v",...}" (no braces without labels).
std::string SeriesText(absl::string_view name, const Labels& labels);

// Metric families being assembled, keyed (and so sorted) by name. The help
// text and type of a family are fixed by its first series.
class Families {
 public:
  struct Entry {
    std::string series;   // "name{labels}"
    int64_t sample = -1;  // index into the snapshot's samples, or -1
    ValueRef ref = ValueRef::kBase;
    double value = 0;   // when sample < 0
    uint32_t call = 0;  // AddDynamic: which call of this render it was
  };
  struct Family {
    std::string help;
    PromType type = PromType::kUntyped;
    std::vector<Entry> entries;
  };

  // The sample the next Add(..., ValueRef) calls refer to.
  void set_sample(int64_t index) { sample_ = index; }

  void Add(absl::string_view name, const char* help, PromType type,
           const Labels& labels, ValueRef ref) {
    Family& f = Get(name, help, type);
    f.entries.push_back({SeriesText(name, labels), sample_, ref, 0});
  }
  void Add(absl::string_view name, const char* help, PromType type,
           const Labels& labels, double value) {
    Family& f = Get(name, help, type);
    f.entries.push_back({SeriesText(name, labels), -1, ValueRef::kBase, value});
  }

  // A series decided per render. Once its families are prepared, a render
  // only needs the values: with values_only() set, the labels are never
  // built and the values are recorded in call order instead.
  template <typename LabelsFn>
  void AddDynamic(absl::string_view name, const char* help, PromType type,
                  LabelsFn&& labels, double value) {
    if (values_only_ != nullptr) {
      values_only_->push_back(value);
      return;
    }
    Family& f = Get(name, help, type);
    f.entries.push_back(
        {SeriesText(name, labels()), -1, ValueRef::kBase, value, calls_++});
  }
  void set_values_only(std::vector<double>* values) { values_only_ = values; }

  std::map<std::string, Family>& map() { return families_; }

 private:
  Family& Get(absl::string_view name, const char* help, PromType type) {
    auto [it, inserted] = families_.try_emplace(std::string(name));
    if (inserted) {
      it->second.help = help;
      it->second.type = type;
    }
    return it->second;
  }

  std::map<std::string, Family> families_;
  int64_t sample_ = -1;
  uint32_t calls_ = 0;
  std::vector<double>* values_only_ = nullptr;
};

// No labels, for AddDynamic.
Labels NoLabels();

// {device, port} of an RDMA port's sample.
Labels PortLabels(const Sample& s);

// "# HELP ...\n# TYPE ...\n" of family `name`.
std::string Header(const std::string& name, const Families::Family& f);

}  // namespace fabricdiag::agent
