#include "libsvm/alloc/page_heap.h"

#include "libsvm/alloc/layout.h"

namespace svm::alloc {

PageHeap::PageHeap(uintptr_t begin, uintptr_t end)
    : begin_(begin),
      end_(end),
      top_(begin),
      free_by_addr_(MetaAllocator<Pair>(&arena_)),
      free_by_size_(MetaAllocator<std::pair<size_t, uintptr_t>>(&arena_)),
      live_(MetaAllocator<Pair>(&arena_)) {}

void PageHeap::EraseFree(ByAddr::iterator it) {
  free_by_size_.erase({it->second, it->first});
  free_by_addr_.erase(it);
}

void PageHeap::InsertFree(uintptr_t start, size_t len) {
  if (len == 0) return;
  auto next = free_by_addr_.lower_bound(start);
  if (next != free_by_addr_.end() && start + len == next->first) {
    len += next->second;
    auto n = next++;
    EraseFree(n);
  }
  if (next != free_by_addr_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      len += prev->second;
      EraseFree(prev);
    }
  }
  free_by_addr_.emplace(start, len);
  free_by_size_.emplace(len, start);
}

// Takes [start, start+len) (already removed from the free sets), places a
// block with its header page inside, and returns the slack to the free sets.
void* PageHeap::Carve(uintptr_t start, size_t len, size_t bytes, size_t align) {
  const uintptr_t block = AlignUp(start + kPage, align);
  const uintptr_t end = block + bytes;
  InsertFree(start, block - kPage - start);
  InsertFree(end, start + len - end);
  live_.emplace(block, bytes);
  LargeHeader* h = HeaderOf(block);
  h->check = kLargeMagic ^ block;
  h->usable = bytes;
  return reinterpret_cast<void*>(block);
}

void* PageHeap::Allocate(size_t bytes, size_t align, bool* fresh) {
  if (align < kPage) align = kPage;
  if (bytes > end_ - begin_ || align > end_ - begin_) return nullptr;
  bytes = AlignUp(bytes == 0 ? 1 : bytes, kPage);
  const size_t need = bytes + kPage + (align - kPage);  // worst case with alignment slack
  LockGuard g(mu_);
  auto it = free_by_size_.lower_bound(std::pair<size_t, uintptr_t>(need, 0));
  if (it != free_by_size_.end()) {
    const auto [len, start] = *it;
    EraseFree(free_by_addr_.find(start));
    *fresh = false;
    return Carve(start, len, bytes, align);
  }
  // Exact fit for an aligned request may exist in a smaller extent; try the
  // bump area before scanning (large aligned requests are rare).
  const uintptr_t block = AlignUp(top_ + kPage, align);
  if (block < top_ || block > end_ || end_ - block < bytes) {
    // Last resort: scan for an extent that fits once aligned.
    for (auto& [start, len] : free_by_addr_) {
      const uintptr_t b = AlignUp(start + kPage, align);
      if (b + bytes <= start + len) {
        const uintptr_t s = start;
        const size_t l = len;
        EraseFree(free_by_addr_.find(s));
        *fresh = false;
        return Carve(s, l, bytes, align);
      }
    }
    return nullptr;
  }
  const uintptr_t start = top_;
  top_ = block + bytes;
  *fresh = true;
  return Carve(start, top_ - start, bytes, align);
}

size_t PageHeap::Free(uintptr_t p) {
  LockGuard g(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) return 0;
  const size_t bytes = it->second;
  live_.erase(it);
  InsertFree(p - kPage, bytes + kPage);
  return bytes;
}

size_t PageHeap::LiveSize(uintptr_t p) {
  LockGuard g(mu_);
  auto it = live_.find(p);
  return it == live_.end() ? 0 : it->second;
}

bool PageHeap::Resize(uintptr_t p, size_t bytes) {
  bytes = AlignUp(bytes == 0 ? 1 : bytes, kPage);
  LockGuard g(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) return false;
  const size_t old = it->second;
  if (bytes <= old) {
    InsertFree(p + bytes, old - bytes);
  } else {
    const uintptr_t end = p + old;
    const size_t more = bytes - old;
    auto f = free_by_addr_.find(end);
    if (f != free_by_addr_.end() && f->second >= more) {
      const size_t len = f->second;
      EraseFree(f);
      InsertFree(end + more, len - more);
    } else if (end == top_ && end_ - top_ >= more) {
      top_ += more;
    } else {
      return false;
    }
  }
  it->second = bytes;
  HeaderOf(p)->usable = bytes;
  return true;
}

size_t PageHeap::FreeBytes() {
  LockGuard g(mu_);
  size_t n = 0;
  for (auto& [s, l] : free_by_addr_) n += l;
  return n;
}

size_t PageHeap::LiveBlocks() {
  LockGuard g(mu_);
  return live_.size();
}

}  // namespace svm::alloc
