#include "collector/ingest/inbound_message.h"

#include <algorithm>

namespace fabricdiag::collector {
namespace {

// A Schema takes a few dozen of the largest blocks.
constexpr size_t kStartBlockBytes = 4 << 10;
constexpr size_t kMaxBlockBytes = 64 << 10;

}  // namespace

InboundMessage::InboundMessage() { Restart(kStartBlockBytes); }

void InboundMessage::Restart(size_t first_block) {
  google::protobuf::ArenaOptions options;
  options.start_block_size = first_block;
  options.max_block_size = std::max(first_block, kMaxBlockBytes);
  // The message goes with the old arena's blocks: everything it held was
  // allocated there.
  arena_.reset();
  arena_.emplace(options);
  message_ =
      google::protobuf::Arena::CreateMessage<v1::AgentMessage>(&arena_.value());
}

void InboundMessage::Handled() {
  const bool report_only =
      message_->msg_case() == v1::AgentMessage::MSG_NOT_SET;
  const size_t used = arena_->SpaceUsed();
  if (!report_only || used > kKeptBytes) {
    Restart(kStartBlockBytes);
    return;
  }
  // The first report on a fresh arena spreads its arrays over doubling
  // blocks, most of them too small for an array: it holds three times what
  // it uses. Read again into one block of its size, the next reports (as
  // large, give or take) reuse it as they are.
  const size_t slack = used / 8 + kSlackBytes;
  if (arena_->SpaceAllocated() > used + slack) Restart(used + slack);
}

}  // namespace fabricdiag::collector
