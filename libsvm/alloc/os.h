// What the allocator needs from the OS, without touching libc's malloc or
// stdio: private anonymous mappings, a futex lock, and fatal errors.
//
// Everything here is safe before main and inside a malloc call. The lock is
// our own (not pthread_mutex_*) because the runtime interposes pthread
// synchronisation and turns it into distributed locks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace svm::alloc {

// Writes "svm alloc: <what>[ <p in hex>]\n" to stderr and aborts.
[[noreturn]] void Fatal(const char* what, const void* p = nullptr);

// Private, zeroed, read/write anonymous memory, lazily committed
// (MAP_NORESERVE). Returns nullptr when the kernel refuses.
void* MapPrivate(size_t bytes);
void UnmapPrivate(void* p, size_t bytes);

// A futex mutex (Drepper's "mutex3"): spins briefly, then sleeps. Zero-
// initialised storage is an unlocked lock, so it may live in .bss or in a
// constinit object.
class FutexLock {
 public:
  constexpr FutexLock() = default;
  FutexLock(const FutexLock&) = delete;
  FutexLock& operator=(const FutexLock&) = delete;

  void lock() {
    uint32_t c = 0;
    if (__builtin_expect(state_.compare_exchange_strong(c, 1, std::memory_order_acquire), 1)) return;
    LockSlow(c);
  }
  void unlock() {
    if (__builtin_expect(state_.exchange(0, std::memory_order_release) == 2, 0)) Wake();
  }

 private:
  void LockSlow(uint32_t c);
  void Wake();

  std::atomic<uint32_t> state_{0};  // 0 free, 1 locked, 2 locked with waiters
};

class LockGuard {
 public:
  explicit LockGuard(FutexLock& l) : l_(l) { l_.lock(); }
  ~LockGuard() { l_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  FutexLock& l_;
};

inline constexpr size_t kPage = 4096;
constexpr uintptr_t AlignUp(uintptr_t x, uintptr_t a) { return (x + a - 1) & ~(a - 1); }
constexpr uintptr_t AlignDown(uintptr_t x, uintptr_t a) { return x & ~(a - 1); }

}  // namespace svm::alloc
