#include "cluster/part_news_exchange.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/cluster.pb.h"

namespace fabricdiag::cluster {

absl::StatusOr<std::unique_ptr<PartNewsExchange>> PartNewsExchange::Open(
    NatsConnection* nats, std::string collector_id, Options options) {
  if (nats == nullptr || collector_id.empty()) {
    return absl::InvalidArgumentError(
        "part news: a NATS connection and a collector id are needed");
  }
  std::unique_ptr<PartNewsExchange> self(
      new PartNewsExchange(nats, std::move(collector_id), std::move(options)));
  // One small message a collector a pass: the default limits hold hours.
  self->subscription_ = NatsSubscription::Open(
      nats->nc(), absl::StrCat(self->options_.subject, ".>"),
      &PartNewsExchange::OnNews, self.get(), {});
  if (self->subscription_ == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "part news: subscribing to ", self->options_.subject, ".> failed"));
  }
  return self;
}

PartNewsExchange::PartNewsExchange(NatsConnection* nats,
                                   std::string collector_id, Options options)
    : nats_(nats), id_(std::move(collector_id)), options_(std::move(options)) {}

PartNewsExchange::~PartNewsExchange() { subscription_.reset(); }

void PartNewsExchange::OnNews(natsConnection* /*nc*/, natsSubscription* /*sub*/,
                              natsMsg* msg, void* closure) {
  auto* self = static_cast<PartNewsExchange*>(closure);
  self->Take(absl::string_view(natsMsg_GetData(msg),
                               static_cast<size_t>(natsMsg_GetDataLength(msg))),
             absl::Now());
  natsMsg_Destroy(msg);
}

void PartNewsExchange::Take(absl::string_view data, absl::Time now) {
  v1::PartNews wire;
  if (!wire.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // NATS echoes this collector's own news back to it.
  if (wire.collector_id() == id_) return;
  absl::StatusOr<PartNews> news = FromProto(wire);
  if (!news.ok()) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  absl::MutexLock lock(&mu_);
  auto it = from_.find(news->collector_id);
  if (it != from_.end()) {
    // Older than what is held: a late message. (What is held no longer
    // counts once stale: a collector whose clock went back is heard again.)
    if (news->published <= it->second.news.published &&
        now - it->second.received <= options_.freshness) {
      return;
    }
  } else if (from_.size() >= kMaxSenders) {
    auto oldest = std::min_element(
        from_.begin(), from_.end(), [](const auto& a, const auto& b) {
          return a.second.received < b.second.received;
        });
    from_.erase(oldest);
  }
  received_.fetch_add(1, std::memory_order_relaxed);
  std::string id = news->collector_id;
  from_[std::move(id)] = Held{*std::move(news), now};
}

absl::Status PartNewsExchange::Publish(PartNews news) {
  if (!nats_->link_up()) {
    publish_errors_.fetch_add(1, std::memory_order_relaxed);
    return absl::UnavailableError("publishing part news: NATS not connected");
  }
  news.collector_id = id_;
  const std::string data = ToProto(news).SerializeAsString();
  const int64_t max_payload = natsConnection_GetMaxPayload(nats_->nc());
  if (max_payload > 0 && static_cast<int64_t>(data.size()) > max_payload) {
    publish_errors_.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(
        absl::StrCat("publishing part news: ", data.size(),
                     " bytes, larger than the NATS servers' max_payload (",
                     max_payload, "); raise it"));
  }
  const std::string subject = absl::StrCat(options_.subject, ".", id_);
  const natsStatus st = natsConnection_Publish(
      nats_->nc(), subject.c_str(), data.data(), static_cast<int>(data.size()));
  if (st != NATS_OK) {
    publish_errors_.fetch_add(1, std::memory_order_relaxed);
    return NatsError(st, absl::StrCat("publishing to ", subject));
  }
  published_.fetch_add(1, std::memory_order_relaxed);
  last_published_bytes_.store(data.size(), std::memory_order_relaxed);
  return absl::OkStatus();
}

std::vector<PartNews> PartNewsExchange::Fresh(absl::Time now) const {
  std::vector<PartNews> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, held] : from_) {
    if (now - held.received <= options_.freshness) out.push_back(held.news);
  }
  return out;
}

PartNewsExchange::Stats PartNewsExchange::stats() const {
  Stats s;
  s.published = published_.load(std::memory_order_relaxed);
  s.last_published_bytes =
      last_published_bytes_.load(std::memory_order_relaxed);
  s.publish_errors = publish_errors_.load(std::memory_order_relaxed);
  s.received = received_.load(std::memory_order_relaxed);
  s.refused = refused_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace fabricdiag::cluster
