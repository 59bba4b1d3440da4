// Synchronisation objects of the program, made acquire/release points of the
// protocol. An object's identity is its address, wherever it lives (shared
// heap, globals, a thread's stack).
//
//   mutex, rwlock, spin lock   a protocol lock (rwlocks are exclusive)
//   barrier                    a protocol barrier; the count lives in the
//                              object (written by init, shared memory)
//   condition variable         a sequence number in the object, guarded by
//                              a protocol lock of its own; waiters sleep,
//                              each on a word of its own, and mark their
//                              node in the object's mask of waiting nodes:
//                              a signal wakes one waiter of its own node or
//                              sends one waiting node a wake-up (there, all
//                              waiters of the object return; POSIX allows
//                              the spurious ones). Nothing polls.
//   semaphore                  its value in the object, under a lock of its
//                              own; waiters as for condition variables
//   once                       a protocol lock around the control word
//   create / join              locks pinned to the creator's / the thread's
//                              node (threads.cc)
// In a job of one node the program's calls go to glibc (NativeSync).
#pragma once

#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <time.h>

#include <optional>

#include "libsvm/stats.h"

namespace svm::rt {

int MutexInit(pthread_mutex_t* m, const pthread_mutexattr_t* attr);
int MutexLock(pthread_mutex_t* m);
int MutexTryLock(pthread_mutex_t* m);
// Timed variants: ETIMEDOUT at abstime on `clock` (REALTIME or MONOTONIC;
// the plain timed forms use REALTIME, cond_timedwait the condition's clock).
int MutexTimedLock(pthread_mutex_t* m, const timespec* abstime);
int MutexClockLock(pthread_mutex_t* m, clockid_t clock, const timespec* abstime);
int MutexUnlock(pthread_mutex_t* m);
int MutexDestroy(pthread_mutex_t* m);

int CondInit(pthread_cond_t* c, const pthread_condattr_t* attr);
int CondWait(pthread_cond_t* c, pthread_mutex_t* m);
int CondTimedWait(pthread_cond_t* c, pthread_mutex_t* m, const timespec* abstime);
int CondClockWait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock, const timespec* abstime);
int CondSignal(pthread_cond_t* c);
int CondBroadcast(pthread_cond_t* c);
int CondDestroy(pthread_cond_t* c);

int BarrierInit(pthread_barrier_t* b, const pthread_barrierattr_t* attr, unsigned count);
int BarrierWait(pthread_barrier_t* b);
int BarrierDestroy(pthread_barrier_t* b);

int RwlockInit(pthread_rwlock_t* l, const pthread_rwlockattr_t* attr);
int RwlockLock(pthread_rwlock_t* l);
int RwlockTryLock(pthread_rwlock_t* l);
int RwlockTimedLock(pthread_rwlock_t* l, const timespec* abstime);
int RwlockClockLock(pthread_rwlock_t* l, clockid_t clock, const timespec* abstime);
int RwlockUnlock(pthread_rwlock_t* l);
int RwlockDestroy(pthread_rwlock_t* l);

int SpinInit(pthread_spinlock_t* l, int pshared);
int SpinLock(pthread_spinlock_t* l);
int SpinTryLock(pthread_spinlock_t* l);
int SpinUnlock(pthread_spinlock_t* l);
int SpinDestroy(pthread_spinlock_t* l);

int SemInit(sem_t* s, int pshared, unsigned value);
int SemWait(sem_t* s);
int SemTryWait(sem_t* s);
int SemTimedWait(sem_t* s, const timespec* abstime);
int SemClockWait(sem_t* s, clockid_t clock, const timespec* abstime);
int SemPost(sem_t* s);
int SemGetValue(sem_t* s, int* value);
int SemDestroy(sem_t* s);
// Refused for program threads (ENOTSUP and a one-line message).
sem_t* SemOpen(const char* name, int oflag, mode_t mode, unsigned value);

int Once(pthread_once_t* once, void (*init)());
// C++ function-local statics: __cxa_guard_acquire/release/abort, job-wide
// for guards in shared memory.
int GuardAcquire(uint64_t* g);
void GuardRelease(uint64_t* g);
void GuardAbort(uint64_t* g);

// Whether the runtime handles synchronisation (a program thread of a running
// job); otherwise the interposed calls go to glibc.
bool Managed();
// Whether a program thread's synchronisation goes to glibc although it is
// Managed: in a job of one node, where there is nobody to be coherent with
// (timed as lock and barrier waits when --stats is on).
bool NativeSync();
// A glibc call that may block, made for a program thread under NativeSync:
// charged to `category` and counted when --stats is on.
template <typename Call>
auto NativeWait(stats::Category category, std::optional<stats::Counter> counter, Call call) {
  stats::Scope timing(category);
  if (stats::ThreadStats* st = counter ? stats::Current() : nullptr) st->Count(*counter);
  return call();
}

}  // namespace svm::rt
