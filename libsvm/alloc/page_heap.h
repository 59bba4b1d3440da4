// PageHeap: the large-block allocator of one node, on the chunks of the
// large area the node claimed (Add).
//
// Blocks are page-aligned runs of pages, each preceded by one header page
// (see LargeHeader in layout.h); the header is the only byte of the region
// the PageHeap writes, once per allocation. Free extents, live blocks and
// the ranges ever handed out are tracked in private memory (MetaArena), so
// freeing writes nothing shared, and pages never handed out are never
// touched: an 8 GiB block costs one written page until the program touches
// it.
//
// Thread-safety: all methods take the internal lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "libsvm/alloc/meta_arena.h"
#include "libsvm/alloc/os.h"

namespace svm::alloc {

class PageHeap {
 public:
  // Blocks' headers name `owner`. mark_ends: see HeapOptions::mark_block_ends.
  explicit PageHeap(uint32_t owner, bool mark_ends = false);
  PageHeap(const PageHeap&) = delete;
  PageHeap& operator=(const PageHeap&) = delete;

  // Hands [start, start + len) over, never used before; page-aligned. A
  // chunk that continues a free extent joins it.
  void Add(uintptr_t start, size_t len);

  // A block of at least `bytes`, aligned to `align` (a power of two; page
  // alignment at least), header written. *fresh is set when the block's
  // pages were never handed out before (still zero if the region started
  // zeroed). Returns nullptr when no extent fits.
  void* Allocate(size_t bytes, size_t align, bool* fresh);

  // Returns the block's usable size, or 0 if p is not a live block here.
  size_t Free(uintptr_t p);
  // Usable size of a live block, or 0.
  size_t LiveSize(uintptr_t p);

  // Grows or shrinks a live block in place to at least `bytes`; false when
  // the pages after it are not free (the caller then moves the block).
  bool Resize(uintptr_t p, size_t bytes);

  // Bytes of the added chunks that are free (for tests and stats).
  size_t FreeBytes();
  size_t LiveBlocks();

 private:
  using Pair = std::pair<const uintptr_t, size_t>;
  using ByAddr = std::map<uintptr_t, size_t, std::less<>, MetaAllocator<Pair>>;
  using BySize = std::set<std::pair<size_t, uintptr_t>, std::less<>, MetaAllocator<std::pair<size_t, uintptr_t>>>;

  void InsertFree(uintptr_t start, size_t len);  // coalesces; REQUIRES mu_
  void EraseFree(ByAddr::iterator it);           // REQUIRES mu_
  void* Carve(uintptr_t start, size_t len, size_t bytes, size_t align, bool* fresh);  // REQUIRES mu_
  // Whether any of [a, b) was ever handed out; marks it so. REQUIRES mu_.
  bool Used(uintptr_t a, uintptr_t b) const;
  void MarkUsed(uintptr_t a, uintptr_t b);

  FutexLock mu_;
  const uint32_t owner_;
  const bool mark_ends_;
  MetaArena arena_;
  ByAddr free_by_addr_;  // start -> length
  BySize free_by_size_;  // (length, start)
  ByAddr live_;          // block address -> usable bytes
  ByAddr used_;          // start -> end of the ranges ever handed out, coalesced
};

}  // namespace svm::alloc
