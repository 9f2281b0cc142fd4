#include "cluster/cluster_member.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/key_lease.h"
#include "cluster/shard_holders.h"
#include "common/log.h"
#include "common/names.h"
#include "common/prom_text.h"
#include "common/status_macros.h"

namespace fabricdiag::cluster {

absl::Status ValidateClusterOptions(const ClusterOptions& options) {
  if (options.nats.empty()) {
    const NatsSecurity& security = options.security;
    for (const std::string* value :
         {&security.creds_file, &security.user, &security.password_file,
          &security.tls_ca, &security.tls_cert, &security.tls_key}) {
      if (!value->empty()) {
        return absl::InvalidArgumentError(
            "--nats_creds, --nats_user, --nats_password_file and "
            "--nats_tls_* are for the connection to NATS: they need --nats");
      }
    }
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(ParseNatsUrls(options.nats).status());
  if (!IsValidNodeName(options.collector_id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--collector_id=", QuoteForMessage(options.collector_id),
                     ": expected ", kNodeNamePattern));
  }
  // Sharded, the id names a shard of its own ("ports.<id>"), a key of the
  // lease bucket: tokens between dots, none empty.
  if (options.analysis_shards &&
      (absl::StrContains(options.collector_id, "..") ||
       absl::EndsWith(options.collector_id, "."))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--collector_id=", QuoteForMessage(options.collector_id),
        ": with --analysis_shards an id cannot hold two dots in a row or end "
        "with a dot (it names the NATS key of its own nodes' shard)"));
  }
  if (options.replicas < 1 || options.replicas > 5) {
    return absl::InvalidArgumentError(
        "--nats_replicas: must be between 1 and 5 (JetStream's limit)");
  }
  if (options.startup_timeout < absl::Seconds(1) ||
      options.startup_timeout > absl::Hours(1)) {
    return absl::InvalidArgumentError(
        "--nats_startup_timeout: must be between 1s and 1h");
  }
  return ValidateNatsSecurity(options.security);
}

