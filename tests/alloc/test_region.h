// A global region for allocator tests: reserved PROT_NONE, then opened
// read/write with MAP_NORESERVE, so untouched pages cost nothing and
// ResidentPages() can prove which pages the allocator touched.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "libsvm/alloc/heap.h"

namespace svm::alloc::testing {

class TestRegion {
 public:
  explicit TestRegion(size_t size) : size_(size) {
    void* p = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return;
    if (mprotect(p, size, PROT_READ | PROT_WRITE) != 0) {
      munmap(p, size);
      return;
    }
    base_ = p;
  }
  ~TestRegion() {
    if (base_ != nullptr) munmap(base_, size_);
  }
  TestRegion(const TestRegion&) = delete;
  TestRegion& operator=(const TestRegion&) = delete;

  bool ok() const { return base_ != nullptr; }
  uintptr_t base() const { return reinterpret_cast<uintptr_t>(base_); }
  size_t size() const { return size_; }

  // Heaps made from these options (several nodes) share one break.
  HeapOptions Options(uint32_t nodes = 1, uint32_t self = 0) {
    HeapOptions o;
    o.base = base();
    o.size = size_;
    o.nodes = nodes;
    o.self = self;
    o.claim = &Claim;
    o.claim_ctx = this;
    return o;
  }
  // The large area claimed so far.
  uint64_t claimed() const { return break_.load(); }

 private:
  static bool Claim(void* ctx, uint64_t bytes, uint64_t limit, uint64_t* offset) {
    auto* r = static_cast<TestRegion*>(ctx);
    uint64_t off = r->break_.load();
    do {
      if (off > limit || bytes > limit - off) return false;
    } while (!r->break_.compare_exchange_weak(off, off + bytes));
    *offset = off;
    return true;
  }

  void* base_ = nullptr;
  size_t size_;
  std::atomic<uint64_t> break_{0};
};

// Pages of [p, p+len) resident in memory (mincore).
inline size_t ResidentPages(const void* p, size_t len) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const uintptr_t a = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  len += reinterpret_cast<uintptr_t>(p) - a;
  std::vector<unsigned char> v((len + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(a), len, v.data()) != 0) return SIZE_MAX;
  size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

inline void Fill(void* p, size_t n, uint32_t seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>((seed * 131u + i * 7u) >> 1);
}

inline bool Check(const void* p, size_t n, uint32_t seed) {
  auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i] != static_cast<unsigned char>((seed * 131u + i * 7u) >> 1)) return false;
  return true;
}

}  // namespace svm::alloc::testing
