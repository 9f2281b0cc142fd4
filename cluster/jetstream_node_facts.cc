#include "cluster/jetstream_node_facts.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "cluster/kv_payload.h"
#include "cluster/kv_watch.h"
#include "common/log.h"
#include "common/names.h"
#include "common/prom_text.h"
#include "common/status_macros.h"

namespace fabricdiag::cluster {
namespace {

constexpr char kNodePrefix[] = "node.";
// How long the writer waits after a write that found no server, and between
// looks at a link that is down.
constexpr absl::Duration kRetryPause = absl::Milliseconds(500);
constexpr absl::Duration kLinkPause = absl::Milliseconds(100);
// Skipped values logged one by one; after that every 1,000th (a hostile
// writer must not fill the log).
constexpr uint64_t kSkipsLogged = 10;
// What a value may inflate to: the largest facts a node may hold
// (node_facts_cache.h's caps) are about 8 MiB.
constexpr uint64_t kMaxValueBytes = 16 << 20;

}  // namespace

std::string NodeFactsKey(absl::string_view node) {
  return absl::StrCat(kNodePrefix, absl::StrReplaceAll(node, {{".", "=2E"}}));
}

std::optional<std::string> NodeOfFactsKey(absl::string_view key) {
  if (!absl::ConsumePrefix(&key, kNodePrefix)) return std::nullopt;
  std::string node = absl::StrReplaceAll(key, {{"=2E", "."}});
  if (!IsValidNodeName(node)) return std::nullopt;
  return node;
}

absl::StatusOr<std::unique_ptr<JetStreamNodeFacts>> JetStreamNodeFacts::Open(
    NatsConnection* nats, const Options& options) {
  if (options.queue_limit == 0) {
    return absl::InvalidArgumentError("node facts: queue_limit must be > 0");
  }
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = options.bucket.c_str();
  config.Description =
      "fabricdiag node facts: LLDP neighbors and GPU-NIC pairs per node";
  // Only the latest facts of a node mean anything.
  config.History = 1;
  // A NATS restart must not forget the facts: agents resend them only when
  // they open a new stream.
  config.StorageType = js_FileStorage;
  config.Replicas = options.replicas;
  ASSIGN_OR_RETURN(kvStore * kv, BindOrCreateBucket(*nats, config));
  std::unique_ptr<JetStreamNodeFacts> store(
      new JetStreamNodeFacts(nats, options, kv));
  store->watcher_ = std::thread(&JetStreamNodeFacts::WatchLoop, store.get());
  store->writer_ = std::thread(&JetStreamNodeFacts::WriteLoop, store.get());
  RETURN_IF_ERROR(WaitForReplay(store->replayed_, *nats, options.bucket));
  return store;
}

JetStreamNodeFacts::JetStreamNodeFacts(NatsConnection* nats, Options options,
                                       kvStore* kv)
    : nats_(nats), options_(std::move(options)), kv_(kv) {}

JetStreamNodeFacts::~JetStreamNodeFacts() {
  Stop();
  kvStore_Destroy(kv_);
}

void JetStreamNodeFacts::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (writer_.joinable()) writer_.join();
  if (watcher_.joinable()) watcher_.join();
}

std::string JetStreamNodeFacts::Describe() const {
  return absl::StrCat("NATS bucket ", options_.bucket, " (",
                      absl::StrJoin(nats_->urls(), ","), ")");
}

absl::Status JetStreamNodeFacts::Put(const v1::NodeFacts& facts) {
  absl::StatusOr<v1::NodeFacts> clean = collector::SanitizeNodeFacts(facts);
  if (!clean.ok()) {
    refused_.fetch_add(1);
    return clean.status();
  }
  const std::string node = clean->node();
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::OkStatus();
  // Newer than the bucket as watched: what is queued, else what is being
  // written.
  const Pending* pending = nullptr;
  auto queued = queued_.find(node);
  if (queued != queued_.end()) {
    pending = &queued->second;
  } else if (in_flight_.has_value() && in_flight_->facts.node() == node) {
    pending = &*in_flight_;
  }
  if (pending != nullptr) {
    // After a delete the facts start from nothing.
    const v1::NodeFacts* held = pending->put ? &pending->facts : nullptr;
    v1::NodeFacts merged = collector::MergeNodeFacts(held, *std::move(clean));
    if (held != nullptr && collector::SameNodeFacts(*held, merged)) {
      return absl::OkStatus();
    }
    if (queued != queued_.end()) {
      // A queued delete stays first.
      queued->second.facts = std::move(merged);
      queued->second.put = true;
      dropped_.fetch_add(1);  // the queued write is replaced
      return absl::OkStatus();
    }
    clean = std::move(merged);
  } else {
    absl::StatusOr<collector::NodeFactsCache::Merged> merged =
        cache_.Merge(*clean);
    if (!merged.ok()) return merged.status();  // checked above
    if (!merged->changed) return absl::OkStatus();
    clean = std::move(merged->facts);
  }
  Enqueue(Pending{*std::move(clean), false, true});
  return absl::OkStatus();
}

