// The protocol's messages, as values. wire.h turns them into bytes and back;
// doc/wire.md describes the byte layout.
//
// Every message travels from one node to one other node over a reliable
// channel that is FIFO per pair of nodes; nothing else is assumed about
// ordering.
#pragma once

#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/interval_log.h"
#include "protocol/types.h"
#include "protocol/vector_time.h"

namespace svm {

// Requester -> home: send me page `page` once its version covers `need`.
struct FetchRequest {
  PageId page = 0;
  VectorTime need;
  friend bool operator==(const FetchRequest&, const FetchRequest&) = default;
};

// Home -> requester: the page's bytes and the version (flush timestamp) they
// reflect.
struct PageReply {
  PageId page = 0;
  VectorTime version;
  std::vector<uint8_t> data;
  friend bool operator==(const PageReply&, const PageReply&) = default;
};

// Writer -> home: the writer's changes to `page` during `interval` (an encoded
// diff, see diff.h). Applying it advances the page's version entry of the
// writer to `interval`.
struct DiffMessage {
  PageId page = 0;
  IntervalId interval = 0;
  std::vector<uint8_t> runs;
  friend bool operator==(const DiffMessage&, const DiffMessage&) = default;
};

// Requester -> lock home (forwarded = false), then lock home -> last owner
// (forwarded = true): `requester` wants `lock`; it holds the notices up to
// `known`.
struct LockRequest {
  LockId lock = 0;
  NodeId requester = 0;
  bool forwarded = false;
  VectorTime known;
  friend bool operator==(const LockRequest&, const LockRequest&) = default;
};

// Owner -> requester: the lock, the releaser's view (`timestamp`) and the
// write notices the requester lacked.
struct LockGrant {
  LockId lock = 0;
  VectorTime timestamp;
  std::vector<WriteNotice> notices;
  friend bool operator==(const LockGrant&, const LockGrant&) = default;
};

// Node -> barrier master: `arrivals` threads of the sender reached `barrier`,
// which `total` threads in all must reach. `known` is the sender's known
// vector after closing its interval; `notices` are its own intervals the
// master may lack. `global` says every thread of the job takes part.
struct BarrierArrive {
  BarrierId barrier = 0;
  uint32_t arrivals = 0;
  uint32_t total = 0;
  bool global = false;
  VectorTime known;
  std::vector<WriteNotice> notices;
  friend bool operator==(const BarrierArrive&, const BarrierArrive&) = default;
};

// Master -> node: everyone arrived. `time` merges all arrivals; `notices` are
// those the node lacked. `collect` allows dropping notices up to `time`.
struct BarrierRelease {
  BarrierId barrier = 0;
  VectorTime time;
  bool collect = false;
  std::vector<WriteNotice> notices;
  friend bool operator==(const BarrierRelease&, const BarrierRelease&) = default;
};

// Node -> manager (first-touch placement): make me the home of `page` unless
// it has one.
struct HomeClaim {
  PageId page = 0;
  friend bool operator==(const HomeClaim&, const HomeClaim&) = default;
};

// Manager -> node: `page`'s home is `home`.
struct HomeReply {
  PageId page = 0;
  NodeId home = 0;
  friend bool operator==(const HomeReply&, const HomeReply&) = default;
};

using Message = std::variant<FetchRequest, PageReply, DiffMessage, LockRequest, LockGrant,
                             BarrierArrive, BarrierRelease, HomeClaim, HomeReply>;

// Wire type codes; the variant index order is the code order, starting at 1.
enum class MessageType : uint16_t {
  kFetchRequest = 1,
  kPageReply,
  kDiff,
  kLockRequest,
  kLockGrant,
  kBarrierArrive,
  kBarrierRelease,
  kHomeClaim,
  kHomeReply,
};
inline constexpr uint16_t kMessageTypeCount = 9;

bool IsValid(MessageType t);
const char* ToString(MessageType t);
inline MessageType TypeOf(const Message& m) {
  return static_cast<MessageType>(m.index() + 1);
}

}  // namespace svm
