// SimNetwork: the simulated interconnect of N nodes.
//
// One FIFO queue per ordered pair (from, to) of events: messages for the
// target's Node, and the one-sided operations of modes dw..nil (and their
// completions), which the target's NIC serves. Events of one pair are
// delivered in the order posted, as the protocol assumes; which pair delivers
// next is the scheduler's choice. A pair may be marked delayed: the scheduler
// then delivers it only when nothing else can happen (to build schedules such
// as "the diff reaches the home after the fetch"). A pair whose oldest event
// is slow counts as delayed while that event waits (a remote read retried
// because the version was too old: it backs off until something changed).
// A node's own NIC is the pair (n, n), for one-sided operations only.
//
// The non-empty pairs are kept in a vector in a deterministic order (it
// depends only on the sequence of Send and Pop calls), so a seeded choice
// among them replays exactly. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "protocol/interval_log.h"
#include "protocol/types.h"
#include "protocol/vector_time.h"

namespace svm::sim {

struct Pair {
  NodeId from = 0;
  NodeId to = 0;
};

enum class EventKind : uint8_t {
  kMessage,    // bytes: an encoded message for the target's Node
  kRead,       // rf: READ page's version and frame at the target
  kReadDone,   // completion: page, time = version, bytes = frame
  kWriteDiff,  // dd: bytes = runs into page's frame, then version[from] = interval
  kDeposit,    // dw: notice into the target's deposit area for `from`
  kLockSwap,     // nil: swap lock's tail word at the target for `from`
  kLockSwapped,  // completion: lock, node = what the word named before
  kHomeClaim,    // rf..nil, first touch: READ the target's home words of
                 // (page, page + count), then CAS page's from 0 to `from`
  kHomeClaimed,  // completion: page, word = its old value, words = those read
  kDropMarks,    // rf..nil: the target's SharedMark of each of `words` (pages) - 1
};
const char* ToString(EventKind k);

struct Event {
  EventKind kind = EventKind::kMessage;
  std::vector<uint8_t> bytes;
  PageId page = 0;
  LockId lock = 0;
  IntervalId interval = 0;
  VectorTime time;
  WriteNotice notice;
  bool slow = false;
  uint32_t count = 1;  // kRead: pages from `page` on; kHomeClaim: words,
  uint32_t ahead = 0;  // kHomeClaim: words after `page` claimed too
  uint32_t stride = 1;  // kRead, kReadDone: this far apart
  uint64_t mark = 0;   // kRead: bit i set: the home's SharedMark of page i first
  uint8_t* landing = nullptr;  // kRead, kReadDone: where the reader's Node has the pages land
  std::vector<VectorTime> times;  // kReadDone: each page's version
  NodeId node = 0;    // kLockSwapped
  uint64_t word = 0;  // kHomeClaimed
  std::vector<uint64_t> words;  // kHomeClaimed
};

class SimNetwork {
 public:
  explicit SimNetwork(NodeId nodes);

  NodeId nodes() const { return nodes_; }

  // A message. REQUIRES: from, to < nodes(), from != to.
  void Send(NodeId from, NodeId to, std::vector<uint8_t> bytes);
  // Any event. REQUIRES: from, to < nodes(); from != to for a message.
  void Post(NodeId from, NodeId to, Event e);
  void SetDelayed(NodeId from, NodeId to, bool delayed);

  // Non-empty pairs that are not delayed / that are delayed.
  size_t ready_count() const { return ready_.size(); }
  size_t delayed_count() const { return delayed_.size(); }
  Pair ready(size_t i) const { return Decode(ready_[i]); }
  Pair delayed(size_t i) const { return Decode(delayed_[i]); }

  // Removes and returns the oldest event of the pair. REQUIRES: non-empty.
  Event Pop(Pair p);

  size_t in_flight() const { return in_flight_; }
  size_t queued(Pair p) const { return queues_[Index(p)].size(); }
  uint64_t sent() const { return sent_; }

 private:
  size_t Index(Pair p) const { return static_cast<size_t>(p.from) * nodes_ + p.to; }
  Pair Decode(size_t i) const {
    return Pair{static_cast<NodeId>(i / nodes_), static_cast<NodeId>(i % nodes_)};
  }
  bool HeldBack(size_t i) const { return is_delayed_[i] || queues_[i].front().slow; }
  void Link(size_t i);
  void Unlink(size_t i);

  NodeId nodes_;
  std::vector<std::deque<Event>> queues_;
  std::vector<uint8_t> is_delayed_;
  std::vector<uint8_t> listed_delayed_;  // by pair: which list it is linked in
  // Non-empty pairs; slot_[i] is the position of pair i in its list.
  std::vector<size_t> ready_;
  std::vector<size_t> delayed_;
  std::vector<size_t> slot_;
  size_t in_flight_ = 0;
  uint64_t sent_ = 0;
};

}  // namespace svm::sim