absl::Status JetStreamNodeFacts::Delete(absl::string_view node) {
  if (absl::Status s = collector::CheckFactsNode(node); !s.ok()) {
    refused_.fetch_add(1);
    return s;
  }
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::OkStatus();
  // At once, so that a Put of the node from now on is compared with
  // nothing (and written) even before the watcher brings the delete back.
  cache_.Remove(node);
  awaiting_delete_.insert(std::string(node));
  Pending remove;
  remove.facts.set_node(std::string(node));
  remove.remove = true;
  remove.put = false;
  if (auto queued = queued_.find(node); queued != queued_.end()) {
    queued->second = std::move(remove);
    dropped_.fetch_add(1);  // the queued write is replaced
    return absl::OkStatus();
  }
  Enqueue(std::move(remove));
  return absl::OkStatus();
}

void JetStreamNodeFacts::Enqueue(Pending pending) {
  if (queued_.size() >= options_.queue_limit) {
    dropped_.fetch_add(1);
    return;
  }
  std::string node = pending.facts.node();
  queued_.insert_or_assign(node, std::move(pending));
  order_.push_back(std::move(node));
}

void JetStreamNodeFacts::Requeue(const Pending& pending) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || queued_.contains(pending.facts.node())) return;
  Enqueue(pending);
}

bool JetStreamNodeFacts::Pause(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), d);
  return !stopping_;
}

absl::Status JetStreamNodeFacts::Publish(const std::string& node,
                                         const std::string* value) {
  const std::string subject =
      absl::StrCat("$KV.", options_.bucket, ".", NodeFactsKey(node));
  natsMsg* msg = nullptr;
  natsStatus s =
      natsMsg_Create(&msg, subject.c_str(), nullptr,
                     value == nullptr ? nullptr : value->data(),
                     value == nullptr ? 0 : static_cast<int>(value->size()));
  // No value: the delete marker kvStore_Delete writes, with the same
  // bounded wait as a value.
  if (s == NATS_OK && value == nullptr) {
    s = natsMsgHeader_Set(msg, "KV-Operation", "DEL");
  }
  if (s == NATS_OK) {
    jsPubOptions publish;
    jsPubOptions_Init(&publish);
    publish.MaxWait = absl::ToInt64Milliseconds(nats_->request_timeout());
    jsErrCode code = static_cast<jsErrCode>(0);
    s = js_PublishMsg(nullptr, nats_->js(), msg, &publish, &code);
  }
  natsMsg_Destroy(msg);
  if (s == NATS_OK) return absl::OkStatus();
  return NatsError(s, absl::StrCat(value == nullptr ? "deleting" : "writing",
                                   " the facts of node ", node, " in bucket ",
                                   options_.bucket));
}

absl::Status JetStreamNodeFacts::Write(const Pending& pending) {
  const std::string& node = pending.facts.node();
  if (pending.remove) {
    if (absl::Status s = Publish(node, nullptr); !s.ok()) return s;
  }
  if (!pending.put) return absl::OkStatus();
  const std::string value = KvPayload(pending.facts);
  return Publish(node, &value);
}

void JetStreamNodeFacts::WriteLoop() {
  bool failing = false;  // since the last write that went through
  while (true) {
    Pending pending;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &JetStreamNodeFacts::WorkOrStop));
      if (stopping_) return;
      const std::string node = std::move(order_.front());
      order_.pop_front();
      auto it = queued_.find(node);
      pending = std::move(it->second);
      queued_.erase(it);
      in_flight_ = pending;
    }
    // A request sent while the client reconnects would wait in its buffer:
    // the write waits here instead, and newer Puts keep replacing nothing
    // but what is queued.
    while (!nats_->link_up() && !nats_->closed()) {
      if (!Pause(kLinkPause)) return;
    }
    const absl::Status written = Write(pending);
    {
      absl::MutexLock lock(&mu_);
      in_flight_.reset();
    }
    if (written.ok()) {
      writes_.fetch_add(1);
      failing = false;
      continue;
    }
    write_errors_.fetch_add(1);
    if (!failing) {
      LogWarning(absl::StrCat("node facts: ", written.message(),
                              absl::IsUnavailable(written)
                                  ? " (queued again; retried while it fails)"
                                  : " (dropped)"));
    }
    failing = true;
    if (!absl::IsUnavailable(written) || nats_->closed()) {
      if (pending.remove) {
        // Dropped: no delete will come back to end the wait.
        absl::MutexLock lock(&mu_);
        awaiting_delete_.erase(pending.facts.node());
      }
      continue;
    }
    Requeue(pending);
    if (!Pause(kRetryPause)) return;
  }
}

