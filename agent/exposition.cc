#include "agent/exposition.h"

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "agent/counter_families.h"
#include "agent/dynamic_families.h"
#include "agent/metric_families.h"
#include "common/prom_text.h"

namespace fabricdiag::agent {
namespace {

// How a prepared series turns its sample's raw value into the value
// printed: SeriesDesc::BaseValue (or the raw value itself) with the
// description's scale looked up once, so that a render does not visit the
// descriptions.
struct ValueScale {
  bool divide = false;  // raw / factor, else raw * factor
  double factor = 1;

  static ValueScale Of(const SeriesDesc& desc, ValueRef ref) {
    ValueScale v;
    if (ref == ValueRef::kRaw) return v;
    // The same arithmetic as SeriesDesc::BaseValue.
    if (desc.scale > 0 && desc.scale < 1) {
      v.divide = true;
      v.factor = std::round(1.0 / desc.scale);
    } else {
      v.factor = desc.scale;
    }
    return v;
  }
  double Apply(uint64_t raw) const {
    const auto value = static_cast<double>(raw);
    return divide ? value / factor : value * factor;
  }
};

}  // namespace

// The prepared text of one set of sample series. `text` holds, in
// exposition order, everything but the values: each family's header
// followed by the "name{labels} " of its series. Each entry knows where its
// series' piece of `text` ends, so that a render is: per entry, copy the
// text since the previous entry's end, then format the value and a newline.
struct ExpositionRenderer::Plan {
  struct Entry {
    uint32_t sample = 0;
    uint32_t text_end = 0;  // end of "[header]name{labels} " in `text`
    ValueScale scale;
  };
  struct Family {
    std::string name;
    uint32_t first_entry = 0;
  };
  // The descriptions the plan was built for, in snapshot order, and the
  // tables that own them (kept alive, so that an equal pointer is the same
  // description).
  std::vector<const SeriesDesc*> descs;
  std::vector<std::shared_ptr<const void>> owners;
  std::string text;
  std::vector<Entry> entries;    // in exposition order
  std::vector<Family> families;  // sorted by name

  // The families decided per render (saturation, devices, the agent
  // itself), prepared the same way for as long as their series stay the
  // same (DynamicKey): `dynamic_text` holds their headers and series, and
  // only the values change from render to render.
  struct DynamicEntry {
    uint32_t call = 0;      // index into dynamic_values
    uint32_t text_end = 0;  // in dynamic_text
  };
  bool dynamic_ready = false;
  std::string dynamic_key;
  std::string key_scratch;
  std::string dynamic_text;
  std::vector<DynamicEntry> dynamic_entries;  // in exposition order
  // {k, end}: the dynamic entries up to `end` go before plan family k.
  std::vector<std::pair<size_t, size_t>> dynamic_groups;
  std::vector<double> dynamic_values;  // of this render, in call order

