#include "analysis/hysteresis.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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

namespace {

int Ones(uint32_t bits) {
  int n = 0;
  for (; bits != 0; bits &= bits - 1) ++n;
  return n;
}

}  // namespace

uint32_t Hysteresis::RecentMask() const {
  // n below k counts as k (k of k).
  const int n = std::clamp(std::max(config_.open_within, config_.open_after), 1,
                           kMaxOpenWithin);
  return n >= 32 ? ~uint32_t{0} : (uint32_t{1} << n) - 1;
}

// By value: the candidates are moved into the states.
// NOLINTNEXTLINE(performance-unnecessary-value-param)
std::vector<Finding> Hysteresis::Step(
    std::vector<Finding> candidates, std::vector<Finding> recent,
    const absl::flat_hash_set<std::string>& quiet) {
  std::map<Key, Finding> now = ByKey(std::move(candidates));
  // Every condition in the newest samples, and which of them are strong.
  std::map<Key, Finding> fresh = ByKey(std::move(recent));
  std::map<Key, bool> strong;
  for (const auto& [key, f] : fresh) strong.emplace(key, Strong(f));
  auto is_strong = [&](const Key& key) {
    auto it = strong.find(key);
    return it != strong.end() && it->second;
  };
  const uint32_t mask = RecentMask();
  // Passes without the condition first, so a key present now is not
  // counted as clear. Every history ages by one pass.
  for (auto it = states_.begin(); it != states_.end();) {
    State& s = it->second;
    const bool absent =
        now.count(it->first) == 0 && fresh.count(it->first) == 0;
    if (absent && quiet.contains(std::get<2>(it->first))) {
      // Nothing known of the node this pass: the state holds.
      ++it;
      continue;
    }
    s.recent = (s.recent << 1) & mask;
    if (now.count(it->first) > 0 || is_strong(it->first)) {
      ++it;
      continue;
    }
    s.held = 0;
    s.strong = 0;
    if (s.open) {
      ++s.clear;
      if (s.clear >= config_.clear_after) {
        it = states_.erase(it);
        continue;
      }
    } else if (s.recent == 0 && fresh.count(it->first) == 0) {
      // Nothing left to count towards opening.
      it = states_.erase(it);
      continue;
    }
    ++it;
  }
  for (auto& [key, f] : now) {
    State& s = states_[key];
    ++s.held;
    s.last = std::move(f);
  }
  for (auto& [key, f] : fresh) {
    State& s = states_[key];
    s.recent |= 1;
    if (is_strong(key)) ++s.strong;
    // The window's view is the steadier account; the newest samples speak
    // only until the window confirms them.
    if (now.count(key) == 0 && (is_strong(key) || !s.open)) {
      s.last = std::move(f);
    }
  }
  std::vector<Finding> open;
  for (auto& [key, s] : states_) {
    const bool in_window = now.count(key) > 0;
    const bool in_fresh = fresh.count(key) > 0;
    if (in_window || in_fresh) ++s.seen;
    if (!in_window && !is_strong(key)) {
      // Not present: an open finding counts down with its last evidence;
      // one not yet open only keeps its newest samples' history.
      if (s.open) open.push_back(s.last);
      continue;
    }
    if (!is_strong(key)) s.strong = 0;
    if (!in_window) s.held = 0;
    s.clear = 0;
    // k of the last n newest-samples views, confirmed by the window mean.
    const bool confirmed = in_window && Ones(s.recent) >= config_.open_after;
    if (!s.open && (s.last.immediate || s.held >= config_.open_after ||
                    s.strong >= config_.strong_open_after || confirmed)) {
      s.open = true;
    }
    s.last.evidence[kIntervalsHeldEvidence] = s.seen;
    if (s.open) open.push_back(s.last);
  }
  return open;
}

}  // namespace fabricdiag::analysis
