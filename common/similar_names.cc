#include "common/similar_names.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/ascii.h"

namespace fabricdiag {
namespace {

absl::string_view FirstLabel(absl::string_view name) {
  return name.substr(0, name.find('.'));
}

absl::string_view Stem(absl::string_view name) {
  size_t end = name.size();
  while (end > 0 &&
         absl::ascii_isdigit(static_cast<unsigned char>(name[end - 1]))) {
    --end;
  }
  return name.substr(0, end);
}

}  // namespace

size_t NameEditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same =
          absl::ascii_tolower(static_cast<unsigned char>(a[i - 1])) ==
          absl::ascii_tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] =
          std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> LookAlikeNames(
    absl::string_view name, const std::vector<std::string>& candidates,
    size_t max) {
  const std::string lower = absl::AsciiStrToLower(name);
  const absl::string_view label = FirstLabel(lower);
  const absl::string_view stem = Stem(label);
  // (rule, distance, candidate): the lower the more alike.
  std::vector<std::tuple<int, size_t, const std::string*>> alike;
  for (const std::string& c : candidates) {
    const std::string other = absl::AsciiStrToLower(c);
    const absl::string_view other_label = FirstLabel(other);
    // Host names are compared by their first labels, so that an FQDN
    // looks like its own short name's neighbours too.
    const size_t distance = NameEditDistance(label, other_label);
    const size_t shorter = std::min(label.size(), other_label.size());
    int rule = 0;
    if (other == lower) {
      rule = 1;
    } else if (other_label == label) {
      rule = 2;
    } else if (distance <= std::max<size_t>(2, shorter / 4)) {
      rule = 3;
    } else if (stem.size() >= 2 && Stem(other_label) == stem) {
      rule = 4;
    } else {
      continue;
    }
    alike.emplace_back(rule, distance, &c);
  }
  std::sort(alike.begin(), alike.end(), [](const auto& x, const auto& y) {
    if (std::get<0>(x) != std::get<0>(y))
      return std::get<0>(x) < std::get<0>(y);
    if (std::get<1>(x) != std::get<1>(y))
      return std::get<1>(x) < std::get<1>(y);
    // Shorter first, then alphabetical: "mlx5_2" before "mlx5_10".
    const std::string& a = *std::get<2>(x);
    const std::string& b = *std::get<2>(y);
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  std::vector<std::string> out;
  for (const auto& a : alike) {
    if (out.size() >= max) break;
    if (std::find(out.begin(), out.end(), *std::get<2>(a)) == out.end()) {
      out.push_back(*std::get<2>(a));
    }
  }
  return out;
}

}  // namespace fabricdiag
