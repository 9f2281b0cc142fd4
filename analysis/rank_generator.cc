#include "analysis/rank_generator.h"

#include <algorithm>
#include <cassert>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace fabricdiag::analysis {
namespace {

// Megatron-LM's RankGenerator appends missing tokens in this order
// (its name_to_size dict); the order matters for group numbering only
// through degree-1 axes, i.e. not at all, but we keep it for fidelity.
constexpr absl::string_view kAllTokens[] = {"tp", "pp", "dp", "ep", "cp"};

uint32_t DegreeOf(const Degrees& d, absl::string_view token) {
  if (token == "tp") return d.tp;
  if (token == "cp") return d.cp;
  if (token == "ep") return d.ep;
  if (token == "dp") return d.dp;
  return d.pp;
}

}  // namespace

RankGroups MaskedOrthogonalRankGroups(absl::Span<const uint32_t> sizes,
                                      absl::Span<const bool> mask) {
  assert(sizes.size() == mask.size());
  // Stride of axis i in the global rank = product of the faster axes.
  std::vector<uint64_t> stride(sizes.size());
  uint64_t world = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    stride[i] = world;
    world *= sizes[i];
  }
  uint64_t group_size = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (mask[i]) group_size *= sizes[i];
  }
  RankGroups out;
  out.group_size = static_cast<uint32_t>(group_size);
  out.num_groups = static_cast<uint32_t>(world / group_size);
  out.members.resize(world);

  // The offset of the k-th member inside any group: k decomposed in mixed
  // radix over the masked axes (first fastest), re-weighted by their global
  // strides. Same for every group, so computed once.
  std::vector<uint32_t> offset(group_size);
  for (uint64_t k = 0; k < group_size; ++k) {
    uint64_t rest = k;
    uint64_t value = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (!mask[i]) continue;
      value += (rest % sizes[i]) * stride[i];
      rest /= sizes[i];
    }
    offset[k] = static_cast<uint32_t>(value);
  }
  // The base rank of group g: g decomposed over the unmasked axes.
  for (uint64_t g = 0; g < out.num_groups; ++g) {
    uint64_t rest = g;
    uint64_t base = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (mask[i]) continue;
      base += (rest % sizes[i]) * stride[i];
      rest /= sizes[i];
    }
    uint32_t* dst = out.members.data() + g * group_size;
    for (uint64_t k = 0; k < group_size; ++k) {
      dst[k] = static_cast<uint32_t>(base + offset[k]);
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ParseOrder(absl::string_view order) {
  if (order.empty()) {
    return absl::InvalidArgumentError("must not be empty");
  }
  std::vector<std::string> tokens =
      absl::StrSplit(absl::AsciiStrToLower(order), '-');
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (std::find(std::begin(kAllTokens), std::end(kAllTokens), t) ==
        std::end(kAllTokens)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown dimension \"", absl::CHexEscape(t.substr(0, 32)), "\" in \"",
          absl::CHexEscape(order.substr(0, 64)),
          "\" (known: tp, cp, ep, dp, pp)"));
    }
    if (std::find(tokens.begin(), tokens.begin() + i, t) !=
        tokens.begin() + i) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", t, "\" appears twice in \"", order, "\""));
    }
  }
  return tokens;
}

absl::StatusOr<RankGenerator> RankGenerator::Create(
    const Degrees& degrees, const std::vector<std::string>& order) {
  std::vector<std::string> full = order;
  for (absl::string_view token : kAllTokens) {
    if (std::find(full.begin(), full.end(), token) != full.end()) continue;
    uint32_t degree = DegreeOf(degrees, token);
    if (degree != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", absl::StrJoin(order, "-"), "\" omits ", token,
                       ", whose degree is ", degree));
    }
    full.emplace_back(token);
  }
  std::vector<uint32_t> sizes;
  uint64_t world = 1;
  for (const std::string& token : full) {
    uint32_t degree = DegreeOf(degrees, token);
    if (degree == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(token, " must be at least 1"));
    }
    sizes.push_back(degree);
    world *= degree;
    if (world > UINT32_MAX) {
      return absl::InvalidArgumentError("too many ranks");
    }
  }
  return RankGenerator(std::move(full), std::move(sizes),
                       static_cast<uint32_t>(world));
}

absl::StatusOr<RankGroups> RankGenerator::GetRanks(
    absl::string_view tokens) const {
  std::vector<bool> mask_bits(order_.size(), false);
  for (absl::string_view t : absl::StrSplit(tokens, '-')) {
    auto it = std::find(order_.begin(), order_.end(), t);
    if (it == order_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown dimension \"", t, "\""));
    }
    mask_bits[static_cast<size_t>(it - order_.begin())] = true;
  }
  // std::vector<bool> has no contiguous storage for a Span.
  std::unique_ptr<bool[]> mask(new bool[order_.size()]);
  for (size_t i = 0; i < order_.size(); ++i) mask[i] = mask_bits[i];
  return MaskedOrthogonalRankGroups(
      sizes_, absl::MakeConstSpan(mask.get(), order_.size()));
}

}  // namespace fabricdiag::analysis
