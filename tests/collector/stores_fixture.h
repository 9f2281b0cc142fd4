// A test fixture: the collector's stores (state, findings, declared
// layouts, operator marks) opened over a fresh temporary state directory,
// on a fake clock, for the tests of what serves them (the gRPC API, the
// HTTP routes).
#pragma once

#include <memory>
#include <utility>

#include "collector/declared/file_declared_state.h"
#include "collector/declared/layout_registry.h"
#include "collector/findings/findings_store.h"
#include "collector/findings/silences.h"
#include "collector/state/state_store.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {

class CollectorStoresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto state = StateStore::Open(tmp_.path() + "/state", &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    findings_ =
        std::make_unique<FindingsStore>(state_.get(), FindingsStoreOptions{});
    ASSERT_TRUE(findings_->Load().ok());
    declared_ = std::make_unique<FileDeclaredState>(state_.get());
    registry_ = std::make_unique<LayoutRegistry>(declared_.get(), &clock_);
    ASSERT_TRUE(registry_->Load().ok());
    mark_state_ = std::make_unique<FileMarkState>(state_.get());
    marks_ = std::make_unique<Marks>(mark_state_.get(), clock_);
    ASSERT_TRUE(marks_->Load().ok());
  }

  testing::TempDir tmp_;
  FakeClock clock_{absl::FromUnixSeconds(1'790'000'000)};
  std::unique_ptr<StateStore> state_;
  std::unique_ptr<FindingsStore> findings_;
  std::unique_ptr<FileDeclaredState> declared_;
  std::unique_ptr<LayoutRegistry> registry_;
  std::unique_ptr<FileMarkState> mark_state_;
  std::unique_ptr<Marks> marks_;
};

}  // namespace fabricdiag::collector
