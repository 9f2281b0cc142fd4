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
// Liveness: each pass a collector also publishes its nodes' liveness facts
// alone (cluster/feature_wire.h SliceToLivenessChunks: ~80 bytes a node
// against 4-10 KB with its ports) as core NATS messages on
// fabricdiag.liveness.<collector_id>.<n>, outside the stream: they are
// news of one pass, sent again the next, so neither stored nor replicated.
//
// Reading: every collector subscribes to fabricdiag.liveness.>, which is
// all that a collector that does not analyse reads (its node list, for
// ListNodes). Other collectors' feature chunks are read only while they
// are merged into the fabric (MergeScope::kFabric: the analysis leader, or
// a follower whose page is being looked at) and for `features_linger`
// after: then a plain subscription on fabricdiag.features.> hands every new
// chunk to this collector as it is published (libnats renews it after a
// reconnect), and the subscription's thread decodes it there and then
// (cluster/feature_cache.h), so Merged() takes ready slices. When that
// subscription starts (the first merge of the fabric: a collector that
// starts leading, or becomes the leader), the stream's last message of
// every subject seeds the cache on a thread of its own, so it sees the
// fabric within a pass or two without holding up the pass (the nodes of a
// collector not seen yet are unobserved meanwhile: their findings hold);
// when it ends, the chunks kept are freed. A live collector whose liveness does
// not arrive (a build before liveness, or a NATS user not allowed
// fabricdiag.liveness.>) is read from its feature chunks instead: a merge
// of nodes that misses one for `freshness` subscribes to the feature
// chunks as a merge of the fabric does.
// A chunk counts while it was received within `freshness` (this
// collector's clock: clocks need not agree), so a collector that stops
// publishing leaves the merge within `freshness`; its nodes' liveness is
// kept, and they are unobserved (their findings hold, agent_down does not
// open) while that collector is a live member and for
// collector::kAgentReconnectGrace after it left; then agent_down raises
// those that did not report elsewhere.
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
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster/feature_cache.h"
#include "cluster/feature_wire.h"
#include "cluster/nats_connection.h"
#include "cluster/nats_subscription.h"
#include "collector/runner/feature_exchange.h"

