#include "libsvm/sync.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "libsvm/next_symbol.h"
#include "libsvm/runtime.h"
#include "libsvm/thread_state.h"

namespace svm::rt {
namespace {


Runtime& Rt() { return *Runtime::Get(); }
template <typename T>
LockId Id(T* p) {
  return reinterpret_cast<LockId>(p);
}
// The lock guarding an object's own state (condition, semaphore): distinct
// from the object's address, which may be a mutex's.
LockId StateLock(const void* p) { return Id(p) + 1; }

// State of objects outside shared memory (a thread's stack, glibc's heap):
// such objects are seen by the threads of one node only.
struct PrivateState {
  std::mutex mu;
  std::unordered_map<uintptr_t, uint64_t> words;
};
PrivateState& Private() {
  static auto* s = new PrivateState;
  return *s;
}

// A 64-bit word of an object's state: in the object if it is in shared
// memory, else in the node's private table. REQUIRES: the object's state
// lock is held (so the protocol makes the word coherent).
class StateWord {
 public:
  StateWord(void* object, size_t offset) : object_(object), offset_(offset) {}
  uint64_t Get() const {
    if (Rt().IsShared(object_)) return *Word();
    std::lock_guard<std::mutex> l(Private().mu);
    return Private().words[Key()];
  }
  void Set(uint64_t v) {
    if (Rt().IsShared(object_)) {
      *Word() = v;
      return;
    }
    std::lock_guard<std::mutex> l(Private().mu);
    Private().words[Key()] = v;
  }

