// The definition a symbol libsvm interposes would have had without us
// (glibc's), for calling through. dlsym is not async-signal-safe: resolve
// before a signal handler may need it.
#pragma once

#include <dlfcn.h>

namespace svm::rt {

template <typename Fn>
Fn NextSymbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace svm::rt
