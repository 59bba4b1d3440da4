// Process-wide SIGSEGV/SIGBUS dispatch for fault traps (internal to prim/).
//
// One handler per signal is installed the first time a trap needs it and
// stays installed (uninstalling under running threads would race). It looks
// the faulting address up in a fixed table of address ranges; a hit goes to
// the range's SignalTarget, a miss is passed to the handler that was there
// before (or, for SIG_DFL/SIG_IGN, re-raised with the default action, so a
// real crash still dies of the right signal). No malloc on the signal path.
#pragma once

#include <signal.h>

#include <cstdint>

namespace svm::prim {

class SignalTarget {
 public:
  // A kernel-generated `signo` hit [lo, hi) of this target. Runs in the
  // faulting thread in signal context; errno is saved around it.
  virtual void OnSignal(uintptr_t addr, void* ucontext) = 0;

 protected:
  ~SignalTarget() = default;
};

// Routes kernel-generated `signo` at addresses in [lo, hi) to `target`.
// Returns a slot id (>= 0), or -errno: -ENOSPC when the table is full,
// -errno of sigaction. Control path (takes a mutex).
int AddSignalTarget(int signo, uintptr_t lo, uintptr_t hi, SignalTarget* target);

// Stops routing to the slot. REQUIRES: no signal for it is being handled.
void RemoveSignalTarget(int slot);

// What the page-fault error code in a signal's ucontext says.
// write: 1 write, 0 read, -1 unknown. present: 1 the page was mapped (a
// protection fault), 0 not mapped, -1 unknown. Exact on x86-64.
struct FaultKind {
  int write;
  int present;
};
FaultKind DecodeFault(const void* ucontext);

}  // namespace svm::prim
