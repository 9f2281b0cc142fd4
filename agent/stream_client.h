// Streams encoded reports from the agent to the collector.
//
// One long-lived bidirectional gRPC stream (fabricdiag.v1.Ingest/Stream)
// carries Hello, Inventory, Schemas and Reports up and Acks down. Reports
// wait in a bounded ReportBuffer until the collector acknowledges them; after
// a reconnect the client sends Hello again, then replays every
// unacknowledged report, each preceded (once per stream) by the schema it
// references. So a collector restart or a network outage shorter than the
// buffer leaves no gap; the collector deduplicates by (node, boot_id, seq).
//
// Threads: Enqueue() is called by the sampling thread and never touches the
// network (it only takes a short lock and appends to the buffer). A
// background thread owns the connection: it writes, and a per-stream reader
// thread handles Acks. Broken streams are retried with exponential backoff
// and jitter. Stop() cancels the RPC in flight, so it returns promptly even
// when the collector hangs or is unreachable.
//
// Failover: with several collectors (`targets`), the client ranks them for
// its node by rendezvous hashing (client/collector_list.h), weighted as the
// collectors say (Ack.weights), starts at the first of its ranking and,
// whenever a stream ends (failed connect, stream error, keepalive timeout,
// reject), tries the first of its ranking that has not failed since a
// stream last worked (client::CollectorChoice), after the same backoff. So
// the agents of a dead collector spread over all the others in proportion
// to their weights. The new collector gets Hello and then the
// whole unacknowledged buffer, as after any reconnect, so a failover loses
// nothing the buffer holds. The client stays on the collector that works:
// it does not go back on its own when its first choice returns; a cluster's
// collectors know when that one is live again and hand the agent back.
//
// Handoff: a collector may ask the agent to stream elsewhere (a Handoff
// message): to give it back to the live collector it prefers (the Hello
// carries the agent's list, so the collector ranks it as the agent does),
// or, from an analysis leader, to lighten its share. The client moves to
// the Handoff's target when that is an entry of its list, else to the first
// other one of its ranking, after the shortest backoff, and replays its buffer
// there as after any failover.
//
//   StreamClient::Options opts;
//   opts.targets = {"collector-0:9811", "collector-1:9811"};
//   opts.node = "gpu-003";
//   opts.tls.ca = "/etc/fabricdiag/ca.pem";
//   ASSIGN_OR_RETURN(std::unique_ptr<StreamClient> client,
//                    StreamClient::Create(opts, clock));
//   client->Start();
//   ... every interval: client->Enqueue(encoder.Encode(snap, rates).value());
//   client->Stop();
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/report_buffer.h"
#include "agent/report_encoder.h"
#include "client/collector_list.h"
#include "client/tls.h"
#include "common/clock.h"
#include "proto/ingest.grpc.pb.h"

namespace fabricdiag::agent {

class StreamClient {
 public:
  struct Options {
    // "host:port" of each collector, as written in --collector: ranked for
    // `node` (see the overview) and sent in the Hello when there are two or
    // more.
    std::vector<std::string> targets;
    // Not read: the client ranks `targets` itself. Still checked to be in
    // range for callers that fill it.
    size_t first_target = 0;
    std::string node;                            // --node
    std::string agent_version;                   // reported in Hello
    absl::Duration interval = absl::Seconds(1);  // reported in Hello
    // TLS files and the expected server name, under the rules of
    // client/tls.h (TLS with a CA; a client certificate needs one).
    client::TlsFlags tls;
    // Sent as `authorization: Bearer <token>` on every stream when not
    // empty (a collector started with --ingest_token_file needs it).
    std::string token;
    absl::Duration backoff_initial = absl::Milliseconds(250);
    absl::Duration backoff_max = absl::Seconds(30);
    // Unacknowledged reports kept for replay (see ReportBuffer).
    ReportBuffer::Limits buffer;
    // Identifies this agent process to the collector; random when empty.
    std::string boot_id;
  };

  struct Stats {
    bool connected = false;       // the collector has answered on this stream
    uint64_t buffered = 0;        // reports not yet acknowledged
    uint64_t buffered_bytes = 0;  // their memory
    uint64_t dropped = 0;         // oldest reports dropped: buffer full
    uint64_t invalid = 0;         // reports refused: unknown schema
    uint64_t sent = 0;            // report messages written (replays count)
    uint64_t acked = 0;           // reports acknowledged by the collector
    uint64_t last_acked_seq = 0;
    uint64_t reconnects = 0;  // streams that ended and were retried
    // The collector the current (or next) stream goes to.
    std::string target;
    // Times the client moved to another collector of `targets` after a
    // stream ended (never with a single target).
    uint64_t failovers = 0;
    // Times a collector handed this agent to another one (a Handoff).
    uint64_t handoffs = 0;
    // Monotonic nanos (of the injected Clock) of the last Ack; 0 = never.
    int64_t last_ack_monotonic_nanos = 0;
    std::string last_error;  // why the last stream ended; "" = none yet
  };

