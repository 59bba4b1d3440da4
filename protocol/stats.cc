#include "protocol/stats.h"

#include <cassert>

namespace svm {

const char* ToString(HandlerKind k) {
  switch (k) {
    case HandlerKind::kFetch: return "fetch";
    case HandlerKind::kDiff: return "diff";
    case HandlerKind::kLock: return "lock";
    case HandlerKind::kNotice: return "notice";
    case HandlerKind::kBarrier: return "barrier";
    case HandlerKind::kDirectory: return "directory";
    case HandlerKind::kRuntime: return "runtime";
  }
  return "?";
}

// A handler invocation is the receiving node serving a message asynchronously
// (the work later modes move off the application's critical path), counted
// by what the message is about rather than by whether it is a request or a
// reply:
//   fetch      FetchRequest (home serves a page), PageReply (requester
//              installs it)
//   diff       DiffMessage (home applies it)
//   lock       LockRequest (home forwards, owner grants), LockGrant
//   barrier    BarrierArrive (master counts), BarrierRelease
//   directory  HomeClaim (manager assigns a home), HomeReply
//   runtime    thread spawn/join/detach and remote frees (libsvm's)
// No message type maps to kNotice: notices arrive inside lock grants and
// barrier releases (base) or are deposited by remote WRITE (dw and later,
// counted as notices_taken, with no handler).
// REQUIRES: IsValid(t); an invalid type counts as kFetch in release builds.
HandlerKind HandlerKindOf(MessageType t) {
  switch (t) {
    case MessageType::kFetchRequest:
    case MessageType::kPageReply:
    case MessageType::kMarksDropped: return HandlerKind::kFetch;
    case MessageType::kDiff: return HandlerKind::kDiff;
    case MessageType::kLockRequest:
    case MessageType::kLockGrant: return HandlerKind::kLock;
    case MessageType::kBarrierArrive:
    case MessageType::kBarrierRelease: return HandlerKind::kBarrier;
    case MessageType::kHomeClaim:
    case MessageType::kHomeReply: return HandlerKind::kDirectory;
    case MessageType::kSpawnRequest:
    case MessageType::kSpawnReply:
    case MessageType::kJoinRequest:
    case MessageType::kJoinReply:
    case MessageType::kDetachRequest:
    case MessageType::kRemoteFree:
    case MessageType::kSyncWake: return HandlerKind::kRuntime;
  }
  assert(false && "HandlerKindOf: invalid MessageType");
  return HandlerKind::kFetch;
}

}  // namespace svm
