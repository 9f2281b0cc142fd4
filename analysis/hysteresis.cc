#include "analysis/hysteresis.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace fabricdiag::analysis {

Hysteresis::Hysteresis(HysteresisConfig config) : config_(config) {}

Hysteresis::Key Hysteresis::KeyOf(const Finding& f) {
  return {f.kind, f.job, f.node, f.device, f.group};
}

// By value: the findings are moved into the map.
// NOLINTNEXTLINE(performance-unnecessary-value-param)
std::map<Hysteresis::Key, Finding> Hysteresis::ByKey(
    std::vector<Finding> findings) {
  std::map<Key, Finding> out;
  for (Finding& f : findings) {
    Key key = KeyOf(f);
    auto [it, inserted] = out.try_emplace(std::move(key), std::move(f));
    // try_emplace moves `f` only when it inserts.
    if (!inserted && f.severity > it->second.severity) {
      it->second = std::move(f);
    }
  }
  return out;
}

bool Hysteresis::Strong(const Finding& f) const {
  auto it = f.evidence.find(kOverThresholdEvidence);
  return it != f.evidence.end() && std::isfinite(it->second) &&
         it->second >= config_.strong_over_threshold;
}

void Hysteresis::Seed(const std::vector<Finding>& open) {
  for (const Finding& f : open) {
    State& s = states_[KeyOf(f)];
    s.open = true;
    s.held = std::max(s.held, config_.open_after);
    // The count goes on where the last process left it.
    auto held = f.evidence.find(kIntervalsHeldEvidence);
    if (held != f.evidence.end() && std::isfinite(held->second) &&
        held->second > 0 && held->second < 1e9) {
      s.seen = std::max(s.seen, static_cast<int>(held->second));
    }
    s.last = f;
  }
}

// By value: the candidates are moved into the states.
// NOLINTNEXTLINE(performance-unnecessary-value-param)
std::vector<Finding> Hysteresis::Step(std::vector<Finding> candidates,
                                      std::vector<Finding> recent) {
  std::map<Key, Finding> now = ByKey(std::move(candidates));
  std::map<Key, Finding> strong;
  for (auto& [key, f] : ByKey(std::move(recent))) {
    if (Strong(f)) strong.emplace(key, std::move(f));
  }
  // Passes without the condition first, so a key present now is not
  // counted as clear.
  for (auto it = states_.begin(); it != states_.end();) {
    if (now.count(it->first) > 0 || strong.count(it->first) > 0) {
      ++it;
      continue;
    }
    State& s = it->second;
    s.held = 0;
    s.strong = 0;
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
    s.last = std::move(f);
  }
  for (auto& [key, f] : strong) {
    State& s = states_[key];
    ++s.strong;
    // The window's view is the steadier account; the newest samples speak
    // only until the window confirms them.
    if (now.count(key) == 0) s.last = std::move(f);
  }
  std::vector<Finding> open;
  for (auto& [key, s] : states_) {
    const bool present = now.count(key) > 0 || strong.count(key) > 0;
    if (!present) {
      if (s.open) open.push_back(s.last);
      continue;
    }
    if (strong.count(key) == 0) s.strong = 0;
    if (now.count(key) == 0) s.held = 0;
    s.clear = 0;
    ++s.seen;
    if (!s.open && (s.last.immediate || s.held >= config_.open_after ||
                    s.strong >= config_.strong_open_after)) {
      s.open = true;
    }
    s.last.evidence[kIntervalsHeldEvidence] = s.seen;
    if (s.open) open.push_back(s.last);
  }
  return open;
}

}  // namespace fabricdiag::analysis
