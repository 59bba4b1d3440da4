// BufferPool: the storage of byte buffers a hot path is done with, kept for
// its next ones, so steady traffic allocates nothing. Bounded in count and in
// the size of a buffer kept (a burst of big ones should not stay resident).
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace svm {

class BufferPool {
 public:
  BufferPool(size_t max_buffers, size_t max_bytes) : max_buffers_(max_buffers), max_bytes_(max_bytes) {}

  // An empty buffer, with kept storage where there is some: the smallest
  // that holds `need` bytes, else the largest (a lock message's buffer
  // handed to a page run would only grow: an allocation and a copy).
  std::vector<uint8_t> Take(size_t need = 0) {
    std::lock_guard<std::mutex> l(mu_);
    if (kept_.empty()) return {};
    size_t pick = 0;
    for (size_t i = 1; i < kept_.size(); ++i) {
      const size_t have = kept_[i].capacity(), best = kept_[pick].capacity();
      const bool fits = have >= need, best_fits = best >= need;
      if (fits ? !best_fits || have < best : !best_fits && have > best) pick = i;
    }
    std::vector<uint8_t> b = std::move(kept_[pick]);
    kept_[pick] = std::move(kept_.back());
    kept_.pop_back();
    return b;
  }

  // Keeps b's storage, if it has some and there is room.
  void Give(std::vector<uint8_t>&& b) {
    if (b.capacity() == 0 || b.capacity() > max_bytes_) return;
    b.clear();
    std::lock_guard<std::mutex> l(mu_);
    if (kept_.size() < max_buffers_) kept_.push_back(std::move(b));
  }

 private:
  const size_t max_buffers_, max_bytes_;
  std::mutex mu_;
  std::vector<std::vector<uint8_t>> kept_;  // guarded by mu_
};

}  // namespace svm
