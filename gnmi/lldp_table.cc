#include "gnmi/lldp_table.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag::gnmi {
namespace {

size_t Index(LldpField f) { return static_cast<size_t>(f); }

bool IsComplete(const std::array<std::string, kLldpFieldCount>& f) {
  return !f[Index(LldpField::kChassisId)].empty() &&
         !f[Index(LldpField::kPortId)].empty();
}

}  // namespace

LldpTable::SetResult LldpTable::Set(absl::string_view port,
                                    absl::string_view neighbor, LldpField field,
                                    absl::string_view value) {
  SetResult result;
  std::string text;
  absl::string_view v = absl::StripAsciiWhitespace(value);
  switch (field) {
    case LldpField::kChassisIdType:
      text = LldpIdType(v, /*chassis=*/true);
      break;
    case LldpField::kPortIdType:
      text = LldpIdType(v, /*chassis=*/false);
      break;
    case LldpField::kManagementAddress:
      text = std::string(absl::StripAsciiWhitespace(v.substr(0, v.find(','))));
      break;
    default:
      text = std::string(v);
      break;
  }
  if (text.size() > agent::kLldpMaxFieldBytes) {
    text.resize(agent::kLldpMaxFieldBytes);
    result.truncated = true;
  }
  // Keys are cut alike: a hostile id must not make every update a new
  // neighbor, nor hold megabytes.
  Key key(port.substr(0, agent::kLldpMaxFieldBytes),
          neighbor.substr(0, agent::kLldpMaxFieldBytes));
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (text.empty()) return result;  // clearing a field of no neighbor
    if (entries_.size() >= kMaxNeighbors) {
      if (refused_.size() < kMaxNeighbors) {
        result.refused =
            refused_.insert(absl::StrCat(key.first, "\n", key.second)).second;
      }
      return result;
    }
    it = entries_.emplace(std::move(key), Fields()).first;
  }
  std::string& slot = it->second[Index(field)];
  if (slot != text) {
    slot = std::move(text);
    ++generation_;
  }
  return result;
}

void LldpTable::Remove(absl::string_view port, absl::string_view neighbor) {
  const size_t before = entries_.size();
  if (port.empty()) {
    entries_.clear();
  } else if (!neighbor.empty()) {
    entries_.erase(Key(port, neighbor));
  } else {
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = it->first.first == port ? entries_.erase(it) : std::next(it);
    }
  }
  if (entries_.size() != before) ++generation_;
}

void LldpTable::Clear() {
  if (!entries_.empty()) ++generation_;
  entries_.clear();
  refused_.clear();
}

std::vector<agent::LldpNeighbor> LldpTable::Complete() const {
  std::vector<agent::LldpNeighbor> out;
  for (const auto& [key, f] : entries_) {
    if (!IsComplete(f)) continue;
    agent::LldpNeighbor n;
    n.netdev = key.first;
    n.system_name = f[Index(LldpField::kSystemName)];
    n.chassis_id = f[Index(LldpField::kChassisId)];
    n.chassis_id_type = f[Index(LldpField::kChassisIdType)];
    n.port_id = f[Index(LldpField::kPortId)];
    n.port_id_type = f[Index(LldpField::kPortIdType)];
    n.port_description = f[Index(LldpField::kPortDescription)];
    n.management_address = f[Index(LldpField::kManagementAddress)];
    // Switches print MACs in either case; one spelling per address.
    if (n.chassis_id_type == "mac") absl::AsciiStrToLower(&n.chassis_id);
    if (n.port_id_type == "mac") absl::AsciiStrToLower(&n.port_id);
    out.push_back(std::move(n));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

size_t LldpTable::incomplete() const {
  return static_cast<size_t>(
      std::count_if(entries_.begin(), entries_.end(),
                    [](const auto& e) { return !IsComplete(e.second); }));
}

}  // namespace fabricdiag::gnmi
