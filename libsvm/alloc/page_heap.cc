#include "libsvm/alloc/page_heap.h"

#include <algorithm>

#include "libsvm/alloc/layout.h"

namespace svm::alloc {

PageHeap::PageHeap(uint32_t owner, bool mark_ends)
    : owner_(owner),
      mark_ends_(mark_ends),
      free_by_addr_(MetaAllocator<Pair>(&arena_)),
      free_by_size_(MetaAllocator<std::pair<size_t, uintptr_t>>(&arena_)),
      live_(MetaAllocator<Pair>(&arena_)),
      used_(MetaAllocator<Pair>(&arena_)) {}

void PageHeap::Add(uintptr_t start, size_t len) {
  LockGuard g(mu_);
  InsertFree(start, len);
}

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

bool PageHeap::Used(uintptr_t a, uintptr_t b) const {
  auto it = used_.upper_bound(a);
  if (it != used_.begin() && std::prev(it)->second > a) return true;
  return it != used_.end() && it->first < b;
}

void PageHeap::MarkUsed(uintptr_t a, uintptr_t b) {
  auto it = used_.upper_bound(a);
  if (it != used_.begin() && std::prev(it)->second >= a) {
    --it;
    a = it->first;
    b = std::max<uintptr_t>(b, it->second);
    it = used_.erase(it);
  }
  while (it != used_.end() && it->first <= b) {
    b = std::max<uintptr_t>(b, it->second);
    it = used_.erase(it);
  }
  used_.emplace(a, b);
}

// Takes [start, start+len) (already removed from the free sets), places a
// block with its header page inside, and returns the slack to the free sets.
void* PageHeap::Carve(uintptr_t start, size_t len, size_t bytes, size_t align, bool* fresh) {
  const uintptr_t block = AlignUp(start + kPage, align);
  const uintptr_t end = block + bytes;
  InsertFree(start, block - kPage - start);
  InsertFree(end, start + len - end);
  *fresh = !Used(block, end);
  MarkUsed(block - kPage, end);
  live_.emplace(block, bytes);
  LargeHeader* h = HeaderOf(block);
  h->check = kLargeMagic ^ block;
  h->usable = bytes;
  h->owner = owner_;
  // The page after the block, if free here and never handed out, is where
  // the next block carved from that extent has its header: read now, it is
  // homed here before a sweep through this block can claim past its end.
  if (mark_ends_ && start + len > end && !Used(end, end + kPage))
    (void)*reinterpret_cast<volatile const uint8_t*>(end);
  return reinterpret_cast<void*>(block);
}

void* PageHeap::Allocate(size_t bytes, size_t align, bool* fresh) {
  if (align < kPage) align = kPage;
  constexpr size_t kHuge = size_t(1) << 62;  // keeps the sums below from wrapping
  if (bytes > kHuge || align > kHuge) return nullptr;
  bytes = AlignUp(bytes == 0 ? 1 : bytes, kPage);
  const size_t need = bytes + kPage + (align - kPage);  // worst case with alignment slack
  LockGuard g(mu_);
  auto it = free_by_size_.lower_bound(std::pair<size_t, uintptr_t>(need, 0));
  if (it != free_by_size_.end()) {
    const auto [len, start] = *it;
    EraseFree(free_by_addr_.find(start));
    return Carve(start, len, bytes, align, fresh);
  }
  // An aligned request may still fit a smaller extent, once aligned.
  if (align > kPage) {
    for (auto& [start, len] : free_by_addr_) {
      const uintptr_t b = AlignUp(start + kPage, align);
      if (b + bytes <= start + len) {
        const uintptr_t s = start;
        const size_t l = len;
        EraseFree(free_by_addr_.find(s));
        return Carve(s, l, bytes, align, fresh);
      }
    }
  }
  return nullptr;
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
    if (f == free_by_addr_.end() || f->second < more) return false;
    const size_t len = f->second;
    EraseFree(f);
    InsertFree(end + more, len - more);
    MarkUsed(end, end + more);
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
