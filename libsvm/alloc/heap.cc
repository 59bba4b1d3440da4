#include "libsvm/alloc/heap.h"

#include <cerrno>
#include <cstring>
#include <new>

#include "libsvm/alloc/bootstrap.h"
#include "libsvm/alloc/page_heap.h"

// glibc's own, under its reserved name: inside libsvm, pthread_key_create is
// the interposed one, which makes a job-wide key (in the shared heap, with
// destructors run by svm) when a program thread asks, and a glibc key when a
// runtime thread does; the allocator's key must not depend on who allocates
// first.
extern "C" int __pthread_key_create(pthread_key_t* key, void (*destructor)(void*));

namespace svm::alloc {

using internal::Bin;
using internal::ThreadCache;

namespace {

// ---- Process-wide state: heap ids, live heaps, the thread-exit key. ----

std::atomic<uint64_t> g_next_id{1};

constexpr int kMaxLiveHeaps = 64;
FutexLock g_registry_mu;
Heap* g_registry[kMaxLiveHeaps];  // GUARDED_BY(g_registry_mu)

std::atomic<int> g_key_state{0};  // 0 none, 1 being created, 2 ready
pthread_key_t g_key;

thread_local bool t_key_set __attribute__((tls_model("initial-exec"))) = false;
thread_local bool t_exiting __attribute__((tls_model("initial-exec"))) = false;

uint32_t CacheCap(uint32_t c) {
  size_t n = (64 * 1024) / ClassSize(c);
  if (n < 4) n = 4;
  if (n > internal::kMaxCached) n = internal::kMaxCached;
  return uint32_t(n);
}

bool IsPow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

union BootstrapHolder {
  Heap heap;
  constexpr BootstrapHolder() : heap() {}
  ~BootstrapHolder() {}  // never destroyed: frees may come after exit()
};
constinit BootstrapHolder g_bootstrap;

}  // namespace

Heap& Heap::Bootstrap() { return g_bootstrap.heap; }

// ---- Construction. ----

const char* Heap::CheckOptions(const HeapOptions& o) {
  Layout l;
  if (const char* why = Layout::Compute(o.base, o.size, o.nodes, &l)) return why;
  if (o.self >= o.nodes) return "self >= nodes";
  if (o.nodes > 1 && o.claim == nullptr) return "several nodes and no claim hook";
  return nullptr;
}

Heap::Heap(const HeapOptions& o) : opts_(o) {
  if (const char* why = CheckOptions(o)) Fatal(why);
  Layout::Compute(o.base, o.size, o.nodes, &layout_);
  self_ = o.self;
  small_base_ = layout_.SmallBase(self_);
  small_size_ = layout_.small_size;
  class_shift_ = layout_.class_shift;
  span_mask_ = layout_.ClassSpan() - 1;
  for (uint32_t c = 0; c < kNumClasses; ++c) {
    Central& k = central_[c];
    k.bump = layout_.ClassBase(self_, c);
    k.cap = layout_.ClassSpan() / ClassSize(c);
    k.end = k.bump + k.cap * ClassSize(c);
  }
  void* mem = MapPrivate(AlignUp(sizeof(PageHeap), kPage));
  if (mem == nullptr) Fatal("out of private memory for allocator metadata");
  large_ = new (mem) PageHeap(self_, o.mark_block_ends);
  id_ = g_next_id.fetch_add(1, std::memory_order_relaxed);
  LockGuard g(g_registry_mu);
  for (Heap*& slot : g_registry) {
    if (slot == nullptr) {
      slot = this;
      return;
    }
  }
  Fatal("more than 64 live heaps in one process");
}

Heap::~Heap() {
  if (is_bootstrap()) return;
  {
    LockGuard g(g_registry_mu);
    for (Heap*& slot : g_registry)
      if (slot == this) slot = nullptr;
  }
  if (internal::t_cache.heap_id == id_) internal::t_cache = {0, nullptr};
  while (caches_ != nullptr) {
    ThreadCache* next = caches_->next;
    UnmapPrivate(caches_, AlignUp(sizeof(ThreadCache), kPage));
    caches_ = next;
  }
  for (Central& k : central_) UnmapPrivate(k.stack, AlignUp(k.cap * sizeof(void*), kPage));
  large_->~PageHeap();
  UnmapPrivate(large_, AlignUp(sizeof(PageHeap), kPage));
}

// ---- Thread caches. ----

// The slow path of every thread's first call (and of a thread alternating
// between heaps, which only tests do). Returns nullptr while the thread is
// being torn down: callers then use the central pools directly.
ThreadCache* Heap::CacheForThread() {
  if (t_exiting) return nullptr;
  if (!t_key_set) {
    // Set first: pthread_setspecific may allocate (keys >= 32), and that
    // allocation comes back here.
    t_key_set = true;
    int s = g_key_state.load(std::memory_order_acquire);
    if (s != 2) {
      s = 0;
      if (g_key_state.compare_exchange_strong(s, 1, std::memory_order_acq_rel)) {
        if (__pthread_key_create(&g_key, &Heap::ThreadExit) != 0) Fatal("pthread_key_create failed");
        g_key_state.store(2, std::memory_order_release);
      } else {
        while (g_key_state.load(std::memory_order_acquire) != 2) sched_yield();
      }
    }
    pthread_setspecific(g_key, reinterpret_cast<void*>(1));
  }
  const pthread_t me = pthread_self();
  ThreadCache* tc = nullptr;
  {
    LockGuard g(caches_mu_);
    ThreadCache* spare = nullptr;
    for (ThreadCache* x = caches_; x != nullptr; x = x->next) {
      if (x->in_use && pthread_equal(x->owner, me)) {
        tc = x;
        break;
      }
      if (!x->in_use && spare == nullptr) spare = x;
    }
    if (tc == nullptr) {
      tc = spare;
      if (tc == nullptr) {
        tc = static_cast<ThreadCache*>(MapPrivate(AlignUp(sizeof(ThreadCache), kPage)));
        if (tc == nullptr) return nullptr;  // run without a cache
        for (uint32_t c = 0; c < kNumClasses; ++c)
          tc->bins[c] = Bin{0, CacheCap(c), tc->storage + c * internal::kMaxCached};
        tc->next = caches_;
        caches_ = tc;
      }
      tc->in_use = true;
      tc->owner = me;
    }
  }
  internal::t_cache = {id_, tc};
  return tc;
}

void Heap::ReleaseThreadCache(pthread_t thread) {
  ThreadCache* tc = nullptr;
  {
    LockGuard g(caches_mu_);
    for (ThreadCache* x = caches_; x != nullptr; x = x->next)
      if (x->in_use && pthread_equal(x->owner, thread)) tc = x;
  }
  if (tc == nullptr) return;
  for (uint32_t c = 0; c < kNumClasses; ++c) Flush(tc->bins[c], c, 0);
  LockGuard g(caches_mu_);
  tc->in_use = false;
}

void Heap::ThreadExit(void*) {
  t_exiting = true;
  internal::t_cache = {0, nullptr};
  const pthread_t me = pthread_self();
  LockGuard g(g_registry_mu);
  for (Heap* h : g_registry)
    if (h != nullptr) h->ReleaseThreadCache(me);
}

void Heap::TEST_FlushThreadCache() {
  if (internal::t_cache.heap_id != id_) return;
  ThreadCache* tc = internal::t_cache.tc;
  for (uint32_t c = 0; c < kNumClasses; ++c) Flush(tc->bins[c], c, 0);
}

// ---- Central pools. ----

// Moves up to half a bin's worth of blocks into the bin: recycled ones if
// the pool has any, else fresh ones from the class's never-used tail (not
// touched). Preferring recycled blocks keeps the node's footprint, and the
// pages other nodes see, small.
bool Heap::Refill(ThreadCache* tc, uint32_t c) {
  Bin& b = tc->bins[c];
  const uint32_t want = b.cap / 2;
  const size_t size = ClassSize(c);
  Central& k = central_[c];
  LockGuard g(k.mu);
  if (k.count != 0) {
    while (b.count < want && k.count != 0) b.slots[b.count++] = k.stack[--k.count];
  } else {
    while (b.count < want && k.bump < k.end) {
      b.slots[b.count++] = reinterpret_cast<void*>(k.bump);
      k.bump += size;
    }
  }
  return b.count != 0;
}

void Heap::PushCentral(Central& k, uint32_t c, void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (a >= k.bump) Fatal("free(): invalid pointer (never allocated)", p);
  if (k.stack == nullptr) {
    k.stack = static_cast<void**>(MapPrivate(AlignUp(k.cap * sizeof(void*), kPage)));
    if (k.stack == nullptr) Fatal("out of private memory for allocator metadata");
  }
  if (k.count == k.cap) Fatal("free(): double free detected in size class pool", p);
  (void)c;
  k.stack[k.count++] = p;
}

// Returns all but `keep` of the bin's blocks (the oldest) to the pool.
void Heap::Flush(Bin& b, uint32_t c, uint32_t keep) {
  if (b.count <= keep) return;
  const uint32_t n = b.count - keep;
  Central& k = central_[c];
  {
    LockGuard g(k.mu);
    for (uint32_t i = 0; i < n; ++i) PushCentral(k, c, b.slots[i]);
  }
  std::memmove(b.slots, b.slots + n, keep * sizeof(void*));
  b.count = keep;
}

void* Heap::TakeOne(uint32_t c) {
  Central& k = central_[c];
  LockGuard g(k.mu);
  if (k.count != 0) return k.stack[--k.count];
  if (k.bump < k.end) {
    void* p = reinterpret_cast<void*>(k.bump);
    k.bump += ClassSize(c);
    return p;
  }
  return nullptr;
}

// ---- Allocation. ----

void* Heap::LargeAlloc(size_t n, size_t align, bool* fresh) {
  bool f;
  for (;;) {
    if (void* p = large_->Allocate(n, align, fresh != nullptr ? fresh : &f)) return p;
    // Another thread may take the new chunk first: then claim again.
    if (!ClaimFor(n, align)) return nullptr;
  }
}

bool Heap::ClaimFor(size_t n, size_t align) {
  const size_t limit = layout_.LargeSize();
  if (align < kPage) align = kPage;
  if (n > limit || align > limit) return false;
  const size_t need = AlignUp(n == 0 ? 1 : n, kPage) + align;  // header page and alignment slack
  // A whole chunk if there is room, else just what this block needs.
  const size_t chunks = (need + layout_.chunk - 1) / layout_.chunk * layout_.chunk;
  for (const size_t bytes : {chunks, need}) {
    uint64_t off = 0;
    bool ok;
    if (opts_.claim != nullptr) {
      ok = opts_.claim(opts_.claim_ctx, bytes, limit, &off);
    } else {
      off = break_.load(std::memory_order_relaxed);
      do {
        ok = off <= limit && bytes <= limit - off;
      } while (ok && !break_.compare_exchange_weak(off, off + bytes, std::memory_order_relaxed));
    }
    if (ok) {
      large_->Add(layout_.large_base + off, bytes);
      return true;
    }
  }
  return false;
}

void* Heap::MallocClass(uint32_t c, size_t n, size_t align) {
  if (ThreadCache* tc = CacheForThread()) {
    Bin& b = tc->bins[c];
    if (b.count != 0 || Refill(tc, c)) return b.slots[--b.count];
  } else if (void* p = TakeOne(c)) {
    return p;
  }
  // Class exhausted: a larger class that keeps the alignment, then a page.
  for (uint32_t d = c + 1; d < kNumClasses; ++d)
    if (ClassSize(d) % align == 0)
      if (void* p = TakeOne(d)) return p;
  return LargeAlloc(n, kPage, nullptr);
}

void* Heap::MallocSlow(size_t n) {
  if (is_bootstrap()) return BootstrapMalloc(n);
  if (n > kMaxSmall) return LargeAlloc(n, kPage, nullptr);
  return MallocClass(SizeToClass(n), n, kMinAlign);
}

void* Heap::Calloc(size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size) return nullptr;
  const size_t total = n * size;
  if (is_bootstrap()) return BootstrapCalloc(n, size);
  if (total > kMaxSmall) {
    bool fresh = false;
    void* p = LargeAlloc(total, kPage, &fresh);
    if (p != nullptr && !(fresh && opts_.region_zeroed)) std::memset(p, 0, total);
    return p;
  }
  void* p = Malloc(total);
  if (p != nullptr) std::memset(p, 0, total);
  return p;
}

