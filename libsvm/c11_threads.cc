#include "libsvm/c11_threads.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "libsvm/entry.h"
#include "libsvm/next_symbol.h"
#include "libsvm/sync.h"
#include "libsvm/tsd.h"

namespace svm::rt {
namespace {

int Code(int err) {
  switch (err) {
    case 0: return thrd_success;
    case ENOMEM: return thrd_nomem;
    case ETIMEDOUT: return thrd_timedout;
    case EBUSY: return thrd_busy;
    default: return thrd_error;
  }
}

// The start of a C11 thread, in the shared heap: the thread may run on
// another node, which reads it there.
struct Start {
  thrd_start_t fn;
  void* arg;
};

void* RunC11(void* p) {
  Start s = *static_cast<Start*>(p);
  Free(p);
  return reinterpret_cast<void*>(intptr_t(s.fn(s.arg)));
}

pthread_mutex_t* M(mtx_t* m) { return reinterpret_cast<pthread_mutex_t*>(m); }
pthread_cond_t* C(cnd_t* c) { return reinterpret_cast<pthread_cond_t*>(c); }
static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t) && sizeof(cnd_t) == sizeof(pthread_cond_t));
static_assert(sizeof(once_flag) == sizeof(pthread_once_t) && sizeof(tss_t) == sizeof(pthread_key_t));

}  // namespace

int ThrdCreate(thrd_t* t, thrd_start_t fn, void* arg) {
  auto* s = static_cast<Start*>(Malloc(sizeof(Start)));
  if (!s) return thrd_nomem;
  *s = {fn, arg};
  pthread_t p;
  const int err = ThreadCreate(&p, nullptr, RunC11, s);
  if (err != 0) {
    Free(s);
    return err == EAGAIN ? thrd_nomem : Code(err);
  }
  *t = thrd_t(p);
  return thrd_success;
}

int ThrdJoin(thrd_t t, int* result) {
  void* v = nullptr;
  if (ThreadJoin(pthread_t(t), &v) != 0) return thrd_error;
  if (result) *result = int(intptr_t(v));
  return thrd_success;
}

int ThrdDetach(thrd_t t) { return Code(ThreadDetach(pthread_t(t))); }
thrd_t ThrdCurrent() { return thrd_t(ThreadSelf()); }
void ThrdExit(int result) { ThreadExit(reinterpret_cast<void*>(intptr_t(result))); }

int MtxInit(mtx_t* m, int type) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  if (type & mtx_recursive) pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  const int err = pthread_mutex_init(M(m), &a);
  pthread_mutexattr_destroy(&a);
  return Code(err);
}

int MtxLock(mtx_t* m) { return Code(pthread_mutex_lock(M(m))); }
int MtxTimedLock(mtx_t* m, const timespec* abstime) { return Code(pthread_mutex_timedlock(M(m), abstime)); }
int MtxTryLock(mtx_t* m) { return Code(pthread_mutex_trylock(M(m))); }
int MtxUnlock(mtx_t* m) { return Code(pthread_mutex_unlock(M(m))); }
void MtxDestroy(mtx_t* m) { pthread_mutex_destroy(M(m)); }

int CndInit(cnd_t* c) { return Code(pthread_cond_init(C(c), nullptr)); }
int CndSignal(cnd_t* c) { return Code(pthread_cond_signal(C(c))); }
int CndBroadcast(cnd_t* c) { return Code(pthread_cond_broadcast(C(c))); }
int CndWait(cnd_t* c, mtx_t* m) { return Code(pthread_cond_wait(C(c), M(m))); }
int CndTimedWait(cnd_t* c, mtx_t* m, const timespec* abstime) {
  return Code(pthread_cond_timedwait(C(c), M(m), abstime));
}
void CndDestroy(cnd_t* c) { pthread_cond_destroy(C(c)); }

int TssCreate(tss_t* key, tss_dtor_t destructor) { return Code(KeyCreate(key, destructor)); }
void* TssGet(tss_t key) { return GetSpecific(key); }
int TssSet(tss_t key, void* value) { return Code(SetSpecific(key, value)); }
void TssDelete(tss_t key) { KeyDelete(key); }

void CallOnce(once_flag* flag, void (*fn)()) { pthread_once(reinterpret_cast<pthread_once_t*>(flag), fn); }

}  // namespace svm::rt
