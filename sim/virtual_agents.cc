#include "sim/virtual_agents.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/collector_list.h"
#include "proto/ingest.grpc.pb.h"
#include "sim/virtual_node.h"

namespace fabricdiag::sim {
namespace {

// Latency histogram: 0.1 ms buckets up to 10 s, then one overflow bucket.
class Histogram {
 public:
  static constexpr int kBuckets = 100'001;
  Histogram() : buckets_(kBuckets) {}
  void Add(absl::Duration d) {
    const int64_t b = std::clamp<int64_t>(absl::ToInt64Microseconds(d) / 100, 0,
                                          kBuckets - 1);
    buckets_[static_cast<size_t>(b)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t Count() const {
    uint64_t total = 0;
    for (const auto& b : buckets_) total += b.load();
    return total;
  }
  // Upper bound of the bucket holding quantile `q`, in ms (0 when empty).
  double QuantileMs(double q) const {
    uint64_t total = 0;
    for (const auto& b : buckets_) total += b.load();
    if (total == 0) return 0;
    const uint64_t want = std::min<uint64_t>(
        total - 1, static_cast<uint64_t>(q * static_cast<double>(total)));
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += buckets_[static_cast<size_t>(i)].load();
      if (seen > want) return (i + 1) * 0.1;
    }
    return kBuckets * 0.1;
  }
  // Starts afresh (a few concurrent Add()s may be lost: fine for a window).
  void Reset() {
    for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
  }

 private:
  std::vector<std::atomic<uint64_t>> buckets_;
};

struct Shared {
  VirtualAgentsOptions options;
  // Inventory, schema and the report template: read-only, shared by every
  // agent.
  VirtualNode node;
  Histogram latency;  // every report recorded
  Histogram window;   // the reports acknowledged in the current second
  // Latency of reports sent before is not kept: the end of the warm-up.
  std::atomic<int64_t> record_after_nanos{INT64_MAX};
  std::atomic<uint64_t> sent{0}, acked{0}, dropped{0}, rejected{0}, failed{0},
      handoffs{0}, failovers{0};
  // Of the reports sent and acknowledged: their values.
  std::atomic<uint64_t> values_sent{0}, values_acked{0};
  size_t series_per_agent = 0;  // the mean over the agents
  std::mutex done_mu;
  std::condition_variable done_cv;
  int live = 0;
};

class VirtualAgent;

// One call of one agent: Hello, Inventory, Schema, then reports. A
// collector's Handoff ends it and the agent starts another call to the
// collector the real agent would pick (client/collector_list.h).
class AgentCall final
    : public grpc::ClientBidiReactor<v1::AgentMessage, v1::CollectorMessage> {
 public:
  AgentCall(VirtualAgent* agent, v1::Ingest::Stub* stub,
            const v1::AgentMessage& hello);

  void OnWriteDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

  grpc::ClientContext& context() { return context_; }

 private:
  friend class VirtualAgent;
  // Hello, Inventory, Schema, then reports; the stage names what the
  // write in flight is followed by. Guarded by the agent's mutex.
  enum class Stage { kInventory, kSchema, kReports };

  VirtualAgent* const agent_;
  grpc::ClientContext context_;
  v1::CollectorMessage in_;
  Stage stage_ = Stage::kInventory;
  bool writing_ = true;  // the Hello
  bool handed_off_ = false;
  bool answered_ = false;  // an Ack came: the collector was live
};

class VirtualAgent {
 public:
  VirtualAgent(Shared* shared, std::vector<v1::Ingest::Stub*> stubs, int index)
      : shared_(shared),
        stubs_(std::move(stubs)),
        index_(static_cast<size_t>(index)),
        rng_(static_cast<uint64_t>(index) * 2654435761u + 1) {
    v1::Hello* hello = hello_.mutable_hello();
    hello->set_agent_version("virtual");
    const ScenarioTraffic* scenario = shared->options.scenario.get();
    if (scenario != nullptr) {
      hello->set_node(scenario->NodeName(index_));
      schema_ = &scenario->Schema(index_);
      series_ = scenario->SeriesOf(index_);
    } else {
      hello->set_node(
          absl::StrFormat("%s%05d", shared->options.node_prefix, index));
      inventory_ = shared->node.inventory;
      schema_ = &shared->node.schema;
      series_ = shared->node.series;
    }
    if (scenario == nullptr && shared->options.lldp) {
      AddVirtualLldp(index, shared->options.nics,
                     std::max(1, shared->options.hosts_per_leaf),
                     absl::StrCat(shared->options.node_prefix, "leaf-"),
                     inventory_.mutable_inventory());
    }
    absl::BitGen gen;
    hello->set_boot_id(absl::StrFormat("%016x%016x",
                                       absl::Uniform<uint64_t>(gen),
                                       absl::Uniform<uint64_t>(gen)));
    hello->set_interval_ms(static_cast<uint32_t>(
        absl::ToInt64Milliseconds(shared->options.interval)));
    // As the real agent: its ranking of the list, which the Hello carries
    // so that a cluster's collectors can hand it back to its first choice.
    choice_.emplace(hello->node(), shared->options.targets);
    target_ = choice_->current();
    if (shared->options.targets.size() > 1) {
      for (const std::string& t : shared->options.targets) {
        hello->add_collectors(t);
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    StartCallLocked();
  }

  // One interval has passed: this agent owes a report.
  void Tick() {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    // A failed-over agent reconnects at its next tick: at most one
    // attempt per interval, as a backoff would.
    if (reconnect_) {
      reconnect_ = false;
      StartCallLocked();
    }
    if (due_ >= shared_->options.max_backlog) {
      shared_->dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    ++due_;
    if (!call_->writing_ && !call_->handed_off_ &&
        call_->stage_ == AgentCall::Stage::kReports) {
      WriteReportLocked();
    }
  }

  void Cancel() {
    AgentCall* call = nullptr;
    bool ended = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;  // no call starts after this
      if (reconnect_) {
        // Between calls: nothing to cancel, and no OnDone will come.
        reconnect_ = false;
        done_ = ended = true;
      } else if (!done_) {
        call = call_.get();
      }
    }
    if (ended) {
      std::lock_guard<std::mutex> lock(shared_->done_mu);
      --shared_->live;
      shared_->done_cv.notify_all();
      return;
    }
    // Outside the lock, which the call's reactions take. Calls are kept
    // until the agent goes, so `call` is still there.
    if (call != nullptr) call->context().TryCancel();
  }

  // Streaming reports with nothing queued and at most one unacknowledged.
  bool CaughtUp() {
    std::lock_guard<std::mutex> lock(mu_);
    return !done_ && call_->stage_ == AgentCall::Stage::kReports && due_ == 0 &&
           replay_.empty() && in_flight_.size() <= 1;
  }

 private:
  friend class AgentCall;

  void StartCallLocked() {
    // A finished call may still be inside its OnDone: kept until the agent
    // goes.
    if (call_ != nullptr) retired_.push_back(std::move(call_));
    // Every call starts with the host's Inventory of now.
    NewerInventoryLocked();
    call_ = std::make_unique<AgentCall>(this, stubs_[target_], hello_);
  }

  void OnWriteDone(AgentCall* call, bool ok) {
    std::lock_guard<std::mutex> lock(mu_);
    call->writing_ = false;
    if (!ok || call->handed_off_) return;  // OnDone follows
    if (call->stage_ == AgentCall::Stage::kInventory) {
      call->stage_ = AgentCall::Stage::kSchema;
      call->writing_ = true;
      call->StartWrite(&inventory_);
      return;
    }
    if (call->stage_ == AgentCall::Stage::kSchema) {
      call->stage_ = AgentCall::Stage::kReports;
      call->writing_ = true;
      call->StartWrite(schema_);
      return;
    }
    if (due_ > 0 || !replay_.empty()) WriteReportLocked();
  }

  void OnRead(AgentCall* call, const v1::CollectorMessage& in) {
    if (in.has_reject()) {
      shared_->rejected.fetch_add(1, std::memory_order_relaxed);
    } else if (in.has_handoff()) {
      std::lock_guard<std::mutex> lock(mu_);
      call->handed_off_ = true;
      handoff_target_ = in.handoff().target();
    } else if (in.has_ack()) {
      const absl::Time now = absl::Now();
      std::lock_guard<std::mutex> lock(mu_);
      call->answered_ = true;
      if (in.ack().has_weights()) {
        std::vector<std::pair<std::string, double>> weights;
        for (const v1::CollectorWeight& w : in.ack().weights().entries()) {
          weights.emplace_back(w.entry(), w.weight());
        }
        // As the real agent: a bad weight is ignored, the others apply.
        choice_->SetWeights(weights).IgnoreError();
      }
      while (!in_flight_.empty() &&
             in_flight_.front().first <= in.ack().seq()) {
        if (absl::ToUnixNanos(in_flight_.front().second) >=
            shared_->record_after_nanos.load(std::memory_order_relaxed)) {
          shared_->latency.Add(now - in_flight_.front().second);
          shared_->window.Add(now - in_flight_.front().second);
        }
        shared_->acked.fetch_add(1, std::memory_order_relaxed);
        shared_->values_acked.fetch_add(series_, std::memory_order_relaxed);
        in_flight_.pop_front();
      }
    }
  }

  // The call ended. After a Handoff (and unless the run is ending) the
  // agent moves where the real agent would and replays what was not
  // acknowledged; after a connection failure (the collector died) with
  // other collectors in its list, it moves on in its weighted ranking
  // (client::CollectorChoice) at its next tick; any other end is the end of
  // this agent.
  void OnDone(AgentCall* call, const grpc::Status& status) {
    const bool lost =
        status.error_code() == grpc::StatusCode::UNAVAILABLE ||
        status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const bool moving =
          !cancelled_ && stubs_.size() > 1 && (call->handed_off_ || lost);
      if (moving) {
        if (call->handed_off_) {
          target_ = choice_->HandedOff(handoff_target_);
          shared_->handoffs.fetch_add(1, std::memory_order_relaxed);
        } else {
          target_ = choice_->Failed(call->answered_);
          shared_->failovers.fetch_add(1, std::memory_order_relaxed);
        }
        // Unacknowledged reports go again, in order, before new ones.
        for (auto it = in_flight_.rbegin(); it != in_flight_.rend(); ++it) {
          replay_.push_front(it->first);
        }
        in_flight_.clear();
        if (call->handed_off_) {
          StartCallLocked();
        } else {
          reconnect_ = true;
        }
        return;
      }
      done_ = true;
    }
    if (!status.ok() && status.error_code() != grpc::StatusCode::CANCELLED &&
        status.error_code() != grpc::StatusCode::INVALID_ARGUMENT &&
        !call->handed_off_) {
      shared_->failed.fetch_add(1, std::memory_order_relaxed);
    }
    std::lock_guard<std::mutex> lock(shared_->done_mu);
    --shared_->live;
    shared_->done_cv.notify_all();
  }

  uint64_t NextRandom() {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return rng_;
  }

  // With scenario traffic: true when the host's Inventory changed since
  // inventory_ was taken (a link went down or trained at another speed),
  // and inventory_ is now the new one. Never while inventory_ is written.
  bool NewerInventoryLocked() {
    const ScenarioTraffic* scenario = shared_->options.scenario.get();
    if (scenario == nullptr) return false;
    uint64_t version = 0;
    std::shared_ptr<const v1::AgentMessage> inventory =
        scenario->Inventory(index_, &version);
    if (version == inventory_version_) return false;
    inventory_version_ = version;
    inventory_ = *inventory;
    return true;
  }

  void WriteReportLocked() {
    // As the real agent: a changed Inventory goes before the report; the
    // report follows when its write is done (OnWriteDone).
    if (NewerInventoryLocked()) {
      call_->writing_ = true;
      call_->StartWrite(&inventory_);
      return;
    }
    const bool fresh = replay_.empty();
    uint64_t seq;
    if (fresh) {
      --due_;
      seq = ++seq_;
    } else {
      seq = replay_.front();
      replay_.pop_front();
    }
    // Copying a template reuses the report's storage after the first time.
    v1::Report* r = report_.mutable_report();
    if (shared_->options.scenario != nullptr) {
      // A replayed report carries the counters of the interval it is sent
      // in, where a real agent's carries those it read then.
      shared_->options.scenario->FillReport(index_, r);
    } else {
      *r = shared_->node.report.report();
      double* rate = r->mutable_rate()->mutable_data();
      for (uint32_t i : shared_->node.moving) {
        // Up to +1/16 over the base rate: traffic that varies every second.
        rate[i] *= 1.0 + static_cast<double>(NextRandom() % 1024) / 16384.0;
      }
    }
    r->set_seq(seq);
    const absl::Time now = absl::Now();
    r->set_wall_time_unix_nanos(absl::ToUnixNanos(now));
    r->set_monotonic_nanos(absl::ToUnixNanos(now));
    in_flight_.emplace_back(seq, now);
    // Reports, not writes: a replayed one was counted when first sent.
    if (fresh) {
      shared_->sent.fetch_add(1, std::memory_order_relaxed);
      shared_->values_sent.fetch_add(series_, std::memory_order_relaxed);
    }
    call_->writing_ = true;
    call_->StartWrite(&report_);
  }

  Shared* const shared_;
  const std::vector<v1::Ingest::Stub*> stubs_;  // one per collector
  v1::AgentMessage hello_;
  const size_t index_;          // the agent's number (its node's)
  v1::AgentMessage inventory_;  // the shared one with this node's LLDP
  const v1::AgentMessage* schema_ = nullptr;  // shared
  size_t series_ = 0;                         // in schema_
  uint64_t inventory_version_ = 0;  // of the scenario's, in inventory_
  v1::AgentMessage report_;         // stable until its write completes
  uint64_t rng_;

  std::mutex mu_;
  // As the real agent's (agent/stream_client.h): where it streams, in its
  // weighted ranking.
  std::optional<client::CollectorChoice> choice_;
  size_t target_ = 0;           // index into stubs_: choice_->current()
  std::string handoff_target_;  // of the last Handoff
  bool reconnect_ = false;      // failed over: start the call at the tick
  std::unique_ptr<AgentCall> call_;
  std::vector<std::unique_ptr<AgentCall>> retired_;
  bool done_ = false;       // the last call ended
  bool cancelled_ = false;  // the run is ending
  int due_ = 0;
  uint64_t seq_ = 0;
  std::deque<uint64_t> replay_;  // seqs to send again (after a handoff)
  std::deque<std::pair<uint64_t, absl::Time>> in_flight_;  // seq, sent
};

AgentCall::AgentCall(VirtualAgent* agent, v1::Ingest::Stub* stub,
                     const v1::AgentMessage& hello)
    : agent_(agent) {
  stub->async()->Stream(&context_, this);
  StartRead(&in_);
  StartWrite(&hello);
  StartCall();
}

void AgentCall::OnWriteDone(bool ok) { agent_->OnWriteDone(this, ok); }

void AgentCall::OnReadDone(bool ok) {
  if (!ok) return;
  agent_->OnRead(this, in_);
  StartRead(&in_);
}

void AgentCall::OnDone(const grpc::Status& status) {
  agent_->OnDone(this, status);
}

using Agents = std::vector<std::unique_ptr<VirtualAgent>>;
// Per collector, `channels` stubs.
using Stubs = std::vector<std::vector<std::unique_ptr<v1::Ingest::Stub>>>;

// `channels` connections of their own to each collector; each stub keeps
// its channel alive.
Stubs MakeStubs(const VirtualAgentsOptions& options) {
  Stubs stubs;
  for (const std::string& target : options.targets) {
    stubs.emplace_back();
    for (int c = 0; c < options.channels; ++c) {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // own connection
      args.SetMaxSendMessageSize(64 * 1024 * 1024);
      stubs.back().push_back(v1::Ingest::NewStub(grpc::CreateCustomChannel(
          target, grpc::InsecureChannelCredentials(), args)));
    }
  }
  return stubs;
}

// One stream per agent, spread over the stubs; they must outlive the agents.
Agents StartAgents(const VirtualAgentsOptions& options, const Stubs& stubs,
                   Shared* shared) {
  Agents agents;
  agents.reserve(static_cast<size_t>(options.nodes));
  shared->live = options.nodes;
  for (int i = 0; i < options.nodes; ++i) {
    std::vector<v1::Ingest::Stub*> mine;
    for (const auto& per_collector : stubs) {
      mine.push_back(
          per_collector[static_cast<size_t>(i % options.channels)].get());
    }
    agents.push_back(
        std::make_unique<VirtualAgent>(shared, std::move(mine), i));
  }
  return agents;
}

// The pacing loop's state, and what it measured.
struct LoadRun {
  Shared* shared = nullptr;
  std::ostream* progress = nullptr;
  absl::Time start;
  // Latency is recorded once the warm-up has passed AND every agent has
  // caught up: connecting thousands of streams at once (a collector
  // restart) queues reports that drain at several times the normal rate,
  // which is not the steady state the numbers are meant to describe.
  bool recording = false;
  absl::Duration warmed_up = absl::InfiniteDuration();
  double worst_window_p99 = 0;
  std::vector<double> window_p99s;
  uint64_t last_sent = 0;  // values
  uint64_t last_acked = 0;
};

// Caught up: 99% of the agents (at any instant a few are between a tick and
// the write of their report).
bool MostCaughtUp(const Agents& agents) {
  return std::count_if(agents.begin(), agents.end(), [](const auto& a) {
           return a->CaughtUp();
         }) >= static_cast<long>(agents.size() * 99 / 100);
}

void PrintProgress(LoadRun& run, absl::Time now, double window_p99) {
  Shared* const shared = run.shared;
  const uint64_t sent = shared->values_sent.load();
  const uint64_t acked = shared->values_acked.load();
  if (run.progress != nullptr) {
    *run.progress << absl::StrFormat(
        "t=%3.0fs values/s sent %.3gM acked %.3gM  p99 %s  dropped %d "
        "rejected %d failed %d handed off %d\n",
        absl::ToDoubleSeconds(now - run.start),
        static_cast<double>(sent - run.last_sent) / 1e6,
        static_cast<double>(acked - run.last_acked) / 1e6,
        run.recording
            ? absl::StrFormat("%.1f ms (this second %.1f ms)",
                              shared->latency.QuantileMs(0.99), window_p99)
            : std::string("(warming up)"),
        shared->dropped.load(), shared->rejected.load(), shared->failed.load(),
        shared->handoffs.load());
    run.progress->flush();
  }
  run.last_sent = sent;
  run.last_acked = acked;
}

// Once a second: starts recording when due, keeps the second's p99, prints.
void EndSecond(LoadRun& run, const Agents& agents, absl::Time now) {
  Shared* const shared = run.shared;
  if (!run.recording && now >= run.start + shared->options.warmup &&
      MostCaughtUp(agents)) {
    run.recording = true;
    shared->record_after_nanos.store(absl::ToUnixNanos(now));
    run.warmed_up = now - run.start;
    shared->window.Reset();
  }
  const double window_p99 = shared->window.QuantileMs(0.99);
  shared->window.Reset();
  if (run.recording && window_p99 > 0) {
    run.window_p99s.push_back(window_p99);
    run.worst_window_p99 = std::max(run.worst_window_p99, window_p99);
  }
  PrintProgress(run, now, window_p99);
}

// Ticks the agents for the run's duration; returns when sending ended.
// Ticks are spread evenly over each interval: agent i reports at
// start + k * interval + i * interval / nodes.
absl::Time PaceTicks(LoadRun& run, const Agents& agents) {
  const VirtualAgentsOptions& options = run.shared->options;
  const double per_second =
      options.nodes / absl::ToDoubleSeconds(options.interval);
  const uint64_t total_ticks = static_cast<uint64_t>(
      per_second * absl::ToDoubleSeconds(options.duration));
  uint64_t ticks = 0;
  absl::Time next_print = run.start + absl::Seconds(1);
  // The scenario's time keeps up with the run's: one step per interval.
  absl::Time next_step = run.start + options.interval;
  while (ticks < total_ticks) {
    if (options.stop_requested && options.stop_requested()) break;
    const absl::Time now = absl::Now();
    for (; options.scenario != nullptr && now >= next_step;
         next_step += options.interval) {
      options.scenario->Advance(absl::ToDoubleSeconds(options.interval));
    }
    const uint64_t target = std::min<uint64_t>(
        total_ticks, static_cast<uint64_t>(
                         absl::ToDoubleSeconds(now - run.start) * per_second));
    for (; ticks < target; ++ticks) {
      agents[ticks % agents.size()]->Tick();
    }
    if (now >= next_print) {
      EndSecond(run, agents, now);
      next_print += absl::Seconds(1);
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  return absl::Now();
}

// Gives the collector a moment to acknowledge what is in flight, then ends
// every stream and waits until all are done.
void DrainAndCancel(Shared* shared, const Agents& agents,
                    absl::Time sending_done) {
  const absl::Time drain_deadline = sending_done + absl::Seconds(5);
  while (absl::Now() < drain_deadline &&
         shared->acked.load() + shared->dropped.load() < shared->sent.load()) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  for (const auto& a : agents) a->Cancel();
  std::unique_lock<std::mutex> lock(shared->done_mu);
  shared->done_cv.wait(lock, [&] { return shared->live == 0; });
}

VirtualAgentsResult Summarize(const LoadRun& run, absl::Time sending_done) {
  const Shared& shared = *run.shared;
  VirtualAgentsResult r;
  r.series_per_agent = shared.series_per_agent;
  r.seconds = absl::ToDoubleSeconds(sending_done - run.start);
  r.reports_sent = shared.sent.load();
  r.reports_acked = shared.acked.load();
  r.values_sent = shared.values_sent.load();
  r.values_acked = shared.values_acked.load();
  r.reports_dropped = shared.dropped.load();
  r.streams_rejected = shared.rejected.load();
  r.streams_failed = shared.failed.load();
  r.handoffs = shared.handoffs.load();
  r.failovers = shared.failovers.load();
  r.latency_samples = shared.latency.Count();
  r.latency_p50_ms = shared.latency.QuantileMs(0.5);
  r.latency_p99_ms = shared.latency.QuantileMs(0.99);
  r.latency_max_ms = shared.latency.QuantileMs(1.0);
  r.warmup_seconds = absl::ToDoubleSeconds(run.warmed_up);
  r.latency_worst_second_p99_ms = run.worst_window_p99;
  if (!run.window_p99s.empty()) {
    std::vector<double> p99s = run.window_p99s;
    std::sort(p99s.begin(), p99s.end());
    r.latency_median_second_p99_ms = p99s[p99s.size() / 2];
  }
  return r;
}

}  // namespace

absl::StatusOr<VirtualAgentsResult> RunVirtualAgents(
    const VirtualAgentsOptions& options, std::ostream* progress) {
  if (options.targets.empty() ||
      std::any_of(options.targets.begin(), options.targets.end(),
                  [](const std::string& t) { return t.empty(); })) {
    return absl::InvalidArgumentError("no collector, or an empty one");
  }
  if (options.nodes <= 0 || options.channels <= 0 ||
      options.interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "nodes, channels and interval must be positive");
  }
  auto shared = std::make_unique<Shared>();
  shared->options = options;
  if (options.scenario != nullptr) {
    if (static_cast<size_t>(options.nodes) > options.scenario->num_nodes()) {
      return absl::InvalidArgumentError(
          absl::StrCat(options.nodes, " agents, but the scenario traffic has ",
                       options.scenario->num_nodes(), " nodes with agents"));
    }
    size_t series = 0;
    for (int n = 0; n < options.nodes; ++n) {
      series += options.scenario->SeriesOf(static_cast<size_t>(n));
    }
    shared->series_per_agent = series / static_cast<size_t>(options.nodes);
    options.scenario->Advance(absl::ToDoubleSeconds(options.interval));
  } else {
    absl::StatusOr<VirtualNode> node = BuildVirtualNode(options.nics);
    if (!node.ok()) return node.status();
    shared->node = *std::move(node);
    shared->series_per_agent = shared->node.series;
  }
  const Stubs stubs = MakeStubs(options);
  const Agents agents = StartAgents(options, stubs, shared.get());

  LoadRun run;
  run.shared = shared.get();
  run.progress = progress;
  run.start = absl::Now();
  const absl::Time sending_done = PaceTicks(run, agents);
  DrainAndCancel(shared.get(), agents, sending_done);
  return Summarize(run, sending_done);
}

std::string LatencySummary(const VirtualAgentsResult& r) {
  if (r.latency_samples == 0) {
    return "latency not measured (nothing acknowledged after the warm-up "
           "and catch-up)";
  }
  return absl::StrFormat(
      "after %.0f s of warm-up: send->ack p50 %.1f ms p99 %.1f ms max %.1f "
      "ms, p99 of a second: median %.1f ms worst %.1f ms",
      r.warmup_seconds, r.latency_p50_ms, r.latency_p99_ms, r.latency_max_ms,
      r.latency_median_second_p99_ms, r.latency_worst_second_p99_ms);
}

}  // namespace fabricdiag::sim
