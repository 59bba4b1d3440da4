// Layout: where everything lives in the global region. A pure function of
// (base, size, nodes), so every node computes the same answer.
//
//   region       [base, end)                      end = base + size, page-aligned
//   small area   [SmallBase(i), SmallBase(i) + small_size) for node i: kNumClasses
//                sub-areas of 2^class_shift bytes each, class c at
//                + c << class_shift, blocks of ClassSize(c) packed from its
//                start. Node i owns every block in it: the owner and the class
//                of a small block follow from its address alone.
//   large area   [large_base, end), the job's: any node claims chunks of it
//                (a job-wide break, HeapOptions::claim) and carves them into
//                page-granular blocks, each preceded by a header page whose
//                last bytes hold a LargeHeader naming the block's owner.
//
// Invariants: base, large_base, end and chunk are page-aligned;
// 12 <= class_shift <= 32; nodes * small_size <= (end - base) / 4.
#pragma once

#include <cstddef>
#include <cstdint>

#include "libsvm/alloc/size_class.h"

namespace svm::alloc {

struct Layout {
  uintptr_t base = 0;
  uintptr_t end = 0;
  uint32_t nodes = 0;
  uint32_t class_shift = 0;
  size_t small_size = 0;  // one node's small area
  uintptr_t large_base = 0;
  size_t chunk = 0;  // what a node claims of the large area at a time (at least)

  // Fills *out; returns nullptr on success, else why the region is unusable
  // (misaligned base, zero nodes, too small for the small areas).
  static const char* Compute(uintptr_t base, size_t size, uint32_t nodes, Layout* out);

  size_t size() const { return end - base; }
  bool Contains(uintptr_t a) const { return a - base < end - base; }
  // REQUIRES: Contains(a) for both.
  bool InSmall(uintptr_t a) const { return a - base < large_base - base; }
  uint32_t SmallOwner(uintptr_t a) const { return uint32_t((a - base) / small_size); }
  uintptr_t SmallBase(uint32_t node) const { return base + uintptr_t(node) * small_size; }
  uintptr_t ClassBase(uint32_t node, uint32_t c) const {
    return SmallBase(node) + (uintptr_t(c) << class_shift);
  }
  size_t ClassSpan() const { return size_t(1) << class_shift; }
  size_t LargeSize() const { return end - large_base; }
};

// Written once, by the owner, when a large block is handed out (usable again
// on an in-place resize); read by any node (free, UsableSize, Realloc). Sits
// in the last bytes of the header page.
struct LargeHeader {
  uint64_t check;   // kLargeMagic ^ block address
  uint64_t usable;  // bytes, a page multiple
  uint64_t owner;   // node whose heap hands the block out and takes it back
};
inline constexpr uint64_t kLargeMagic = 0x5356'4d4c'4152'4745ull;  // "SVMLARGE"

inline LargeHeader* HeaderOf(uintptr_t block) {
  return reinterpret_cast<LargeHeader*>(block - sizeof(LargeHeader));
}

}  // namespace svm::alloc