namespace {

// A collector started without --analysis_shards in a cluster whose others
// shard their analysis sends its nodes' ports to none of the shards'
// owners: said at its start, where its operator looks first. Quiet when
// the lease bucket cannot be read (the analysis lease reports NATS
// trouble).
void WarnIfTheOthersShard(NatsConnection* nats, int replicas) {
  const ShardHolders::Options defaults;
  absl::StatusOr<kvStore*> kv =
      BindLeaseBucket(*nats, defaults.bucket, replicas, defaults.ttl);
  if (!kv.ok()) return;
  // The keys whose value has not expired: shard leases held now (or up to
  // a TTL ago), the analysis lease's among them.
  kvKeysList keys;
  const natsStatus s = kvStore_Keys(&keys, *kv, nullptr);
  size_t held = 0;
  if (s == NATS_OK) {
    for (int i = 0; i < keys.Count; ++i) {
      held += absl::StartsWith(keys.Keys[i], "shard.");
    }
    kvKeysList_Destroy(&keys);
  }
  kvStore_Destroy(*kv);
  if (held == 0) return;
  LogError(absl::StrCat(
      "analysis shards: other collectors of this cluster run with "
      "--analysis_shards (they hold ",
      held,
      " shard leases), and this one runs without it: the ports of the nodes "
      "whose agents stream to it reach none of the shards' owners (the job "
      "and switch analyzers miss them), and its port analyzers run only "
      "while it leads the analysis. Start every collector of a cluster "
      "alike."));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ClusterMember>> ClusterMember::Join(
    const ClusterOptions& options) {
  RETURN_IF_ERROR(ValidateClusterOptions(options));
  std::unique_ptr<ClusterMember> member(new ClusterMember());
  member->id_ = options.collector_id;
  NatsConnection::Options nats_options;
  ASSIGN_OR_RETURN(nats_options.urls, ParseNatsUrls(options.nats));
  nats_options.name =
      absl::StrCat("fabricdiag-collector ", options.collector_id);
  nats_options.startup_timeout = options.startup_timeout;
  nats_options.security = options.security;
  ASSIGN_OR_RETURN(member->nats_, NatsConnection::Connect(nats_options));
  JetStreamDeclaredState::Options declared_options;
  declared_options.replicas = options.replicas;
  ASSIGN_OR_RETURN(
      member->declared_,
      JetStreamDeclaredState::Open(member->nats_.get(), declared_options));
  ClusterMembers::Options members_options;
  members_options.replicas = options.replicas;
  ASSIGN_OR_RETURN(member->members_, ClusterMembers::Start(member->nats_.get(),
                                                           options.collector_id,
                                                           members_options));
  JetStreamFeatures::Options features_options;
  features_options.replicas = options.replicas;
  features_options.freshness =
      std::max(absl::Seconds(3), 3 * options.analysis_interval);
  features_options.max_age = 10 * features_options.freshness;
  member->feature_freshness_ = features_options.freshness;
  features_options.live_members = [members = member->members_.get()] {
    std::vector<std::string> live;
    for (const ClusterMembers::Member& m : members->Live()) {
      live.push_back(m.id);
    }
    return live;
  };
  ASSIGN_OR_RETURN(
      member->features_,
      JetStreamFeatures::Open(member->nats_.get(), options.collector_id,
                              features_options));
  AnalysisLease::Options lease_options;
  lease_options.replicas = options.replicas;
  ASSIGN_OR_RETURN(member->lease_,
                   AnalysisLease::Start(member->nats_.get(),
                                        options.collector_id, lease_options));
  const AnalysisLease* lease = member->lease_.get();
  ClusterMembers* members = member->members_.get();
  if (options.analysis_shards) {
    NatsAnalysisShards::Options shards_options;
    shards_options.leases.replicas = options.replicas;
    ASSIGN_OR_RETURN(
        member->shards_,
        NatsAnalysisShards::Start(
            member->nats_.get(), options.collector_id,
            [members] {
              std::vector<ShardLeases::Candidate> live;
              const absl::Time now = absl::Now();
              for (const ClusterMembers::Member& m : members->Live()) {
                live.push_back({m.id, now - m.live_since});
              }
              return live;
            },
            shards_options));
    member->sharded_role_ =
        std::make_unique<ShardedAnalysisRole>(lease, member->shards_.get());
  }
  if (!options.analysis_shards) {
    WarnIfTheOthersShard(member->nats_.get(), options.replicas);
  }
  const std::string self = options.collector_id;
  member->handoff_ = std::make_unique<LeaderHandoff>(
      [lease, members, self] {
        LeaderHandoff::View view;
        view.self = self;
        view.term = lease->Term();
        view.leader = view.term != 0 ? self : lease->leader();
        const absl::Time now = absl::Now();
        for (const ClusterMembers::Member& m : members->Live()) {
          view.live.push_back(
              {m.id, m.address, now - m.live_since, now - m.last_seen});
        }
        return view;
      },
      [members](const std::string& address) { members->Advertise(address); },
      member->clock_);
  JetStreamFindings::Options findings_options;
  findings_options.replicas = options.replicas;
  findings_options.test_write_delay =
      JetStreamFindings::TestWriteDelayFromEnv();
  ASSIGN_OR_RETURN(member->findings_,
                   JetStreamFindings::Open(member->nats_.get(), member->role(),
                                           findings_options));
  JetStreamBaselines::Options baselines_options;
  baselines_options.replicas = options.replicas;
  ASSIGN_OR_RETURN(
      member->baselines_,
      JetStreamBaselines::Open(member->nats_.get(), baselines_options));
  return member;
}

absl::StatusOr<int> ClusterMember::SeedDeclaredState(
    collector::DeclaredState& from) {
  ASSIGN_OR_RETURN(const uint64_t last, declared_->LastRevision());
  // A bucket that held anything, deletions included, is the cluster's
  // truth: an old --state_dir must not bring back a deleted job.
  if (last != 0) return 0;
  ASSIGN_OR_RETURN(std::vector<collector::DeclaredLayout> layouts,
                   from.ReadLayouts());
  ASSIGN_OR_RETURN(std::optional<collector::DeclaredTopology> topology,
                   from.ReadTopology());
  int copied = 0;
  // Revision 0 expected: created only where nobody else did (another
  // collector seeding at the same moment wins that object).
  auto count = [&copied](const absl::StatusOr<uint64_t>& written) {
    if (written.ok()) {
      ++copied;
      return absl::OkStatus();
    }
    return absl::IsAborted(written.status()) ? absl::OkStatus()
                                             : written.status();
  };
  for (const collector::DeclaredLayout& l : layouts) {
    RETURN_IF_ERROR(count(declared_->WriteLayout(l.layout, l.applied, 0,
                                                 absl::InfiniteFuture())));
  }
  if (topology.has_value()) {
    RETURN_IF_ERROR(count(declared_->WriteTopology(
        topology->topology, topology->applied, 0, absl::InfiniteFuture())));
  }
  return copied;
}

void ClusterMember::MirrorFindings(collector::FindingsSink* store) {
  const AnalysisLease* lease = lease_.get();
  findings_->Watch(
      [store, lease](const collector::StoredFinding& version) {
        // The writer's store made the version itself (and may have moved
        // on). One of a lower term reaches a writer only when it landed
        // before its term's mark (later ones are dropped): a previous
        // writer's, which this store takes over (JetStreamFindings::
        // MarkTerm).
        if (WrittenHere(*lease, version)) return;
        const absl::Status applied = store->ApplyReplicated(version);
        if (!applied.ok()) {
          LogWarning(absl::StrCat("shared findings: ", version.finding.id(),
                                  ": ", applied.message()));
        }
      },
      [store, lease](const absl::flat_hash_set<std::string>& shared) {
        if (lease->Leading()) return;
        const absl::Status resolved =
            store->ResolveUnshared(shared, absl::Now());
        if (!resolved.ok()) {
          LogWarning(absl::StrCat("shared findings: ", resolved.message()));
        }
      });
}

void ClusterMember::StopMirroring() { findings_->StopWatching(); }

ClusterMember::~ClusterMember() { Leave(); }

void ClusterMember::BeginStop(absl::Duration grace) {
  if (stop_watchdog_.joinable() || left_.HasBeenNotified()) return;
  NatsConnection* nats = nats_.get();
  stop_watchdog_ = std::thread([this, nats, grace] {
    // A connection lost for half a second is not waited for (all servers
    // gone); a shorter loss may be a reconnect to another server, after
    // which the lease and membership can still be handed back.
    constexpr absl::Duration kLostFor = absl::Milliseconds(500);
    const absl::Time until = absl::Now() + grace;
    absl::Time lost_since = absl::InfiniteFuture();
    while (!left_.WaitForNotificationWithTimeout(absl::Milliseconds(50))) {
      const absl::Time now = absl::Now();
      if (nats->connected()) {
        lost_since = absl::InfiniteFuture();
      } else {
        lost_since = std::min(lost_since, now);
      }
      if (now < until && now - lost_since < kLostFor) continue;
      LogWarning(absl::StrCat(
          "stopping: NATS (", absl::StrJoin(nats->urls(), ","), ") ",
          now >= until
              ? absl::StrCat("did not let this collector leave within ",
                             absl::FormatDuration(grace))
              : std::string("is not connected"),
          "; closing the connection, leaving the cluster without a word"));
      nats->Close();
      return;
    }
  });
}

void ClusterMember::Leave() {
  if (nats_ == nullptr || left_.HasBeenNotified()) return;
  // Each is idempotent, and quick once the connection is closed.
  if (findings_ != nullptr) findings_->StopWatching();
  if (declared_ != nullptr) declared_->StopWatching();
  if (shards_ != nullptr) shards_->Stop();
  if (lease_ != nullptr) lease_->Stop();
  if (members_ != nullptr) members_->Stop();
  nats_->Close();
  left_.Notify();
  if (stop_watchdog_.joinable()) stop_watchdog_.join();
}

std::vector<ClusterMember::FeatureSource> ClusterMember::FeatureSources()
    const {
  const std::map<std::string, absl::Time> received = features_->LastReceived();
  std::vector<FeatureSource> sources;
  for (const ClusterMembers::Member& m : members_->Live()) {
    if (m.self) continue;
    auto it = received.find(m.id);
    // A collector that came back counts from then, not from what it
    // published before it left.
    sources.push_back({m.id,
                       it == received.end()
                           ? m.live_since
                           : std::max(it->second, m.live_since),
                       m.last_seen});
  }
  return sources;
}

std::vector<std::string> ClusterMember::Unheard() const {
  // Alive for longer than its features count after the newest ones
  // arrived. A collector that was killed is not: it announced itself last
  // at most one analysis pass after it published last, and features count
  // for 3 passes (feature_freshness_).
  std::vector<std::string> unheard;
  for (const FeatureSource& s : FeatureSources()) {
    if (s.last_announced - s.heard > feature_freshness_) {
      unheard.push_back(s.id);
    }
  }
  return unheard;
}

collector::FindingsStaleness ClusterMember::FindingsStaleness() const {
  const absl::Duration unconfirmed = findings_->UnconfirmedFor();
  const absl::Duration without_leader = lease_->WithoutLeaderFor();
  collector::FindingsStaleness staleness;
  staleness.stale = unconfirmed > kFindingsUnconfirmedLimit ||
                    without_leader > kWithoutLeaderLimit;
  staleness.age = std::max(unconfirmed, without_leader);
  return staleness;
}

bool ClusterMember::AppendHealth(std::string* text) const {
  bool ok = true;
  absl::StrAppend(text, "cluster: collector_id ", id_, "\n");
  if (nats_->connected()) {
    absl::StrAppend(text, "cluster: NATS connected to ", nats_->connected_url(),
                    "\n");
  } else {
    ok = false;
    absl::StrAppend(text, "cluster: NATS not connected (servers ",
                    absl::StrJoin(nats_->urls(), ","),
                    "); layouts, topology and findings may be stale\n");
  }
  std::vector<std::string> live;
  for (const ClusterMembers::Member& m : members_->Live()) live.push_back(m.id);
  absl::StrAppend(text, "cluster: ", live.size(),
                  " collectors live: ", absl::StrJoin(live, ", "), "\n");
  const std::string leader = lease_->leader();
  absl::StrAppend(text, "cluster: analysis leader: ",
                  lease_->Leading() ? absl::StrCat(id_, " (this collector)")
                  : leader.empty()  ? std::string("none now")
                                    : leader,
                  "\n");
  if (const absl::Duration without = lease_->WithoutLeaderFor();
      without > kWithoutLeaderLimit) {
    ok = false;
    absl::StrAppend(
        text, "cluster: no collector was seen leading the analysis for ",
        absl::FormatDuration(absl::Trunc(without, absl::Seconds(1))),
        " (the lease in NATS bucket ", kLeaderBucket,
        " does not answer): nobody analyses the fabric, findings are not "
        "updated\n");
  }
  // Said, not judged: its causes above already turn /healthz 503, and a
  // watcher catching up after one NATS server died is no outage.
  if (const collector::FindingsStaleness staleness = FindingsStaleness();
      staleness.stale) {
    absl::StrAppend(
        text, "cluster: findings stale: not seen the cluster's findings for ",
        absl::FormatDuration(absl::Trunc(staleness.age, absl::Seconds(1))),
        " (bucket ", kFindingsBucket,
        "); the API, watch, page and /metrics say so\n");
  }
  if (members_->id_conflict()) {
    ok = false;
    absl::StrAppend(text,
                    "cluster: another running collector uses "
                    "--collector_id=",
                    id_, "; give every collector its own\n");
  }
  if (const absl::Status published = features_->last_publish_status();
      !published.ok()) {
    ok = false;
    absl::StrAppend(text, "cluster: cannot publish this collector's features: ",
                    published.message(),
                    " (the analysis misses this collector's nodes)\n");
  }
  const std::map<std::string, uint64_t> unobserved =
      features_->stats().unobserved_nodes;
  const auto unobserved_of = [&unobserved](const std::string& id) {
    auto it = unobserved.find(id);
    return it == unobserved.end() ? uint64_t{0} : it->second;
  };
  const std::vector<std::string> unheard = Unheard();
  for (const std::string& id : unheard) {
    ok = false;
    absl::StrAppend(text, "cluster: no features from ", id, " for more than ",
                    absl::FormatDuration(feature_freshness_),
                    " although it runs: its ", unobserved_of(id),
                    " nodes are unobserved (missing from the analysis; their "
                    "findings hold, agent_down does not open for them)\n");
  }
  // A collector that left: its agents reconnect elsewhere, which is no
  // fault of this collector's.
  for (const auto& [id, count] : unobserved) {
    if (count == 0 ||
        std::find(unheard.begin(), unheard.end(), id) != unheard.end())
      continue;
    absl::StrAppend(text, "cluster: ", count, " nodes of ", id,
                    " unobserved: it left the cluster and their agents have "
                    "not reported elsewhere yet (agent_down judges them ",
                    absl::FormatDuration(collector::kAgentReconnectGrace),
                    " after it left)\n");
  }
  if (shards_ != nullptr) {
    // Said, not judged: a dead owner's shards are without one for seconds.
    absl::StrAppend(
        text, "cluster: analysis shards: ", shards_->OwnedShards().size(),
        " of ", shards_->shard_count(), " owned here, ",
        shards_->holders_current()
            ? absl::StrCat(shards_->unowned(), " without an owner")
            : std::string("the others' owners unknown (no lease renewal "
                          "read lately: the bucket's watcher is behind)"),
        "\n");
    const std::vector<std::string> not_sharding = shards_->NotSharding();
    if (!not_sharding.empty()) {
      // Not unhealthy here: this collector does its part.
      absl::StrAppend(
          text, "cluster: analysis shards: ", absl::StrJoin(not_sharding, ", "),
          not_sharding.size() == 1 ? " runs" : " run",
          " without --analysis_shards: the ports of the nodes whose agents "
          "stream there reach no shard owner (start every collector of a "
          "cluster alike)\n");
    }
  }
  const absl::Status last_write = declared_->last_write_status();
  if (!last_write.ok()) {
    ok = false;
    absl::StrAppend(text, "cluster: the last write of declared state failed: ",
                    last_write.message(),
                    " (healthy again after the next write that succeeds)\n");
  }
  return ok;
}

void ClusterMember::AppendMetrics(const collector::RegistryWatchStats& watch,
                                  std::string* out) const {
  // The families of one series each, in exposition order.
  struct One {
    const char* name;
    const char* help;
    PromType type;
    double value;
  };
  const PromLabel id[] = {{"collector_id", id_}};
  PromWriter w(out);
  const auto write = [&w, &id](std::initializer_list<One> families) {
    for (const One& f : families) {
      w.Family(f.name, f.help, f.type);
      w.Sample(id, f.value);
    }
  };
  write({
      {"fabricdiag_cluster_nats_connected",
       "1 while this collector is connected to a NATS server of its cluster.",
       PromType::kGauge, nats_->connected() ? 1.0 : 0.0},
      {"fabricdiag_cluster_members",
       "Collectors of the cluster whose announcements this collector "
       "receives (itself included).",
       PromType::kGauge, static_cast<double>(members_->Live().size())},
      {"fabricdiag_cluster_nats_reconnects_total",
       "Connections to NATS lost and re-established.", PromType::kCounter,
       static_cast<double>(nats_->reconnects())},
      {"fabricdiag_cluster_declared_write_conflicts_total",
       "Layout or topology writes refused because another collector changed "
       "the same object first.",
       PromType::kCounter, static_cast<double>(declared_->write_conflicts())},
  });
  w.Family("fabricdiag_cluster_declared_changes_total",
           "Changes of layouts and topology received from the cluster, by "
           "outcome.",
           PromType::kCounter);
  w.Sample({{"collector_id", id_}, {"outcome", "applied"}},
           static_cast<double>(watch.applied));
  w.Sample({{"collector_id", id_}, {"outcome", "rejected"}},
           static_cast<double>(watch.rejected));
  const JetStreamFeatures::Stats features = features_->stats();
  write({
      {"fabricdiag_cluster_declared_watch_restarts_total",
       "Times the watcher of the declared state was recreated (an error, or "
       "it fell behind after a NATS server died).",
       PromType::kCounter, static_cast<double>(declared_->watcher_restarts())},
      {"fabricdiag_cluster_analysis_leader",
       "1 while this collector holds the analysis lease.", PromType::kGauge,
       lease_->Leading() ? 1.0 : 0.0},
      {"fabricdiag_cluster_analysis_lease_acquisitions_total",
       "Times this collector acquired the analysis lease.", PromType::kCounter,
       static_cast<double>(lease_->acquisitions())},
      {"fabricdiag_cluster_findings_write_errors_total",
       "Findings this collector, as the analysis leader, failed to share.",
       PromType::kCounter, static_cast<double>(findings_->write_errors())},
      {"fabricdiag_cluster_findings_watch_restarts_total",
       "Times the watcher of the shared findings was recreated.",
       PromType::kCounter, static_cast<double>(findings_->watcher_restarts())},
      {"fabricdiag_cluster_findings_undecodable_total",
       "Values in the shared findings bucket that were not a finding "
       "(skipped).",
       PromType::kCounter, static_cast<double>(findings_->undecodable())},
      {"fabricdiag_cluster_findings_fenced_writes_total",
       "Findings writes this collector did not make because it no longer "
       "led: its lease had run out, or a newer term had written the finding.",
       PromType::kCounter, static_cast<double>(findings_->fenced_writes())},
      {"fabricdiag_cluster_findings_stale_versions_dropped_total",
       "Versions of shared findings dropped because a newer analysis "
       "leader's term had written before they landed.",
       PromType::kCounter,
       static_cast<double>(findings_->stale_versions_dropped())},
      {"fabricdiag_cluster_baselines_write_errors_total",
       "Writes of the straggler baselines to the shared bucket that failed.",
       PromType::kCounter, static_cast<double>(baselines_->write_errors())},
      {"fabricdiag_cluster_features_published_bytes",
       "Size of this collector's latest published features (every chunk).",
       PromType::kGauge, static_cast<double>(features.last_published_bytes)},
      {"fabricdiag_cluster_features_publish_errors_total",
       "Analysis passes whose features this collector failed to publish.",
       PromType::kCounter, static_cast<double>(features.publish_errors)},
      {"fabricdiag_cluster_features_merged_members",
       "Other collectors whose features the latest analysis pass merged.",
       PromType::kGauge, static_cast<double>(features.merged_members)},
      {"fabricdiag_cluster_features_merged_remote_ports",
       "Ports of other collectors' nodes in the latest analysis pass.",
       PromType::kGauge, static_cast<double>(features.merged_remote_ports)},
      {"fabricdiag_cluster_features_receiving",
       "1 while this collector receives the other collectors' feature "
       "chunks (it merges the fabric: the analysis leader, or its page is "
       "looked at); 0 while it receives their liveness alone.",
       PromType::kGauge, features.receiving_features ? 1.0 : 0.0},
      {"fabricdiag_cluster_features_catch_up_seconds",
       "How long the latest catch-up with the features stream took (its "
       "last chunk of every subject, read when this collector starts "
       "receiving the feature chunks, beside the analysis passes); 0 while "
       "it runs or before the first.",
       PromType::kGauge, absl::ToDoubleSeconds(features.catch_up_took)},
      {"fabricdiag_cluster_liveness_published_bytes",
       "Size of this collector's latest published liveness (every chunk).",
       PromType::kGauge,
       static_cast<double>(features.last_published_liveness_bytes)},
      {"fabricdiag_cluster_liveness_publish_errors_total",
       "Analysis passes whose liveness this collector failed to publish.",
       PromType::kCounter,
       static_cast<double>(features.liveness_publish_errors)},
      {"fabricdiag_cluster_features_undecodable_total",
       "Feature messages received that were not a feature chunk.",
       PromType::kCounter, static_cast<double>(features.undecodable_chunks)},
  });
  w.Family("fabricdiag_cluster_features_received_bytes_total",
           "Bytes of other collectors' features this collector received, by "
           "feed: their feature chunks, or their liveness.",
           PromType::kCounter);
  w.Sample({{"collector_id", id_}, {"feed", "features"}},
           static_cast<double>(features.received_bytes));
  w.Sample({{"collector_id", id_}, {"feed", "liveness"}},
           static_cast<double>(features.received_liveness_bytes));
  w.Family("fabricdiag_cluster_features_age_seconds",
           "How old the newest features received from each other live "
           "collector are (its feature lag; counted from when it became live "
           "while none arrived).",
           PromType::kGauge);
  const absl::Time now = absl::Now();
  for (const FeatureSource& s : FeatureSources()) {
    w.Sample(
        {{"collector_id", id_}, {"from", s.id}},
        absl::ToDoubleSeconds(std::max(absl::ZeroDuration(), now - s.heard)));
  }
  w.Family("fabricdiag_cluster_unobserved_nodes",
           "Nodes of each other collector that the latest analysis pass did "
           "not observe: that collector's features stopped arriving while it "
           "runs, or it left and their agents have not reported elsewhere "
           "yet. Their findings hold and agent_down does not open for them.",
           PromType::kGauge);
  for (const auto& [from, count] : features.unobserved_nodes) {
    w.Sample({{"collector_id", id_}, {"from", from}},
             static_cast<double>(count));
  }
  w.Family("fabricdiag_cluster_moving_nodes",
           "Nodes whose collector handed their agents to another one and "
           "that have not reported elsewhere yet, as the latest analysis "
           "pass saw them: on their way, their findings hold and agent_down "
           "does not open for them for up to 40s after the hand-off.",
           PromType::kGauge);
  w.Sample({{"collector_id", id_}}, static_cast<double>(features.moving_nodes));
  if (shards_ == nullptr) return;
  // --analysis_shards (docs/cluster.md#sharded-analysis).
  const ShardExchange::Stats exchange = shards_->exchange_stats();
  const PartNewsExchange::Stats news = shards_->news_stats();
  write({
      {"fabricdiag_cluster_analysis_shards_owned",
       "Analysis shards (of jobs and of switches) this collector owns.",
       PromType::kGauge, static_cast<double>(shards_->OwnedShards().size())},
      {"fabricdiag_cluster_analysis_shards",
       "Analysis shards (of jobs and of switches) the fabric is cut into: "
       "the collectors' owned shards sum to it.",
       PromType::kGauge, static_cast<double>(shards_->shard_count())},
      {"fabricdiag_cluster_analysis_shards_unowned",
       "Analysis shards whose lease no collector renews, as this collector "
       "reads the lease bucket: their jobs and switches are not analysed "
       "until one takes them (seconds after an owner died).",
       PromType::kGauge, static_cast<double>(shards_->unowned())},
      {"fabricdiag_cluster_members_not_sharding",
       "Live collectors of the cluster that run without --analysis_shards, "
       "as this collector reads the lease bucket: the ports of their "
       "agents' nodes reach no shard owner.",
       PromType::kGauge, static_cast<double>(shards_->NotSharding().size())},
      {"fabricdiag_cluster_analysis_shard_handovers_total",
       "Analysis shards this collector handed over to another collector, "
       "their first choice.",
       PromType::kCounter, static_cast<double>(shards_->handovers())},
      {"fabricdiag_cluster_shard_chunks_published_total",
       "Chunks of this collector's ports sent to the owners of their "
       "analysis shards.",
       PromType::kCounter, static_cast<double>(exchange.published_chunks)},
      {"fabricdiag_cluster_shard_publish_errors_total",
       "Analysis passes whose shard chunks this collector failed to send.",
       PromType::kCounter, static_cast<double>(exchange.publish_errors)},
      {"fabricdiag_cluster_shard_chunks_received_total",
       "Chunks of other collectors' ports of the shards this collector owns "
       "that it received.",
       PromType::kCounter, static_cast<double>(exchange.received_chunks)},
      {"fabricdiag_cluster_shard_chunks_refused_total",
       "Messages on the shard subjects this collector dropped: not a chunk "
       "of a shard it owns, or damaged.",
       PromType::kCounter, static_cast<double>(exchange.refused_chunks)},
      {"fabricdiag_cluster_analysis_news_published_total",
       "Analysis news (what this collector's analysis parts excuse, its "
       "ports' congestion histograms) sent to the other collectors.",
       PromType::kCounter, static_cast<double>(news.published)},
      {"fabricdiag_cluster_analysis_news_publish_errors_total",
       "Analysis news this collector failed to send.", PromType::kCounter,
       static_cast<double>(news.publish_errors)},
      {"fabricdiag_cluster_analysis_news_received_total",
       "Other collectors' analysis news received.", PromType::kCounter,
       static_cast<double>(news.received)},
      {"fabricdiag_cluster_analysis_news_refused_total",
       "Analysis news received and dropped: damaged or refused.",
       PromType::kCounter, static_cast<double>(news.refused)},
  });
}

}  // namespace fabricdiag::cluster
