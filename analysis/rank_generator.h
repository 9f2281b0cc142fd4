// Megatron-LM's rank -> parallel group mapping, reimplemented.
//
// Megatron-LM (megatron/core/parallel_state.py, RankGenerator and
// generate_masked_orthogonal_rank_groups) lays ranks out on a mixed-radix
// grid whose axes are the parallel dimensions in the order string's order,
// the first axis varying fastest: with order "tp-pp-dp" and degrees 2-2-2,
// rank = tp_rank + 2 * pp_rank + 4 * dp_rank. A group of dimension(s) X holds
// the ranks that differ only in X's coordinates; groups are listed with the
// remaining coordinates counted in the same mixed radix. fabricdiag must name
// groups ("tp:5") exactly as the training job numbers them, so this follows
// that enumeration to the index.
//
//   ASSIGN_OR_RETURN(std::vector<std::string> order, ParseOrder("tp-pp-dp"));
//   Degrees degrees;
//   degrees.tp = degrees.pp = degrees.dp = 2;
//   ASSIGN_OR_RETURN(RankGenerator gen, RankGenerator::Create(degrees, order));
//   ASSIGN_OR_RETURN(RankGroups dp, gen.GetRanks("dp"));
//   // dp.group(0) == {0, 4}, dp.group(1) == {1, 5}, ...
//
// Pure and thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace fabricdiag::analysis {

// Megatron-LM's default order string.
inline constexpr absl::string_view kDefaultOrder = "tp-cp-ep-dp-pp";

// Groups of equal size stored flat: group g is
// members[g * group_size, (g + 1) * group_size), in generator order.
struct RankGroups {
  uint32_t group_size = 0;
  uint32_t num_groups = 0;
  std::vector<uint32_t> members;

  absl::Span<const uint32_t> group(uint32_t g) const {
    return absl::MakeConstSpan(members).subspan(
        static_cast<size_t>(g) * group_size, group_size);
  }
};

// generate_masked_orthogonal_rank_groups: `sizes` are the degrees in order
// (first fastest), `mask[i]` selects the dimensions the groups span.
// Requires sizes.size() == mask.size(), every size >= 1 and their product
// < 2^32 (the caller bounds it).
RankGroups MaskedOrthogonalRankGroups(absl::Span<const uint32_t> sizes,
                                      absl::Span<const bool> mask);

// Splits an order string ("tp-cp-ep-dp-pp") into lowercase tokens. Errors
// (InvalidArgument, message without a field prefix): empty, an unknown token
// (only tp, cp, ep, dp, pp exist), a token given twice.
absl::StatusOr<std::vector<std::string>> ParseOrder(absl::string_view order);

struct Degrees {
  uint32_t tp = 1;
  uint32_t cp = 1;
  uint32_t ep = 1;
  uint32_t dp = 1;
  uint32_t pp = 1;
};

// Megatron-LM's RankGenerator for one set of degrees and one order.
class RankGenerator {
 public:
  // Tokens missing from `order` are appended (they must have degree 1, as in
  // Megatron-LM, otherwise InvalidArgument naming the token). The product of
  // the degrees must be < 2^32.
  static absl::StatusOr<RankGenerator> Create(
      const Degrees& degrees, const std::vector<std::string>& order);

  // Groups of the dimensions in `tokens` ("dp", "dp-cp", "tp-pp").
  // InvalidArgument for a token not in the order.
  absl::StatusOr<RankGroups> GetRanks(absl::string_view tokens) const;

  uint32_t world_size() const { return world_size_; }

 private:
  RankGenerator(std::vector<std::string> order, std::vector<uint32_t> sizes,
                uint32_t world_size)
      : order_(std::move(order)),
        sizes_(std::move(sizes)),
        world_size_(world_size) {}

  std::vector<std::string> order_;  // complete, all five tokens
  std::vector<uint32_t> sizes_;     // degree of order_[i]
  uint32_t world_size_;
};

}  // namespace fabricdiag::analysis
