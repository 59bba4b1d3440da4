// Heap: the malloc family of one node on the job's global region (see
// layout.h for where things live).
//
// One Heap per node process. Small blocks (<= 64 KiB) come from per-thread
// caches refilled in batches from per-class central pools on the node's own
// small area; large blocks are page-granular (PageHeap), carved from chunks
// of the job-wide large area that this node claimed (HeapOptions::claim), so
// that any node can take up to the whole of it. All allocator metadata is
// private to the node: malloc and free write nothing in the shared region
// except the header page of a large block, when it is handed out.
//
// Any node can ask about any block: the owner and the size class of a small
// block follow from its address, a large block's owner and size from its
// header. Free() of another node's block goes to the runtime through
// `remote_free`; the owner later calls FreeLocal().
//
// Before the runtime is up, malloc & co go to the bootstrap heap
// (Heap::Bootstrap(), a constant-initialised object that forwards to the
// bootstrap arena); a real Heap recognises bootstrap pointers forever after.
//
// Thread-safety: every method is thread-safe. Fast paths touch only the
// calling thread's cache; central pools take one lock per size class, the
// large blocks one lock.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "libsvm/alloc/layout.h"
#include "libsvm/alloc/os.h"
#include "libsvm/alloc/size_class.h"

namespace svm::alloc {

class PageHeap;

struct HeapOptions {
  uintptr_t base = 0;  // the global region [base, base + size)
  size_t size = 0;
  uint32_t nodes = 1;
  uint32_t self = 0;  // this node
  // Called by Free(p) for a block of another node (with p checked for shape
  // only; the owner validates it in FreeLocal). Must not block on the
  // allocator. Null: such frees are fatal.
  void (*remote_free)(void* ctx, uint32_t owner, void* p) = nullptr;
  void* remote_free_ctx = nullptr;
  // Claims `bytes` of the large area (Layout::LargeSize() = `limit` bytes)
  // for this node, job-wide: sets *offset, from the area's start, and
  // returns true; false, claiming nothing, when fewer bytes are left. Every
  // node's hook must draw on one break. Must not allocate in this heap.
  // Null: a break private to this Heap (one node only).
  bool (*claim)(void* ctx, uint64_t bytes, uint64_t limit, uint64_t* offset) = nullptr;
  void* claim_ctx = nullptr;
  // Pages of the region never handed out read as zero, so calloc of a fresh
  // large block needs no memset (and touches no page).
  bool region_zeroed = true;
  // Under first touch on several nodes a sweep through fresh memory claims
  // the pages after it too, up to the first page with a home, and may so
  // take pages past the end of its block that another node's next block
  // gets (ocean: 24 pages, diffed every interval). Set, the heap reads the
  // page after a large block as it hands the block out, when that page is
  // where its next block's header goes: one more page, homed here.
  bool mark_block_ends = false;
};

inline constexpr uint32_t kNoOwner = UINT32_MAX;

namespace internal {

// A thread's cache for one heap: a stack of free blocks per size class.
struct Bin {
  uint32_t count;
  uint32_t cap;
  void** slots;
};
inline constexpr uint32_t kMaxCached = 128;
struct ThreadCache {
  Bin bins[kNumClasses];
  ThreadCache* next;  // in the heap's list
  pthread_t owner;
  bool in_use;
  void* storage[kNumClasses * kMaxCached];
};

// The calling thread's current heap and cache. Heap ids are never reused and
// start at 1, so the zero initial value matches no heap: a new thread's first
// call falls into the slow path, which sets this up.
struct TlsCache {
  uint64_t heap_id;
  ThreadCache* tc;
};
inline thread_local TlsCache t_cache __attribute__((tls_model("initial-exec"))) = {0, nullptr};

// Lemire's divisibility test: n % d == 0  <=>  n * M <= M - 1 (mod 2^64),
// M = 2^64 / d + 1, for 32-bit n.
constexpr uint64_t DivMagic(uint64_t d) { return UINT64_MAX / d + 1; }
inline constexpr auto kDivMagic = [] {
  struct { uint64_t m[kNumClasses]; } t{};
  for (uint32_t c = 0; c < kNumClasses; ++c) t.m[c] = DivMagic(ClassSize(c));
  return t;
}();

}  // namespace internal

class Heap {
 public:
  // The bootstrap heap: every call forwards to the bootstrap arena.
  constexpr Heap() = default;
  // REQUIRES: CheckOptions(o) == nullptr (otherwise fatal).
  explicit Heap(const HeapOptions& o);
  ~Heap();
  Heap(const Heap&) = delete;
  Heap& operator=(const Heap&) = delete;

  // Why these options are unusable, or nullptr.
  static const char* CheckOptions(const HeapOptions& o);
  // The process-wide bootstrap heap (constant-initialised, never destroyed).
  static Heap& Bootstrap();

  // Fast path: the thread's cache, one pop. nullptr when out of memory.
  void* Malloc(size_t n) {
    if (__builtin_expect(internal::t_cache.heap_id == id_ && n <= kMaxSmall, 1)) {
      internal::Bin& b = internal::t_cache.tc->bins[SizeToClass(n)];
      if (__builtin_expect(b.count != 0, 1)) return b.slots[--b.count];
    }
    return MallocSlow(n);
  }

