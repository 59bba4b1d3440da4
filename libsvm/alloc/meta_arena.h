// MetaArena: private memory for the allocator's own metadata (tree nodes of
// the page heap), carved from mmap'd chunks and recycled through free lists
// by 16-byte size. Never calls malloc; never touches the shared region.
//
// Thread-safety: none; the owner serialises access (the page-heap lock).
// MetaAllocator<T> adapts it to the standard containers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "libsvm/alloc/os.h"

namespace svm::alloc {

class MetaArena {
 public:
  static constexpr size_t kChunk = 1 << 20;
  static constexpr size_t kMaxObject = 512;

  MetaArena() = default;
  ~MetaArena() {
    while (chunks_ != nullptr) {
      Chunk* next = chunks_->next;
      UnmapPrivate(chunks_, kChunk);
      chunks_ = next;
    }
  }
  MetaArena(const MetaArena&) = delete;
  MetaArena& operator=(const MetaArena&) = delete;

  // REQUIRES: bytes <= kMaxObject. Metadata exhaustion is fatal.
  void* Allocate(size_t bytes) {
    const size_t k = Slot(bytes);
    if (FreeObj* f = free_[k]) {
      free_[k] = f->next;
      return f;
    }
    const size_t need = (k + 1) * 16;
    if (chunks_ == nullptr || used_ + need > kChunk) NewChunk();
    void* p = reinterpret_cast<char*>(chunks_) + used_;
    used_ += need;
    return p;
  }
  void Deallocate(void* p, size_t bytes) {
    FreeObj* f = static_cast<FreeObj*>(p);
    const size_t k = Slot(bytes);
    f->next = free_[k];
    free_[k] = f;
  }

 private:
  struct Chunk { Chunk* next; };
  struct FreeObj { FreeObj* next; };

  static size_t Slot(size_t bytes) {
    if (bytes == 0 || bytes > kMaxObject) Fatal("metadata object too large");
    return (bytes - 1) / 16;
  }
  void NewChunk() {
    auto* c = static_cast<Chunk*>(MapPrivate(kChunk));
    if (c == nullptr) Fatal("out of private memory for allocator metadata");
    c->next = chunks_;
    chunks_ = c;
    used_ = 16;
  }

  Chunk* chunks_ = nullptr;
  size_t used_ = 0;
  FreeObj* free_[kMaxObject / 16] = {};
};

template <typename T>
class MetaAllocator {
 public:
  using value_type = T;
  explicit MetaAllocator(MetaArena* a) : arena_(a) {}
  template <typename U>
  MetaAllocator(const MetaAllocator<U>& o) : arena_(o.arena_) {}  // NOLINT: rebind

  T* allocate(size_t n) { return static_cast<T*>(arena_->Allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { arena_->Deallocate(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const MetaAllocator<U>& o) const { return arena_ == o.arena_; }

  MetaArena* arena_;
};

}  // namespace svm::alloc
