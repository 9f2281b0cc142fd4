// This collector's place in a collector cluster (--nats): its connection to
// the JetStream servers, the declared state it shares with the other
// collectors, the analyzers' input it exchanges with them, the analysis
// lease it competes for, the findings it shares or mirrors, and what it says
// about these on /healthz and /metrics.
//
// Without --nats there is no ClusterMember: the collector is one process
// with its state in --state_dir (collector/declared/file_declared_state.h).
//
//   ASSIGN_OR_RETURN(std::unique_ptr<ClusterMember> member,
//                    ClusterMember::Join({nats_flag, "collector-a", 3}));
//   LayoutRegistry registry(member->declared_state(), &clock);
//   findings.Replicate(*member->findings_replication());
//   member->MirrorFindings(&findings);  // a FindingsSink
//   ...
//   member->StopMirroring();  // before `findings` goes away
//
// Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "cluster/analysis_lease.h"
#include "cluster/cluster_members.h"
#include "cluster/jetstream_baselines.h"
#include "cluster/jetstream_declared_state.h"
#include "cluster/jetstream_features.h"
#include "cluster/jetstream_findings.h"
#include "cluster/leader_handoff.h"
#include "cluster/nats_analysis_shards.h"
#include "cluster/nats_connection.h"
#include "collector/declared/declared_state.h"
#include "collector/findings/findings_replication.h"
#include "collector/findings/findings_staleness.h"
#include "common/clock.h"

namespace fabricdiag::cluster {

// How long a stopping collector waits for NATS (ClusterMember::BeginStop):
// enough for a healthy cluster to take its last features and findings and
// the deletion of its lease and membership keys.
inline constexpr absl::Duration kStopGrace = absl::Seconds(2);

// /healthz turns 503 when no collector was seen leading the analysis for
// longer than this: a failover takes the lease's TTL (3 s) and an acquire
// period; the NATS servers electing their leaders after a restart take up
// to about 10 s on a loaded machine.
inline constexpr absl::Duration kWithoutLeaderLimit = absl::Seconds(15);

// A collector's findings count as stale when its findings watcher did not
// catch up with the bucket for longer than this: it looks twice a second
// while the bucket is quiet, so this is several missed looks, yet shorter
// than the 15 s before /healthz gives up on a leader.
inline constexpr absl::Duration kFindingsUnconfirmedLimit = absl::Seconds(5);

struct ClusterOptions {
  std::string nats;          // --nats: comma-separated nats:// URLs
  std::string collector_id;  // --collector_id
  int replicas = 3;          // --nats_replicas
  // --analysis_interval: another collector's features count for 3 passes
  // (at least 3 s) after they arrived.
  absl::Duration analysis_interval = absl::Seconds(1);
  // --nats_startup_timeout: how long Join waits for the servers to answer
  // and JetStream to serve every bucket and the stream, in all.
  absl::Duration startup_timeout = kDefaultStartupTimeout;
  // --nats_user, --nats_password_file, --nats_creds, --nats_tls_*.
  NatsSecurity security{};
  // --analysis_shards: every collector runs its share of the rate analysis
  // (cluster/nats_analysis_shards.h) instead of the analysis leader
  // running all of it.
  bool analysis_shards = false;
};

// InvalidArgument naming the flag at fault. Reads the security flags'
// files; does not touch the network.
absl::Status ValidateClusterOptions(const ClusterOptions& options);

class ClusterMember {
 public:
  // Connects and opens the shared buckets, creating them when this is the
  // first collector, retrying what fails for options.startup_timeout in all
  // (a JetStream cluster that just restarted). Unavailable naming the
  // servers and what failed when the cluster is not ready by then.
  static absl::StatusOr<std::unique_ptr<ClusterMember>> Join(
      const ClusterOptions& options);

  // Leave() with whatever NATS still answers, then closes the connection.
  ~ClusterMember();
  ClusterMember(const ClusterMember&) = delete;
  ClusterMember& operator=(const ClusterMember&) = delete;

