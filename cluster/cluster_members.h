// Who is in the collector cluster. Every collector announces itself in the
// bucket "fabricdiag_members" every 2 s (key: its --collector_id; value: a
// random instance id, its version and, once it serves agents, the HOST:PORT
// agents reach it at, separated by spaces) and watches the bucket; a member is
// live while its announcements keep arriving (within 3 periods, by this
// collector's clock, so clocks need not agree). A collector that stops
// cleanly deletes its key, so the others see it leave at once.
//
// Two running collectors with the same --collector_id would make every
// per-collector metric and health line ambiguous: each sees the other's
// instance under its own key and reports it (id_conflict(), /healthz 503).
//
// The announcements double as the watcher's heartbeat: a watcher that has
// not even seen this collector's own announcement for 3 periods is dead
// (its NATS server died) and is recreated.
//
//   ASSIGN_OR_RETURN(auto members, ClusterMembers::Start(nats, "col-a", 3));
//   members->Advertise("10.0.0.7:9811");  // once the gRPC port listens
//   for (const ClusterMembers::Member& m : members->Live()) ...
//
// Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster/nats_connection.h"

namespace fabricdiag::cluster {

inline constexpr char kMembersBucket[] = "fabricdiag_members";

class ClusterMembers {
 public:
  struct Options {
    int replicas = 3;
    absl::Duration period = absl::Seconds(2);
    std::string bucket = kMembersBucket;
  };
  struct Member {
    std::string id;
    absl::Time last_seen;  // this collector's clock
    bool self = false;
    // Since when it is live without a break (this collector's clock).
    absl::Time live_since;
    // Where agents reach it ("" until it announced one; collectors of
    // older versions never do).
    std::string address;
  };

  // Binds (or creates) the bucket and starts announcing. `nats` must
  // outlive the result.
  static absl::StatusOr<std::unique_ptr<ClusterMembers>> Start(
      NatsConnection* nats, std::string id, const Options& options);
  // Stop().
  ~ClusterMembers();
  ClusterMembers(const ClusterMembers&) = delete;
  ClusterMembers& operator=(const ClusterMembers&) = delete;

  // Stops announcing and watching, and deletes this collector's key while
  // connected (the others drop it at once; one that cannot reach NATS
  // ages out). Idempotent; Live() still answers.
  void Stop();

  // Announces `address` (HOST:PORT, no spaces) from now on, at once.
  void Advertise(const std::string& address);

  // Members whose announcement arrived within 3 periods, ascending id.
  std::vector<Member> Live() const;
  // True while another instance announces this collector's id.
  bool id_conflict() const;
  uint64_t watcher_restarts() const { return watcher_restarts_.load(); }
  absl::Duration period() const { return options_.period; }

 private:
  ClusterMembers(NatsConnection* nats, std::string id, Options options,
                 kvStore* kv);
  void Run();
  void Announce();
  // `replayed`: the entry came with the watcher's initial replay.
  void Seen(kvEntry* entry, bool replayed);

  NatsConnection* const nats_;
  const std::string id_;
  const std::string instance_;
  const Options options_;
  kvStore* const kv_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> stopped_{false};  // Stop() ran
  std::atomic<uint64_t> watcher_restarts_{0};
  std::thread thread_;
  mutable absl::Mutex mu_;
  std::map<std::string, absl::Time> last_seen_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Time> live_since_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> addresses_ ABSL_GUARDED_BY(mu_);
  std::string address_ ABSL_GUARDED_BY(mu_);  // this collector's
  std::optional<absl::Time> conflict_seen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fabricdiag::cluster