  // Checks `options` without connecting: targets (non-empty, no empty
  // entry) and node set, first_target in range, backoff
  // sane, and the TLS flags as client::LoadTls checks them.
  static absl::Status Validate(const Options& options);

  // Validates `options` and loads the TLS files (read once; rotating
  // certificates needs a restart). `clock` must outlive the client.
  static absl::StatusOr<std::unique_ptr<StreamClient>> Create(
      Options options, const Clock& clock);

  StreamClient(const StreamClient&) = delete;
  StreamClient& operator=(const StreamClient&) = delete;
  ~StreamClient();  // Stop()s

  // Starts the connection thread. Call at most once.
  void Start();

  // Cancels the stream in flight and joins the thread. Buffered reports that
  // were not acknowledged are lost. Idempotent.
  void Stop();

  // Numbers `report` (seq = previous + 1) and queues it; when the buffer is
  // full the oldest report is dropped. Never blocks on the network.
  // A report that references a schema this client was never given is
  // refused and counted in Stats::invalid.
  void Enqueue(EncodedReport report);

  Stats stats() const;
  const std::string& boot_id() const { return boot_id_; }

 private:
  StreamClient(Options options, const Clock& clock, client::TlsConfig tls);

  using IngestStream =
      grpc::ClientReaderWriter<v1::AgentMessage, v1::CollectorMessage>;
  // What one stream has been sent so far. A new stream starts from zero and
  // so replays everything still unacknowledged.
  struct StreamCursor {
    uint64_t seq = 0;  // of the last report written
    std::set<uint64_t> sent_schemas;
    uint64_t sent_inventory = 0;  // inventory_version_ written
  };
  // The next writes of one stream, taken under the lock.
  struct PendingWrites {
    std::shared_ptr<const v1::Inventory> inventory;  // null: unchanged
    std::vector<ReportBuffer::ReportPtr> batch;
    // For batch[i], its schema when this stream has not had it yet.
    std::vector<std::shared_ptr<const v1::Schema>> schema_first;
  };

  void Run();
  // One stream to `target` from connect to end; returns why it ended. Sets
  // `*got_response` when the collector answered at least once.
  absl::Status RunStream(const std::string& target, bool* got_response);
  // A stub on a fresh channel to `target`.
  std::unique_ptr<v1::Ingest::Stub> NewStub(const std::string& target) const;
  // Makes `context` the active one; returns the new stream's id, or
  // kCancelled when stopping.
  absl::StatusOr<uint64_t> BeginStream(grpc::ClientContext* context);
  // Writes the Hello, then inventories, schemas and reports as they come,
  // until stopping, a reject, the end of the stream or a failed write.
  void WriteUntilEnd(IngestStream* stream);
  // Waits for something to write; false when the stream should end.
  bool NextWrites(StreamCursor* cursor, PendingWrites* out);
  // false when a write failed.
  bool WritePending(IngestStream* stream, const PendingWrites& pending,
                    v1::AgentMessage* msg, StreamCursor* cursor);
  // Cancels the stream if we end it, joins the reader, returns why it ended.
  absl::Status EndStream(const std::string& target,
                         grpc::ClientContext* context, std::thread* reader,
                         IngestStream* stream, bool* got_response);
  // Reads CollectorMessages until the stream ends.
  void ReadLoop(IngestStream* stream, uint64_t stream_id);
  // Forgets schemas no buffered report references (keeps the latest).
  void PruneSchemasLocked();
  absl::Duration BackoffDelay(int attempt);

  const Options options_;
  const Clock& clock_;
  const client::TlsConfig tls_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const std::string boot_id_;
  ReportBuffer buffer_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  bool stopping_ = false;
  grpc::ClientContext* active_context_ = nullptr;  // to cancel on Stop
  uint64_t stream_id_ = 0;                         // increments per stream
  bool stream_ended_ = false;  // the reader of stream_id_ saw the end
  std::string reject_reason_;  // set by a Reject on the current stream
  // Set by a Handoff on the current stream ("(no reason given)" if empty).
  std::string handoff_reason_;
  std::string handoff_target_;  // the Handoff's target ("" = none given)
  // Which of options_.targets this node streams to, in its ranking
  // weighted as the collectors say (Ack.weights).
  client::CollectorChoice choice_;
  uint64_t next_seq_ = 1;
  uint64_t latest_schema_id_ = 0;
  std::map<uint64_t, std::shared_ptr<const v1::Schema>> schemas_;
  std::shared_ptr<const v1::Inventory> inventory_;
  uint64_t inventory_version_ = 0;
  Stats stats_;  // buffered/dropped filled in by stats()

  std::thread thread_;
};

}  // namespace fabricdiag::agent
