#include "cluster/shard_leases.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/collector_list.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace fabricdiag::cluster {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr char kKeyPrefix[] = "shard.";

SteadyClock::duration ToSteady(absl::Duration d) {
  return std::chrono::duration_cast<SteadyClock::duration>(
      absl::ToChronoNanoseconds(d));
}

// A NATS KV key's rules: tokens of [-_=A-Za-z0-9] between dots, none empty.
bool ValidShardName(absl::string_view name) {
  if (name.empty() || name.front() == '.' || name.back() == '.') return false;
  char previous = '\0';
  for (char c : name) {
    if (c == '.' && previous == '.') return false;
    if (c != '.' && c != '-' && c != '_' && c != '=' &&
        !absl::ascii_isalnum(static_cast<unsigned char>(c))) {
      return false;
    }
    previous = c;
  }
  return true;
}

}  // namespace

std::string ShardLeases::FirstChoice(absl::string_view shard,
                                     const std::vector<Candidate>& candidates) {
  const Candidate* best = nullptr;
  uint64_t best_hash = 0;
  for (const Candidate& c : candidates) {
    const uint64_t hash = client::RendezvousHash(shard, c.id);
    // Equal hashes (never seen in practice) go to the lower id, so every
    // collector picks the same one.
    if (best == nullptr || hash > best_hash ||
        (hash == best_hash && c.id < best->id)) {
      best = &c;
      best_hash = hash;
    }
  }
  return best == nullptr ? "" : best->id;
}

std::string ShardLeases::SettledChoice(absl::string_view shard,
                                       const std::vector<Candidate>& candidates,
                                       absl::Duration settle) {
  std::vector<Candidate> settled;
  for (const Candidate& c : candidates) {
    if (c.live_for >= settle) settled.push_back(c);
  }
  return FirstChoice(shard, settled.empty() ? candidates : settled);
}

absl::StatusOr<std::unique_ptr<ShardLeases>> ShardLeases::Start(
    NatsConnection* nats, std::string id,
    const std::vector<std::string>& shards, Members members,
    const Options& options) {
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& shard : shards) {
    if (!ValidShardName(shard)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "analysis shard \"", shard,
          "\": a shard's name is tokens of letters, digits, '-', '_' and '=' "
          "joined by '.'"));
    }
    if (!seen.insert(shard).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("analysis shard \"", shard, "\" is named twice"));
    }
  }
  ASSIGN_OR_RETURN(
      kvStore * kv,
      BindLeaseBucket(*nats, options.bucket, options.replicas, options.ttl));
  std::unique_ptr<ShardLeases> leases(new ShardLeases(
      nats, std::move(id), shards, std::move(members), options, kv));
  leases->thread_ = std::thread(&ShardLeases::Run, leases.get());
  return leases;
}

ShardLeases::ShardLeases(NatsConnection* nats, std::string id,
                         const std::vector<std::string>& shards,
                         Members members, Options options, kvStore* kv)
    : id_(std::move(id)),
      options_(std::move(options)),
      kv_(kv),
      nats_(nats),
      members_(std::move(members)) {
  leases_.reserve(shards.size());
  terms_.assign(shards.size(), 0);
  handing_ = std::make_unique<std::atomic<bool>[]>(shards.size());
  handing_since_.resize(shards.size());
  let_go_ = std::make_unique<std::atomic<bool>[]>(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    handing_[i].store(false);
    let_go_[i].store(false);
  }
  for (const std::string& shard : shards) {
    leases_.push_back(std::make_unique<KeyLease>(
        kv_, absl::StrCat(kKeyPrefix, shard), id_,
        KeyLease::Naming{"analysis shards", absl::StrCat("owns shard ", shard),
                         /*logged=*/false},
        KeyLease::Timing{options_.ttl, options_.margin}));
  }
}

ShardLeases::~ShardLeases() {
  Stop();
  leases_.clear();
  kvStore_Destroy(kv_);
}

void ShardLeases::Stop() {
  stopping_.store(true);
  if (stopped_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  const bool connected = nats_->connected();
  size_t released = 0;
  for (const std::unique_ptr<KeyLease>& lease : leases_) {
    released += lease->Term() != 0 ? 1 : 0;
    lease->Release(connected);
  }
  if (released > 0) {
    LogInfo(absl::StrCat("analysis shards: ", id_, " lets go of the ", released,
                         " shards it owned"));
  }
}

namespace {

// "jobs.1, jobs.7 and 3 more": a few of many shards' names.
std::string FewOf(const std::vector<absl::string_view>& shards) {
  constexpr size_t kNamed = 8;
  std::string out;
  for (size_t i = 0; i < shards.size() && i < kNamed; ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ", ", shards[i]);
  }
  if (shards.size() > kNamed) {
    absl::StrAppend(&out, " and ", shards.size() - kNamed, " more");
  }
  return out;
}

}  // namespace

