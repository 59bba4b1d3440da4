// PageTable: per-page state of a Node, made on first use and kept for the
// Node's life. Entries are made in blocks of kBlock, in the order pages are
// first used, and never move; a page's entry is found through a chunk of
// kChunk slots (pointers) for its neighbourhood, and a lookup in the chunk of
// the last one is two array reads. So a page costs no heap allocation of its
// own (a hash map of one allocation per page was the Node's hottest symbol in
// fft's transposes), and pages touched far apart cost a chunk of pointers
// each, not a chunk of entries. Not thread-safe, lookups included: the
// Node's calls are serialised.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "protocol/types.h"

namespace svm {

template <typename T>
class PageTable {
 public:
  static constexpr size_t kChunkBits = 6;  // 64 pages (a 512-byte chunk of slots)
  static constexpr size_t kChunk = size_t(1) << kChunkBits;
  static constexpr size_t kBlock = 256;  // entries made per allocation

  PageTable() = default;
  PageTable(const PageTable&) = delete;
  PageTable& operator=(const PageTable&) = delete;

  // p's entry, or nullptr if none was made.
  T* Find(PageId p) const {
    const Chunk* c = ChunkOf(p);
    return c == nullptr ? nullptr : c->slots[p & (kChunk - 1)];
  }

  // p's entry, which must exist.
  T& At(PageId p) const {
    T* t = Find(p);
    assert(t != nullptr);
    return *t;
  }

  // p's entry; made from args when there is none.
  template <typename... Args>
  T& Get(PageId p, Args&&... args) {
    Chunk* c = ChunkOf(p);
    if (c == nullptr) {
      auto made = std::make_unique<Chunk>();
      c = made.get();
      chunks_.emplace(p >> kChunkBits, std::move(made));
      last_ = {p >> kChunkBits, c};
    }
    T*& slot = c->slots[p & (kChunk - 1)];
    if (slot == nullptr) slot = Make(std::forward<Args>(args)...);
    return *slot;
  }

  // Entries made so far.
  size_t size() const { return size_; }

 private:
  struct Chunk {
    std::array<T*, kChunk> slots{};
  };
  struct Block {
    std::array<std::optional<T>, kBlock> entries;
  };

  Chunk* ChunkOf(PageId p) const {
    const PageId key = p >> kChunkBits;
    if (last_.chunk != nullptr && last_.key == key) return last_.chunk;
    auto it = chunks_.find(key);
    if (it == chunks_.end()) return nullptr;
    last_ = {key, it->second.get()};
    return last_.chunk;
  }

  template <typename... Args>
  T* Make(Args&&... args) {
    if (blocks_.empty() || size_ % kBlock == 0) blocks_.push_back(std::make_unique<Block>());
    std::optional<T>& e = blocks_.back()->entries[size_ % kBlock];
    e.emplace(std::forward<Args>(args)...);
    ++size_;
    return &*e;
  }

  std::unordered_map<PageId, std::unique_ptr<Chunk>> chunks_;
  std::vector<std::unique_ptr<Block>> blocks_;
  struct LastChunk {
    PageId key = 0;
    Chunk* chunk = nullptr;
  };
  mutable LastChunk last_;  // the chunk of the last lookup (sweeps stay in one)
  size_t size_ = 0;
};

}  // namespace svm
