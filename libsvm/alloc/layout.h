// Layout: where everything lives in the global region. A pure function of
// (base, size, nodes), so every node computes the same answer and can find
// the owner and the size class of any block by arithmetic alone.
//
//   region  [base, base + size)
//   slice i [base + i*slice_size, base + (i+1)*slice_size)   node i is home
//     small area: kNumClasses sub-areas of 2^class_shift bytes each, class c
//                 at slice + c << class_shift, blocks of ClassSize(c) packed
//                 from its start
//     large area: the rest of the slice, page-granular blocks, each preceded
//                 by a header page whose last 16 bytes hold a LargeHeader
//
// Invariants: base and slice_size are page-aligned; 12 <= class_shift <= 32;
// small_size = kNumClasses << class_shift <= slice_size / 4.
#pragma once

#include <cstddef>
#include <cstdint>

#include "libsvm/alloc/size_class.h"

namespace svm::alloc {

struct Layout {
  uintptr_t base = 0;
  size_t size = 0;
  uint32_t nodes = 0;
  size_t slice_size = 0;
  uint32_t class_shift = 0;
  size_t small_size = 0;

  // Fills *out; returns nullptr on success, else why the region is unusable
  // (misaligned base, zero nodes, slices too small for the small area).
  static const char* Compute(uintptr_t base, size_t size, uint32_t nodes, Layout* out);

  bool Contains(uintptr_t a) const { return a - base < uint64_t(nodes) * slice_size; }
  // REQUIRES: Contains(a).
  uint32_t Owner(uintptr_t a) const { return uint32_t((a - base) / slice_size); }
  uintptr_t SliceBase(uint32_t node) const { return base + uintptr_t(node) * slice_size; }
  uintptr_t LargeBase(uint32_t node) const { return SliceBase(node) + small_size; }
  uintptr_t SliceEnd(uint32_t node) const { return SliceBase(node) + slice_size; }
  uintptr_t ClassBase(uint32_t node, uint32_t c) const {
    return SliceBase(node) + (uintptr_t(c) << class_shift);
  }
  size_t ClassSpan() const { return size_t(1) << class_shift; }
};

// Written once, by the owner, when a large block is handed out; read by any
// node (UsableSize, Realloc). Sits in the last bytes of the header page.
struct LargeHeader {
  uint64_t check;   // kLargeMagic ^ block address
  uint64_t usable;  // bytes, a page multiple
};
inline constexpr uint64_t kLargeMagic = 0x5356'4d4c'4152'4745ull;  // "SVMLARGE"

inline LargeHeader* HeaderOf(uintptr_t block) {
  return reinterpret_cast<LargeHeader*>(block - sizeof(LargeHeader));
}

}  // namespace svm::alloc
