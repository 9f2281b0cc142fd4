#include "cluster/jetstream_baselines.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace fabricdiag::cluster {
namespace {

constexpr char kManifestKey[] = "manifest";
constexpr char kManifestMagic[] = "fabricdiag-baselines";
constexpr int kManifestVersion = 1;
constexpr absl::Duration kRetryPause = absl::Milliseconds(200);

struct Manifest {
  std::string slot;
  uint64_t chunks = 0;
  uint64_t bytes = 0;
};

// DataLoss naming what is wrong unless `value` is a manifest this build
// writes: slot a or b, at least one chunk, no more chunks than bytes, at
// most kMaxStateObjectBytes in all. Chunk sizes are not part of it: a
// reader joins whatever chunks the manifest names.
absl::StatusOr<Manifest> ParseManifest(absl::string_view value,
                                       absl::string_view bucket,
                                       absl::string_view key) {
  const std::vector<absl::string_view> f = absl::StrSplit(value, ' ');
  Manifest m;
  int version = 0;
  if (f.size() != 5 || f[0] != kManifestMagic ||
      !absl::SimpleAtoi(f[1], &version) || version != kManifestVersion ||
      (f[2] != "a" && f[2] != "b") || !absl::SimpleAtoi(f[3], &m.chunks) ||
      !absl::SimpleAtoi(f[4], &m.bytes) || m.chunks == 0 ||
      m.bytes > collector::kMaxStateObjectBytes || m.chunks > m.bytes) {
    return absl::DataLossError(absl::StrCat(
        "bucket ", bucket, " key ", key, " is not a ", kManifestMagic, " ",
        kManifestVersion, " manifest: \"", value.substr(0, 80), "\""));
  }
  m.slot = std::string(f[2]);
  return m;
}

}  // namespace

absl::StatusOr<std::unique_ptr<JetStreamBaselines>> JetStreamBaselines::Open(
    NatsConnection* nats, const Options& options) {
  if (options.chunk_bytes == 0) {
    return absl::InvalidArgumentError("baselines: chunk_bytes must be > 0");
  }
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = options.bucket.c_str();
  config.Description =
      "fabricdiag straggler baselines of the analysis leader, in chunks";
  config.History = 1;
  config.StorageType = js_FileStorage;
  config.Replicas = options.replicas;
  ASSIGN_OR_RETURN(kvStore * kv, BindOrCreateBucket(*nats, config));
  return std::unique_ptr<JetStreamBaselines>(
      new JetStreamBaselines(nats, options, kv, "", /*owns_kv=*/true));
}

JetStreamBaselines::JetStreamBaselines(NatsConnection* nats, Options options,
                                       kvStore* kv, std::string prefix,
                                       bool owns_kv)
    : nats_(nats),
      options_(std::move(options)),
      kv_(kv),
      prefix_(std::move(prefix)),
      owns_kv_(owns_kv) {}

JetStreamBaselines::~JetStreamBaselines() {
  if (owns_kv_) kvStore_Destroy(kv_);
}

std::unique_ptr<collector::BaselinesStore> JetStreamBaselines::ForShard(
    absl::string_view shard) {
  return std::unique_ptr<JetStreamBaselines>(
      new JetStreamBaselines(nats_, options_, kv_, absl::StrCat(shard, "."),
                             /*owns_kv=*/false));
}

std::string JetStreamBaselines::ManifestKey() const {
  return absl::StrCat(prefix_, kManifestKey);
}

std::string JetStreamBaselines::ChunkKey(absl::string_view slot,
                                         uint64_t i) const {
  return absl::StrCat(prefix_, slot, ".", i);
}

std::string JetStreamBaselines::Describe() const {
  return absl::StrCat(
      "NATS bucket ", options_.bucket, prefix_.empty() ? "" : " keys ", prefix_,
      prefix_.empty() ? "" : "*", " (", absl::StrJoin(nats_->urls(), ","), ")");
}

bool JetStreamBaselines::PauseToRetry(const absl::Status& error,
                                      absl::Time deadline) const {
  return absl::IsUnavailable(error) &&
         PauseBeforeRetry(*nats_, kRetryPause, deadline);
}

absl::Status JetStreamBaselines::Put(const std::string& key,
                                     absl::string_view value,
                                     absl::Time deadline) {
  while (true) {
    uint64_t revision = 0;
    const natsStatus s = kvStore_Put(&revision, kv_, key.c_str(), value.data(),
                                     static_cast<int>(value.size()));
    if (s == NATS_OK) return absl::OkStatus();
    absl::Status error = NatsError(
        s, absl::StrCat("writing key ", key, " of bucket ", options_.bucket));
    if (!PauseToRetry(error, deadline)) return error;
  }
}

