// What the calling thread is, for routing its allocations and calls.
//
//   t_app         a thread of the program (node 0's main thread once main is
//                 about to run, and every thread the runtime starts for the
//                 program). Its allocations go to the shared heap.
//   t_in_runtime  the thread is inside the runtime (a fault, a pthread call):
//                 what the runtime allocates there is private (glibc).
//
// Runtime threads (NIC, handler, control reader) are neither: private.
#pragma once

#include <cstdint>

namespace svm::rt {

inline thread_local bool t_app __attribute__((tls_model("initial-exec"))) = false;
inline thread_local bool t_in_runtime __attribute__((tls_model("initial-exec"))) = false;

// Marks a stretch of runtime work on a program thread. Nests.
class RuntimeScope {
 public:
  RuntimeScope() : outer_(t_in_runtime) { t_in_runtime = true; }
  ~RuntimeScope() { t_in_runtime = outer_; }
  RuntimeScope(const RuntimeScope&) = delete;
  RuntimeScope& operator=(const RuntimeScope&) = delete;

 private:
  bool outer_;
};

}  // namespace svm::rt
