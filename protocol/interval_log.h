// IntervalLog: the bins of HLRC-SMP.
//
// For every node m, the write notices of m's intervals that this node holds:
// interval i of m lists the pages m wrote during i. Intervals of one node are
// held contiguously, from floor()[m]+1 to known()[m]; those at or below the
// floor were collected as garbage (every node had applied them).
//
// Invariants:
//  1. floor()[m] <= known()[m] for every m.
//  2. Every interval in (floor()[m], known()[m]] is held, in order.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <vector>

#include "util/status.h"
#include "protocol/types.h"
#include "protocol/vector_time.h"

namespace svm {

struct WriteNotice {
  NodeId node = 0;
  IntervalId interval = 0;
  std::vector<PageId> pages;
  friend bool operator==(const WriteNotice&, const WriteNotice&) = default;
};

class IntervalLog {
 public:
  explicit IntervalLog(size_t nodes);

  const VectorTime& known() const { return known_; }
  const VectorTime& floor() const { return floor_; }
  // Intervals currently held, over all nodes.
  size_t held() const { return held_; }

  // Records interval n.interval. An interval already known is ignored; one
  // that would leave a gap is an error (and nothing is recorded), as are
  // interval 0 and a node >= the number of nodes.
  Status Add(WriteNotice notice);

  // Appends to *out the notices held beyond `have`, oldest first per node.
  // REQUIRES: have covers floor() (else older notices are gone).
  void Missing(const VectorTime& have, std::vector<WriteNotice>* out) const;

  // Calls fn(node, interval, page) for every page of the intervals in
  // (from, to]. REQUIRES: from covers floor(); known() covers to.
  void ForEachPage(const VectorTime& from, const VectorTime& to,
                   const std::function<void(NodeId, IntervalId, PageId)>& fn) const;

  // Drops every interval at or below upto (clamped to known()).
  void CollectGarbage(const VectorTime& upto);

 private:
  VectorTime known_;
  VectorTime floor_;
  std::vector<std::deque<std::vector<PageId>>> bins_;  // bins_[m][i - floor_[m] - 1]
  size_t held_ = 0;
};

}  // namespace svm