  collector::DeclaredState* declared_state() { return declared_.get(); }
  collector::FeatureExchange* features() { return features_.get(); }
  // Who analyses (cluster/analysis_lease.h).
  const AnalysisLease* lease() const { return lease_.get(); }
  const collector::AnalysisRole* role() const {
    return sharded_role_ != nullptr
               ? static_cast<const collector::AnalysisRole*>(
                     sharded_role_.get())
               : lease_.get();
  }
  // The analysis shards with --analysis_shards; null otherwise.
  NatsAnalysisShards* analysis_shards() { return shards_.get(); }
  // Which agents this collector takes: it hands back those that prefer
  // another live collector, and the leader takes a lighter share
  // (cluster/leader_handoff.h).
  collector::IngestPlacement* ingest_placement() { return handoff_.get(); }
  // How long this collector may be cut off from NATS before it hands its
  // agents to connected collectors (collector/ingest/cut_off_placement.h):
  // as long as its features count for the others (3 analysis intervals, at
  // least 3 s), after which its nodes are unobserved there.
  absl::Duration cut_off_limit() const { return feature_freshness_; }
  // How long this collector's feature publishes have all failed (zero while
  // they succeed): with the NATS link up, a server in the minority of a
  // partition (collector::CutOffFromCluster).
  absl::Duration publishes_failing_for() const {
    return features_->publish_failing_for();
  }
  // The cluster's one set of findings (cluster/jetstream_findings.h).
  collector::FindingsReplication* findings_replication() {
    return findings_.get();
  }
  // The analysis leader's straggler baselines, for the next leader
  // (cluster/jetstream_baselines.h).
  collector::BaselinesStore* baselines() { return baselines_.get(); }
  // The first collector of a new cluster brings its declared state along:
  // when the cluster's bucket never held anything (not even a deletion),
  // copies every layout and the topology of `from` (this collector's
  // --state_dir from before it joined) into it, each only if no other
  // collector created it meanwhile. Returns how many objects it copied (0
  // when the bucket was not new).
  absl::StatusOr<int> SeedDeclaredState(collector::DeclaredState& from);

  // Applies every finding the leader shares to `store` (the collector's
  // FindingsStore) while this collector does not lead, until
  // StopMirroring(). `store` must outlive the mirroring.
  void MirrorFindings(collector::FindingsSink* store);
  void StopMirroring();

  // Stopping (SIGTERM), in two calls. BeginStop() when the stop is asked
  // for, before what uses the cluster stops: from then on, a NATS call
  // still waiting `grace` later (or once no server was connected for half
  // a second) fails, as does every later one (the connection is closed),
  // so a stop never waits for request timeouts of a cluster that is gone.
  // Nothing of --state_dir depends on it: local writes come first.
  // Leave() once the analysis and the mirroring stopped: stops watching,
  // gives up the lease and the membership (deleting their keys while a
  // server answers, so the others know at once) and closes the connection.
  // Both idempotent; /healthz and /metrics still answer after them.
  void BeginStop(absl::Duration grace);
  void Leave();

  // Closes the connection to NATS for good, as a collector that was killed
  // or cut off looks to the others (its lease expires, its features go
  // stale). For tests.
  void Disconnect() { nats_->Close(); }
  // The connection to NATS, for a backend the process opens beside the
  // member's (it must be stopped before Leave() closes the connection).
  NatsConnection* nats() const { return nats_.get(); }
  const std::string& collector_id() const { return id_; }

  // Whether the findings this collector serves are stale: its findings
  // watcher has not caught up with the bucket for longer than
  // kFindingsUnconfirmedLimit (NATS away, the watcher dead, or, leading,
  // its writes fail), or no collector was seen leading the analysis for
  // longer than kWithoutLeaderLimit (nobody updates them). The age is the
  // longer of the two.
  collector::FindingsStaleness FindingsStaleness() const;

  // /healthz lines; false when this collector cannot reach NATS, its last
  // write of declared state failed, it cannot publish its features or
  // does not receive those of a collector that is alive, no collector was
  // seen leading the analysis for kWithoutLeaderLimit, or another
  // collector uses its id.
  bool AppendHealth(std::string* text) const;
  // The fabricdiag_cluster_* families (docs/metrics.md); `watch` is what
  // the collector's LayoutRegistry did with the bucket's changes.
  void AppendMetrics(const collector::RegistryWatchStats& watch,
                     std::string* out) const;

 private:
  ClusterMember() = default;

  // Each other live collector: when this collector last heard its
  // features (a collector never heard from, or back after a silence: when
  // it became live), and when it last announced itself.
  struct FeatureSource {
    std::string id;
    absl::Time heard;
    absl::Time last_announced;
  };
  std::vector<FeatureSource> FeatureSources() const;
  // The live collectors that kept announcing themselves (so run and reach
  // NATS) for longer than features count in the merge after their newest
  // features arrived here: the analysis misses their nodes.
  std::vector<std::string> Unheard() const;

  std::string id_;
  absl::Duration feature_freshness_;
  std::unique_ptr<NatsConnection> nats_;
  std::unique_ptr<JetStreamDeclaredState> declared_;
  std::unique_ptr<ClusterMembers> members_;
  std::unique_ptr<JetStreamFeatures> features_;
  std::unique_ptr<AnalysisLease> lease_;
  std::unique_ptr<NatsAnalysisShards> shards_;
  std::unique_ptr<ShardedAnalysisRole> sharded_role_;
  SystemClock clock_;
  std::unique_ptr<LeaderHandoff> handoff_;
  std::unique_ptr<JetStreamFindings> findings_;
  std::unique_ptr<JetStreamBaselines> baselines_;
  // BeginStop()'s watchdog, ended by Leave().
  std::thread stop_watchdog_;
  absl::Notification left_;
};

}  // namespace fabricdiag::cluster
