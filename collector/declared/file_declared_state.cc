#include "collector/declared/file_declared_state.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace fabricdiag::collector {

std::string FileDeclaredState::Describe() const {
  return absl::StrCat("--state_dir=", store_->dir());
}

absl::StatusOr<uint64_t> FileDeclaredState::WriteLayout(
    const v1::Layout& layout, absl::Time applied,
    uint64_t /*expected_revision*/, absl::Time /*deadline*/) {
  RETURN_IF_ERROR(store_->WriteLayout(layout, applied));
  return 0;
}

absl::Status FileDeclaredState::RemoveLayout(absl::string_view job,
                                             uint64_t /*expected_revision*/,
                                             absl::Time /*deadline*/) {
  // One process writes the directory (its lock), and the registry
  // serializes its writes: nothing can change the file under it.
  return store_->RemoveLayout(job);
}

absl::StatusOr<std::vector<DeclaredLayout>> FileDeclaredState::ReadLayouts() {
  ASSIGN_OR_RETURN(std::vector<StoredLayout> stored, store_->ReadLayouts());
  std::vector<DeclaredLayout> out;
  out.reserve(stored.size());
  for (StoredLayout& s : stored) {
    out.push_back(
        DeclaredLayout{std::move(s.layout), s.applied, 0, std::move(s.path)});
  }
  return out;
}

absl::StatusOr<uint64_t> FileDeclaredState::WriteTopology(
    const v1::Topology& topology, absl::Time applied,
    uint64_t /*expected_revision*/, absl::Time /*deadline*/) {
  RETURN_IF_ERROR(store_->WriteTopology(topology, applied));
  return 0;
}

absl::StatusOr<std::optional<DeclaredTopology>>
FileDeclaredState::ReadTopology() {
  ASSIGN_OR_RETURN(std::optional<StoredTopology> stored,
                   store_->ReadTopology());
  if (!stored.has_value()) return std::nullopt;
  return DeclaredTopology{std::move(stored->topology), stored->applied, 0,
                          absl::StrCat(store_->dir(), "/topology.pb")};
}

void FileDeclaredState::Reject(absl::string_view where, absl::string_view why) {
  // A failure to move the file is recorded by the store (problems(),
  // write_errors()); the registry goes on without the object either way.
  store_->QuarantineFile(std::string(where), why).IgnoreError();
}

void FileDeclaredState::Watch(
    std::function<void(const DeclaredChange&)> /*on_change*/) {}

std::vector<std::string> FileDeclaredState::problems() const {
  return store_->problems();
}

}  // namespace fabricdiag::collector
