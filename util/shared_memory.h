// SharedMemory: an anonymous memory file (memfd) mapped shared and read-write.
//
// For memory that other processes of the job may map: the shm transport hands
// the descriptor to its peers (nic_ext/shm), so a region registered with a Nic
// lives here rather than in private anonymous memory. The file is sparse:
// pages are allocated on first touch, so a large table costs only what is used.
// Movable, not copyable; unmaps and closes on destruction.
#pragma once

#include <cstddef>
#include <utility>

#include "util/status.h"

namespace svm {

class SharedMemory {
 public:
  // Creates a memfd of `bytes` (rounded up to whole pages) and maps it.
  // `name` shows in /proc/PID/maps as "/memfd:NAME".
  static Status Create(const char* name, size_t bytes, SharedMemory* out);

  SharedMemory() = default;
  SharedMemory(SharedMemory&& o) noexcept { *this = std::move(o); }
  SharedMemory& operator=(SharedMemory&& o) noexcept;
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  ~SharedMemory() { Reset(); }

  void* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }
  bool valid() const { return data_ != nullptr; }

 private:
  void Reset();

  void* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
};

}  // namespace svm
