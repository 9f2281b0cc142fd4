#include "cluster/nats_connection.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/names.h"

namespace fabricdiag::cluster {

absl::StatusOr<std::vector<std::string>> ParseNatsUrls(absl::string_view flag) {
  std::vector<std::string> urls;
  absl::flat_hash_set<std::string> seen;
  for (absl::string_view raw : absl::StrSplit(flag, ',')) {
    absl::string_view url = absl::StripAsciiWhitespace(raw);
    absl::string_view host_port = url;
    if (!absl::ConsumePrefix(&host_port, "nats://")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--nats: ", QuoteForMessage(url), " is not nats://HOST:PORT"));
    }
    const size_t colon = host_port.rfind(':');
    uint32_t port = 0;
    if (colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(host_port.substr(colon + 1), &port) || port == 0 ||
        port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("--nats: ", QuoteForMessage(url),
                       " is not nats://HOST:PORT with a port in 1..65535"));
    }
    if (!seen.insert(std::string(url)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--nats: ", QuoteForMessage(url), " is listed twice"));
    }
    urls.emplace_back(url);
  }
  return urls;
}

absl::Status NatsError(natsStatus status, absl::string_view what) {
  natsStatus last = NATS_OK;
  const char* detail = nats_GetLastError(&last);
  std::string message = absl::StrCat(what, ": ", natsStatus_GetText(status));
  if (detail != nullptr && *detail != '\0' &&
      !absl::StrContains(message, detail)) {
    absl::StrAppend(&message, " (", detail, ")");
  }
  switch (status) {
    case NATS_TIMEOUT:
    case NATS_NO_SERVER:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_NOT_YET_CONNECTED:
    case NATS_NO_RESPONDERS:
    case NATS_STALE_CONNECTION:
    case NATS_IO_ERROR:
      return absl::UnavailableError(message);
    case NATS_NOT_FOUND:
      return absl::NotFoundError(message);
    case NATS_MAX_PAYLOAD:
      return absl::ResourceExhaustedError(message);
    default:
      if (absl::StrContains(message, "maximum payload") ||
          absl::StrContains(message, "message size exceeds")) {
        return absl::ResourceExhaustedError(message);
      }
      // A JetStream cluster between leaders answers "JetStream system
      // temporarily unavailable" or "no suitable peers": retryable.
      if (absl::StrContains(message, "temporarily unavailable") ||
          absl::StrContains(message, "no suitable peers") ||
          absl::StrContains(message, "timeout")) {
        return absl::UnavailableError(message);
      }
      return absl::InternalError(message);
  }
}

absl::StatusOr<kvStore*> BindOrCreateBucket(jsCtx* js, kvConfig config,
                                            absl::Duration deadline) {
  const absl::Time give_up = absl::Now() + deadline;
  constexpr absl::Duration kPause = absl::Milliseconds(250);
  while (true) {
    kvStore* kv = nullptr;
    natsStatus s = js_KeyValue(&kv, js, config.Bucket);
    if (s == NATS_NOT_FOUND) s = js_CreateKeyValue(&kv, js, &config);
    if (s == NATS_OK) return kv;
    const absl::Status error =
        NatsError(s, absl::StrCat("opening bucket ", config.Bucket));
    // A single server never places more than one replica: waiting cannot
    // help, the flag must change.
    if (absl::StrContains(error.message(), "not supported in non-clustered")) {
      return absl::FailedPreconditionError(absl::StrCat(
          error.message(),
          ": the NATS server is not a cluster; run with "
          "--nats_replicas=1 or point --nats at a JetStream cluster of at "
          "least ",
          config.Replicas, " servers"));
    }
    if (absl::Now() + kPause > give_up) {
      // "insufficient resources": fewer JetStream servers up than replicas.
      const bool too_few = absl::StrContains(error.message(), "insufficient");
      return absl::UnavailableError(absl::StrCat(
          error.message(), " (gave up after ", absl::FormatDuration(deadline),
          ")",
          too_few ? absl::StrCat("; the bucket needs ", config.Replicas,
                                 " JetStream servers up (--nats_replicas)")
                  : ""));
    }
    absl::SleepFor(kPause);
  }
}

absl::StatusOr<uint64_t> BucketLastRevision(jsCtx* js,
                                            const std::string& bucket) {
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetStreamInfo(
      &info, js, absl::StrCat("KV_", bucket).c_str(), nullptr, &code);
  if (s != NATS_OK) return NatsError(s, "reading the bucket's state");
  const uint64_t last = info->State.LastSeq;
  jsStreamInfo_Destroy(info);
  return last;
}

std::optional<uint64_t> WatcherFellBehind(jsCtx* js, const std::string& bucket,
                                          uint64_t delivered, int* behind) {
  absl::StatusOr<uint64_t> last = BucketLastRevision(js, bucket);
  *behind = last.ok() && *last > delivered ? *behind + 1 : 0;
  if (*behind < 2) return std::nullopt;
  return *last;
}

absl::StatusOr<std::unique_ptr<NatsConnection>> NatsConnection::Connect(
    const Options& options) {
  std::unique_ptr<NatsConnection> conn(new NatsConnection());
  conn->urls_ = options.urls;
  conn->request_timeout_ = options.request_timeout;
  natsStatus s = natsOptions_Create(&conn->options_);
  std::vector<const char*> servers;
  servers.reserve(options.urls.size());
  for (const std::string& url : options.urls) servers.push_back(url.c_str());
  natsOptions* o = conn->options_;
  if (s == NATS_OK) {
    s = natsOptions_SetServers(o, servers.data(),
                               static_cast<int>(servers.size()));
  }
  if (s == NATS_OK) s = natsOptions_SetName(o, options.name.c_str());
  if (s == NATS_OK) s = natsOptions_SetTimeout(o, 2000);
  if (s == NATS_OK) s = natsOptions_SetPingInterval(o, 1000);
  if (s == NATS_OK) s = natsOptions_SetMaxPingsOut(o, 3);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(o, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(o, 250);
  if (s != NATS_OK) return NatsError(s, "setting up the NATS client");

  const absl::Time deadline = absl::Now() + options.connect_timeout;
  absl::Status last;
  while (true) {
    s = natsConnection_Connect(&conn->nc_, o);
    if (s == NATS_OK) break;
    last = NatsError(s, "connecting");
    if (absl::Now() + absl::Milliseconds(500) > deadline) {
      return absl::UnavailableError(absl::StrCat(
          "--nats=", absl::StrJoin(options.urls, ","),
          ": no server answered in ",
          absl::FormatDuration(options.connect_timeout), ": ", last.message()));
    }
    absl::SleepFor(absl::Milliseconds(500));
  }
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = absl::ToInt64Milliseconds(options.request_timeout);
  s = natsConnection_JetStream(&conn->js_, conn->nc_, &js_options);
  if (s != NATS_OK) return NatsError(s, "opening JetStream");
  return conn;
}

NatsConnection::~NatsConnection() {
  if (js_ != nullptr) jsCtx_Destroy(js_);
  if (nc_ != nullptr) {
    natsConnection_Close(nc_);
    natsConnection_Destroy(nc_);
  }
  if (options_ != nullptr) natsOptions_Destroy(options_);
}

void NatsConnection::Close() {
  if (nc_ != nullptr) natsConnection_Close(nc_);
}

bool NatsConnection::connected() const {
  return nc_ != nullptr &&
         natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED;
}

std::string NatsConnection::connected_url() const {
  if (!connected()) return "";
  char buffer[256] = {0};
  if (natsConnection_GetConnectedUrl(nc_, buffer, sizeof(buffer)) != NATS_OK) {
    return "";
  }
  return buffer;
}

uint64_t NatsConnection::reconnects() const {
  natsStatistics* stats = nullptr;
  uint64_t reconnects = 0;
  if (natsStatistics_Create(&stats) == NATS_OK &&
      natsConnection_GetStats(nc_, stats) == NATS_OK) {
    natsStatistics_GetCounts(stats, nullptr, nullptr, nullptr, nullptr,
                             &reconnects);
  }
  natsStatistics_Destroy(stats);
  return reconnects;
}

}  // namespace fabricdiag::cluster
