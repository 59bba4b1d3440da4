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
  // Whether the token came from another node (not a home's fresh one), and
  // the local takes since (MayBeWanted).
  bool from_remote = false;
  uint32_t takes_here = 0;
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
  uint32_t arrived = 0;     // local threads arrived and not yet reported
  uint32_t total = 0;       // the job's threads that reach it
  // Per thread: arrived and not yet returned, with the batch that carries
  // its arrival (0 until reported; at the root, the episode); and whether a
  // release covered that batch.
  std::vector<std::optional<uint64_t>> waiting;
  std::vector<uint8_t> released;
  std::optional<ThreadId> serial;  // the serial thread of the last episode
  // kGather: the threads of the last release (whom the next episode
  // gathers), and whether this episode's batch is still held back.
  std::vector<uint8_t> took_part;
  bool begun = false;
  bool gathering = false;

  // parts[0] is this node's own threads, parts[1 + i] child i's subtree.
  struct Part {
    bool reported = false;  // since the subtree last caught up (the root: this episode)
    bool last = false;      // in the window before: the batch waits for it
    // A child's arrival messages (batches): how many came, how many the
    // releases sent down covered, and the floors of those not yet covered.
    uint64_t batches = 0;
    uint64_t released = 0;
    std::deque<VectorTime> floors;
  };
  std::vector<Part> parts;
  uint32_t subtree_total = 0;  // 0 until the first arrival of the episode
  // The root: this episode's arrivals (it releases at the total), nodes
  // whose own threads arrived, and their merged known vectors.
  uint32_t count = 0;
  uint32_t nodes = 0;
  VectorTime time;
  // Batches this node sent its parent, numbered from 1, and how many a
  // release covered: a node cannot tell an arrival that is late for the
  // episode its batch went in from one early for the next (its thread
  // learnt elsewhere that the episode ended), so it sends both at once and
  // wakes and releases only what the release names (at the root: the
  // episodes it completed). Each batch keeps how many of each child's
  // batches it passed on and how many own threads it carried.
  struct Batch {
    uint64_t seq = 0;
    std::vector<uint64_t> child_batches;
    uint32_t own = 0;
  };
  uint64_t sent_batches = 0;
  uint64_t covered = 0;
  std::deque<Batch> unreleased;
  bool awaiting() const { return sent_batches > covered; }
  // Arrivals not yet sent to the parent. The first batch after the subtree
  // caught up waits for every part of the window before; what comes while a
  // batch awaits its release goes at once.
  uint32_t held = 0;
  uint32_t held_nodes = 0;
  uint32_t held_own = 0;
  VectorTime held_known, held_floor;
  bool holding = false;  // in holding_
};

}  // namespace svm
