// The definition a symbol libsvm interposes would have had without us
// (glibc's), for calling through. dlsym is not async-signal-safe: resolve
// before a signal handler may need it.
#pragma once

#include <dlfcn.h>

#include <atomic>

namespace svm::rt {

template <typename Fn>
Fn NextSymbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

// NextSymbol for a function the runtime's own threads call, resolved when
// libsvm is loaded (SVM_NEXT_FN). dlsym waits for the loader's lock, which a
// program thread holds while pthread_exit loads the unwinder; if that thread
// then faults on shared memory, it waits for the runtime's threads (the NIC,
// the handler), which must never be stuck in dlsym. A call that comes before
// libsvm's constructors ran (another library's) resolves on the spot, while
// the process is still single-threaded.
template <typename Fn>
class NextFn {
 public:
  constexpr explicit NextFn(const char* name) : name_(name) {}
  Fn get() {
    Fn f = fn_.load(std::memory_order_acquire);
    if (f == nullptr) {
      f = NextSymbol<Fn>(name_);
      fn_.store(f, std::memory_order_release);
    }
    return f;
  }

 private:
  const char* name_;
  std::atomic<Fn> fn_{nullptr};
};

}  // namespace svm::rt

// Defines `static NextFn<type> var` for symbol, resolved at load.
#define SVM_NEXT_FN(var, type, symbol)                      \
  static constinit ::svm::rt::NextFn<type> var{symbol};     \
  [[maybe_unused]] static const bool var##_at_load = (var.get(), true)