void* Heap::AlignedAlloc(size_t align, size_t size) {
  if (!IsPow2(align)) return nullptr;
  if (align <= kMinAlign) return Malloc(size);
  if (is_bootstrap()) return BootstrapMalloc(size, align);
  if (size > layout_.LargeSize()) return nullptr;
  if (align <= kPage) {
    const size_t s = AlignUp(size == 0 ? 1 : size, align);
    if (s <= kMaxSmall) {
      uint32_t c = SizeToClass(s);
      while (c < kNumClasses && ClassSize(c) % align != 0) ++c;
      if (c < kNumClasses) return MallocClass(c, s, align);
    }
  }
  return LargeAlloc(size, align, nullptr);
}

int Heap::PosixMemalign(void** out, size_t align, size_t size) {
  if (!IsPow2(align) || align % sizeof(void*) != 0) return EINVAL;
  void* p = AlignedAlloc(align, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

void* Heap::Memalign(size_t align, size_t size) {
  if (align > (size_t(1) << 62)) return nullptr;
  size_t a = kMinAlign;
  while (a < align) a <<= 1;
  return AlignedAlloc(a, size);
}

void* Heap::Pvalloc(size_t size) {
  if (size > SIZE_MAX - kPage) return nullptr;
  return AlignedAlloc(kPage, AlignUp(size == 0 ? 1 : size, kPage));
}

// ---- Free. ----

uint32_t Heap::ClassOf(uintptr_t a, const char* what) const {
  if (layout_.InSmall(a)) {
    const uintptr_t off = a - layout_.SmallBase(layout_.SmallOwner(a));
    const uint32_t c = uint32_t(off >> layout_.class_shift);
    const uint64_t in = off & (layout_.ClassSpan() - 1);
    const size_t size = ClassSize(c);
    if (in % size != 0 || in + size > layout_.ClassSpan()) Fatal(what, reinterpret_cast<void*>(a));
    return c;
  }
  // Large: page-aligned, with room for its header page.
  if (a % kPage != 0 || a < layout_.large_base + kPage) Fatal(what, reinterpret_cast<void*>(a));
  return kNumClasses;
}

uint32_t Heap::LargeOwner(uintptr_t a) const {
  if (a % kPage != 0 || a < layout_.large_base + kPage || !layout_.Contains(a)) return kNoOwner;
  const LargeHeader* h = HeaderOf(a);
  if (h->check != (kLargeMagic ^ a) || h->owner >= layout_.nodes) return kNoOwner;
  return uint32_t(h->owner);
}

uint32_t Heap::Owner(const void* p) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (!layout_.Contains(a)) return kNoOwner;
  if (layout_.InSmall(a)) return layout_.SmallOwner(a);
  return LargeOwner(a);
}

void Heap::FreeOwn(uintptr_t a, const char* what) {
  const uint32_t c = ClassOf(a, what);
  if (c == kNumClasses) {
    if (large_->Free(a) == 0) Fatal(what, reinterpret_cast<void*>(a));
    return;
  }
  void* p = reinterpret_cast<void*>(a);
  ThreadCache* tc = CacheForThread();
  if (tc == nullptr) {
    Central& k = central_[c];
    LockGuard g(k.mu);
    PushCentral(k, c, p);
    return;
  }
  Bin& b = tc->bins[c];
  if (b.count == b.cap) Flush(b, c, b.cap / 2);
  b.slots[b.count++] = p;
}

void Heap::FreeSlow(void* p) {
  if (p == nullptr) return;
  if (IsBootstrap(p)) return BootstrapFree(p);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (is_bootstrap() || !layout_.Contains(a)) Fatal("free(): invalid pointer", p);
  uint32_t owner;
  if (layout_.InSmall(a)) {
    owner = layout_.SmallOwner(a);
    if (owner == self_) return FreeOwn(a, "free(): invalid pointer");
    ClassOf(a, "free(): invalid pointer");
  } else {
    // This node's own blocks are known without reading their header.
    ClassOf(a, "free(): invalid pointer");
    if (large_->Free(a) != 0) return;
    owner = LargeOwner(a);
    if (owner == kNoOwner || owner == self_) Fatal("free(): invalid pointer", p);
  }
  if (opts_.remote_free == nullptr) Fatal("free(): block of another node and no remote_free hook", p);
  opts_.remote_free(opts_.remote_free_ctx, owner, p);
}

void Heap::FreeLocal(void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (is_bootstrap() || !layout_.Contains(a)) Fatal("FreeLocal(): block not of this node", p);
  if (layout_.InSmall(a)) {
    if (layout_.SmallOwner(a) != self_) Fatal("FreeLocal(): block not of this node", p);
    return FreeOwn(a, "FreeLocal(): invalid pointer");
  }
  ClassOf(a, "FreeLocal(): invalid pointer");
  if (large_->Free(a) == 0) Fatal("FreeLocal(): block not of this node", p);
}

// ---- Size queries and realloc. ----

size_t Heap::UsableSize(const void* p) {
  if (p == nullptr) return 0;
  if (IsBootstrap(p)) return BootstrapUsableSize(p);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (is_bootstrap() || !layout_.Contains(a)) Fatal("malloc_usable_size(): invalid pointer", p);
  const uint32_t c = ClassOf(a, "malloc_usable_size(): invalid pointer");
  if (c < kNumClasses) return ClassSize(c);
  if (const size_t n = large_->LiveSize(a)) return n;
  const uint32_t owner = LargeOwner(a);
  if (owner == kNoOwner || owner == self_) Fatal("malloc_usable_size(): invalid pointer", p);
  return HeaderOf(a)->usable;
}

void* Heap::Realloc(void* p, size_t n) {
  if (p == nullptr) return Malloc(n);
  if (n == 0) {
    Free(p);
    return nullptr;
  }
  if (is_bootstrap()) return BootstrapRealloc(p, n);
  const size_t old = UsableSize(p);  // validates p
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const bool own_large = old > kMaxSmall && !IsBootstrap(p) && large_->LiveSize(a) != 0;
  if (n <= old) {
    // Keep the block unless it would waste most of itself; shrinking a
    // local large block gives its tail pages back.
    if (old <= 64 || n > old / 4 || (old > kMaxSmall && n > kMaxSmall)) {
      if (own_large) large_->Resize(a, n);
      return p;
    }
  } else if (own_large && large_->Resize(a, n)) {
    return p;
  }
  void* q = Malloc(n);
  if (q == nullptr) return n <= old ? p : nullptr;
  std::memcpy(q, p, n < old ? n : old);
  Free(p);
  return q;
}

size_t Heap::TEST_LargeLiveBlocks() const { return large_ == nullptr ? 0 : large_->LiveBlocks(); }

}  // namespace svm::alloc
