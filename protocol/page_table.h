// PageTable: per-page state of a Node, made on first use and kept for the
// Node's life. Entries are made in blocks, in the order pages are first
// used, and never move; a page's entry is found through a chunk of
// kChunk slots (pointers) for its neighbourhood, itself found through a
// leaf of kLeaf chunk pointers for its 128 MiB (4 KiB pages) of address
// space; a lookup in the chunk of the last one is two array reads. So a
// page costs no heap allocation of its own (a hash map of one allocation per
// page was the Node's hottest symbol in fft's transposes), and pages touched
// far apart cost a leaf and a chunk each, not a block of entries. Blocks of
// entries and of chunks double in size up to kMaxDoublings, so a sweep over
// N pages makes O(log N) allocations until the blocks are 32,768 entries
// (16,000 pages in a row: 6 blocks of entries and 3 of chunks, where blocks
// of 512 and 64 took 32 and 4). Not thread-safe,
// lookups included: the Node's calls are serialised.
#pragma once

#include <algorithm>
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
  static constexpr size_t kLeafBits = 9;  // 512 chunks: 32,768 pages
  static constexpr size_t kLeaf = size_t(1) << kLeafBits;
  static constexpr size_t kChunkBlock = 64;  // chunks made by the first allocation
  static constexpr size_t kBlock = 512;      // entries made by the first allocation
  static constexpr size_t kMaxDoublings = 6;  // the largest block: 64x the first

  PageTable() = default;
  PageTable(const PageTable&) = delete;
  PageTable& operator=(const PageTable&) = delete;

  // p's entry, or nullptr if none was made.
  T* Find(PageId p) const {
    const Chunk* c = FindChunk(p);
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
    T*& slot = GetChunk(p)->slots[p & (kChunk - 1)];
    if (slot == nullptr) slot = Make(std::forward<Args>(args)...);
    return *slot;
  }

  // Entries made so far.
  size_t size() const { return size_; }

 private:
  struct Chunk {
    std::array<T*, kChunk> slots{};
  };
  struct Leaf {
    std::array<Chunk*, kLeaf> chunks{};
  };

  // p's chunk, or nullptr.
  Chunk* FindChunk(PageId p) const {
    const PageId key = p >> kChunkBits;
    if (last_.chunk != nullptr && last_.key == key) return last_.chunk;
    Leaf* leaf = FindLeaf(key >> kLeafBits);
    Chunk* chunk = leaf == nullptr ? nullptr : leaf->chunks[key & (kLeaf - 1)];
    if (chunk != nullptr) last_ = {key, chunk};
    return chunk;
  }

  Leaf* FindLeaf(PageId leaf_key) const {
    if (last_leaf_.leaf != nullptr && last_leaf_.key == leaf_key) return last_leaf_.leaf;
    auto it = leaves_.find(leaf_key);
    if (it == leaves_.end()) return nullptr;
    last_leaf_ = {leaf_key, it->second.get()};
    return last_leaf_.leaf;
  }

  // p's chunk, made if there is none.
  Chunk* GetChunk(PageId p) {
    if (Chunk* c = FindChunk(p)) return c;
    const PageId key = p >> kChunkBits, leaf_key = key >> kLeafBits;
    // FindChunk looked for the leaf, and kept it in last_leaf_ if it exists.
    Leaf* leaf = last_leaf_.key == leaf_key ? last_leaf_.leaf : nullptr;
    if (leaf == nullptr) {
      leaf = leaves_.emplace(leaf_key, std::make_unique<Leaf>()).first->second.get();
      last_leaf_ = {leaf_key, leaf};
    }
    Chunk* chunk = chunks_.Next();
    leaf->chunks[key & (kLeaf - 1)] = chunk;
    last_ = {key, chunk};
    return chunk;
  }

  template <typename... Args>
  T* Make(Args&&... args) {
    std::optional<T>& e = *entries_.Next();
    e.emplace(std::forward<Args>(args)...);
    ++size_;
    return &*e;
  }

  // Hands out default-made U's that never move, from blocks of `first`,
  // then twice as many each time up to first << kMaxDoublings.
  template <typename U, size_t first>
  class Blocks {
   public:
    U* Next() {
      if (left_ == 0) {
        const size_t n = first << std::min(blocks_.size(), kMaxDoublings);
        blocks_.push_back(std::make_unique<U[]>(n));
        next_ = blocks_.back().get();
        left_ = n;
      }
      --left_;
      return next_++;
    }

   private:
    std::vector<std::unique_ptr<U[]>> blocks_;
    U* next_ = nullptr;
    size_t left_ = 0;
  };

  std::unordered_map<PageId, std::unique_ptr<Leaf>> leaves_;
  Blocks<Chunk, kChunkBlock> chunks_;
  Blocks<std::optional<T>, kBlock> entries_;
  struct LastChunk {
    PageId key = 0;
    Chunk* chunk = nullptr;
  };
  struct LastLeaf {
    PageId key = 0;
    Leaf* leaf = nullptr;
  };
  // The chunk and leaf of the last lookup (sweeps stay in one).
  mutable LastChunk last_;
  mutable LastLeaf last_leaf_;
  size_t size_ = 0;
};

}  // namespace svm
