#include "collector/ingest/inbound_message.h"

namespace fabricdiag::collector {
namespace {

google::protobuf::ArenaOptions StreamArenaOptions() {
  google::protobuf::ArenaOptions options;
  // A Report's arrays fit the first few blocks; a Schema takes a few
  // dozen of the largest.
  options.start_block_size = 4 << 10;
  options.max_block_size = 64 << 10;
  return options;
}

}  // namespace

InboundMessage::InboundMessage()
    : arena_(StreamArenaOptions()),
      message_(
          google::protobuf::Arena::CreateMessage<v1::AgentMessage>(&arena_)) {}

void InboundMessage::Handled() {
  const bool report_only =
      message_->msg_case() == v1::AgentMessage::MSG_NOT_SET;
  if (report_only && arena_.SpaceUsed() <= kKeptBytes) return;
  // The message goes with the arena's blocks: everything it held was
  // allocated there.
  arena_.Reset();
  message_ = google::protobuf::Arena::CreateMessage<v1::AgentMessage>(&arena_);
}

}  // namespace fabricdiag::collector
