// The subscriptions of one gNMI Subscribe call and what each last sent:
// which leaves of a switch's successive states (sim/gnmi_leaves.h) are
// due, as SubscribeResponses. The logic of sim/gnmi_target.h's Subscribe,
// without gRPC.
//
//   ASSIGN_OR_RETURN(SubscriptionSet subs,
//                    SubscriptionSet::Create(dialect, request.subscribe()));
//   RETURN_IF_ERROR(subs.Bind(first.leaves));     // Unimplemented paths
//   for (auto& r : subs.Initial(first)) Write(r); // updates + sync_response
//   for (auto& r : subs.Next(later)) Write(r);    // per later state
//
// SAMPLE and TARGET_DEFINED subscriptions are due every sample_interval of
// the states' timestamps (0: every state; a state is due once 90% of the
// interval has passed, so that a jittery tick does not skip a sample) and
// send all their leaves, or with suppress_redundant the changed ones;
// ON_CHANGE subscriptions send the leaves whose value changed.
// heartbeat_interval is ignored.
//
// With `overlap` (a target answering overlapping subscriptions), a SAMPLE
// subscription below a port (Selector::PortSubtree) also sends every
// counter of the port that its path does not select, as sampled one state
// earlier (Snapshot::earlier) and stamped with that state's timestamp: the
// same counter then arrives through several subscriptions, each sampled at
// its own moment.
//
// Pure; thread-compatible (one per stream).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gnmi/dialect.h"
#include "proto/gnmi.pb.h"
#include "sim/gnmi_leaves.h"

namespace fabricdiag::sim {

// One state of a switch with its leaves, in the same order in every state
// of that switch (SwitchLeaves keeps the port order).
struct Snapshot {
  int64_t timestamp_nanos = 0;
  std::vector<Leaf> leaves;
  // The state before, for overlapping subscriptions; empty: `leaves`.
  int64_t earlier_timestamp_nanos = 0;
  std::vector<Leaf> earlier{};
};

class SubscriptionSet {
 public:
  // InvalidArgument for a list without subscriptions; Unimplemented for
  // POLL and for a SONiC target the switch does not serve.
  static absl::StatusOr<SubscriptionSet> Create(
      gnmi::Dialect dialect, const ::gnmi::SubscriptionList& list,
      bool overlap = false);

  // Finds each subscription's leaves in `leaves` (those of every later
  // snapshot, by position). Unimplemented when one selects no leaf.
  absl::Status Bind(const std::vector<Leaf>& leaves);

  // Every leaf (none with updates_only), then sync_response.
  std::vector<::gnmi::SubscribeResponse> Initial(const Snapshot& snapshot);
  // The leaves due in a later snapshot.
  std::vector<::gnmi::SubscribeResponse> Next(const Snapshot& snapshot);

  // ONCE: the stream ends after Initial.
  bool once() const { return once_; }

 private:
  struct Sub {
    explicit Sub(Selector s) : selector(std::move(s)) {}

    Selector selector;
    ::gnmi::SubscriptionMode mode = ::gnmi::SAMPLE;
    int64_t interval_nanos = 0;
    bool suppress_redundant = false;
    int64_t last_sample_nanos = 0;
    std::vector<size_t> leaves;               // indices into the snapshots
    std::vector<size_t> overlapping;          // counters sent one state late
    std::map<std::string, std::string> sent;  // leaf key -> serialized value
  };

  SubscriptionSet() = default;

  // Appends the leaves of `sub` due in `snap` (all of them with `all`) to
  // `out`, and its overlapping ones to `late`.
  static void Due(const Snapshot& snap, bool all, Sub* sub,
                  std::vector<const Leaf*>* out,
                  std::vector<const Leaf*>* late);
  // The notifications of `due` and `late` leaves of `snapshot`.
  static std::vector<::gnmi::SubscribeResponse> Respond(
      const Snapshot& snapshot, const std::vector<const Leaf*>& due,
      const std::vector<const Leaf*>& late);

  std::vector<Sub> subs_;
  bool once_ = false;
  bool updates_only_ = false;
  bool overlap_ = false;
};

}  // namespace fabricdiag::sim
