#include "server/backends.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "cluster/jetstream_node_facts.h"
#include "cluster/jetstream_silences.h"
#include "collector/declared/file_declared_state.h"
#include "collector/declared/node_facts_cache.h"
#include "collector/declared/node_facts_memory.h"
#include "collector/findings/findings_metrics.h"
#include "collector/ingest/cut_off_placement.h"
#include "common/log.h"

namespace fabricdiag::collector {
namespace {

NodeFactsStats MemoryStats(const MemoryNodeFacts& facts) {
  NodeFactsStats stats;
  stats.nodes = facts.nodes();
  stats.writes_failed = facts.rejected();
  return stats;
}

// Everything in --state_dir; the rest does nothing.
class Embedded final : public Backends {
 public:
  explicit Embedded(StateStore* state)
      : declared_(state), baselines_(state), marks_(state) {}

  DeclaredState& declared_state() override { return declared_; }
  FindingsReplication& findings_replication() override { return findings_; }
  FeatureExchange& features() override { return features_; }
  const AnalysisRole& role() override { return role_; }
  IngestPlacement& ingest_placement() override { return placement_; }
  BaselinesStore& baselines() override { return baselines_; }
  NodeFactsStore& node_facts() override { return facts_; }
  MarkState& marks() override { return marks_; }
  AnalysisShards* analysis_shards() override { return &shards_; }

  std::string collector_id() const override { return ""; }
  std::string Describe() const override { return ""; }
  FindingsStaleness findings_staleness() const override { return {}; }
  std::string Lost() const override { return ""; }
  bool AppendHealth(std::string* /*text*/) const override { return true; }
  void AppendMetrics(const RegistryWatchStats& /*watch*/,
                     std::string* out) const override {
    AppendNodeFactsMetrics(MemoryStats(facts_), out);
  }
  void MirrorFindings(FindingsSink& /*sink*/) override {}
  void BeginStop(absl::Duration /*grace*/) override {}
  void Leave() override {}

 private:
  FileDeclaredState declared_;
  LocalFindingsReplication findings_;
  EmbeddedFeatureExchange features_;
  AlwaysLeading role_;
  KeepEveryAgent placement_;
  FileBaselinesStore baselines_;
  MemoryNodeFacts facts_;
  FileMarkState marks_;
  // A cluster of one: every shard its own, nothing exchanged.
  OneCollectorShards shards_;
};

// The cluster's JetStream buckets and streams, through a ClusterMember.
class Cluster final : public Backends {
 public:
  Cluster(std::unique_ptr<cluster::ClusterMember> member, std::string nats,
          std::unique_ptr<cluster::JetStreamNodeFacts> facts,
          std::unique_ptr<cluster::JetStreamMarks> marks)
      : member_(std::move(member)),
        nats_(std::move(nats)),
        facts_(std::move(facts)),
        marks_(std::move(marks)),
        placement_(
            *member_->ingest_placement(),
            [member = member_.get()] {
              return CutOffFromCluster(member->nats()->link_down_for(),
                                       member->publishes_failing_for());
            },
            member_->cut_off_limit()) {}

  DeclaredState& declared_state() override {
    return *member_->declared_state();
  }
  FindingsReplication& findings_replication() override {
    return *member_->findings_replication();
  }
  FeatureExchange& features() override { return *member_->features(); }
  const AnalysisRole& role() override { return *member_->role(); }
  IngestPlacement& ingest_placement() override { return placement_; }
  BaselinesStore& baselines() override { return *member_->baselines(); }
  NodeFactsStore& node_facts() override { return *facts_; }
  MarkState& marks() override { return *marks_; }
  AnalysisShards* analysis_shards() override {
    return member_->analysis_shards();
  }

  std::string collector_id() const override { return member_->collector_id(); }
  std::string Describe() const override {
    return absl::StrCat(", collector ", member_->collector_id(),
                        " of the cluster at ", nats_);
  }
  FindingsStaleness findings_staleness() const override {
    return member_->FindingsStaleness();
  }
  std::string Lost() const override { return member_->nats()->GaveUp(); }
  bool AppendHealth(std::string* text) const override {
    return member_->AppendHealth(text);
  }
  void AppendMetrics(const RegistryWatchStats& watch,
                     std::string* out) const override {
    member_->AppendMetrics(watch, out);
    facts_->AppendMetrics(out);
    AppendFindingsStalenessMetrics(member_->FindingsStaleness(),
                                   member_->collector_id(), out);
  }
  void MirrorFindings(FindingsSink& sink) override {
    member_->MirrorFindings(&sink);
  }
  void BeginStop(absl::Duration grace) override { member_->BeginStop(grace); }
  void Leave() override {
    member_->StopMirroring();
    facts_->Stop();  // its threads use the connection Leave() closes
    marks_->StopWatching();
    member_->Leave();
  }

 private:
  const std::unique_ptr<cluster::ClusterMember> member_;
  const std::string nats_;  // --nats, for the log
  // Declared after member_, so destroyed (stopped) before its connection.
  const std::unique_ptr<cluster::JetStreamNodeFacts> facts_;
  const std::unique_ptr<cluster::JetStreamMarks> marks_;
  // The member's placement, but no agent while cut off from NATS.
  HandOffWhileCutOff placement_;
};

// The first collector of a new cluster brings its layouts along; later ones
// do not (the bucket is the cluster's truth).
void SeedFromStateDir(cluster::ClusterMember& member, StateStore* state) {
  FileDeclaredState files(state);
  absl::StatusOr<int> seeded = member.SeedDeclaredState(files);
  if (!seeded.ok()) {
    LogWarning(absl::StrCat(
        "cannot copy the declared state of --state_dir into the new "
        "cluster: ",
        seeded.status().message(),
        " (apply the layouts and the topology again)"));
  } else if (*seeded > 0) {
    LogInfo(absl::StrCat("copied ", *seeded,
                         " layouts and topology from --state_dir into the "
                         "cluster's new bucket"));
  }
}

}  // namespace

std::unique_ptr<Backends> EmbeddedBackends(StateStore* state) {
  return std::make_unique<Embedded>(state);
}

absl::StatusOr<std::unique_ptr<Backends>> ClusterBackends(
    const cluster::ClusterOptions& options, StateStore* state) {
  absl::StatusOr<std::unique_ptr<cluster::ClusterMember>> member =
      cluster::ClusterMember::Join(options);
  if (!member.ok()) return member.status();
  SeedFromStateDir(**member, state);
  cluster::JetStreamNodeFacts::Options facts_options;
  facts_options.replicas = options.replicas;
  absl::StatusOr<std::unique_ptr<cluster::JetStreamNodeFacts>> facts =
      cluster::JetStreamNodeFacts::Open((*member)->nats(), facts_options);
  if (!facts.ok()) return facts.status();
  cluster::JetStreamMarks::Options marks_options;
  marks_options.replicas = options.replicas;
  absl::StatusOr<std::unique_ptr<cluster::JetStreamMarks>> marks =
      cluster::JetStreamMarks::Open((*member)->nats(), marks_options);
  if (!marks.ok()) return marks.status();
  return std::make_unique<Cluster>(*std::move(member), options.nats,
                                   *std::move(facts), *std::move(marks));
}

}  // namespace fabricdiag::collector
