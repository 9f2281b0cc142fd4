// The cluster backend of the operator marks (collector/findings/mark_state.h):
// acks, silences and forgotten nodes in one replicated JetStream key-value
// bucket that every collector of the cluster writes and watches, so that
// each shows the same marks and they survive any collector's restart or a
// change of the analysis leader.
//
// Bucket "fabricdiag_marks" (created by the first collector, with
// --nats_replicas replicas, file storage, the latest value per key):
//   silence.<id>          a silence (expiring one early rewrites it)
//   ack.<finding id>      the latest ack of a finding
//   forget.<node>         the latest forget of a node ("." written "=2E")
// Each value is a binary v1::OperatorMark (cluster/kv_payload.h). Entries
// not written again for kMarksMaxAge are dropped by the servers: the
// longest silence (30 days) and its week of being listed as expired fit.
//
// Writes are plain puts, not compare-and-set: every mark is a whole value
// whose meaning is "the latest one" (a second ack of a finding, the expiry
// of a silence), so the last writer winning is the intended result, and a
// lost race costs nothing. Put returns once the bucket acknowledged the
// write; the watcher then delivers it to every collector, this one
// included.
//
//   ASSIGN_OR_RETURN(auto marks, JetStreamMarks::Open(nats, {.replicas=3}));
//   Marks served(marks.get(), clock);
//
// Thread-safe.
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "cluster/nats_connection.h"
#include "collector/findings/mark_state.h"

namespace fabricdiag::cluster {

inline constexpr char kMarksBucket[] = "fabricdiag_marks";
inline constexpr absl::Duration kMarksMaxAge = absl::Hours(24 * 40);

class JetStreamMarks final : public collector::MarkState {
 public:
  struct Options {
    int replicas = 3;
    std::string bucket = kMarksBucket;
  };

  // Binds the bucket, creating it when missing, and waits until its
  // watcher replayed it. `nats` must outlive the result. Unavailable when
  // the cluster does not answer by the connection's startup deadline.
  static absl::StatusOr<std::unique_ptr<JetStreamMarks>> Open(
      NatsConnection* nats, const Options& options);

  JetStreamMarks(const JetStreamMarks&) = delete;
  JetStreamMarks& operator=(const JetStreamMarks&) = delete;
  ~JetStreamMarks() override;

  std::string Describe() const override;
  absl::Status Put(const v1::OperatorMark& mark) override;
  absl::StatusOr<std::vector<v1::OperatorMark>> ReadAll() override;
  void Watch(std::function<void(const v1::OperatorMark&)> on_mark) override;
  // Also stops the watcher thread (its connection may close after this).
  void StopWatching() override;

 private:
  JetStreamMarks(NatsConnection* nats, Options options, kvStore* kv);
  void WatchLoop();
  void ApplyEntry(kvEntry* entry);

  NatsConnection* const nats_;
  const Options options_;
  kvStore* const kv_;
  std::atomic<bool> stopping_{false};
  absl::Notification replayed_;
  std::thread watcher_;
  absl::Mutex mu_;
  std::map<std::string, v1::OperatorMark> marks_ ABSL_GUARDED_BY(mu_);
  std::function<void(const v1::OperatorMark&)> on_mark_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fabricdiag::cluster
