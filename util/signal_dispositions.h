// KeepSignalDispositions: puts back, when it goes, every signal disposition
// that changed while it lived. For calls into libraries that install
// handlers of their own as a side effect (libfabric's providers), which
// would otherwise become the program's.
#pragma once

#include <signal.h>

#include <array>

namespace svm {

class KeepSignalDispositions {
 public:
  KeepSignalDispositions() {
    for (int s = 1; s < NSIG; ++s) saved_[s].ok = sigaction(s, nullptr, &saved_[s].sa) == 0;
  }
  ~KeepSignalDispositions() {
    for (int s = 1; s < NSIG; ++s) {
      struct sigaction now;
      if (!saved_[s].ok || sigaction(s, nullptr, &now) != 0) continue;
      const struct sigaction& was = saved_[s].sa;
      if (now.sa_sigaction != was.sa_sigaction || now.sa_flags != was.sa_flags) sigaction(s, &was, nullptr);
    }
  }
  KeepSignalDispositions(const KeepSignalDispositions&) = delete;
  KeepSignalDispositions& operator=(const KeepSignalDispositions&) = delete;

 private:
  struct Saved {
    struct sigaction sa;
    bool ok = false;
  };
  std::array<Saved, NSIG> saved_{};
};

}  // namespace svm