  bool Matches(const Snapshot& snap) const {
    if (snap.samples.size() != descs.size()) return false;
    for (size_t i = 0; i < descs.size(); ++i) {
      if (snap.samples[i].desc != descs[i]) return false;
    }
    return true;
  }
};

ExpositionRenderer::ExpositionRenderer() = default;
ExpositionRenderer::~ExpositionRenderer() = default;

void ExpositionRenderer::Render(const Snapshot& snapshot,
                                const AgentHealth& health, std::string* out) {
  if (plan_ == nullptr || !plan_->Matches(snapshot)) {
    auto plan = std::make_unique<Plan>();
    Families families;
    for (size_t i = 0; i < snapshot.samples.size(); ++i) {
      families.set_sample(static_cast<int64_t>(i));
      AddSample(snapshot.samples[i], &families);
      plan->descs.push_back(snapshot.samples[i].desc);
    }
    plan->owners = snapshot.series_owners;
    for (auto& [name, f] : families.map()) {
      plan->families.push_back(
          {name, static_cast<uint32_t>(plan->entries.size())});
      plan->text.append(Header(name, f));
      for (const Families::Entry& e : f.entries) {
        plan->text.append(e.series);
        plan->text.push_back(' ');
        Plan::Entry& entry = plan->entries.emplace_back();
        entry.sample = static_cast<uint32_t>(e.sample);
        entry.text_end = static_cast<uint32_t>(plan->text.size());
        entry.scale =
            ValueScale::Of(*snapshot.samples[entry.sample].desc, e.ref);
      }
    }
    plan_ = std::move(plan);
    ++plans_built_;
  }
  Plan& plan = *plan_;

  // What is decided per snapshot: saturation, devices, the agent itself.
  plan.dynamic_values.clear();
  DynamicKey(snapshot, health, &plan.key_scratch);
  if (plan.dynamic_ready && plan.key_scratch == plan.dynamic_key) {
    Families values;
    values.set_values_only(&plan.dynamic_values);
    AddDynamicFamilies(snapshot, health, &values);
  }
  if (plan.dynamic_values.size() != plan.dynamic_entries.size() ||
      !plan.dynamic_ready || plan.key_scratch != plan.dynamic_key) {
    PrepareDynamic(snapshot, health);
  }

  // The values are formatted straight into *out, in one pass: room for the
  // longest value of every series, given back at the end. (Growing *out to
  // a size it had before writes nothing; keeping each value's text to skip
  // the counters that did not move cost more in memory traffic than
  // formatting them again.)
  constexpr size_t kValueRoom = kMaxValueTextBytes + 1;  // and '\n'
  out->resize(plan.text.size() + plan.dynamic_text.size() +
              (plan.entries.size() + plan.dynamic_entries.size()) * kValueRoom);
  char* p = out->data();
  // Copies the text since the previous entry of the same text, then the
  // entry's value.
  auto put = [&p](const std::string& text, size_t* pos, uint32_t text_end,
                  double value) {
    std::memcpy(p, text.data() + *pos, text_end - *pos);
    p += text_end - *pos;
    *pos = text_end;
    p += FormatValueTo(value, p);
    *p++ = '\n';
  };
  size_t text_pos = 0;
  size_t dynamic_pos = 0;
  size_t dynamic_entry = 0;
  size_t group = 0;
  auto put_dynamic_before = [&](size_t family) {
    for (; group < plan.dynamic_groups.size() &&
           plan.dynamic_groups[group].first == family;
         ++group) {
      for (; dynamic_entry < plan.dynamic_groups[group].second;
           ++dynamic_entry) {
        const Plan::DynamicEntry& e = plan.dynamic_entries[dynamic_entry];
        put(plan.dynamic_text, &dynamic_pos, e.text_end,
            plan.dynamic_values[e.call]);
      }
    }
  };
  const Sample* const samples = snapshot.samples.data();
  for (size_t k = 0; k < plan.families.size(); ++k) {
    put_dynamic_before(k);
    const size_t last = k + 1 < plan.families.size()
                            ? plan.families[k + 1].first_entry
                            : plan.entries.size();
    for (size_t i = plan.families[k].first_entry; i < last; ++i) {
      const Plan::Entry& e = plan.entries[i];
      put(plan.text, &text_pos, e.text_end,
          e.scale.Apply(samples[e.sample].raw));
    }
  }
  put_dynamic_before(plan.families.size());
  out->resize(static_cast<size_t>(p - out->data()));
}

void ExpositionRenderer::PrepareDynamic(const Snapshot& snapshot,
                                        const AgentHealth& health) {
  Plan& plan = *plan_;
  Families dynamic;
  AddDynamicFamilies(snapshot, health, &dynamic);
  plan.dynamic_text.clear();
  plan.dynamic_entries.clear();
  plan.dynamic_groups.clear();
  plan.dynamic_values.clear();
  size_t before = 0;  // the plan family the next dynamic one goes before
  for (const auto& [name, f] : dynamic.map()) {
    while (before < plan.families.size() && plan.families[before].name < name) {
      ++before;
    }
    plan.dynamic_text.append(Header(name, f));
    for (const Families::Entry& e : f.entries) {
      plan.dynamic_text.append(e.series);
      plan.dynamic_text.push_back(' ');
      Plan::DynamicEntry& entry = plan.dynamic_entries.emplace_back();
      entry.call = e.call;
      entry.text_end = static_cast<uint32_t>(plan.dynamic_text.size());
      if (plan.dynamic_values.size() <= e.call) {
        plan.dynamic_values.resize(e.call + 1);
      }
      plan.dynamic_values[e.call] = e.value;
    }
    if (plan.dynamic_groups.empty() ||
        plan.dynamic_groups.back().first != before) {
      plan.dynamic_groups.emplace_back(before, 0);
    }
    plan.dynamic_groups.back().second = plan.dynamic_entries.size();
  }
  std::swap(plan.dynamic_key, plan.key_scratch);
  plan.dynamic_ready = true;
}

}  // namespace fabricdiag::agent
