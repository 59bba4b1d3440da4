#include "libsvm/alloc/bootstrap.h"

#include <atomic>
#include <cstdint>
#include <cstring>

#include "libsvm/alloc/os.h"

namespace svm::alloc {

namespace {

struct BootHeader {
  uint64_t size;   // usable bytes
  uint64_t check;  // kLive ^ address, or kDead ^ address after free
};
constexpr uint64_t kLive = 0x626f6f746c697665ull;
constexpr uint64_t kDead = 0x626f6f7464656164ull;

alignas(4096) char g_arena[kBootstrapBytes];
std::atomic<uintptr_t> g_top{0};  // offset of the first unused byte

uintptr_t ArenaBase() { return reinterpret_cast<uintptr_t>(g_arena); }

BootHeader* HeaderOf(const void* p) {
  return reinterpret_cast<BootHeader*>(reinterpret_cast<uintptr_t>(p) - sizeof(BootHeader));
}

BootHeader* CheckedHeader(const void* p, const char* what) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (a % 16 != 0 || a - ArenaBase() < sizeof(BootHeader)) Fatal(what, p);
  BootHeader* h = HeaderOf(p);
  if (h->check != (kLive ^ a)) Fatal(what, p);
  return h;
}

}  // namespace

bool IsBootstrap(const void* p) {
  return reinterpret_cast<uintptr_t>(p) - ArenaBase() < kBootstrapBytes;
}

size_t BootstrapBytesUsed() { return g_top.load(std::memory_order_relaxed); }

void* BootstrapMalloc(size_t size, size_t align) {
  if (align < 16) align = 16;
  if ((align & (align - 1)) != 0 || size > kBootstrapBytes || align > kBootstrapBytes) return nullptr;
  size = AlignUp(size == 0 ? 1 : size, 16);
  uintptr_t top = g_top.load(std::memory_order_relaxed);
  uintptr_t block, end;
  do {
    block = AlignUp(ArenaBase() + top + sizeof(BootHeader), align) - ArenaBase();
    end = block + size;
    if (end > kBootstrapBytes) return nullptr;
  } while (!g_top.compare_exchange_weak(top, end, std::memory_order_relaxed));
  void* p = g_arena + block;
  BootHeader* h = HeaderOf(p);
  h->size = size;
  h->check = kLive ^ reinterpret_cast<uintptr_t>(p);
  return p;
}

void* BootstrapCalloc(size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size) return nullptr;
  void* p = BootstrapMalloc(n * size);
  // The arena may hold a freed-and-rolled-back block's old bytes.
  if (p != nullptr) std::memset(p, 0, n * size);
  return p;
}

void BootstrapFree(void* p) {
  if (p == nullptr) return;
  BootHeader* h = CheckedHeader(p, "free(): invalid or double-freed bootstrap pointer");
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  h->check = kDead ^ a;
  // Roll the bump pointer back when this was the newest block.
  uintptr_t end = a - ArenaBase() + h->size;
  uintptr_t start = a - ArenaBase() - sizeof(BootHeader);
  g_top.compare_exchange_strong(end, start, std::memory_order_relaxed);
}

size_t BootstrapUsableSize(const void* p) {
  if (p == nullptr) return 0;
  return CheckedHeader(p, "malloc_usable_size(): invalid bootstrap pointer")->size;
}

void* BootstrapRealloc(void* p, size_t size) {
  if (p == nullptr) return BootstrapMalloc(size);
  BootHeader* h = CheckedHeader(p, "realloc(): invalid bootstrap pointer");
  if (size <= h->size) return p;
  // Grow in place when p is the newest block.
  const uintptr_t off = reinterpret_cast<uintptr_t>(p) - ArenaBase();
  const size_t want = AlignUp(size, 16);
  uintptr_t end = off + h->size;
  if (off + want <= kBootstrapBytes && g_top.compare_exchange_strong(end, off + want, std::memory_order_relaxed)) {
    h->size = want;
    return p;
  }
  void* q = BootstrapMalloc(size);
  if (q == nullptr) return nullptr;
  std::memcpy(q, p, h->size);
  BootstrapFree(p);
  return q;
}

}  // namespace svm::alloc
