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

// Requester -> home: send me page `page` once its version covers `need`,
// and with it the next count - 1 pages `stride` apart (a page run: those go
// as they are, the requester drops a copy too old for it).
struct FetchRequest {
  PageId page = 0;
  VectorTime need;
  uint32_t count = 1;
  uint32_t stride = 1;  // 1..kMaxPageStride
  // Bit i: the home counts the requester's copy of the run's page i as a
  // holder (its SharedMark), which the requester gives back with
  // MarksDropped. Unset for pages it holds a counted mark of already.
  uint64_t mark = 0;
  friend bool operator==(const FetchRequest&, const FetchRequest&) = default;
};

// Home -> requester: pages page, page + stride, ... (a run, possibly shorter
// than asked), each page's version (flush timestamp) and their bytes, one
// page after another.
struct PageReply {
  PageId page = 0;
  std::vector<VectorTime> versions;
  std::vector<uint8_t> data;
  uint32_t stride = 1;  // 1..kMaxPageStride
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

// Node -> its parent in the barrier tree (Node::BarrierParent): `arrivals`
// threads of the sender's subtree reached `barrier`, which `total` threads in
// all must reach. `known` merges the known vectors of the nodes they came
// from (each after closing its interval), `floor` is the least of those
// (what a release down that subtree must start from);
// `notices` are the intervals the parent may lack. `nodes`: how many nodes
// report their own threads for the first time this episode.
struct BarrierArrive {
  BarrierId barrier = 0;
  uint32_t arrivals = 0;
  uint32_t total = 0;
  VectorTime known;
  std::vector<WriteNotice> notices;
  VectorTime floor;
  uint32_t nodes = 0;
  friend bool operator==(const BarrierArrive&, const BarrierArrive&) = default;
};

// Parent -> child in the barrier tree: everyone arrived. `time` merges all
// arrivals; `notices` are those the child's subtree lacked (from its
// arrivals' floor). `collect` allows dropping notices up to `time`.
// `serial`: the barrier's serial thread is in the child's subtree (one
// thread of each episode gets it).
struct BarrierRelease {
  BarrierId barrier = 0;
  VectorTime time;
  bool collect = false;
  std::vector<WriteNotice> notices;
  bool serial = false;
  // The child's arrival messages this release covers, counted from its
  // first (a node cannot tell a late arrival from an early one of the next
  // episode; the root can). The root's own release: its episode.
  uint64_t covers = 0;
  friend bool operator==(const BarrierRelease&, const BarrierRelease&) = default;
};

// Node -> manager (first-touch placement): make me the home of `page` unless
// it has one, and then of up to `ahead` unclaimed pages after it in the
// manager's block (the claimant sweeps through fresh memory).
struct HomeClaim {
  PageId page = 0;
  uint32_t ahead = 0;
  friend bool operator==(const HomeClaim&, const HomeClaim&) = default;
};

// Manager -> node: `page`'s home is `home`, and so is the home of the `same`
// pages after it (for page runs). When that is the manager itself, a
// PageReply with its copy follows (the claimant's fetch, saved a round trip).
struct HomeReply {
  PageId page = 0;
  NodeId home = 0;
  uint32_t same = 0;
  friend bool operator==(const HomeReply&, const HomeReply&) = default;
};

// Runtime messages: threads across nodes and frees of another node's blocks.
// They share this codec but are served by the runtime (libsvm), not by the
// protocol Node. Thread handles, start routines and arguments are plain
// 64-bit values: every node maps the program at the same addresses.

// Creator -> target node: run start(arg) as thread `thread`.
struct SpawnRequest {
  uint64_t thread = 0;
  uint64_t start = 0;
  uint64_t arg = 0;
  friend bool operator==(const SpawnRequest&, const SpawnRequest&) = default;
};

// Target -> creator: `thread` started (error 0) or pthread_create's error.
struct SpawnReply {
  uint64_t thread = 0;
  uint32_t error = 0;
  friend bool operator==(const SpawnReply&, const SpawnReply&) = default;
};

// Joiner -> the thread's node: tell me when `thread` ends.
struct JoinRequest {
  uint64_t thread = 0;
  friend bool operator==(const JoinRequest&, const JoinRequest&) = default;
};

// The thread's node -> joiner: `thread` ended with `value`.
struct JoinReply {
  uint64_t thread = 0;
  uint64_t value = 0;
  friend bool operator==(const JoinReply&, const JoinReply&) = default;
};

// -> the thread's node: nobody will join `thread`.
struct DetachRequest {
  uint64_t thread = 0;
  friend bool operator==(const DetachRequest&, const DetachRequest&) = default;
};

// -> the owner of the blocks: free them (blocks of its heap slice that
// another node freed).
struct RemoteFree {
  std::vector<uint64_t> blocks;
  friend bool operator==(const RemoteFree&, const RemoteFree&) = default;
};

// -> a node with threads waiting on the condition variable or semaphore at
// `object`, which changed: they should look again.
struct SyncWake {
  uint64_t object = 0;
  friend bool operator==(const SyncWake&, const SyncWake&) = default;
};

// Requester -> home (base, dw): its copies of `pages`, counted at the home
// by FetchRequest.mark, are gone (unmapped). From rf on a remote
// fetch-and-add does this (Host::DropMarks).
struct MarksDropped {
  std::vector<PageId> pages;
  friend bool operator==(const MarksDropped&, const MarksDropped&) = default;
};

using Message = std::variant<FetchRequest, PageReply, DiffMessage, LockRequest, LockGrant,
                             BarrierArrive, BarrierRelease, HomeClaim, HomeReply, SpawnRequest,
                             SpawnReply, JoinRequest, JoinReply, DetachRequest, RemoteFree,
                             SyncWake, MarksDropped>;

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
  kSpawnRequest,
  kSpawnReply,
  kJoinRequest,
  kJoinReply,
  kDetachRequest,
  kRemoteFree,
  kSyncWake,
  kMarksDropped,  // the Node's, though after the runtime's: codes stay as they were
};
inline constexpr uint16_t kMessageTypeCount = 17;

// Whether messages of type t are the protocol Node's (the rest are the
// runtime's). REQUIRES: IsValid(t).
inline bool IsProtocolMessage(MessageType t) {
  return t <= MessageType::kHomeReply || t == MessageType::kMarksDropped;
}

bool IsValid(MessageType t);
const char* ToString(MessageType t);
inline MessageType TypeOf(const Message& m) {
  return static_cast<MessageType>(m.index() + 1);
}

}  // namespace svm
