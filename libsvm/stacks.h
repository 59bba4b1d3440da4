// Program threads' stacks, each node's in a window of its own.
//
// pthreads programs hand pointers to stack variables to other threads
// (pthread_create(&t, 0, f, &args[i]) with args local to main). Stacks are
// private to a node, and with glibc's stacks a thread on another node read
// its own process's memory at that address (the same addresses hold the
// same kind of data in every process of a job): a wrong answer, silently.
// Now every program thread's stack, main's included, lies in its node's
// window of address space, which every other node keeps inaccessible: such
// an access ends the job with a line that says what happened (prim/signal.h
// asks DescribeStackAddress).
//
// Sharing stacks instead would run the runtime on pages the protocol
// write-protects and invalidates while the runtime holds its locks.
#pragma once

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

namespace svm::rt {

// Reserves every node's window (inaccessible). Called once at start-up;
// false when the address space is taken: threads then keep glibc's stacks
// (NewStack returns nullptr).
bool ReserveStackWindows(uint32_t self, uint32_t nodes);

// The stack size a thread created with attr (nullptr: defaults) gets from
// glibc: attr's, else the process default (RLIMIT_STACK).
size_t StackSize(const pthread_attr_t* attr);
// The stack size of the main thread: RLIMIT_STACK, 1 GiB when unlimited
// (a window's address space, committed only where touched).
size_t MainStackSize();

// A private stack of `size` bytes in this node's window, below a guard
// page; nullptr when there is no window or no room left in it.
void* NewStack(size_t size);
void FreeStack(void* stack, size_t size);

// For a fatal fault: if addr is in another node's window, writes a
// sentence saying so into buf (NUL-terminated) and returns its length;
// else 0. Async-signal-safe.
size_t DescribeStackAddress(uintptr_t addr, char* buf, size_t n);

}  // namespace svm::rt