std::vector<ShardLeases::Owned> ShardLeases::OwnedShards() const {
  std::vector<Owned> out;
  for (size_t i = 0; i < leases_.size(); ++i) {
    const uint64_t term = leases_[i]->Term();
    if (term != 0) {
      out.push_back({leases_[i]->key().substr(sizeof(kKeyPrefix) - 1), term,
                     handing_[i].load()});
    }
  }
  return out;
}

void ShardLeases::LetGo(absl::string_view shard) {
  const std::string key = absl::StrCat(kKeyPrefix, shard);
  for (size_t i = 0; i < leases_.size(); ++i) {
    if (leases_[i]->key() == key && handing_[i].load()) let_go_[i].store(true);
  }
}

uint64_t ShardLeases::Term(absl::string_view shard) const {
  const std::string key = absl::StrCat(kKeyPrefix, shard);
  for (const std::unique_ptr<KeyLease>& lease : leases_) {
    if (lease->key() == key) return lease->Term();
  }
  return 0;
}

std::string ShardLeases::Owner(absl::string_view shard) const {
  const std::string key = absl::StrCat(kKeyPrefix, shard);
  for (const std::unique_ptr<KeyLease>& lease : leases_) {
    if (lease->key() == key) return lease->holder();
  }
  return "";
}

void ShardLeases::Tick(std::vector<SteadyClock::time_point>* next_renewal) {
  std::vector<Candidate> candidates = members_();
  // This collector is a candidate even when its own announcement has not
  // come back yet (a new watcher): it knows it is live.
  bool self_listed = false;
  for (const Candidate& c : candidates) self_listed |= c.id == id_;
  if (!self_listed) candidates.push_back({id_, absl::InfiniteDuration()});
  const bool connected = nats_->connected();
  std::vector<absl::string_view> taken;
  std::vector<absl::string_view> handed;
  std::vector<absl::string_view> lost;
  std::set<std::string> to;  // who the shards handed over went to
  for (size_t i = 0; i < leases_.size() && !stopping_.load(); ++i) {
    KeyLease& lease = *leases_[i];
    const absl::string_view shard =
        absl::string_view(lease.key()).substr(sizeof(kKeyPrefix) - 1);
    const std::string first = FirstChoice(shard, candidates);
    if (lease.CheckHeld()) {
      bool hand_over = false;
      if (first != id_) {
        for (const Candidate& c : candidates) {
          if (c.id == first) hand_over = c.live_for >= options_.settle;
        }
      }
      const SteadyClock::time_point now = SteadyClock::now();
      if (hand_over && !handing_[i].load()) {
        handing_since_[i] = now;
        handing_[i].store(true);
      } else if (!hand_over) {
        handing_[i].store(false);
        let_go_[i].store(false);
      }
      if (hand_over &&
          (let_go_[i].load() ||
           now - handing_since_[i] >= ToSteady(options_.handover_wait))) {
        lease.Release(connected);
        handing_[i].store(false);
        let_go_[i].store(false);
        handovers_.fetch_add(1);
        handed.push_back(shard);
        to.insert(first);
      } else if (now >= (*next_renewal)[i]) {
        (*next_renewal)[i] = now + ToSteady(options_.renew_period);
        lease.Renew();
      }
    } else {
      handing_[i].store(false);
      let_go_[i].store(false);
      if (first == id_ && lease.TryAcquire()) {
        (*next_renewal)[i] =
            SteadyClock::now() + ToSteady(options_.renew_period);
      }
    }
    const uint64_t term = lease.Term();
    if (term != terms_[i]) {
      if (term != 0) {
        taken.push_back(shard);
      } else if (handed.empty() || handed.back() != shard) {
        lost.push_back(shard);
      }
      terms_[i] = term;
    }
  }
  // One line each, not one per shard: a collector that starts takes a
  // hundred shards at once.
  if (!taken.empty()) {
    LogInfo(absl::StrCat("analysis shards: ", id_, " takes ", taken.size(),
                         " shard", taken.size() == 1 ? "" : "s", " (",
                         FewOf(taken), ")"));
  }
  if (!handed.empty()) {
    LogInfo(absl::StrCat("analysis shards: ", id_, " hands ", handed.size(),
                         " shard", handed.size() == 1 ? "" : "s", " over to ",
                         absl::StrJoin(to, ", "), " (", FewOf(handed), ")"));
  }
  if (!lost.empty()) {
    LogWarning(
        absl::StrCat("analysis shards: ", id_, " no longer owns ", lost.size(),
                     " shard", lost.size() == 1 ? "" : "s", " (", FewOf(lost),
                     "): not renewed in time, or taken by another collector"));
  }
}

void ShardLeases::Run() {
  std::vector<SteadyClock::time_point> next_renewal(leases_.size());
  while (!stopping_.load()) {
    const SteadyClock::time_point next =
        SteadyClock::now() + ToSteady(options_.acquire_period);
    Tick(&next_renewal);
    while (!stopping_.load() && SteadyClock::now() < next) {
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
}

}  // namespace fabricdiag::cluster
