#include "client/collector_list.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/address_list.h"
#include "common/status_macros.h"

namespace fabricdiag::client {

absl::StatusOr<std::vector<std::string>> ParseCollectorList(
    absl::string_view value) {
  ASSIGN_OR_RETURN(std::vector<std::string> list,
                   SplitAddressList("collector", value));
  for (const std::string& entry : list) {
    RETURN_IF_ERROR(CheckHostPort("collector", entry, false));
  }
  return list;
}

uint64_t RendezvousHash(absl::string_view node, absl::string_view entry) {
  std::string bytes;
  bytes.reserve(node.size() + 1 + entry.size());
  bytes.append(node.data(), node.size());
  bytes.push_back('\0');
  bytes.append(entry.data(), entry.size());
  return Fmix64(Fnv1a64(bytes));
}

double RendezvousScore(absl::string_view node, absl::string_view entry,
                       double weight) {
  // 53 bits: exactly representable, and +0.5 keeps u off 0 and 1, where
  // ln(u) would be -inf or 0.
  const double u =
      (static_cast<double>(RendezvousHash(node, entry) >> 11) + 0.5) /
      9007199254740992.0;  // 2^53
  return -weight / std::log(u);
}

std::vector<size_t> RankCollectors(absl::string_view node,
                                   const std::vector<std::string>& collectors) {
  return RankCollectors(node, collectors, {});
}

std::vector<size_t> RankCollectors(absl::string_view node,
                                   const std::vector<std::string>& collectors,
                                   const std::vector<double>& weights) {
  std::vector<std::pair<double, size_t>> scored;
  scored.reserve(collectors.size());
  for (size_t i = 0; i < collectors.size(); ++i) {
    scored.emplace_back(RendezvousScore(node, collectors[i],
                                        i < weights.size() ? weights[i] : 1.0),
                        i);
  }
  std::stable_sort(
      scored.begin(), scored.end(),
      [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<size_t> order;
  order.reserve(scored.size());
  for (const auto& [score, index] : scored) order.push_back(index);
  return order;
}

CollectorChoice::CollectorChoice(std::string node,
                                 std::vector<std::string> collectors)
    : node_(std::move(node)),
      collectors_(std::move(collectors)),
      weights_(collectors_.size(), 1.0),
      ranking_(RankCollectors(node_, collectors_)),
      failed_(collectors_.size(), false),
      current_(ranking_.empty() ? 0 : ranking_.front()) {}

absl::Status CollectorChoice::SetWeights(
    const std::vector<std::pair<std::string, double>>& weights) {
  absl::Status status;
  std::vector<double> next(collectors_.size(), 1.0);
  for (const auto& [entry, weight] : weights) {
    auto it = std::find(collectors_.begin(), collectors_.end(), entry);
    if (it == collectors_.end() || !std::isfinite(weight) || weight <= 0) {
      status.Update(absl::InvalidArgumentError(absl::StrCat(
          "collector weight ", weight, " for '", entry.substr(0, 64),
          "': not an entry of the list with a weight above 0")));
      continue;
    }
    next[static_cast<size_t>(it - collectors_.begin())] = weight;
  }
  if (next != weights_) {
    weights_ = std::move(next);
    ranking_ = RankCollectors(node_, collectors_, weights_);
  }
  return status;
}

size_t CollectorChoice::Failed(bool worked) {
  if (collectors_.size() < 2) return current_;
  if (worked) std::fill(failed_.begin(), failed_.end(), false);
  failed_[current_] = true;
  if (std::all_of(failed_.begin(), failed_.end(), [](bool f) { return f; })) {
    // Every one failed: start over, this one last.
    std::fill(failed_.begin(), failed_.end(), false);
    failed_[current_] = true;
  }
  for (size_t index : ranking_) {
    if (!failed_[index]) {
      current_ = index;
      break;
    }
  }
  return current_;
}

size_t CollectorChoice::HandedOff(absl::string_view target) {
  if (collectors_.size() < 2) return current_;
  for (size_t i = 0; i < collectors_.size(); ++i) {
    if (i != current_ && collectors_[i] == target) {
      // The collectors work and know where the agent belongs.
      std::fill(failed_.begin(), failed_.end(), false);
      current_ = i;
      return current_;
    }
  }
  // No target: this collector takes no agent now (it is cut off from its
  // cluster). Each of the others in turn, as after a failure, so that an
  // agent refused by one cut-off collector after another tries its whole
  // list before the first again.
  return Failed(/*worked=*/false);
}

size_t PreferredCollectorIndex(absl::string_view node, size_t count) {
  if (count == 0) return 0;
  return static_cast<size_t>(Fnv1a64(node) % count);
}

}  // namespace fabricdiag::client
