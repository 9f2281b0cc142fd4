// The analysis parts' news between the collectors of a cluster
// (cluster/part_news.h): each pass every collector sends its own and reads
// every other's newest.
//
// Core NATS, no stream: subject <subject>.<collector_id>
// (fabricdiag.news.col-a), one message a pass. Like the shard features
// (cluster/shard_exchange.h) these are news of one pass, sent again the
// next: neither stored nor replicated. A lost message leaves the others
// with that collector's news of the pass before, for up to `freshness`.
//
//   ASSIGN_OR_RETURN(auto news, PartNewsExchange::Open(nats, "col-a", {}));
//   news->Publish(mine).IgnoreError();   // counted and logged by the caller
//   for (const PartNews& n : news->Fresh(absl::Now())) all.Merge(n.excuses);
//
// Thread-safe.
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster/nats_connection.h"
#include "cluster/nats_subscription.h"
#include "cluster/part_news.h"

namespace fabricdiag::cluster {

inline constexpr char kNewsSubject[] = "fabricdiag.news";

class PartNewsExchange {
 public:
  struct Options {
    std::string subject = kNewsSubject;
    // A collector's news counts while it arrived within this long: one
    // that stops sending drops out.
    absl::Duration freshness = absl::Seconds(5);
  };

  struct Stats {
    uint64_t published = 0;
    uint64_t last_published_bytes = 0;
    uint64_t publish_errors = 0;
    uint64_t received = 0;
    // Messages that did not parse or were refused (cluster/part_news.h):
    // dropped. (Those naming this collector are its own, echoed back:
    // ignored, not counted.)
    uint64_t refused = 0;
  };

  // Subscribes to every collector's news. InvalidArgument without a
  // connection or an id; Unavailable when subscribing failed. `nats` must
  // outlive the result.
  static absl::StatusOr<std::unique_ptr<PartNewsExchange>> Open(
      NatsConnection* nats, std::string collector_id, Options options);
  ~PartNewsExchange();
  PartNewsExchange(const PartNewsExchange&) = delete;
  PartNewsExchange& operator=(const PartNewsExchange&) = delete;

  // Sends `news` as this collector's (its collector_id is set to this
  // collector's). Unavailable while NATS is not connected (libnats would
  // buffer what no one should read late); ResourceExhausted when larger
  // than the servers' max_payload.
  absl::Status Publish(PartNews news);
  // Every other collector's newest news that arrived within `freshness` of
  // `now`, by collector id.
  std::vector<PartNews> Fresh(absl::Time now) const;
  Stats stats() const;

  // More senders than a cluster has: made-up names cannot grow what is
  // held past this; the one heard from longest ago makes room.
  static constexpr size_t kMaxSenders = 256;

 private:
  PartNewsExchange(NatsConnection* nats, std::string collector_id,
                   Options options);
  static void OnNews(natsConnection* nc, natsSubscription* sub, natsMsg* msg,
                     void* closure);
  void Take(absl::string_view data, absl::Time now);

  struct Held {
    PartNews news;
    absl::Time received;
  };

  NatsConnection* const nats_;
  const std::string id_;
  const Options options_;
  mutable absl::Mutex mu_;
  std::map<std::string, Held> from_ ABSL_GUARDED_BY(mu_);
  // Closed first in the destructor: the handler is done before the rest
  // goes.
  std::unique_ptr<NatsSubscription> subscription_;
  std::atomic<uint64_t> published_{0};
  std::atomic<uint64_t> last_published_bytes_{0};
  std::atomic<uint64_t> publish_errors_{0};
  std::atomic<uint64_t> received_{0};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace fabricdiag::cluster
