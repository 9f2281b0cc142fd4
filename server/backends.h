// The one seam between the collector and where it keeps what it shares:
// every interface a collector cluster replaces, bundled, with an embedded
// implementation and the cluster's (JetStream) one. The process chooses the
// bundle once, at startup (RunCollector); no other code asks which one runs.
//
//   interface (collector/...)   embedded                  cluster (--nats)
//   DeclaredState               FileDeclaredState JetStreamDeclaredState
//   FindingsReplication         LocalFindingsReplication  JetStreamFindings
//   FeatureExchange             EmbeddedFeatureExchange   JetStreamFeatures
//   AnalysisRole                AlwaysLeading             AnalysisLease
//   IngestPlacement             KeepEveryAgent            LeaderHandoff, none
//                                                         while cut off
//                                                         (HandOffWhileCutOff)
//   BaselinesStore              FileBaselinesStore        JetStreamBaselines
//   NodeFactsStore              MemoryNodeFacts           JetStreamNodeFacts
//   MarkState                   FileMarkState             JetStreamMarks
//
// and what the process does differently around them: /healthz lines and
// /metrics families, the mirroring of the leader's findings, the stop.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<Backends> backends,
//                    config.nats.empty() ? EmbeddedBackends(state)
//                                        : ClusterBackends(options, state));
//   LayoutRegistry registry(&backends->declared_state(), &clock);
//   ...
//   backends->MirrorFindings(findings);
//   ...                                  // SIGTERM
//   backends->BeginStop(grace);          // before the analysis stops
//   backends->Leave();                   // after
//
// Thread-safe where the interfaces are; the lifecycle calls (MirrorFindings,
// BeginStop, Leave) come from the process's main thread.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cluster/cluster_member.h"
#include "collector/declared/declared_state.h"
#include "collector/declared/node_facts.h"
#include "collector/findings/findings_replication.h"
#include "collector/findings/findings_staleness.h"
#include "collector/findings/silences.h"
#include "collector/ingest/ingest_placement.h"
#include "collector/runner/analysis_role.h"
#include "collector/runner/analysis_shards.h"
#include "collector/runner/feature_exchange.h"
#include "collector/state/baselines_store.h"
#include "collector/state/state_store.h"

namespace fabricdiag::collector {

class Backends {
 public:
  virtual ~Backends() = default;

  virtual DeclaredState& declared_state() = 0;
  virtual FindingsReplication& findings_replication() = 0;
  virtual FeatureExchange& features() = 0;
  virtual const AnalysisRole& role() = 0;
  virtual IngestPlacement& ingest_placement() = 0;
  virtual BaselinesStore& baselines() = 0;
  virtual NodeFactsStore& node_facts() = 0;
  // Acks, silences and forgotten nodes (collector/findings/silences.h).
  virtual MarkState& marks() = 0;
  // The shards of the rate analysis this collector owns
  // (collector/runner/analysis_shards.h): every one, embedded (a cluster of
  // one); in a cluster with --analysis_shards, its share; null: a cluster
  // whose analysis leader runs all of it.
  virtual AnalysisShards* analysis_shards() = 0;

  // This collector's --collector_id, which `fabricdiag nodes` shows for its
  // nodes; empty when embedded (one collector needs no name).
  virtual std::string collector_id() const = 0;
  // What the startup log line adds: ", collector a of the cluster at
  // nats://..."; empty when embedded.
  virtual std::string Describe() const = 0;

  // Whether the findings this collector serves may be out of date
  // (collector/findings/findings_staleness.h). Embedded: never.
  virtual FindingsStaleness findings_staleness() const = 0;

  // Not empty when the backends cannot go on, why: a cluster's NATS
  // connection closed for good by its client (NatsConnection::GaveUp).
  // The collector then exits 1 for its supervisor to start it again.
  // Embedded: never.
  virtual std::string Lost() const = 0;

  // Appends /healthz lines; false when the backends make the collector
  // unhealthy. Embedded: nothing to add (--state_dir's health is the
  // StateStore's).
  virtual bool AppendHealth(std::string* text) const = 0;
  // Appends the backends' /metrics families (the node facts' in every
  // mode); `watch` is what the LayoutRegistry did with the declared state's
  // changes.
  virtual void AppendMetrics(const RegistryWatchStats& watch,
                             std::string* out) const = 0;

  // Applies the findings another collector shares to `sink` while this
  // one does not lead, until Leave(). `sink` must outlive that.
  virtual void MirrorFindings(FindingsSink& sink) = 0;
  // The stop, in two calls (cluster/cluster_member.h says why): BeginStop
  // when it is asked for, Leave once the analysis stopped.
  virtual void BeginStop(absl::Duration grace) = 0;
  virtual void Leave() = 0;
};

// One collector, its state in --state_dir (`state`, which must outlive the
// bundle). Its rate analysis runs as that of a cluster of one
// (OneCollectorShards): the sharded code path, nothing exchanged.
std::unique_ptr<Backends> EmbeddedBackends(StateStore* state);

// A collector of the cluster `options` names (ClusterMember::Join). The
// first collector of a new cluster copies the declared state of `state`
// (its --state_dir) into the cluster's bucket; a failure to copy is logged,
// not fatal. `state` must outlive the bundle.
absl::StatusOr<std::unique_ptr<Backends>> ClusterBackends(
    const cluster::ClusterOptions& options, StateStore* state);

}  // namespace fabricdiag::collector
