// The AgentMessage an agent stream reads into, on an arena of the stream's.
//
// A stream opens with a Hello, a Schema and an Inventory, then sends
// Reports. The Schema is the large one: an 8-NIC node's has ~1,300 series
// of three strings each, and parsed on the heap it costs an allocation per
// series and per string, freed again when the next message replaces it.
// When a fleet reconnects at once (a collector restart, a NATS failover)
// the collector parses thousands of them in a few seconds. Here they are
// parsed on the stream's arena, whose blocks go back in one piece once
// the schema has been mapped; a Report's arrays stay between reports, as
// on the heap (Clear() keeps their capacity).
//
//   InboundMessage in;
//   stream.Read(in.get(), tag);  // gRPC parses into the arena
//   ... session.Handle(*in.get()) ...
//   in.Handled();                // before the next read
//
// Not thread-safe: one per stream, used between its reads.
#pragma once

#include <cstddef>
#include <optional>

#include "google/protobuf/arena.h"
#include "proto/ingest.pb.h"

namespace fabricdiag::collector {

class InboundMessage {
 public:
  InboundMessage();
  InboundMessage(const InboundMessage&) = delete;
  InboundMessage& operator=(const InboundMessage&) = delete;

  // The message to read into; owned by the arena. The pointer changes
  // when Handled() starts afresh.
  v1::AgentMessage* get() { return message_; }

  // Called once the message read has been handled and nothing refers to
  // it any more: after anything but a Report (or once the arena holds more
  // than kKeptBytes), the arena gives its blocks back and the next read
  // starts on an empty one. A Report's arena that holds much more than it
  // uses (its first, spread over growing blocks) starts again with one
  // block of the Report's size.
  void Handled();

  // What the arena's messages use now (for tests), and the memory its
  // blocks hold (the collector's fabricdiag_ingest_read_buffer_bytes).
  size_t arena_bytes() const { return arena_->SpaceUsed(); }
  size_t held_bytes() const { return arena_->SpaceAllocated(); }

  // The most an arena keeps between reads: a few of the largest Reports'
  // arrays (an 8-NIC node's are ~20 KiB).
  static constexpr size_t kKeptBytes = 256 << 10;
  // What a Report's arena may hold beyond what it uses: this plus 1/8.
  static constexpr size_t kSlackBytes = 4 << 10;

 private:
  // A fresh arena whose first block is `first_block` bytes, and the
  // message on it.
  void Restart(size_t first_block);

  std::optional<google::protobuf::Arena> arena_;
  v1::AgentMessage* message_ = nullptr;
};

}  // namespace fabricdiag::collector
