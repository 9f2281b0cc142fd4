// The cluster backend of the feature exchange
// (collector/runner/feature_exchange.h): every collector publishes its slice of
// the analyzers' input each pass and merges the other collectors' latest slices
// into the whole fabric.
//
// Stream "fabricdiag_features" (created by the first collector; memory
// storage, --nats_replicas replicas, one message kept per subject, messages
// dropped after `max_age`): subject fabricdiag.features.<collector_id>.<n>
// holds chunk n of that collector's latest slice (cluster/feature_wire.h).
// Nothing in it is state: a collector that restarts publishes again within a
// pass, and a lost message costs one pass of that collector's nodes.
//
// Reading: a plain subscription on fabricdiag.features.> hands every new
// chunk to this collector as it is published (libnats renews it after a
// reconnect), and the subscription's thread decodes it there and then
// (cluster/feature_cache.h), so Merged() takes ready slices (while this
// collector merges the fabric: one that merges nodes only, a collector
// that does not analyse, keeps the chunks undecoded); at Open, the
// stream's last message of every subject seeds the cache, so a collector that
// starts (or becomes the analysis leader) sees the fabric at once. A chunk
// counts while it was received within `freshness` (this collector's clock:
// clocks need not agree), so a collector that stops publishing leaves the merge
// within `freshness`; its nodes' liveness is kept, and they are unobserved
// (their findings hold, agent_down does not open) while that collector is a
// live member and for collector::kAgentReconnectGrace after it left; then
// agent_down raises those that did not report elsewhere.
//
//   ASSIGN_OR_RETURN(auto features,
//                    JetStreamFeatures::Open(nats, "col-a", {.replicas = 3}));
//   features->Publish(local, now).IgnoreError();
//   FeatureSlice fabric = features->Merged(std::move(local), now,
//                                          MergeScope::kFabric);
//
// Thread-safe.
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "cluster/feature_cache.h"
#include "cluster/feature_wire.h"
#include "cluster/nats_connection.h"
#include "collector/runner/feature_exchange.h"

namespace fabricdiag::cluster {

inline constexpr char kFeaturesStream[] = "fabricdiag_features";
inline constexpr char kFeaturesSubject[] = "fabricdiag.features";

class JetStreamFeatures final : public collector::FeatureExchange {
 public:
  struct Options {
    int replicas = 3;
    // A chunk older than this (received) is left out of the merge: a few
    // analysis passes.
    absl::Duration freshness = absl::Seconds(5);
    // How long the stream keeps a chunk nobody replaced.
    absl::Duration max_age = absl::Seconds(30);
    size_t max_chunk_bytes = kDefaultChunkBytes;
    std::string stream = kFeaturesStream;
    std::string subject = kFeaturesSubject;
    // The ids of the collectors that are live members now
    // (ClusterMembers::Live()): the nodes of one whose features stop
    // arriving are unobserved, not silent, while it is live and for
    // collector::kAgentReconnectGrace after (FeatureCache::Merged). Unset:
    // none is.
    std::function<std::vector<std::string>()> live_members;
  };

  // What the exchange did, for /metrics.
  struct Stats {
    uint64_t published_chunks = 0;
    uint64_t publish_errors = 0;        // failed passes (the rest is not tried)
    uint64_t last_published_bytes = 0;  // the latest slice, every chunk
    uint64_t received_chunks = 0;
    uint64_t undecodable_chunks = 0;
    // The latest Merged(): other collectors in it, and their ports.
    uint64_t merged_members = 0;
    uint64_t merged_remote_ports = 0;
    // Chunks the latest Merged() decoded itself: merged again before a
    // newer copy arrived, or received while this collector merged nodes
    // only (the others were decoded as they were received).
    uint64_t merge_decoded_chunks = 0;
    // The latest Merged(): per other live collector (and per one that left
    // with nodes still unobserved), how many of its nodes are unobserved.
    std::map<std::string, uint64_t> unobserved_nodes;
  };

  // Creates the stream when missing and subscribes. `nats` must outlive
  // the result.
  static absl::StatusOr<std::unique_ptr<JetStreamFeatures>> Open(
      NatsConnection* nats, std::string collector_id, const Options& options);
  ~JetStreamFeatures() override;
  JetStreamFeatures(const JetStreamFeatures&) = delete;
  JetStreamFeatures& operator=(const JetStreamFeatures&) = delete;

  std::string Describe() const override;
  absl::Status Publish(const collector::FeatureSlice& local,
                       absl::Time now) override;
  collector::FeatureSlice Merged(collector::FeatureSlice local, absl::Time now,
                                 collector::MergeScope scope) override;

  Stats stats() const;

  // When this collector last received features from each other collector
  // (its clock; kept until the chunks expire from the stream's cache).
  std::map<std::string, absl::Time> LastReceived() const;
  // The error of the latest Publish(); OK when it succeeded (or none ran).
  absl::Status last_publish_status() const;
  // How long every Publish() has failed, since the first failure after a
  // success (the monotonic clock); zero while the latest succeeded.
  absl::Duration publish_failing_for() const;

 private:
  JetStreamFeatures(NatsConnection* nats, std::string collector_id,
                    Options options);
  static void OnMessage(natsConnection* nc, natsSubscription* sub, natsMsg* msg,
                        void* closure);
  // The subscription is closed and its handler returned for good.
  static void OnComplete(void* closure);
  // The stream's last message of every subject (at Open).
  void CatchUp();

  NatsConnection* const nats_;
  const std::string id_;
  const Options options_;
  natsSubscription* sub_ = nullptr;
  absl::Notification sub_done_;  // OnComplete ran
  std::atomic<uint64_t> publish_errors_{0};
  std::atomic<uint64_t> published_chunks_{0};
  std::atomic<uint64_t> last_published_bytes_{0};
  // MonotonicNanos of the first failed Publish() since the last success;
  // 0 while the latest succeeded.
  std::atomic<int64_t> failing_since_nanos_{0};
  mutable absl::Mutex mu_;
  absl::Status last_publish_status_ ABSL_GUARDED_BY(mu_);
  // What the other collectors published, decoded as it is received (on
  // the subscription's thread).
  FeatureCache cache_;
};

}  // namespace fabricdiag::cluster
