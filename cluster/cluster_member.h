// This collector's place in a collector cluster (--nats): its connection to
// the JetStream servers, the declared state it shares with the other
// collectors, the analyzers' input it exchanges with them, the analysis
// lease it competes for, the findings it shares or mirrors, and what it says
// about these on /healthz and /metrics.
//
// Without --nats there is no ClusterMember: the collector is one process
// with its state in --state_dir (collector/file_declared_state.h).
//
//   ASSIGN_OR_RETURN(std::unique_ptr<ClusterMember> member,
//                    ClusterMember::Join({nats_flag, "collector-a", 3}));
//   LayoutRegistry registry(member->declared_state(), &clock);
//   findings.Replicate(member->findings_replication());
//   member->MirrorFindings(&findings);
//   ...
//   member->StopMirroring();  // before `findings` goes away
//
// Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cluster/analysis_lease.h"
#include "cluster/cluster_members.h"
#include "cluster/jetstream_declared_state.h"
#include "cluster/jetstream_features.h"
#include "cluster/jetstream_findings.h"
#include "cluster/nats_connection.h"
#include "collector/findings_store.h"
#include "collector/layout_registry.h"

namespace fabricdiag::cluster {

struct ClusterOptions {
  std::string nats;          // --nats: comma-separated nats:// URLs
  std::string collector_id;  // --collector_id
  int replicas = 3;          // --nats_replicas
  // --analysis_interval: another collector's features count for 3 passes
  // (at least 3 s) after they arrived.
  absl::Duration analysis_interval = absl::Seconds(1);
};

// InvalidArgument naming the flag at fault. Does not touch the network.
absl::Status ValidateClusterOptions(const ClusterOptions& options);

class ClusterMember {
 public:
  // Connects (retrying for up to 10 s) and opens the shared buckets,
  // creating them when this is the first collector. Unavailable naming the
  // servers when the cluster does not answer.
  static absl::StatusOr<std::unique_ptr<ClusterMember>> Join(
      const ClusterOptions& options);

  collector::DeclaredState* declared_state() { return declared_.get(); }
  collector::FeatureExchange* features() { return features_.get(); }
  // Who analyses (cluster/analysis_lease.h).
  const AnalysisLease* lease() const { return lease_.get(); }
  const collector::AnalysisRole* role() const { return lease_.get(); }
  // The cluster's one set of findings (cluster/jetstream_findings.h).
  collector::FindingsReplication* findings_replication() {
    return findings_.get();
  }
  // The first collector of a new cluster brings its declared state along:
  // when the cluster's bucket never held anything (not even a deletion),
  // copies every layout and the topology of `from` (this collector's
  // --state_dir from before it joined) into it, each only if no other
  // collector created it meanwhile. Returns how many objects it copied (0
  // when the bucket was not new).
  absl::StatusOr<int> SeedDeclaredState(collector::DeclaredState& from);

  // Applies every finding the leader shares to `store` while this
  // collector does not lead, until StopMirroring(). `store` must outlive
  // the mirroring.
  void MirrorFindings(collector::FindingsStore* store);
  void StopMirroring();

  // Closes the connection to NATS for good, as a collector that was killed
  // or cut off looks to the others (its lease expires, its features go
  // stale). For tests.
  void Disconnect() { nats_->Close(); }
  const std::string& collector_id() const { return id_; }

  // /healthz lines; false when this collector cannot reach NATS, its last
  // write of declared state failed, it cannot publish its features or
  // does not receive those of a collector that is alive, or another
  // collector uses its id.
  bool AppendHealth(std::string* text) const;
  // The fabricdiag_cluster_* families (docs/metrics.md).
  void AppendMetrics(const collector::LayoutRegistry& registry,
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
  std::unique_ptr<JetStreamFindings> findings_;
};

}  // namespace fabricdiag::cluster
