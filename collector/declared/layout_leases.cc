#include "collector/declared/layout_leases.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/names.h"
#include "common/prom_text.h"
#include "common/status_macros.h"

namespace fabricdiag::collector {
namespace {

constexpr size_t kMaxOwnerBytes = 128;

absl::Time FromNanos(int64_t nanos) { return absl::FromUnixNanos(nanos); }

}  // namespace

absl::Status ValidateDeclaration(absl::string_view source,
                                 absl::string_view owner,
                                 std::optional<int64_t> lease_seconds) {
  if (source != "cli" && source != "http" && source != "python" &&
      source != "slurm") {
    return absl::InvalidArgumentError(
        absl::StrCat("source: ", QuoteForMessage(source),
                     " is not one of cli, http, python, slurm"));
  }
  if (owner.size() > kMaxOwnerBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("owner: longer than ", kMaxOwnerBytes, " characters"));
  }
  for (char c : owner) {
    if (c < ' ' || c > '~') {
      return absl::InvalidArgumentError(
          "owner: only printable ASCII characters are allowed");
    }
  }
  if (lease_seconds.has_value() &&
      (*lease_seconds < 1 || *lease_seconds > kMaxLeaseSeconds)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease_seconds: ", *lease_seconds, " is not between 1 and ",
        kMaxLeaseSeconds, " (leave it out for a layout without a lease)"));
  }
  return absl::OkStatus();
}

v1::LayoutDeclaration NewDeclaration(absl::string_view source,
                                     absl::string_view owner,
                                     std::optional<int64_t> lease_seconds,
                                     absl::Time now) {
  v1::LayoutDeclaration d;
  d.set_source(std::string(source));
  d.set_owner(std::string(owner));
  d.set_declared_unix_nanos(absl::ToUnixNanos(now));
  if (lease_seconds.has_value()) {
    d.set_lease_seconds(static_cast<uint32_t>(*lease_seconds));
    d.set_expires_unix_nanos(
        absl::ToUnixNanos(now + absl::Seconds(*lease_seconds)));
  }
  return d;
}

std::optional<absl::Time> LeaseExpiry(const v1::LayoutDeclaration& d) {
  if (d.lease_seconds() == 0 || d.expires_unix_nanos() == 0) {
    return std::nullopt;
  }
  return FromNanos(d.expires_unix_nanos());
}

LayoutLeases::LayoutLeases(LayoutRegistry* registry, const Clock* clock,
                           OnExpired on_expired)
    : registry_(registry), clock_(clock), on_expired_(std::move(on_expired)) {}

LayoutLeases::~LayoutLeases() { Stop(); }

absl::StatusOr<v1::LayoutDeclaration> LayoutLeases::Renew(
    absl::string_view job, std::optional<int64_t> lease_seconds,
    absl::Time deadline) {
  if (lease_seconds.has_value()) {
    RETURN_IF_ERROR(ValidateDeclaration("cli", "", lease_seconds));
  }
  const absl::Time now = clock_->Now();
  auto change = [&](v1::LayoutDeclaration* d) -> absl::Status {
    // A lease that ran out and was not removed yet is gone all the same:
    // the job was declared dead, and the next check removes it.
    const std::optional<absl::Time> expiry = LeaseExpiry(*d);
    if (expiry.has_value() && *expiry <= now) {
      return absl::NotFoundError(
          absl::StrCat("the lease of job ", QuoteForMessage(job),
                       " ran out; declare the layout again"));
    }
    const int64_t seconds = lease_seconds.value_or(d->lease_seconds());
    if (seconds == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "lease_seconds: the layout of job ", QuoteForMessage(job),
          " has no lease; give lease_seconds to start one"));
    }
    d->set_lease_seconds(static_cast<uint32_t>(seconds));
    d->set_expires_unix_nanos(absl::ToUnixNanos(now + absl::Seconds(seconds)));
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(std::shared_ptr<const LayoutEntry> entry,
                   registry_->ChangeDeclaration(job, change, deadline));
  return entry->applied_layout.declaration();
}

int LayoutLeases::ExpireDue(absl::Time deadline) {
  const absl::Time now = clock_->Now();
  std::vector<std::string> due;
  // Held for the walk: a range-for over Snapshot()->layouts would keep only
  // the map, not the snapshot owning it, and a write publishing meanwhile
  // frees it under the loop.
  const std::shared_ptr<const RegistrySnapshot> snapshot =
      registry_->Snapshot();
  for (const auto& [job, entry] : snapshot->layouts) {
    const std::optional<absl::Time> expiry =
        LeaseExpiry(entry->applied_layout.declaration());
    if (expiry.has_value() && *expiry <= now) due.push_back(job);
  }
  int removed = 0;
  for (const std::string& job : due) {
    // Asked again under the registry's write lock: a renewal that landed
    // since the snapshot keeps the layout.
    absl::StatusOr<bool> gone = registry_->DeleteIf(
        job,
        [now](const LayoutEntry& e) {
          const std::optional<absl::Time> expiry =
              LeaseExpiry(e.applied_layout.declaration());
          return expiry.has_value() && *expiry <= now;
        },
        deadline);
    if (!gone.ok()) {
      LogWarning(absl::StrCat(
          "cannot remove the layout of job ", QuoteForMessage(job),
          " whose lease ran out: ", gone.status().message(),
          absl::IsAborted(gone.status()) ? " (changed elsewhere meanwhile)"
                                         : " (tried again)"));
      continue;
    }
    if (!*gone) continue;
    ++removed;
    ++expired_;
    LogInfo(absl::StrCat("removed the layout of job ", QuoteForMessage(job),
                         ": its lease ran out"));
    if (on_expired_) on_expired_(job);
  }
  return removed;
}

void LayoutLeases::Start(absl::Duration period) {
  thread_ = std::thread([this, period] {
    while (!stop_.WaitForNotificationWithTimeout(period)) {
      ExpireDue(absl::Now() + period * 10);
    }
  });
}

void LayoutLeases::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void LayoutLeases::AppendMetrics(std::string* out) const {
  size_t leased = 0;
  // Held for the walk (see ExpireDue).
  const std::shared_ptr<const RegistrySnapshot> snapshot =
      registry_->Snapshot();
  for (const auto& [job, entry] : snapshot->layouts) {
    if (LeaseExpiry(entry->applied_layout.declaration()).has_value()) ++leased;
  }
  PromWriter w(out);
  w.Family("fabricdiag_layouts_expired_total",
           "Layouts this collector removed because their lease ran out "
           "without a renewal.",
           PromType::kCounter);
  w.Sample(static_cast<double>(expired()));
  w.Family("fabricdiag_layouts_leased", "Layouts declared with a lease.",
           PromType::kGauge);
  w.Sample(static_cast<double>(leased));
}

}  // namespace fabricdiag::collector