namespace fabricdiag::cluster {

inline constexpr char kFeaturesStream[] = "fabricdiag_features";
inline constexpr char kFeaturesSubject[] = "fabricdiag.features";
inline constexpr char kLivenessSubject[] = "fabricdiag.liveness";
// Feature chunks published and not yet acknowledged, at most: 32 MiB of
// 512 KiB chunks.
inline constexpr int kPublishesInFlight = 64;

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
    std::string liveness_subject = kLivenessSubject;
    // How long after its last merge of the fabric this collector keeps
    // receiving the others' feature chunks (a lease that moves back, a
    // page looked at again).
    absl::Duration features_linger = absl::Seconds(30);
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
    uint64_t received_chunks = 0;       // other collectors' feature chunks
    uint64_t received_bytes = 0;
    // This collector's own feature chunks, received back and dropped
    // unread.
    uint64_t own_chunks_skipped = 0;
    uint64_t received_liveness_bytes = 0;
    uint64_t last_published_liveness_bytes = 0;
    uint64_t liveness_publish_errors = 0;
    // Whether this collector receives the other collectors' feature chunks
    // now (or their liveness alone).
    bool receiving_features = false;
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
    // The latest Merged(): nodes whose collector handed their agents to
    // another one and that reported nowhere since (on their way; held
    // unobserved, not counted above).
    uint64_t moving_nodes = 0;
    // The latest catch-up with the stream (when this collector started
    // receiving the feature chunks): subjects read, and how long it took
    // (zero while it runs).
    uint64_t catch_up_subjects = 0;
    // Subjects not read because the subscription had brought a newer
    // chunk first.
    uint64_t catch_up_skipped = 0;
    absl::Duration catch_up_took;
  };

  // Creates the stream when missing and subscribes. `nats` must outlive
  // the result.
  static absl::StatusOr<std::unique_ptr<JetStreamFeatures>> Open(
      NatsConnection* nats, std::string collector_id, const Options& options);
  ~JetStreamFeatures() override;
  JetStreamFeatures(const JetStreamFeatures&) = delete;
  JetStreamFeatures& operator=(const JetStreamFeatures&) = delete;

  std::string Describe() const override;
  // Publishes `local`'s liveness, collects the previous publish's
  // acknowledgements (WaitForAcknowledgements()), and sends `local`'s
  // feature chunks without waiting for theirs: they arrive while the
  // analysis pass goes on, and the next Publish() collects them. Returns
  // the error of sending, or else how the previous publish went.
  absl::Status Publish(const collector::FeatureSlice& local,
                       absl::Time now) override;
  // `local`'s liveness alone, on the liveness subject (core NATS); the
  // stream gets nothing.
  absl::Status PublishLiveness(const collector::FeatureSlice& local,
                               absl::Time now) override;
  collector::FeatureSlice Merged(collector::FeatureSlice local, absl::Time now,
                                 collector::MergeScope scope) override;

  Stats stats() const;

  // When this collector last received features from each other collector
  // (its clock): their feature chunks while it receives them, their
  // liveness otherwise.
  std::map<std::string, absl::Time> LastReceived() const;
  // Waits for the acknowledgements of the latest Publish() (at most the
  // request timeout after its last chunk was sent) and records how it
  // went: OK when they all came, or nothing was in flight. Publish() does
  // so first for the previous one.
  absl::Status WaitForAcknowledgements();
  // How the latest publish whose acknowledgements were collected went;
  // OK when it succeeded (or none was).
  absl::Status last_publish_status() const;
  // How long every Publish() has failed, since the first failure after a
  // success (the monotonic clock); zero while the latest succeeded.
  absl::Duration publish_failing_for() const;

 private:
  JetStreamFeatures(NatsConnection* nats, std::string collector_id,
                    Options options);
  // Subscribes `subject` with `handler`; null on error (logged).
  std::unique_ptr<NatsSubscription> Subscribe(const std::string& subject,
                                              natsMsgHandler handler);
  static void OnFeatures(natsConnection* nc, natsSubscription* sub,
                         natsMsg* msg, void* closure);
  static void OnLiveness(natsConnection* nc, natsSubscription* sub,
                         natsMsg* msg, void* closure);
  // A feature chunk the stream refused (or whose acknowledgement was an
  // error), on libnats' thread.
  static void OnPublishError(jsCtx* js, jsPubAckErr* pae, void* closure);
  // Receives the other collectors' feature chunks from now on, seeded with
  // the stream's latest of each (if not already) on a thread of its own.
  void ReceiveFeatures() ABSL_EXCLUSIVE_LOCKS_REQUIRED(subs_mu_);
  // Stops receiving the feature chunks and frees those kept.
  void StopReceivingFeatures() ABSL_EXCLUSIVE_LOCKS_REQUIRED(subs_mu_);
  // Ends the catch-up (if any) and waits for its thread.
  void StopCatchUp() ABSL_EXCLUSIVE_LOCKS_REQUIRED(subs_mu_);
  // The stream's last message of every subject, into the cache, until
  // catch_up_stop_.
  void CatchUp();
  absl::Status PublishLivenessChunks(const collector::FeatureSlice& local,
                                     absl::Time now);
  // Collects the acknowledgements of in_flight_ (see
  // WaitForAcknowledgements()).
  absl::Status Settle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(publish_mu_);

  // A publish whose acknowledgements were not collected yet.
  struct InFlight {
    bool pending = false;
    uint64_t sent = 0;           // chunks handed to libnats
    int64_t deadline_nanos = 0;  // MonotonicNanos: the last one's timeout
    absl::Status status;         // of sending them
  };

  NatsConnection* const nats_;
  const std::string id_;
  const Options options_;
  // The feature chunks' own JetStream context: they are published
  // asynchronously (up to kPublishesInFlight at a time), and the next pass
  // collects all their acknowledgements at once.
  jsCtx* publish_js_ = nullptr;
  // Publish() and WaitForAcknowledgements(), one at a time.
  absl::Mutex publish_mu_;
  InFlight in_flight_ ABSL_GUARDED_BY(publish_mu_);
  // The publish in flight: chunks the stream refused, and the first error.
  std::atomic<uint64_t> refused_chunks_{0};
  absl::Mutex refused_mu_;
  std::string first_refusal_ ABSL_GUARDED_BY(refused_mu_);
  // Merged() and the destructor change the subscriptions.
  absl::Mutex subs_mu_;
  std::unique_ptr<NatsSubscription> liveness_sub_ ABSL_GUARDED_BY(subs_mu_);
  std::unique_ptr<NatsSubscription> features_sub_ ABSL_GUARDED_BY(subs_mu_);
  std::atomic<bool> receiving_features_{false};
  // Seeds the cache with the stream's last chunks when the feature chunks
  // start to be received: at 1M GPUs some 1,750 subjects, each a request,
  // which the analysis pass does not wait for. Meanwhile the merge has
  // what arrived; the nodes of the collectors not in it yet are
  // unobserved (their findings hold).
  std::thread catch_up_ ABSL_GUARDED_BY(subs_mu_);
  std::atomic<bool> catch_up_stop_{false};
  // "<subject>.<id>.": this collector's own feature chunks.
  const std::string own_prefix_;
  std::atomic<uint64_t> own_chunks_skipped_{0};
  // The latest catch-up: subjects read, and how long it took (0 while it
  // runs).
  std::atomic<uint64_t> catch_up_subjects_{0};
  std::atomic<uint64_t> catch_up_skipped_{0};
  std::atomic<int64_t> catch_up_nanos_{0};
  // MonotonicNanos of the liveness subscription's start, and of the
  // latest merge that needed the feature chunks.
  int64_t liveness_since_nanos_ ABSL_GUARDED_BY(subs_mu_) = 0;
  int64_t features_needed_nanos_ ABSL_GUARDED_BY(subs_mu_) = 0;
  std::atomic<uint64_t> last_published_liveness_bytes_{0};
  std::atomic<uint64_t> liveness_publish_errors_{0};
  std::atomic<bool> liveness_failing_{false};  // logged on each change
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
