// Leases of declared layouts (docs/layout-format.md#source-owner-and-lease):
// a layout declared with a lease is removed by the collector once its
// expiry passes without a renewal, and its findings resolve as on
// `fabricdiag layout delete`.
//
// The lease lives in the layout's declaration (proto/layout.proto
// LayoutDeclaration), so it persists where the layout does (--state_dir, or
// the cluster's bucket) and survives a restart. In a cluster every collector
// checks; the removal is a compare-and-set against the revision this
// collector serves, so a renewal made through another collector meanwhile
// wins and the layout stays.
//
//   LayoutLeases leases(&registry, &clock, [&](const std::string& job) {
//     runner.RunLayoutPass(job, absl::InfiniteFuture());
//   });
//   leases.Start(absl::Seconds(1));  // or ExpireDue() from a test
//   ASSIGN_OR_RETURN(v1::LayoutDeclaration d,
//                    leases.Renew("moe-42", std::nullopt, deadline));
//
// Time comes from the injected clock only. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "collector/declared/layout_lease_limits.h"
#include "collector/declared/layout_registry.h"
#include "common/clock.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

// Checks what a writer says of itself. Messages start with the field
// ("lease_seconds: ...", "source: ...", "owner: ..."). `lease_seconds` is
// nullopt for no lease; otherwise 1..kMaxLeaseSeconds. `source` is one of
// cli, http, python, slurm; `owner` at most 128 printable ASCII characters.
absl::Status ValidateDeclaration(absl::string_view source,
                                 absl::string_view owner,
                                 std::optional<int64_t> lease_seconds);

// The declaration of a layout applied at `now` (validate first).
v1::LayoutDeclaration NewDeclaration(absl::string_view source,
                                     absl::string_view owner,
                                     std::optional<int64_t> lease_seconds,
                                     absl::Time now);

// When the lease runs out; nullopt when the layout has none.
std::optional<absl::Time> LeaseExpiry(const v1::LayoutDeclaration& d);

class LayoutLeases {
 public:
  // Called after a layout was removed because its lease ran out (to resolve
  // its findings); on the thread that noticed.
  using OnExpired = std::function<void(const std::string& job)>;

  // `registry` and `clock` must outlive this object.
  LayoutLeases(LayoutRegistry* registry, const Clock* clock,
               OnExpired on_expired);
  // Stops the periodic check.
  ~LayoutLeases();
  LayoutLeases(const LayoutLeases&) = delete;
  LayoutLeases& operator=(const LayoutLeases&) = delete;

  // Moves the expiry of `job`'s lease to `lease_seconds` (else the lease's
  // own length) after now. NotFound when the layout is gone (expired
  // included); FailedPrecondition when it has no lease and none is given;
  // InvalidArgument for a bad `lease_seconds`; Aborted when another
  // collector changed the layout meanwhile.
  absl::StatusOr<v1::LayoutDeclaration> Renew(
      absl::string_view job, std::optional<int64_t> lease_seconds,
      absl::Time deadline = absl::InfiniteFuture());

  // Removes every layout whose lease ran out by the clock's now; returns
  // how many were removed. A removal that fails (another collector renewed
  // it, the backend is down) is logged and tried again on the next call.
  int ExpireDue(absl::Time deadline = absl::InfiniteFuture());

  // Calls ExpireDue every `period` on a thread of its own until Stop().
  void Start(absl::Duration period);
  void Stop();

  // Layouts removed by this collector since it started.
  uint64_t expired() const { return expired_.load(); }
  // fabricdiag_layouts_expired_total and fabricdiag_layouts_leased, as
  // Prometheus text.
  void AppendMetrics(std::string* out) const;

 private:
  LayoutRegistry* const registry_;
  const Clock* const clock_;
  const OnExpired on_expired_;
  std::atomic<uint64_t> expired_{0};
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace fabricdiag::collector
