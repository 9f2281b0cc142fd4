// Test helpers for the gNMI fixtures in tests/fixtures/gnmi/ (see its
// PROVENANCE.md) and for notifications built in tests.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "proto/gnmi.pb.h"

namespace fabricdiag::gnmi::testing {

// The fixture's bytes; fails the test (and returns "") when unreadable.
std::string ReadFixture(absl::string_view name);

// A GetResponse (or anything with `notification` fields) in text format.
::gnmi::GetResponse ReadNotifications(absl::string_view name);

// A notification with one update: `path` (text form) holding `json` as
// json_ietf_val, under a prefix with `target` (may be empty).
::gnmi::Notification JsonNotification(absl::string_view target,
                                      absl::string_view path,
                                      absl::string_view json,
                                      int64_t timestamp = 0);

// A notification with one uint_val update at `path`.
::gnmi::Notification UintNotification(absl::string_view path, uint64_t value,
                                      int64_t timestamp = 0);

// A notification with one update at `path` holding `value` as given.
::gnmi::Notification ValueNotification(absl::string_view path,
                                       const ::gnmi::TypedValue& value,
                                       int64_t timestamp = 0);

}  // namespace fabricdiag::gnmi::testing
