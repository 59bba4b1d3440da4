#include "protocol/messages.h"

namespace svm {

static_assert(std::variant_size_v<Message> == kMessageTypeCount,
              "every Message alternative needs a MessageType code");

bool IsValid(MessageType t) {
  auto code = static_cast<uint16_t>(t);
  return code >= 1 && code <= kMessageTypeCount;
}

const char* ToString(MessageType t) {
  switch (t) {
    case MessageType::kFetchRequest: return "fetch-request";
    case MessageType::kPageReply: return "page-reply";
    case MessageType::kDiff: return "diff";
    case MessageType::kLockRequest: return "lock-request";
    case MessageType::kLockGrant: return "lock-grant";
    case MessageType::kBarrierArrive: return "barrier-arrive";
    case MessageType::kBarrierRelease: return "barrier-release";
    case MessageType::kHomeClaim: return "home-claim";
    case MessageType::kHomeReply: return "home-reply";
    case MessageType::kSpawnRequest: return "spawn-request";
    case MessageType::kSpawnReply: return "spawn-reply";
    case MessageType::kJoinRequest: return "join-request";
    case MessageType::kJoinReply: return "join-reply";
    case MessageType::kDetachRequest: return "detach-request";
    case MessageType::kRemoteFree: return "remote-free";
    case MessageType::kSyncWake: return "sync-wake";
    case MessageType::kMarksDropped: return "marks-dropped";
  }
  return "?";
}

}  // namespace svm
