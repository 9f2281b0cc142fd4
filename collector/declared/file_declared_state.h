// The embedded backend of the declared state: layouts and topology as files
// in --state_dir (collector/state/state_store.h). One collector process is the
// only writer, so a write never conflicts, revisions are 0 and Watch() has
// nothing to deliver. A write is one local file replaced at once: it ignores
// the caller's deadline (it cannot hang on a peer).
//
//   FileDeclaredState declared(state_store.get());
//   LayoutRegistry registry(&declared, &clock);
//
// Thread-safe (the StateStore is).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collector/declared/declared_state.h"
#include "collector/state/state_store.h"

namespace fabricdiag::collector {

class FileDeclaredState final : public DeclaredState {
 public:
  // `store` must outlive this object.
  explicit FileDeclaredState(StateStore* store) : store_(store) {}

  std::string Describe() const override;
  absl::StatusOr<uint64_t> WriteLayout(const v1::Layout& layout,
                                       absl::Time applied,
                                       uint64_t expected_revision,
                                       absl::Time deadline) override;
  absl::Status RemoveLayout(absl::string_view job, uint64_t expected_revision,
                            absl::Time deadline) override;
  absl::StatusOr<std::vector<DeclaredLayout>> ReadLayouts() override;
  absl::StatusOr<uint64_t> WriteTopology(const v1::Topology& topology,
                                         absl::Time applied,
                                         uint64_t expected_revision,
                                         absl::Time deadline) override;
  absl::StatusOr<std::optional<DeclaredTopology>> ReadTopology() override;
  void Reject(absl::string_view where, absl::string_view why) override;
  void Watch(std::function<void(const DeclaredChange&)> on_change) override;
  void StopWatching() override {}
  std::vector<std::string> problems() const override;

 private:
  StateStore* const store_;
};

}  // namespace fabricdiag::collector
