// Ids every layer names: nodes, threads of a node, pages, locks, barriers
// and intervals.
//
// Nodes are numbered 0..N-1; threads are numbered per node (0..T-1 on each
// node). Intervals of a node are numbered from 1; interval 0 means "none".
#pragma once

#include <cstdint>

namespace svm {

using NodeId = uint32_t;
using ThreadId = uint32_t;   // local to a node
using PageId = uint64_t;     // index of a page in the global region
using LockId = uint64_t;     // identity of a lock (the runtime uses its address)
using BarrierId = uint64_t;  // identity of a barrier
using IntervalId = uint32_t;

inline constexpr NodeId kNoNode = UINT32_MAX;
inline constexpr PageId kNoPage = UINT64_MAX;

}  // namespace svm
