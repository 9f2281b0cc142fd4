#include "analysis/hysteresis.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

namespace fabricdiag::analysis {

Hysteresis::Hysteresis(HysteresisConfig config) : config_(config) {}

Hysteresis::Key Hysteresis::KeyOf(const Finding& f) {
  return {f.kind, f.job, f.node, f.device, f.group};
}

void Hysteresis::KeepFaultKeys(std::vector<Finding>* candidates) const {
  // (kind, group, fault) -> the key tracking it; an open finding first.
  std::map<std::tuple<std::string, std::string, std::string>, const Key*>
      tracking;
  for (const bool open : {true, false}) {
    for (const auto& [key, s] : states_) {
      auto fault = s.last.evidence_text.find(kFaultEvidence);
      if (s.open != open || fault == s.last.evidence_text.end()) continue;
      tracking.try_emplace({std::get<0>(key), std::get<4>(key), fault->second},
                           &key);
    }
  }
  if (tracking.empty()) return;
  for (Finding& f : *candidates) {
    auto fault = f.evidence_text.find(kFaultEvidence);
    if (fault == f.evidence_text.end() || states_.count(KeyOf(f)) > 0) {
      continue;
    }
    auto it = tracking.find({f.kind, f.group, fault->second});
    if (it == tracking.end()) continue;
    const Key& key = *it->second;
    f.job = std::get<1>(key);
    f.node = std::get<2>(key);
    f.device = std::get<3>(key);
    // The node to look at first leads the list, as an analyzer puts it.
    auto node = std::find(f.nodes.begin(), f.nodes.end(), f.node);
    if (node != f.nodes.end()) f.nodes.erase(node);
    f.nodes.insert(f.nodes.begin(), f.node);
  }
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

size_t Hysteresis::KeepNodes(
    absl::FunctionRef<bool(absl::string_view node)> keep) {
  size_t dropped = 0;
  for (auto it = states_.begin(); it != states_.end();) {
    if (keep(std::get<2>(it->first))) {
      ++it;
    } else {
      it = states_.erase(it);
      ++dropped;
    }
  }
  return dropped;
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
    const absl::flat_hash_set<std::string>& quiet,
    const absl::flat_hash_set<std::pair<std::string, std::string>>&
        quiet_groups) {
  KeepFaultKeys(&candidates);
  KeepFaultKeys(&recent);
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
    if (absent && (quiet.contains(std::get<2>(it->first)) ||
                   (!std::get<4>(it->first).empty() &&
                    quiet_groups.contains(std::make_pair(
                        std::get<1>(it->first), std::get<4>(it->first)))))) {
      // Nothing known of the node this pass, or of a member of its group:
      // the state holds.
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
