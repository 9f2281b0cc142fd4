// The ingest protocol of one agent stream, without gRPC.
//
// IngestSession checks every message of one fabricdiag.v1.Ingest/Stream
// against the protocol in proto/ingest.proto and feeds valid reports into
// the SeriesStore. The gRPC service (IngestService) only moves messages
// between the wire and this class, so every protocol rule - Hello first,
// schemas before reports, array sizes, indices, finite rates, node names,
// size limits, dedup by (node, boot_id, seq) - is unit-tested here directly.
//
// Each Inventory also records the node's facts (node_facts_intake.h) in the
// NodeFactsStore; the store's Put never blocks on the network.
//
// With an IngestPlacement, the session may answer the Hello, or a report
// after the placement's epoch moved, with a Handoff instead: the agent
// should stream to another collector; the caller closes the stream.
//
// A message that breaks a rule rejects the stream: the session answers
// Reject(reason), counts the reason in IngestCounters and ignores anything
// after it; the caller closes the stream. Nothing of a rejected message is
// stored, and other streams are not affected.
//
//   IngestCounters counters;
//   IngestSession session(&store, &counters);
//   for (const v1::AgentMessage& m : incoming) {
//     IngestSession::Reply r = session.Handle(m);
//     if (r.ack) SendAck(*r.ack);
//     if (r.reject) { SendReject(*r.reject); Close(); break; }
//   }
//
// Thread-compatible: one session per stream, driven by one reader at a time.
// IngestCounters is thread-safe and shared by all sessions.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/ingest/ingest_placement.h"
#include "collector/ingest/node_facts_intake.h"
#include "collector/store/series_store.h"
#include "common/names.h"
#include "proto/ingest.pb.h"

namespace fabricdiag::collector {

// Why a stream was rejected. Names (RejectReasonName) are metric labels.
enum class RejectReason {
  kBeforeHello = 0,   // a Schema, Report or Inventory before the Hello
  kSecondHello,       // a Hello on a stream that already had one
  kBadNodeName,       // not [A-Za-z0-9][A-Za-z0-9._-]{0,252}
  kBadHello,          // missing or over-long boot_id, or collector list
  kUnknownSchema,     // a Report whose schema_id this stream never sent
  kBadSchema,         // duplicate series keys, over-long strings
  kSizeMismatch,      // raw or rate array sizes do not match the schema
  kIndexOutOfRange,   // an index list entry >= schema size or not ascending
  kNonFiniteRate,     // a NaN or infinite rate
  kTooLarge,          // > kMaxSeries series, too many schemas, seq 0 ...
  kStaleBoot,         // another agent process now reports as this node
  kEmptyMessage,      // an AgentMessage with no field set
  kMixedMessage,      // a Report and another message in one AgentMessage
  kDuplicateNode,     // another live agent process streams as this node
  kUnauthenticated,   // no or a wrong ingest token
  kIdentityMismatch,  // the node is not named in the client certificate
  kCount,
};
constexpr size_t kRejectReasonCount = static_cast<size_t>(RejectReason::kCount);

// "before_hello", "unknown_schema", ...
const char* RejectReasonName(RejectReason reason);

// Ingest self-metrics, shared by every session. Thread-safe.
class IngestCounters {
 public:
  // Counts a rejected stream and logs why, naming the peer: at most one
  // line per reason every kLogEvery, so a flood of hostile streams cannot
  // flood the journal (the line says how many were not logged).
  static constexpr absl::Duration kLogEvery = absl::Seconds(10);
  void Reject(RejectReason reason, absl::string_view peer = "",
              absl::string_view message = "");
  uint64_t rejects(RejectReason reason) const {
    return rejects_[static_cast<size_t>(reason)].load(
        std::memory_order_relaxed);
  }

  std::atomic<uint64_t> streams{0};      // Hellos accepted
  std::atomic<uint64_t> reports{0};      // reports stored
  std::atomic<uint64_t> values{0};       // series values stored
  std::atomic<uint64_t> duplicates{0};   // replayed reports already held
  std::atomic<uint64_t> schemas{0};      // schemas accepted
  std::atomic<uint64_t> inventories{0};  // inventories accepted
  // Streams handed to another collector (IngestPlacement)...
  std::atomic<uint64_t> handoffs{0};
  // ... of which to a named collector: back to the one the agent prefers.
  std::atomic<uint64_t> handbacks{0};
  // ... of which refused because this collector is cut off from NATS
  // (Refusal::kNatsDisconnected).
  std::atomic<uint64_t> refused_nats_disconnected{0};
  // Agent streams open now (past their Hello, not ended nor handed off).
  std::atomic<int64_t> open_streams{0};
  // Bytes the open gRPC streams keep between messages to read the next one
  // into (collector/ingest/inbound_message.h).
  std::atomic<int64_t> read_buffer_bytes{0};