 private:
  uint64_t* Word() const { return reinterpret_cast<uint64_t*>(static_cast<char*>(object_) + offset_); }
  uintptr_t Key() const { return reinterpret_cast<uintptr_t>(object_) + offset_; }
  void* object_;
  size_t offset_;
};

// Objects' layouts over glibc's types (all large enough).
constexpr uint64_t kMagic = 0x53564d0000000000ull;  // "SVM" in the top bytes
// Waiters: the nodes (Runtime::NodeBit) with a thread waiting for the object
// to change (Join, TakeWaiters below). kSemPosts counts posts, kCondSeq
// signals: each starts the search for a node to wake one further round the
// mask, so that no waiting node is passed over for ever.
constexpr size_t kSemValue = 0, kSemMagic = 8, kSemWaiters = 16, kSemPosts = 24;
constexpr size_t kBarrierCount = 0, kBarrierMagic = 8;
// kCondClock: the clock of pthread_timedwait (pthread_condattr_setclock);
// 0 (a static initialiser) is CLOCK_REALTIME.
constexpr size_t kCondSeq = 0, kCondWaiters = 8, kCondClock = 16;
static_assert(sizeof(sem_t) >= 32 && sizeof(pthread_barrier_t) >= 16 && sizeof(pthread_cond_t) >= 24);

// A node's bit stands for its waiting threads that are not woken yet
// (Runtime::SyncWaiter), so a signal may take it only while one of them
// waits: the bit is set when one joins, and cleared when the last one not
// woken leaves (timed out) or is woken. Past 64 nodes a bit is shared by
// several nodes (NodeBit), so no node can clear it and a signal wakes every
// waiter. REQUIRES (all three): the object's state lock is held.
using Waiter = Runtime::SyncWaiter;

// Sets (or clears) this node's bit.
void Mark(void* object, size_t offset, bool on = true) {
  StateWord w(object, offset);
  const uint64_t bit = Runtime::NodeBit(Rt().self()), mask = w.Get();
  if (bool(mask & bit) != on) w.Set(mask ^ bit);
}

void Join(Waiter* waiter, void* object, size_t offset) {
  waiter->object = object;
  Rt().JoinSync(waiter);
  Mark(object, offset);
}

void Leave(Waiter* waiter, void* object, size_t offset) {
  if (!Rt().LeaveSync(waiter) && !Rt().NodeBitsShared()) Mark(object, offset, false);
}

// The lowest set bit of `mask` at or after bit `cursor % 64`, going round.
uint64_t PickOne(uint64_t mask, uint64_t cursor) {
  const int s = int(cursor % 64);
  const uint64_t rotated = std::rotr(mask, s);
  return std::rotl(rotated & (~rotated + 1), s);
}

// Wakes the object's waiters: one node's (a signal) or every node's (all).
// This node's are woken here and now, one thread for a signal (its bit
// stays while another waits); the other nodes' bits are returned, to be
// woken (WakeSyncNodes) once the state lock is let go. REQUIRES: the
// object's state lock is held.
uint64_t TakeWaiters(void* object, size_t offset, bool all, uint64_t cursor) {
  StateWord w(object, offset);
  const uint64_t mask = w.Get(), self = Runtime::NodeBit(Rt().self());
  all = all || Rt().NodeBitsShared();
  const uint64_t taken = all ? mask : PickOne(mask, cursor);
  uint64_t left = mask & ~taken;
  if ((taken & self) && Rt().WakeSyncHere(object, all)) left |= self;
  if (left != mask) w.Set(left);
  return taken;
}

int64_t NanosUntil(clockid_t clock, const timespec* abstime) {
  timespec now;
  clock_gettime(clock, &now);
  return (int64_t(abstime->tv_sec) - now.tv_sec) * 1'000'000'000 + (abstime->tv_nsec - now.tv_nsec);
}

// Waits for the waiter to be woken, or until abstime (on `clock`; none if
// null); false, without waiting, once abstime passed. Nothing polls: a
// waiter joins the object's waiters under its lock before it looks at the
// object; whoever changes it later wakes them under the same lock (or sends
// their nodes a SyncWake after it). (A look took the object's lock, pulling
// it away from the node that would signal.)
bool WaitForWake(Waiter* waiter, clockid_t clock, const timespec* abstime) {
  int64_t left = -1;
  if (abstime && (left = NanosUntil(clock, abstime)) <= 0) return false;
  Rt().SleepSync(waiter, left);
  return true;
}

// The clocks glibc accepts for timed waits.
bool ValidClock(clockid_t clock) { return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC; }
bool ValidTime(const timespec* t) { return t && t->tv_nsec >= 0 && t->tv_nsec < 1'000'000'000; }

// abstime on `clock` as a deadline on Runtime::MonotonicNs, or EINVAL.
int Deadline(clockid_t clock, const timespec* abstime, int64_t* out) {
  if (!ValidClock(clock) || !ValidTime(abstime)) return EINVAL;
  *out = Runtime::MonotonicNs() + NanosUntil(clock, abstime);
  return 0;
}

// Process-shared objects are made coherent among the job's threads, like any
// other; a process outside the job that maps the same memory is not
// synchronised with them. Said once per kind of object, at its init.
enum SharedKind : uint32_t { kMutexKind, kCondKind, kBarrierKind, kRwlockKind, kSpinKind, kSemKind };
void NoteProcessShared(SharedKind kind, const void* object) {
  static constexpr const char* kWhat[] = {"mutex",           "condition variable", "barrier",
                                          "read-write lock", "spin lock",          "semaphore"};
  static std::atomic<uint32_t> said{0};
  if (said.fetch_or(1u << kind) & (1u << kind)) return;
  const char* what = kWhat[kind];
  spdlog::warn(
      "process-shared {} at {}: svm synchronises it among this job's threads only; another "
      "process using it is not synchronised with them",
      what, object);
}

int MutexKind(pthread_mutex_t* m) {
  if (!Rt().IsShared(m)) return m->__data.__kind & 3;  // private: this node's only
  return m->__data.__kind & 3;
}

// Owners of recursive and error-checking mutexes held on this node.
struct Owner {
  pthread_t thread;
  unsigned count;
  int kind;
};
struct Owners {
  std::mutex mu;
  std::unordered_map<LockId, Owner> held;
};
Owners& OwnerTable() {
  static auto* o = new Owners;
  return *o;
}

}  // namespace

bool Managed() { return Runtime::Get() && t_app && !t_in_runtime; }
bool NativeSync() { return Rt().options().nodes == 1; }

// ---- mutexes ----

SVM_NEXT_FN(real_mutex_init, int (*)(pthread_mutex_t*, const pthread_mutexattr_t*),
            "pthread_mutex_init");

int MutexInit(pthread_mutex_t* m, const pthread_mutexattr_t* attr) {
  RuntimeScope scope;
  int pshared = PTHREAD_PROCESS_PRIVATE;
  if (attr && pthread_mutexattr_getpshared(attr, &pshared) == 0 && pshared == PTHREAD_PROCESS_SHARED)
    NoteProcessShared(kMutexKind, m);
  return real_mutex_init.get()(m, attr);  // sets the kind in the object
}

// The kind is read only once the mutex is ours: before, its page may be
// stale here, and reading it fetches a page that the acquire may invalidate
// at once (a fetch per hand-off when the mutex shares a page with its data).
// A recursive or error-checking mutex this thread holds is in the owner
// table, so a relock needs no read either.
static int MutexLockUntil(pthread_mutex_t* m, const int64_t* deadline) {
  RuntimeScope scope;
  {
    Owners& o = OwnerTable();
    std::lock_guard<std::mutex> l(o.mu);
    auto it = o.held.find(Id(m));
    if (it != o.held.end() && pthread_equal(it->second.thread, pthread_self())) {
      if (it->second.kind == PTHREAD_MUTEX_ERRORCHECK) return EDEADLK;
      ++it->second.count;
      return 0;
    }
  }
  if (!deadline) {
    Rt().Acquire(Id(m));
  } else if (Rt().HeldByCaller(Id(m))) {
    // A normal mutex this thread holds: glibc waits out the deadline.
    if (int64_t left = *deadline - Runtime::MonotonicNs(); left > 0)
      (void)!usleep(useconds_t(left / 1000));
    return ETIMEDOUT;
  } else if (!Rt().AcquireUntil(Id(m), *deadline)) {
    return ETIMEDOUT;
  }
  const int kind = MutexKind(m);
  if (kind != PTHREAD_MUTEX_NORMAL && kind != PTHREAD_MUTEX_ADAPTIVE_NP) {
    std::lock_guard<std::mutex> l(OwnerTable().mu);
    OwnerTable().held[Id(m)] = {pthread_self(), 1, kind};
  }
  return 0;
}

// A try-lock takes a lock whose token is here and idle at once; one held by
// a thread of this node is busy. One elsewhere cannot be told free from held
// without asking, and asking is the acquire: it is asked for and waited for
// at most kTryRemoteNs (hand-offs take 0.1-1 ms, more on a loaded host),
// then EBUSY; the token, if it comes later, stays here idle for the next
// try. Waiting without bound, as before, deadlocked two threads that each
// hold one lock and try the other's, the pattern try-locks are for.
static constexpr int64_t kTryRemoteNs = 5'000'000;

int MutexTryLock(pthread_mutex_t* m) {
  RuntimeScope scope;
  if (Rt().HeldOnThisNode(Id(m))) {
    const int kind = MutexKind(m);
    if (kind == PTHREAD_MUTEX_RECURSIVE) return MutexLock(m);
    return EBUSY;
  }
  const int64_t deadline = Runtime::MonotonicNs() + kTryRemoteNs;
  const int err = MutexLockUntil(m, &deadline);
  return err == ETIMEDOUT ? EBUSY : err;
}

int MutexLock(pthread_mutex_t* m) { return MutexLockUntil(m, nullptr); }

int MutexClockLock(pthread_mutex_t* m, clockid_t clock, const timespec* abstime) {
  int64_t deadline = 0;
  if (int err = Deadline(clock, abstime, &deadline); err != 0) return err;
  return MutexLockUntil(m, &deadline);
}

int MutexTimedLock(pthread_mutex_t* m, const timespec* abstime) {
  return MutexClockLock(m, CLOCK_REALTIME, abstime);
}

// Without reading the kind: a recursive or error-checking mutex held by this
// thread is in the owner table; any other mutex this thread holds is normal,
// and one it does not hold fails in Release.
int MutexUnlock(pthread_mutex_t* m) {
  RuntimeScope scope;
  {
    Owners& o = OwnerTable();
    std::lock_guard<std::mutex> l(o.mu);
    auto it = o.held.find(Id(m));
    if (it != o.held.end()) {
      if (!pthread_equal(it->second.thread, pthread_self())) return EPERM;
      if (--it->second.count > 0) return 0;
      o.held.erase(it);
    }
  }
  return Rt().Release(Id(m)) ? 0 : EPERM;
}

int MutexDestroy(pthread_mutex_t*) { return 0; }

// ---- condition variables ----

int CondInit(pthread_cond_t* c, const pthread_condattr_t* attr) {
  RuntimeScope scope;
  int pshared = PTHREAD_PROCESS_PRIVATE;
  if (attr && pthread_condattr_getpshared(attr, &pshared) == 0 && pshared == PTHREAD_PROCESS_SHARED)
    NoteProcessShared(kCondKind, c);
  clockid_t clock = CLOCK_REALTIME;
  if (attr && pthread_condattr_getclock(attr, &clock) != 0) clock = CLOCK_REALTIME;
  Rt().Acquire(StateLock(c));
  StateWord(c, kCondSeq).Set(0);
  StateWord(c, kCondWaiters).Set(0);
  StateWord(c, kCondClock).Set(uint64_t(clock));
  Rt().Release(StateLock(c));
  return 0;
}

// Whether the condition was signalled since `seq`; if so (or `leave`) the
// caller is no longer one of its waiters, else it waits again.
static bool Signalled(pthread_cond_t* c, uint64_t seq, Waiter* waiter, bool leave) {
  Rt().Acquire(StateLock(c));
  const bool signalled = StateWord(c, kCondSeq).Get() != seq;
  if (signalled || leave) {
    Leave(waiter, c, kCondWaiters);
  } else {
    Rt().RearmSync(waiter);
  }
  Rt().Release(StateLock(c));
  return signalled;
}

// clock < 0: the condition's own clock.
static int CondWaitUntil(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock,
                         const timespec* abstime) {
  RuntimeScope scope;
  if (abstime && clock >= 0 && !ValidClock(clock)) return EINVAL;
  if (abstime && !ValidTime(abstime)) return EINVAL;
  Waiter waiter;
  Rt().Acquire(StateLock(c));
  const uint64_t seq = StateWord(c, kCondSeq).Get();
  Join(&waiter, c, kCondWaiters);
  const auto own = clockid_t(StateWord(c, kCondClock).Get());
  Rt().Release(StateLock(c));
  if (clock < 0) clock = ValidClock(own) ? own : CLOCK_REALTIME;
  if (int err = MutexUnlock(m); err != 0) {
    Signalled(c, seq, &waiter, true);
    return err;
  }
  // No look before the first sleep: a signal since the join that picked
  // this node has woken this waiter already (SleepSync returns at once).
  int result = 0;
  do {
    if (!WaitForWake(&waiter, clock, abstime)) {
      // A signal that came with the deadline is taken, not lost.
      if (!Signalled(c, seq, &waiter, true)) result = ETIMEDOUT;
      break;
    }
  } while (!Signalled(c, seq, &waiter, false));
  MutexLock(m);
  return result;
}

int CondTimedWait(pthread_cond_t* c, pthread_mutex_t* m, const timespec* abstime) {
  return CondWaitUntil(c, m, -1, abstime);
}
int CondClockWait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock, const timespec* abstime) {
  if (!ValidClock(clock)) return EINVAL;
  return CondWaitUntil(c, m, clock, abstime);
}
int CondWait(pthread_cond_t* c, pthread_mutex_t* m) { return CondWaitUntil(c, m, -1, nullptr); }

// Waiters compare a sequence number, not a count: every waiter a signal
// wakes returns (on another node, all of that node's waiters, a spurious
// wake-up for all but one, which POSIX allows).
static int Wake(pthread_cond_t* c, bool all) {
  RuntimeScope scope;
  Rt().Acquire(StateLock(c));
  StateWord seq(c, kCondSeq);
  seq.Set(seq.Get() + 1);
  const uint64_t waiters = TakeWaiters(c, kCondWaiters, all, seq.Get());
  Rt().Release(StateLock(c));
  Rt().WakeSyncNodes(waiters, c);
  return 0;
}

int CondBroadcast(pthread_cond_t* c) { return Wake(c, true); }
int CondSignal(pthread_cond_t* c) { return Wake(c, false); }
int CondDestroy(pthread_cond_t*) { return 0; }

// ---- barriers ----

int BarrierInit(pthread_barrier_t* b, const pthread_barrierattr_t* attr, unsigned count) {
  if (count == 0) return EINVAL;
  RuntimeScope scope;
  int pshared = PTHREAD_PROCESS_PRIVATE;
  if (attr && pthread_barrierattr_getpshared(attr, &pshared) == 0 &&
      pshared == PTHREAD_PROCESS_SHARED)
    NoteProcessShared(kBarrierKind, b);
  StateWord(b, kBarrierCount).Set(count);
  StateWord(b, kBarrierMagic).Set(kMagic);
  return 0;
}

int BarrierWait(pthread_barrier_t* b) {
  RuntimeScope scope;
  if (StateWord(b, kBarrierMagic).Get() != kMagic) return EINVAL;
  const auto count = uint32_t(StateWord(b, kBarrierCount).Get());
  return Rt().Barrier(Id(b), count) ? PTHREAD_BARRIER_SERIAL_THREAD : 0;
}

int BarrierDestroy(pthread_barrier_t* b) {
  RuntimeScope scope;
  StateWord(b, kBarrierMagic).Set(0);
  return 0;
}

// ---- read-write and spin locks: exclusive protocol locks ----

namespace {

int LockExclusive(LockId l) {
  RuntimeScope scope;
  Rt().Acquire(l);
  return 0;
}

// As MutexTryLock.
int TryLockExclusive(LockId l) {
  RuntimeScope scope;
  if (Rt().HeldOnThisNode(l)) return EBUSY;
  return Rt().AcquireUntil(l, Runtime::MonotonicNs() + kTryRemoteNs) ? 0 : EBUSY;
}

int UnlockExclusive(LockId l) {
  RuntimeScope scope;
  return Rt().Release(l) ? 0 : EPERM;
}

}  // namespace

int RwlockInit(pthread_rwlock_t* l, const pthread_rwlockattr_t* attr) {
  int pshared = PTHREAD_PROCESS_PRIVATE;
  if (attr && pthread_rwlockattr_getpshared(attr, &pshared) == 0 &&
      pshared == PTHREAD_PROCESS_SHARED)
    NoteProcessShared(kRwlockKind, l);
  return 0;
}
int RwlockLock(pthread_rwlock_t* l) { return LockExclusive(Id(l)); }
int RwlockClockLock(pthread_rwlock_t* l, clockid_t clock, const timespec* abstime) {
  RuntimeScope scope;
  int64_t deadline = 0;
  if (int err = Deadline(clock, abstime, &deadline); err != 0) return err;
  if (Rt().HeldByCaller(Id(l))) return EDEADLK;  // as glibc's
  return Rt().AcquireUntil(Id(l), deadline) ? 0 : ETIMEDOUT;
}
int RwlockTimedLock(pthread_rwlock_t* l, const timespec* abstime) {
  return RwlockClockLock(l, CLOCK_REALTIME, abstime);
}
int RwlockTryLock(pthread_rwlock_t* l) { return TryLockExclusive(Id(l)); }
int RwlockUnlock(pthread_rwlock_t* l) { return UnlockExclusive(Id(l)); }
int RwlockDestroy(pthread_rwlock_t*) { return 0; }

int SpinInit(pthread_spinlock_t* l, int pshared) {
  if (pshared == PTHREAD_PROCESS_SHARED) NoteProcessShared(kSpinKind, const_cast<const int*>(l));
  return 0;
}
int SpinLock(pthread_spinlock_t* l) { return LockExclusive(Id(l)); }
int SpinTryLock(pthread_spinlock_t* l) { return TryLockExclusive(Id(l)); }
int SpinUnlock(pthread_spinlock_t* l) { return UnlockExclusive(Id(l)); }
int SpinDestroy(pthread_spinlock_t*) { return 0; }

// ---- semaphores ----

int SemInit(sem_t* s, int pshared, unsigned value) {
  RuntimeScope scope;
  if (pshared != 0) NoteProcessShared(kSemKind, s);
  Rt().Acquire(StateLock(s));
  StateWord(s, kSemValue).Set(value);
  StateWord(s, kSemMagic).Set(kMagic);
  StateWord(s, kSemWaiters).Set(0);
  StateWord(s, kSemPosts).Set(0);
  Rt().Release(StateLock(s));
  return 0;
}

// Takes one unit if there is one; else, with a waiter, makes it one of the
// waiters (or keeps it one, waiting again). A waiter that takes a unit,
// fails or leaves (`leave`) is no longer one: *joined says. REQUIRES: s
// initialised by SemInit.
static int SemTake(sem_t* s, Waiter* waiter, bool leave, bool* joined, bool* taken) {
  Rt().Acquire(StateLock(s));
  StateWord magic(s, kSemMagic), value(s, kSemValue);
  int err = 0;
  *taken = false;
  if (magic.Get() != kMagic) {
    err = EINVAL;
  } else if (value.Get() > 0) {
    value.Set(value.Get() - 1);
    *taken = true;
  } else if (waiter && !leave) {
    if (*joined) {
      Rt().RearmSync(waiter);  // the unit its wake-up was for went to another thread
      Mark(s, kSemWaiters);
    } else {
      Join(waiter, s, kSemWaiters);
      *joined = true;
    }
  }
  if (*joined && (err != 0 || *taken || leave)) {
    Leave(waiter, s, kSemWaiters);
    *joined = false;
  }
  Rt().Release(StateLock(s));
  return err;
}

static int SemWaitUntil(sem_t* s, clockid_t clock, const timespec* abstime) {
  RuntimeScope scope;
  if (abstime && (!ValidClock(clock) || !ValidTime(abstime))) {
    errno = EINVAL;
    return -1;
  }
  Waiter waiter;
  bool joined = false, taken = false;
  while (true) {
    if (int err = SemTake(s, &waiter, false, &joined, &taken); err != 0) {
      errno = err;
      return -1;
    }
    if (taken) return 0;
    if (!WaitForWake(&waiter, clock, abstime)) {
      // A unit posted with the deadline is taken: its post woke this thread only.
      if (int err = SemTake(s, &waiter, true, &joined, &taken); err != 0) {
        errno = err;
        return -1;
      }
      if (taken) return 0;
      errno = ETIMEDOUT;
      return -1;
    }
  }
}

int SemWait(sem_t* s) { return SemWaitUntil(s, CLOCK_REALTIME, nullptr); }
int SemTimedWait(sem_t* s, const timespec* abstime) { return SemWaitUntil(s, CLOCK_REALTIME, abstime); }
int SemClockWait(sem_t* s, clockid_t clock, const timespec* abstime) {
  return SemWaitUntil(s, clock, abstime);
}

int SemTryWait(sem_t* s) {
  RuntimeScope scope;
  bool joined = false, taken = false;
  if (int err = SemTake(s, nullptr, false, &joined, &taken); err != 0) {
    errno = err;
    return -1;
  }
  if (taken) return 0;
  errno = EAGAIN;
  return -1;
}

int SemPost(sem_t* s) {
  RuntimeScope scope;
  Rt().Acquire(StateLock(s));
  StateWord magic(s, kSemMagic), value(s, kSemValue), posts(s, kSemPosts);
  const bool ok = magic.Get() == kMagic;
  uint64_t waiters = 0;
  if (ok) {
    value.Set(value.Get() + 1);
    posts.Set(posts.Get() + 1);
    waiters = TakeWaiters(s, kSemWaiters, false, posts.Get());
  }
  Rt().Release(StateLock(s));
  if (!ok) {
    errno = EINVAL;
    return -1;
  }
  Rt().WakeSyncNodes(waiters, s);
  return 0;
}

int SemGetValue(sem_t* s, int* out) {
  RuntimeScope scope;
  Rt().Acquire(StateLock(s));
  *out = int(StateWord(s, kSemValue).Get());
  Rt().Release(StateLock(s));
  return 0;
}

int SemDestroy(sem_t*) { return 0; }

// A named semaphore lives in a file each node maps privately: svm cannot
// make it job-wide, so a program thread is refused.
SVM_NEXT_FN(real_sem_open, sem_t* (*)(const char*, int, ...), "sem_open");
sem_t* SemOpen(const char* name, int oflag, mode_t mode, unsigned value) {
  if (Managed()) {
    static const char kMsg[] =
        "svm: sem_open (named semaphores) is not supported: use sem_init on shared memory\n";
    (void)!write(2, kMsg, sizeof(kMsg) - 1);
    errno = ENOTSUP;
    return SEM_FAILED;
  }
  return real_sem_open.get()(name, oflag, mode, value);
}

// ---- once ----

int Once(pthread_once_t* once, void (*init)()) {
  RuntimeScope scope;
  Rt().Acquire(Id(once));
  StateWord done(once, 0);
  // pthread_once_t is an int: only its own 4 bytes are ours.
  const bool first = Rt().IsShared(once) ? (*once == 0) : (done.Get() == 0);
  if (first) {
    {
      t_in_runtime = false;  // init is the program's code
      init();
      t_in_runtime = true;
    }
    if (Rt().IsShared(once)) *once = 1;
    else done.Set(1);
  }
  Rt().Release(Id(once));
  return 0;
}

// ---- C++ function-local statics (the Itanium ABI's guards) ----

// libstdc++'s guard takes an atomic on the guard word and waits on a futex
// there: across nodes neither works (each node has its own frame), and a
// thread on node 1 waited forever for the initializer running on node 0.
// Here a guard in shared memory is a job-wide lock held while the
// initializer runs; the first byte says it ran. Guards elsewhere (a
// library's statics) and threads that are not the program's go to
// libstdc++.
SVM_NEXT_FN(real_guard_acquire, int (*)(uint64_t*), "__cxa_guard_acquire");
SVM_NEXT_FN(real_guard_release, void (*)(uint64_t*), "__cxa_guard_release");
SVM_NEXT_FN(real_guard_abort, void (*)(uint64_t*), "__cxa_guard_abort");

namespace {
bool OurGuard(uint64_t* g) { return Managed() && !NativeSync() && Rt().IsShared(g); }
}  // namespace

int GuardAcquire(uint64_t* g) {
  if (!OurGuard(g)) return real_guard_acquire.get()(g);
  RuntimeScope scope;
  Rt().Acquire(Id(g));
  if (*reinterpret_cast<volatile uint8_t*>(g) == 0) return 1;  // ours to run: the lock stays held
  Rt().Release(Id(g));
  return 0;
}

void GuardRelease(uint64_t* g) {
  if (!OurGuard(g)) return real_guard_release.get()(g);
  RuntimeScope scope;
  *reinterpret_cast<volatile uint8_t*>(g) = 1;
  Rt().Release(Id(g));
}

void GuardAbort(uint64_t* g) {
  if (!OurGuard(g)) return real_guard_abort.get()(g);
  RuntimeScope scope;
  Rt().Release(Id(g));
}

}  // namespace svm::rt
