#include "cluster/kv_watch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/nats_subscription.h"
#include "common/log.h"
#include "nlohmann/json.hpp"

namespace fabricdiag::cluster {
namespace {

// How long a watcher waits for an entry before it asks whether it fell
// behind the bucket.
constexpr int64_t kWatchPollMillis = 500;

// JetStream's error code for a stream that holds no such message.
constexpr int kNoMessageFound = 10037;

}  // namespace

RevisionGaps::RevisionGaps(const absl::StatusOr<uint64_t>& floor)
    : anchored_(floor.ok()), last_(floor.ok() ? *floor : 0) {}

void RevisionGaps::Replayed() {
  if (anchored_) return;
  anchored_ = true;
  last_ = newest_;
}

RevisionGaps::Range RevisionGaps::Before(uint64_t revision) {
  newest_ = std::max(newest_, revision);
  if (!anchored_ || revision <= last_) return Range{};
  const Range passed{last_ + 1, revision};
  last_ = revision;
  return passed;
}

absl::StatusOr<std::optional<uint64_t>> FirstHeldRevision(
    const NatsConnection& nats, const std::string& bucket,
    RevisionGaps::Range range) {
  if (range.empty()) return std::nullopt;
  // The stream's next message from range.first on, of any key: libnats
  // has no call for it, JetStream's message API does (next_by_subj).
  const std::string subject =
      absl::StrCat("$JS.API.STREAM.MSG.GET.KV_", bucket);
  const std::string request =
      nlohmann::json{{"seq", range.first},
                     {"next_by_subj", absl::StrCat("$KV.", bucket, ".>")}}
          .dump();
  natsMsg* reply = nullptr;
  const natsStatus s =
      natsConnection_Request(&reply, nats.nc(), subject.c_str(), request.data(),
                             static_cast<int>(request.size()),
                             absl::ToInt64Milliseconds(nats.request_timeout()));
  if (s != NATS_OK) {
    return NatsError(s, absl::StrCat("asking bucket ", bucket, " for revision ",
                                     range.first, " on"));
  }
  const absl::string_view answer(
      natsMsg_GetData(reply),
      static_cast<size_t>(natsMsg_GetDataLength(reply)));
  absl::StatusOr<std::optional<uint64_t>> held =
      ReadFirstHeldRevision(answer, range);
  natsMsg_Destroy(reply);
  if (!held.ok()) {
    return absl::Status(
        held.status().code(),
        absl::StrCat("asking bucket ", bucket, " for revision ", range.first,
                     " on: ", held.status().message()));
  }
  return held;
}

absl::StatusOr<std::optional<uint64_t>> ReadFirstHeldRevision(
    absl::string_view answer, RevisionGaps::Range range) {
  const nlohmann::json json =
      nlohmann::json::parse(answer.begin(), answer.end(), /*cb=*/nullptr,
                            /*allow_exceptions=*/false);
  const auto unreadable = [] {
    return absl::InternalError("an answer that is not JetStream's");
  };
  if (!json.is_object()) return unreadable();
  if (const auto error = json.find("error"); error != json.end()) {
    if (!error->is_object()) return unreadable();
    const auto code = error->find("err_code");
    if (code != error->end() && code->is_number_integer() &&
        code->get<int64_t>() == kNoMessageFound) {
      return std::nullopt;
    }
    const auto description = error->find("description");
    return absl::UnavailableError(description != error->end() &&
                                          description->is_string()
                                      ? description->get<std::string>()
                                      : error->dump());
  }
  const auto message = json.find("message");
  if (message == json.end() || !message->is_object()) return unreadable();
  const auto seq = message->find("seq");
  if (seq == message->end() || !seq->is_number_unsigned()) return unreadable();
  const uint64_t held = seq->get<uint64_t>();
  // The next message from range.first on cannot come before it.
  if (held < range.first) return unreadable();
  if (held >= range.end) return std::nullopt;
  return held;
}

std::string MissedRevision(const NatsConnection& nats,
                           const std::string& bucket,
                           RevisionGaps::Range range) {
  if (range.empty()) return "";
  const absl::StatusOr<std::optional<uint64_t>> held =
      FirstHeldRevision(nats, bucket, range);
  if (!held.ok()) {
    return absl::StrCat(
        "the revisions the watcher passed over could not be checked (",
        held.status().message(), ")");
  }
  if (!held->has_value()) return "";
  return absl::StrCat("the watcher passed over revision ", **held,
                      ", which the bucket holds");
}

void RunBucketWatch(const NatsConnection& nats, kvStore* kv,
                    const std::string& bucket, const BucketWatch& watch) {
  // The newest revision applied, across watchers, to tell a quiet watcher
  // from one that fell behind.
  uint64_t delivered = 0;
  while (true) {
    RevisionGaps gaps(BucketLastSequence(nats.js(), bucket));
    kvWatchOptions watch_options;
    kvWatchOptions_Init(&watch_options);
    kvWatcher* watcher = nullptr;
    natsStatus s = kvStore_WatchAll(&watcher, kv, &watch_options);
    int behind = 0;      // consecutive quiet polls behind the bucket
    std::string missed;  // why the watcher is recreated, when it missed one
    while (s == NATS_OK && !watch.stopping() && missed.empty()) {
      kvEntry* entry = nullptr;
      s = kvWatcher_Next(&entry, watcher, kWatchPollMillis);
      if (s == NATS_TIMEOUT) {
        // A watcher is a consumer on one server: when that server dies it
        // can go quiet without an error. Recreated, it replays every key.
        s = WatcherFellBehind(nats.js(), bucket, delivered, &behind).has_value()
                ? NATS_TIMEOUT
                : NATS_OK;
        continue;
      }
      if (s != NATS_OK) break;
      if (entry == nullptr) {  // the end of the replay
        gaps.Replayed();
        watch.replayed();
        continue;
      }
      const uint64_t revision = kvEntry_Revision(entry);
      delivered = std::max(delivered, revision);
      const RevisionGaps::Range passed = gaps.Before(revision);
      watch.apply(entry);
      kvEntry_Destroy(entry);
      missed = MissedRevision(nats, bucket, passed);
    }
    EndKvWatcher(nats.nc(), watcher);
    if (nats.closed() || watch.stopping()) return;
    std::string why = missed;
    if (why.empty()) {
      why = s == NATS_TIMEOUT
                ? std::string("the watcher fell behind the bucket")
                : std::string(NatsError(s, "the watcher failed").message());
    }
    LogWarning(
        absl::StrCat("watching ", watch.what, ": ", why, "; watching again"));
    if (watch.restarts != nullptr) watch.restarts->fetch_add(1);
    if (!watch.pause(absl::Milliseconds(200))) return;
  }
}

absl::Status WaitForReplay(const absl::Notification& replayed,
                           const NatsConnection& nats,
                           const std::string& bucket) {
  // At least a few seconds even when opening the other buckets used up
  // most of the startup deadline.
  const absl::Time deadline =
      std::max(nats.startup_deadline(), absl::Now() + absl::Seconds(10));
  if (replayed.WaitForNotificationWithDeadline(deadline)) {
    return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrCat(
      "reading bucket ", bucket, " of ", absl::StrJoin(nats.urls(), ","),
      ": its watcher did not replay it in time (the NATS "
      "servers are still recovering?)"));
}

}  // namespace fabricdiag::cluster
