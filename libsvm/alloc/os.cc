#include "libsvm/alloc/os.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

namespace svm::alloc {

namespace {

size_t Append(char* buf, size_t at, size_t cap, const char* s) {
  while (*s && at < cap) buf[at++] = *s++;
  return at;
}

}  // namespace

void Fatal(const char* what, const void* p) {
  char buf[256];
  const size_t cap = sizeof(buf) - 1;
  size_t n = Append(buf, 0, cap, "svm alloc: ");
  n = Append(buf, n, cap, what);
  if (p != nullptr) {
    n = Append(buf, n, cap, " 0x");
    const uintptr_t v = reinterpret_cast<uintptr_t>(p);
    for (int shift = 60; shift >= 0 && n < cap; shift -= 4) buf[n++] = "0123456789abcdef"[(v >> shift) & 15];
  }
  buf[n++] = '\n';
  ssize_t r = ::write(2, buf, n);
  (void)r;
  std::abort();
}

void* MapPrivate(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void UnmapPrivate(void* p, size_t bytes) {
  if (p != nullptr) ::munmap(p, bytes);
}

void FutexLock::LockSlow(uint32_t c) {
  // Spin a little first: on these 2-core VMs a sleeping waiter costs ~50 us.
  for (int i = 0; i < 100; ++i) {
    __builtin_ia32_pause();
    c = 0;
    if (state_.load(std::memory_order_relaxed) == 0 &&
        state_.compare_exchange_strong(c, 1, std::memory_order_acquire))
      return;
  }
  if (c != 2) c = state_.exchange(2, std::memory_order_acquire);
  while (c != 0) {
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&state_), FUTEX_WAIT_PRIVATE, 2, nullptr, nullptr, 0);
    c = state_.exchange(2, std::memory_order_acquire);
  }
}

void FutexLock::Wake() {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&state_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

}  // namespace svm::alloc
