#include "libsvm/stacks.h"

#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace svm::rt {
namespace {

// Below the shared region's default base (0x200000000000), where nothing
// else maps: 8 TiB up, 32 GiB a node (256 nodes fill 8 TiB).
constexpr uintptr_t kWindowsBase = uintptr_t(8) << 40;
constexpr uintptr_t kWindowBytes = uintptr_t(32) << 30;
constexpr size_t kPage = 4096;
constexpr size_t kMinStack = 64 << 10;

struct Windows {
  uint32_t self = 0, nodes = 0;  // nodes == 0: none reserved
  std::mutex mu;
  uintptr_t next = 0;  // GUARDED_BY(mu): the lowest address not yet handed out
  std::vector<std::pair<uintptr_t, size_t>> free;  // GUARDED_BY(mu): freed stacks
};
Windows g_windows;

// RLIMIT_STACK's soft limit; 0 when unlimited or unknown.
size_t StackLimit() {
  rlimit r{};
  return getrlimit(RLIMIT_STACK, &r) == 0 && r.rlim_cur != RLIM_INFINITY ? r.rlim_cur : 0;
}

size_t RoundToPages(size_t n) { return (n + kPage - 1) & ~(kPage - 1); }

}  // namespace

bool ReserveStackWindows(uint32_t self, uint32_t nodes) {
  const size_t bytes = size_t(nodes) * kWindowBytes;
  void* p = mmap(reinterpret_cast<void*>(kWindowsBase), bytes, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED) return false;
  if (p != reinterpret_cast<void*>(kWindowsBase)) {  // a kernel that ignores the flag
    munmap(p, bytes);
    return false;
  }
  g_windows.self = self;
  g_windows.next = kWindowsBase + self * kWindowBytes;
  g_windows.nodes = nodes;  // last: DescribeStackAddress reads it
  return true;
}

size_t StackSize(const pthread_attr_t* attr) {
  size_t size = 0;
  pthread_attr_t defaults;
  if (attr != nullptr) {
    pthread_attr_getstacksize(attr, &size);
  } else if (pthread_getattr_default_np(&defaults) == 0) {
    pthread_attr_getstacksize(&defaults, &size);
    pthread_attr_destroy(&defaults);
  }
  if (size == 0) size = StackLimit();
  if (size == 0) size = 8 << 20;
  return RoundToPages(std::max(size, kMinStack));
}

size_t MainStackSize() {
  const size_t limit = StackLimit();
  return RoundToPages(limit != 0 ? std::max<size_t>(limit, 1 << 20) : size_t(1) << 30);
}

void* NewStack(size_t size) {
  Windows& w = g_windows;
  if (w.nodes == 0) return nullptr;
  size = RoundToPages(size);
  uintptr_t at = 0;
  {
    std::lock_guard<std::mutex> l(w.mu);
    auto it = std::find_if(w.free.begin(), w.free.end(), [&](const auto& f) { return f.second == size; });
    if (it != w.free.end()) {
      at = it->first;
      w.free.erase(it);
    } else if (w.next + kPage + size <= kWindowsBase + (w.self + 1) * kWindowBytes) {
      at = w.next + kPage;  // above a guard page, which stays inaccessible
      w.next = at + size;
    } else {
      return nullptr;
    }
  }
  void* p = mmap(reinterpret_cast<void*>(at), size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) {
    FreeStack(reinterpret_cast<void*>(at), size);
    return nullptr;
  }
  return p;
}

void FreeStack(void* stack, size_t size) {
  // Back to an inaccessible reservation; its memory goes back to the kernel.
  mmap(stack, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  std::lock_guard<std::mutex> l(g_windows.mu);
  g_windows.free.push_back({reinterpret_cast<uintptr_t>(stack), size});
}

size_t DescribeStackAddress(uintptr_t addr, char* buf, size_t n) {
  const Windows& w = g_windows;
  if (w.nodes == 0 || addr < kWindowsBase || addr >= kWindowsBase + w.nodes * kWindowBytes) return 0;
  const auto node = uint32_t((addr - kWindowsBase) / kWindowBytes);
  if (node == w.self) return 0;
  const int len = snprintf(buf, n,
                           "; that is a stack address of node %u (a local variable of main or of a "
                           "thread there): svm does not share stacks between nodes; data that threads "
                           "on other nodes use must live in globals or on the heap (malloc)",
                           node);
  return len > 0 ? std::min(size_t(len), n - 1) : 0;
}

}  // namespace svm::rt
