#include "cluster/analysis_lease.h"

#include <chrono>
#include <string>
#include <utility>

#include "common/status_macros.h"

namespace fabricdiag::cluster {
namespace {

constexpr char kKey[] = "analysis";

}  // namespace

absl::StatusOr<std::unique_ptr<AnalysisLease>> AnalysisLease::Start(
    NatsConnection* nats, std::string id, const Options& options) {
  ASSIGN_OR_RETURN(
      kvStore * kv,
      BindLeaseBucket(*nats, options.bucket, options.replicas, options.ttl));
  std::unique_ptr<AnalysisLease> lease(
      new AnalysisLease(nats, std::move(id), options, kv));
  lease->thread_ = std::thread(&AnalysisLease::Run, lease.get());
  return lease;
}

AnalysisLease::AnalysisLease(NatsConnection* nats, std::string id,
                             Options options, kvStore* kv)
    : options_(std::move(options)),
      kv_(kv),
      nats_(nats),
      lease_(kv, kKey, std::move(id), {"analysis lease", "leads the analysis"},
             {options_.ttl, options_.margin}) {}

AnalysisLease::~AnalysisLease() {
  Stop();
  kvStore_Destroy(kv_);
}

void AnalysisLease::Stop() {
  stopping_.store(true);
  if (stopped_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  lease_.Release(nats_->connected());
}

bool AnalysisLease::Leading() const { return lease_.Held(); }

uint64_t AnalysisLease::Term() const { return lease_.Term(); }

std::string AnalysisLease::leader() const { return lease_.holder(); }

absl::Duration AnalysisLease::WithoutLeaderFor() const {
  return lease_.WithoutHolderFor();
}

void AnalysisLease::Run() {
  using Clock = std::chrono::steady_clock;
  while (!stopping_.load()) {
    const bool held = lease_.CheckHeld();
    if (held) {
      lease_.Renew();
    } else if (lease_.TryAcquire()) {
      acquisitions_.fetch_add(1);
    }
    const Clock::time_point next =
        Clock::now() +
        std::chrono::duration_cast<Clock::duration>(absl::ToChronoNanoseconds(
            held ? options_.renew_period : options_.acquire_period));
    while (!stopping_.load() && Clock::now() < next) {
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
}

}  // namespace fabricdiag::cluster
