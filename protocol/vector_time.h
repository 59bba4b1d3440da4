// VectorTime: one interval number per node.
//
// Entry m is the newest interval of node m that the holder has seen (for a
// node's "known" vector: has write notices for; for a thread's view: has
// applied). Comparisons are the usual partial order of vector clocks.
// A value type; not thread-safe. Jobs of up to kInline nodes keep the
// entries in the object: a page's, a message's or a fetch's vector time
// costs no heap allocation (they were most of the fault path's).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "protocol/types.h"
#include "util/small_vector.h"

namespace svm {

class VectorTime {
 public:
  static constexpr size_t kInline = 8;

  VectorTime() = default;
  explicit VectorTime(size_t nodes) : t_(nodes, 0) {}
  explicit VectorTime(const std::vector<IntervalId>& t) : t_(t.begin(), t.end()) {}

  size_t size() const { return t_.size(); }
  IntervalId operator[](NodeId n) const { return t_[n]; }
  IntervalId& operator[](NodeId n) { return t_[n]; }
  std::span<const IntervalId> entries() const { return {t_.data(), t_.size()}; }
  // `nodes` entries, all zero, in the storage this one has (no allocation
  // when it held as many before).
  void Reset(size_t nodes) { t_.assign(nodes, 0); }

  // REQUIRES: size() == o.size() for all binary operations below.
  // Every entry <= the other's.
  bool Covers(const VectorTime& o) const;            // o <= *this
  bool HappenedBefore(const VectorTime& o) const;    // *this < o
  bool ConcurrentWith(const VectorTime& o) const;
  void Merge(const VectorTime& o);                   // entrywise max
  void Meet(const VectorTime& o);                    // entrywise min
  friend bool operator==(const VectorTime&, const VectorTime&) = default;

  std::string ToString() const;

 private:
  SmallVector<IntervalId, kInline> t_;
};

}  // namespace svm
