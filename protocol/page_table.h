// PageTable: per-page state of a Node, made on first use and kept for the
// Node's life. Entries are made in chunks of kChunk consecutive pages, so a
// page costs no heap allocation of its own and never moves; a lookup in the
// chunk of the last one is two array reads. (A hash map of one allocation per
// page was the Node's hottest symbol in fft's transposes.) Not thread-safe,
// lookups included: the Node's calls are serialised.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>

#include "protocol/types.h"

namespace svm {

template <typename T>
class PageTable {
 public:
  static constexpr size_t kChunkBits = 9;  // 512 pages (2 MiB of 4 KiB pages)
  static constexpr size_t kChunk = size_t(1) << kChunkBits;

  PageTable() = default;
  PageTable(const PageTable&) = delete;
  PageTable& operator=(const PageTable&) = delete;

  // p's entry, or nullptr if none was made.
  T* Find(PageId p) const {
    Chunk* c = ChunkOf(p);
    if (c == nullptr || !c->slots[p & (kChunk - 1)]) return nullptr;
    return &*c->slots[p & (kChunk - 1)];
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
    std::optional<T>& slot = c->slots[p & (kChunk - 1)];
    if (!slot) {
      slot.emplace(std::forward<Args>(args)...);
      ++size_;
    }
    return *slot;
  }

  // Entries made so far.
  size_t size() const { return size_; }

 private:
  struct Chunk {
    std::array<std::optional<T>, kChunk> slots;
  };

  Chunk* ChunkOf(PageId p) const {
    const PageId key = p >> kChunkBits;
    if (last_.chunk != nullptr && last_.key == key) return last_.chunk;
    auto it = chunks_.find(key);
    if (it == chunks_.end()) return nullptr;
    last_ = {key, it->second.get()};
    return last_.chunk;
  }

  std::unordered_map<PageId, std::unique_ptr<Chunk>> chunks_;
  struct LastChunk {
    PageId key = 0;
    Chunk* chunk = nullptr;
  };
  mutable LastChunk last_;  // the chunk of the last lookup (sweeps stay in one)
  size_t size_ = 0;
};

}  // namespace svm
