#include "analysis/hysteresis.h"

#include <algorithm>
#include <utility>

namespace fabricdiag::analysis {

Hysteresis::Hysteresis(HysteresisConfig config) : config_(config) {}

Hysteresis::Key Hysteresis::KeyOf(const Finding& f) {
  return {f.kind, f.job, f.node, f.device, f.group};
}

void Hysteresis::Seed(const std::vector<Finding>& open) {
  for (const Finding& f : open) {
    State& s = states_[KeyOf(f)];
    s.open = true;
    s.held = std::max(s.held, config_.open_after);
    s.last = f;
  }
}

// By value: the candidates are moved into the states.
// NOLINTNEXTLINE(performance-unnecessary-value-param)
std::vector<Finding> Hysteresis::Step(std::vector<Finding> candidates) {
  // Passes without the condition first, so a key present now is not
  // counted as clear.
  std::map<Key, Finding> now;
  for (Finding& f : candidates) {
    Key key = KeyOf(f);
    auto [it, inserted] = now.try_emplace(std::move(key), std::move(f));
    // An analyzer that reports one key twice: keep the more severe.
    if (!inserted && f.severity > it->second.severity) it->second = f;
  }
  for (auto it = states_.begin(); it != states_.end();) {
    if (now.count(it->first) > 0) {
      ++it;
      continue;
    }
    State& s = it->second;
    s.held = 0;
    ++s.clear;
    if (!s.open || s.clear >= config_.clear_after) {
      it = states_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [key, f] : now) {
    State& s = states_[key];
    ++s.held;
    s.clear = 0;
    if (!s.open && (f.immediate || s.held >= config_.open_after)) {
      s.open = true;
    }
    s.last = std::move(f);
  }
  std::vector<Finding> open;
  for (const auto& [key, s] : states_) {
    if (s.open) open.push_back(s.last);
  }
  return open;
}

}  // namespace fabricdiag::analysis