void JetStreamNodeFacts::ApplyEntry(kvEntry* entry) {
  const absl::string_view key = kvEntry_Key(entry);
  const std::optional<std::string> node = NodeOfFactsKey(key);
  if (kvEntry_Operation(entry) != kvOp_Put) {
    // Deleted by `nodes forget` on any collector, or deleted or purged by
    // hand: the node's facts go until its agent reports them again. A
    // delete of a key that names no node holds nothing to drop.
    if (node.has_value()) {
      absl::MutexLock lock(&mu_);
      awaiting_delete_.erase(*node);
      cache_.Remove(*node);
    }
    return;
  }
  // Held while the entry is applied, so that a Delete cannot come between
  // the check and the cache.
  absl::ReleasableMutexLock lock(&mu_);
  if (node.has_value() && awaiting_delete_.contains(*node)) return;
  std::string why;
  v1::NodeFacts facts;
  if (!node.has_value()) {
    why = "not a node's key";
  } else if (!ParseKvPayload(absl::string_view(
                                 static_cast<const char*>(kvEntry_Value(entry)),
                                 static_cast<size_t>(kvEntry_ValueLen(entry))),
                             kMaxValueBytes, &facts)) {
    why = "not a node's facts (undecodable)";
  } else if (facts.node() != *node) {
    why = absl::StrCat("the facts of another node (",
                       QuoteForMessage(facts.node()), ")");
  } else if (absl::StatusOr<bool> applied = cache_.Apply(facts);
             !applied.ok()) {
    why = std::string(applied.status().message());
  } else {
    return;
  }
  lock.Release();
  const uint64_t skipped = skipped_.fetch_add(1) + 1;
  if (skipped <= kSkipsLogged || skipped % 1000 == 0) {
    LogWarning(absl::StrCat("node facts: bucket ", options_.bucket, " key ",
                            QuoteForMessage(key), " revision ",
                            kvEntry_Revision(entry), ": ", why, "; skipped (",
                            skipped, " so far)"));
  }
}

void JetStreamNodeFacts::WatchLoop() {
  BucketWatch watch;
  watch.what = "the node facts";
  watch.stopping = [this] {
    absl::MutexLock lock(&mu_);
    return stopping_;
  };
  watch.pause = [this](absl::Duration d) { return Pause(d); };
  watch.apply = [this](kvEntry* entry) { ApplyEntry(entry); };
  watch.replayed = [this] {
    if (!replayed_.HasBeenNotified()) replayed_.Notify();
  };
  watch.restarts = &watcher_restarts_;
  RunBucketWatch(*nats_, kv_, options_.bucket, watch);
}

collector::NodeFactsStats JetStreamNodeFacts::stats() const {
  collector::NodeFactsStats stats;
  stats.nodes = cache_.nodes();
  stats.writes_failed = refused_.load() + write_errors_.load();
  stats.queue_dropped = dropped_.load();
  return stats;
}

void JetStreamNodeFacts::AppendMetrics(std::string* out) const {
  collector::AppendNodeFactsMetrics(stats(), out);
  PromWriter w(out);
  w.Family("fabricdiag_node_facts_writes_total",
           "Node facts this collector wrote to the cluster's bucket (facts "
           "equal to those held are not written).",
           PromType::kCounter);
  w.Sample(static_cast<double>(writes_.load()));
  w.Family("fabricdiag_node_facts_bucket_skipped_total",
           "Values of the cluster's node facts bucket that were not a node's "
           "facts (undecodable, another node's, an invalid name), skipped.",
           PromType::kCounter);
  w.Sample(static_cast<double>(skipped_.load()));
  w.Family("fabricdiag_node_facts_watcher_restarts_total",
           "Times the watcher of the node facts bucket failed, fell behind or "
           "missed a revision, and was recreated.",
           PromType::kCounter);
  w.Sample(static_cast<double>(watcher_restarts_.load()));
}

}  // namespace fabricdiag::cluster
