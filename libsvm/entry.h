// The runtime's side of every symbol libsvm interposes (interpose.cc
// forwards each one here). Allocations are routed by who asks:
//   a program thread        -> the shared heap
//   the runtime, any thread -> glibc (private)
//   anyone before start-up  -> the bootstrap arena (private)
// and frees by the address of the block.
#pragma once

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

namespace svm::alloc {
class Heap;
}

namespace svm::rt {

using MainFn = int (*)(int, char**, char**);
int StartMain(MainFn main, int argc, char** argv, void (*init)(), void (*fini)(),
              void (*rtld_fini)(), void* stack_end);
[[noreturn]] void ExitJob(int status);
// Makes `heap` the shared heap of program threads. Runtime::Start calls it
// before the node serves anyone: from then on, another node may start a
// program thread here, while this node's main thread is still starting up.
void UseSharedHeap(alloc::Heap* heap);
// fork() inside a job is refused (-1, ENOSYS, with a message): the child
// would share this node's frames without a runtime. posix_spawn, system and
// popen do not go through it and work.
pid_t Fork();

void* Malloc(size_t n);
void Free(void* p);
void* Calloc(size_t n, size_t size);
void* Realloc(void* p, size_t n);
void* ReallocArray(void* p, size_t n, size_t size);
int PosixMemalign(void** out, size_t align, size_t n);
void* AlignedAlloc(size_t align, size_t n);
void* Memalign(size_t align, size_t n);
void* Valloc(size_t n);
void* Pvalloc(size_t n);
size_t UsableSize(void* p);
// Returns p, a block of n bytes that the code at `caller` (the allocation's
// return address) asked for. A block libc asked for is prefaulted for
// writing: libc fills some of its buffers with its own read(2), which no
// gate sees (a stream's buffer: nsswitch.conf, /etc/passwd, a time zone
// file), and under the SIGBUS and mprotect backends the kernel cannot fill
// a fresh shared page (getpwuid failed with EFAULT, localtime fell back to
// UTC). The block stays in the shared heap: what libc returns (strdup,
// getline) may be shared.
void* ReadyForLibc(void* p, size_t n, const void* caller);

int ThreadCreate(pthread_t* t, const pthread_attr_t* attr, void* (*start)(void*), void* arg);
int ThreadJoin(pthread_t t, void** value);
int ThreadDetach(pthread_t t);
pthread_t ThreadSelf();
[[noreturn]] void ThreadExit(void* value);

int NodeIdOfCaller();
int NodeCount();

}  // namespace svm::rt
