// Private to node*.cc: the per-page, per-lock and per-barrier state of a Node.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "protocol/node.h"
#include "util/small_vector.h"

namespace svm {

// State of one page at this node. Pages never touched here have no entry.
//
// Invariants:
//  1. state == kWrite iff the page is in Node::dirty_ (written in the open
//     interval), or it is an untracked home page (in Node::untracked_).
//     Away from the home, twin != nullptr iff state == kWrite (scan_writes:
//     iff state != kInvalid, except for a copy just dropped by a notice
//     until Node::CheckDropped looked at it).
//  2. stale implies state == kWrite: a dirty copy that a notice outdated.
//  3. At the home, state is kRead (write-protected: the next write is noted)
//     or kWrite; kInvalid only until first touched.
//  4. prot is what the application view was last set to.
//  5. At the home, !tracked and state != kInvalid iff p is in
//     Node::untracked_: no other node held a copy when the home last looked
//     (SharedMark), so its writes need no notice and it stays read-write
//     (unless unmapped while diffs are due). tracked goes back to false when
//     intervals close with p written and no copy elsewhere
//     (Node::CanUntrack).
//  6. watched implies state == kRead away from the home, and prot ==
//     kNone: the last page of a run fetched ahead, not touched here yet.
//  7. Away from the home: marked iff this node's mark of p is counted at
//     the home (or on its way there); a copy gone (kInvalid, unmapped, no
//     fetch out) at one acquire that applies notices and still gone at the
//     next gives it back then (Node::DropMark, Node::GiveBackMarks).
struct Node::Page {
  enum class State : uint8_t { kInvalid, kRead, kWrite };

  explicit Page(size_t nodes) : need(nodes) {}

  NodeId home = kNoNode;
  State state = State::kInvalid;
  Prot prot = Prot::kNone;
  bool stale = false;      // kWrite copy outdated by a notice: safe fetch due
  bool fetching = false;   // a FetchRequest (rf: a ReadPage) is out
  bool claiming = false;   // a HomeClaim is out
  bool tracked = false;    // at the home: writes are noted (invariant 5)
  bool marked = false;     // away from it: the home knows we hold a copy
  bool watched = false;    // fetched ahead, not touched yet (invariant 6)
  bool dropped = false;    // scan_writes: invalidated, twin not compared yet
  bool framed = false;     // a fetched copy was installed here: its frame exists
  bool mark_due = false;   // in Node::marks_due_
  uint8_t unshared = 0;    // at the home, tracked: intervals in a row it closed
                           // written with no copy elsewhere (Node::CanUntrack)
  uint8_t sweep = 0;       // away from the home: pages the last sweep that
                           // began here read (Node::RunFrom), 0 if unknown
  uint32_t run = 0;        // pages the fetch out from here asked for,
  uint16_t stride = 1;     // this far apart
  Ahead strided = Ahead::kNo;  // the fetch out is one along a stride
  VectorTime need;         // version a copy must have (from applied notices)
  uint8_t* twin = nullptr;  // a page of Node::twin_slabs_ (MakeTwin, DropTwin)
  // Local threads blocked on this page; rarely more than one or two, and
  // a page's first fault must not allocate.
  SmallVector<ThreadId, 2> waiters;

  struct PendingFetch {
    NodeId from;
    VectorTime need;
    uint32_t count = 1;  // the page run asked for,
    uint32_t stride = 1;  // its pages this far apart
  };
  std::vector<PendingFetch> pending;  // at the home: fetches awaiting diffs
};

// State of one lock at this node: the token (if here), local users and
// waiters, and, at the lock's home, the tail of the distributed queue.
//
// Invariants:
//  1. held implies have_token.
//  2. have_token && !held implies no waiters and no remote_next: an idle
//     token is handed on at once.
//  3. requested implies !have_token.
//  4. grant implies requested: the grant arrived, its notices have not.
//  5. nil (AtNic): the same, with the queue's tail in a word at the home
//     that requesters swap by remote CAS (Host::NicLockTail): no handler
//     runs at the home, and an idle token stays with its last holder.
struct Node::Lock {
  bool have_token = false;
  bool held = false;
  ThreadId holder = 0;
  bool requested = false;
  bool asked = false;  // nil: the swap completed and the request is out
  VectorTime timestamp;  // view of the last releaser
  std::optional<VectorTime> grant;  // granted timestamp awaiting deposits
  // Local hand-offs made while a remote successor waited (kMaxLocalBypasses).
  uint32_t local_run = 0;
  // Local takes of the idle token left before MayBeWanted stops saying so
  // (kPoliteTakes once it arrives from another node).
  uint8_t polite = 0;
  // The oldest local waiter, woken to take the idle token, until its next
  // Acquire; and the takes by other threads since it was first woken
  // (kMaxBarges).
  std::optional<ThreadId> woken;
  uint32_t barges = 0;
  // The oldest waiter changed, or the token came or went: nobody is woken
  // for it, and nobody has barged in yet.
  void NewTurn() {
    woken.reset();
    barges = 0;
  }

  struct Waiter {
    ThreadId thread;
    uint64_t seq;
  };
  std::deque<Waiter> waiters;
  struct RemoteWaiter {
    LockRequest request;
    uint64_t seq;
  };
  std::optional<RemoteWaiter> remote_next;

  NodeId tail = kNoNode;  // at the lock's home: the last requester (not nil)
  NodeId last_successor = kNoNode;  // nil: the tail as far as this node knows
};

// A barrier as seen by this node's threads.
struct Node::BarrierState {
  uint32_t arrived = 0;     // local threads of the current episode not yet reported
  uint32_t total = 0;       // the job's threads that reach it
  uint64_t episode = 0;     // episodes released so far
  std::vector<std::optional<uint64_t>> waiting;  // per thread: episode awaited
  std::optional<ThreadId> serial;  // the serial thread of the last episode
  // kGather: the threads of the last released episode (whom the next one
  // gathers), and whether this episode's batch is still held back.
  std::vector<uint8_t> took_part;
  bool begun = false;
  bool gathering = false;

  // The subtree's episode (node_barrier.cc): parts[0] is this node's own
  // threads, parts[1 + i] child i's subtree. It starts over when the release
  // passes down, before this node's own threads may be released (dw on: a
  // release waits for deposits), since the children may arrive again then.
  struct Part {
    bool reported = false;  // this episode
    bool last = false;      // in the last episode: the batch waits for it
    VectorTime floor;       // the least of what it reported this episode
  };
  std::vector<Part> parts;
  uint32_t subtree_total = 0;  // 0 until the first arrival of the episode
  uint32_t count = 0;          // arrivals this episode (the root releases at the total)
  uint32_t nodes = 0;          // nodes whose own threads arrived this episode
  VectorTime time;             // merged known vectors of this episode's arrivals
  std::optional<size_t> first;  // the part that reported first: the serial thread's
  // Arrivals not yet sent to the parent. The first batch of an episode waits
  // for every part of the last; what comes after it goes at once.
  uint32_t held = 0;
  uint32_t held_nodes = 0;
  VectorTime held_known, held_floor;
  bool sent = false;
  bool holding = false;  // in holding_
};

}  // namespace svm