  // Fast path: a well-formed block of this node's small area, one push.
  // Anything else (null, large, another node's, bootstrap, invalid) goes to
  // FreeSlow.
  void Free(void* p) {
    const uintptr_t off = reinterpret_cast<uintptr_t>(p) - small_base_;
    if (__builtin_expect(off < small_size_ && internal::t_cache.heap_id == id_, 1)) {
      const uint32_t c = uint32_t(off >> class_shift_);
      const uint64_t m = internal::kDivMagic.m[c];
      internal::Bin& b = internal::t_cache.tc->bins[c];
      if (__builtin_expect(uint64_t(uint32_t(off & span_mask_)) * m <= m - 1 && b.count < b.cap, 1)) {
        b.slots[b.count++] = p;
        return;
      }
    }
    FreeSlow(p);
  }

  // Frees a block of this node on behalf of another node (the runtime's
  // handler for remote_free batches). Invalid pointers are fatal.
  void FreeLocal(void* p);

  void* Calloc(size_t n, size_t size);
  // realloc semantics of glibc: Realloc(nullptr, n) = Malloc(n);
  // Realloc(p, 0) frees p and returns nullptr; on failure p is untouched.
  void* Realloc(void* p, size_t n);
  // align: a power of two, else nullptr (the wrapper reports EINVAL). The
  // result is aligned to max(align, 16).
  void* AlignedAlloc(size_t align, size_t size);
  // posix_memalign: 0, EINVAL (align not a power-of-two multiple of
  // sizeof(void*)) or ENOMEM; *out untouched on error.
  int PosixMemalign(void** out, size_t align, size_t size);
  // memalign (align rounded up to a power of two), valloc, pvalloc.
  void* Memalign(size_t align, size_t size);
  void* Valloc(size_t size) { return AlignedAlloc(kPage, size); }
  void* Pvalloc(size_t size);

  // Usable bytes of a block of any node (or the bootstrap arena); >= the
  // size asked for. 0 for nullptr; invalid pointers are fatal.
  size_t UsableSize(const void* p);
  // Whether p lies in the global region.
  bool Contains(const void* p) const { return layout_.Contains(reinterpret_cast<uintptr_t>(p)); }
  // Node that owns the block at p; kNoOwner outside the region or when p is
  // no large block (read from its header: a page of the shared region).
  uint32_t Owner(const void* p) const;

  const Layout& layout() const { return layout_; }
  uint32_t self() const { return self_; }

  // Test hooks.
  size_t TEST_LargeLiveBlocks() const;
  // Returns the calling thread's cached blocks to the central pools.
  void TEST_FlushThreadCache();

 private:
  struct alignas(64) Central {
    FutexLock mu;
    uintptr_t bump = 0;  // [bump, end): never handed out
    uintptr_t end = 0;
    void** stack = nullptr;  // free blocks; private memory, capacity `cap`
    size_t count = 0;
    size_t cap = 0;
  };
  static constexpr uint64_t kBootstrapId = UINT64_MAX;

  bool is_bootstrap() const { return id_ == kBootstrapId; }

  [[gnu::noinline]] void* MallocSlow(size_t n);
  [[gnu::noinline]] void FreeSlow(void* p);
  // Small block of class c, or of a larger class when c is exhausted, or a
  // large block as the last resort. align: what the caller needs (<= kPage).
  void* MallocClass(uint32_t c, size_t n, size_t align);
  void* LargeAlloc(size_t n, size_t align, bool* fresh);
  // Claims a chunk of the large area big enough for such a block; false
  // when the area has no room left.
  bool ClaimFor(size_t n, size_t align);
  // The large block's owner from its header, or kNoOwner.
  uint32_t LargeOwner(uintptr_t a) const;
  void FreeOwn(uintptr_t a, const char* what);
  // Size class of a well-formed small block, kNumClasses for one of the
  // large area's shape; fatal (`what`) when p cannot be a block.
  uint32_t ClassOf(uintptr_t a, const char* what) const;

  internal::ThreadCache* CacheForThread();
  void ReleaseThreadCache(pthread_t thread);
  static void ThreadExit(void*);
  bool Refill(internal::ThreadCache* tc, uint32_t c);
  void Flush(internal::Bin& b, uint32_t c, uint32_t keep);
  void* TakeOne(uint32_t c);
  void PushCentral(Central& k, uint32_t c, void* p);  // REQUIRES k.mu

  // Fast-path fields first.
  uint64_t id_ = kBootstrapId;
  uintptr_t small_base_ = 0;
  size_t small_size_ = 0;
  uint32_t class_shift_ = 0;
  uint64_t span_mask_ = 0;

  Layout layout_;
  uint32_t self_ = 0;
  HeapOptions opts_;
  PageHeap* large_ = nullptr;
  std::atomic<uint64_t> break_{0};  // the large area claimed, without a claim hook
  FutexLock caches_mu_;
  internal::ThreadCache* caches_ = nullptr;  // GUARDED_BY(caches_mu_)
  Central central_[kNumClasses];
};

}  // namespace svm::alloc