 private:
  std::array<std::atomic<uint64_t>, kRejectReasonCount> rejects_{};
  absl::Mutex log_mu_;
  std::array<absl::Time, kRejectReasonCount> logged_ ABSL_GUARDED_BY(log_mu_);
  std::array<uint64_t, kRejectReasonCount> unlogged_ ABSL_GUARDED_BY(log_mu_){};
};

class IngestSession {
 public:
  // Limits that keep one hostile stream from costing the collector more
  // than a large legitimate agent: the agent caps itself at 32,768 series
  // (ReportEncoder::kMaxSeries); a 64-port switch has ~19,000.
  static constexpr size_t kMaxSeries = 65536;
  static constexpr size_t kMaxSchemasPerStream = 64;
  static constexpr size_t kMaxStringBytes = 256;
  static constexpr size_t kMaxBootIdBytes = 128;
  // Hello.collectors: entries, and bytes per entry.
  static constexpr size_t kMaxCollectors = 64;
  static constexpr size_t kMaxCollectorBytes = 255;

  // What to send back for one message.
  struct Reply {
    std::optional<uint64_t> ack;        // send Ack(seq)
    std::optional<std::string> reject;  // send Reject(reason), then close
    // Send Handoff(reason, handoff_target), then close: the agent should
    // stream to another collector. Nothing of the message answered so was
    // stored.
    std::optional<std::string> handoff;
    std::string handoff_target;  // "" = the agent picks
    // Send with the Ack (Ack.weights): the placement's weights of the
    // agent's list, at the Hello and whenever they changed.
    std::optional<CollectorWeights> weights;
  };

  // `store`, `counters`, `placement` (KeepEveryAgent when one collector
  // takes every agent) and `facts` must outlive the session.
  IngestSession(SeriesStore* store, IngestCounters* counters,
                IngestPlacement& placement, NodeFactsIntake facts);
  // Tells the node's series that this stream ended.
  ~IngestSession();
  IngestSession(const IngestSession&) = delete;
  IngestSession& operator=(const IngestSession&) = delete;

  // Where the stream comes from ("ipv4:10.0.0.7:51234"), for messages and
  // `fabricdiag nodes`.
  void set_peer(std::string peer) { peer_ = std::move(peer); }
  // With mutual TLS: the names the client certificate was issued for (its
  // CN and DNS subject alternative names). The Hello's node must be one of
  // them, so a node can only speak for itself.
  void set_peer_identities(std::vector<std::string> identities) {
    identities_ = std::move(identities);
    check_identity_ = true;
  }

  Reply Handle(const v1::AgentMessage& message);

  bool rejected() const { return rejected_; }
  bool handed_off() const { return handed_off_; }
  // The node of the Hello ("" before it).
  const std::string& node() const { return node_name_; }

 private:
  Reply OnHello(const v1::Hello& hello);
  Reply OnSchema(const v1::Schema& schema);
  Reply OnReport(const v1::Report& report);
  Reply OnInventory(const v1::Inventory& inventory);
  Reply Reject(RejectReason reason, absl::string_view message);
  // Asks placement_ about `node` when its epoch moved since the last ask
  // (always at the Hello); the Handoff reply when the node should go.
  std::optional<Reply> MaybeHandOff(absl::string_view node, bool hello);
  // `reply` with the weights MaybeHandOff found changed, when it acks.
  Reply WithWeights(Reply reply);
  // Counts this stream out of IngestCounters::open_streams once.
  void Close();

  SeriesStore* const store_;
  IngestCounters* const counters_;
  IngestPlacement& placement_;
  NodeFactsIntake facts_;
  uint64_t placement_epoch_ = 0;      // of the last ask
  std::shared_ptr<NodeSeries> node_;  // set by the Hello
  std::string node_name_;
  std::string boot_id_;
  std::vector<std::string> collectors_;  // the Hello's list
  CollectorWeights sent_weights_;        // the last sent to the agent
  std::optional<CollectorWeights> pending_weights_;  // to send next
  bool open_ = false;                                // counted in open_streams
  bool from_bridge_ = false;  // the Hello came from the gNMI bridge
  uint64_t stream_id_;        // unique per session, for the node's stream owner
  std::string peer_;
  std::vector<std::string> identities_;
  bool check_identity_ = false;
  bool rejected_ = false;
  bool handed_off_ = false;
  // schema_id -> series slot per schema index.
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> schemas_;
};

}  // namespace fabricdiag::collector
