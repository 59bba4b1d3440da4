// SimNetwork: the simulated interconnect of N nodes.
//
// One FIFO queue per ordered pair (from, to): messages of one pair are
// delivered in the order sent, as the protocol assumes; which pair delivers
// next is the scheduler's choice. A pair may be marked delayed: the scheduler
// then delivers it only when nothing else can happen (to build schedules such
// as "the diff reaches the home after the fetch").
//
// The non-empty pairs are kept in a vector in a deterministic order (it
// depends only on the sequence of Send and Pop calls), so a seeded choice
// among them replays exactly. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "protocol/types.h"

namespace svm::sim {

struct Pair {
  NodeId from = 0;
  NodeId to = 0;
};

class SimNetwork {
 public:
  explicit SimNetwork(NodeId nodes);

  NodeId nodes() const { return nodes_; }

  // REQUIRES: from, to < nodes(), from != to.
  void Send(NodeId from, NodeId to, std::vector<uint8_t> bytes);
  void SetDelayed(NodeId from, NodeId to, bool delayed);

  // Non-empty pairs that are not delayed / that are delayed.
  size_t ready_count() const { return ready_.size(); }
  size_t delayed_count() const { return delayed_.size(); }
  Pair ready(size_t i) const { return Decode(ready_[i]); }
  Pair delayed(size_t i) const { return Decode(delayed_[i]); }

  // Removes and returns the oldest message of the pair. REQUIRES: non-empty.
  std::vector<uint8_t> Pop(Pair p);

  size_t in_flight() const { return in_flight_; }
  size_t queued(Pair p) const { return queues_[Index(p)].size(); }
  uint64_t sent() const { return sent_; }

 private:
  size_t Index(Pair p) const { return static_cast<size_t>(p.from) * nodes_ + p.to; }
  Pair Decode(size_t i) const {
    return Pair{static_cast<NodeId>(i / nodes_), static_cast<NodeId>(i % nodes_)};
  }
  void Link(size_t i);
  void Unlink(size_t i);

  NodeId nodes_;
  std::vector<std::deque<std::vector<uint8_t>>> queues_;
  std::vector<uint8_t> is_delayed_;
  // Non-empty pairs; slot_[i] is the position of pair i in its list.
  std::vector<size_t> ready_;
  std::vector<size_t> delayed_;
  std::vector<size_t> slot_;
  size_t in_flight_ = 0;
  uint64_t sent_ = 0;
};

}  // namespace svm::sim
