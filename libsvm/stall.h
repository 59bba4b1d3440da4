// Stall report (svmrun --stall-report S): a node whose program threads spin
// in user code without ever entering the protocol says so, once.
//
// The classic case is a flag polled on shared memory without a lock (C11
// atomics, volatile spins): the node reads its own copy of the page forever,
// no fault, no message, one core at 100 %. The watchdog thread samples every
// thread of the process from /proc/self/task/*/stat: a thread that stayed
// runnable for S seconds, burning user time with no system time and no page
// fault (so no fault handled, no lock, no syscall: no protocol progress), is
// a suspect. A suspect is then sampled by a signal (its program counter and
// registers, read in the handler from the interrupted context) a few times:
// a tight loop (the same few instructions) whose registers hold the same
// address of shared memory each time is reported with that page and the pc.
// A thread computing over data moves its pointers and is left alone.
//
// Thread-safety: Start once per process; the watchdog runs on its own thread
// and touches nothing of the runtime's.
#pragma once

#include <cstdint>

namespace svm::rt {

struct StallOptions {
  double seconds = 0;  // 0: off
  uint32_t node = 0;
  uintptr_t shared_lo = 0, shared_hi = 0;  // the job's shared memory
};

void StartStallReport(const StallOptions& o);

}  // namespace svm::rt