absl::StatusOr<std::string> JetStreamBaselines::Get(const std::string& key,
                                                    absl::Time deadline) {
  while (true) {
    kvEntry* entry = nullptr;
    const natsStatus s = kvStore_Get(&entry, kv_, key.c_str());
    if (s == NATS_OK) {
      const char* data = static_cast<const char*>(kvEntry_Value(entry));
      std::string value(data == nullptr ? "" : data,
                        data == nullptr ? 0 : kvEntry_ValueLen(entry));
      kvEntry_Destroy(entry);
      return value;
    }
    absl::Status error = NatsError(
        s, absl::StrCat("reading key ", key, " of bucket ", options_.bucket));
    if (!PauseToRetry(error, deadline)) return error;
  }
}

absl::Status JetStreamBaselines::Write(absl::string_view payload,
                                       absl::Time written) {
  const absl::Time deadline = absl::Now() + options_.write_deadline;
  const std::string envelope = collector::EncodeObject(payload, written);
  // The slot the manifest does not name; a damaged manifest names none.
  std::string slot = "a";
  absl::StatusOr<std::string> current = Get(ManifestKey(), deadline);
  if (current.ok()) {
    absl::StatusOr<Manifest> m =
        ParseManifest(*current, options_.bucket, ManifestKey());
    if (m.ok() && m->slot == "a") slot = "b";
  } else if (!absl::IsNotFound(current.status())) {
    write_errors_.fetch_add(1);
    return current.status();
  }
  const size_t chunk = options_.chunk_bytes;
  const uint64_t chunks =
      std::max<uint64_t>(1, (envelope.size() + chunk - 1) / chunk);
  for (uint64_t i = 0; i < chunks; ++i) {
    const absl::string_view part =
        absl::string_view(envelope).substr(i * chunk, chunk);
    if (absl::Status s = Put(ChunkKey(slot, i), part, deadline); !s.ok()) {
      write_errors_.fetch_add(1);
      return s;
    }
    chunks_written_.fetch_add(1);
  }
  const std::string manifest =
      absl::StrCat(kManifestMagic, " ", kManifestVersion, " ", slot, " ",
                   chunks, " ", envelope.size());
  if (absl::Status s = Put(ManifestKey(), manifest, deadline); !s.ok()) {
    write_errors_.fetch_add(1);
    return s;
  }
  RemoveLeftovers(slot, chunks);
  return absl::OkStatus();
}

void JetStreamBaselines::RemoveLeftovers(absl::string_view slot,
                                         uint64_t chunks) {
  // Chunks are written from 0 up, so a larger write's leftovers follow
  // each other. Best effort: the set is written; what stays is never read.
  for (uint64_t i = chunks;; ++i) {
    const std::string key = ChunkKey(slot, i);
    kvEntry* entry = nullptr;
    if (kvStore_Get(&entry, kv_, key.c_str()) != NATS_OK) return;
    kvEntry_Destroy(entry);
    if (kvStore_Purge(kv_, key.c_str(), nullptr) != NATS_OK) return;
    chunks_removed_.fetch_add(1);
  }
}

absl::StatusOr<std::optional<collector::ObjectFile>>
JetStreamBaselines::Read() {
  const absl::Time deadline = absl::Now() + options_.read_deadline;
  absl::StatusOr<std::string> value = Get(ManifestKey(), deadline);
  if (absl::IsNotFound(value.status())) return std::nullopt;
  if (!value.ok()) return value.status();
  ASSIGN_OR_RETURN(const Manifest m,
                   ParseManifest(*value, options_.bucket, ManifestKey()));
  std::string envelope;
  envelope.reserve(m.bytes);
  for (uint64_t i = 0; i < m.chunks; ++i) {
    const std::string key = ChunkKey(m.slot, i);
    absl::StatusOr<std::string> part = Get(key, deadline);
    if (absl::IsNotFound(part.status())) {
      return absl::DataLossError(
          absl::StrCat("bucket ", options_.bucket, ": chunk ", key, " of ",
                       m.chunks, " that the manifest names is missing"));
    }
    if (!part.ok()) return part.status();
    if (envelope.size() + part->size() > m.bytes) break;  // judged below
    envelope += *part;
  }
  if (envelope.size() != m.bytes) {
    return absl::DataLossError(absl::StrCat(
        "bucket ", options_.bucket, ": the ", m.chunks, " chunks of slot ",
        m.slot, " do not hold the ", m.bytes,
        " bytes the manifest names (another collector writing at the same "
        "moment?)"));
  }
  absl::string_view payload;
  absl::Time written;
  if (absl::Status s = collector::DecodeObject(envelope, &payload, &written);
      !s.ok()) {
    return absl::DataLossError(absl::StrCat(
        "bucket ", options_.bucket, ", slot ", m.slot, ": ", s.message()));
  }
  return collector::ObjectFile{std::string(payload), written};
}

void JetStreamBaselines::Reject(absl::string_view /*why*/) {}

}  // namespace fabricdiag::cluster
