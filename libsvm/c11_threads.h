// C11 threads (<threads.h>) on svm's pthreads. glibc implements them with
// internal calls that bypass the interposed pthread symbols, so each is
// routed here: thrd_* to svm threads, mtx_*/cnd_* to svm's objects, tss_* to
// job-wide keys (tsd.h), call_once to pthread_once. Error numbers map to the
// thrd_* codes as glibc maps them.
#pragma once

#include <threads.h>

namespace svm::rt {

int ThrdCreate(thrd_t* t, thrd_start_t fn, void* arg);
int ThrdJoin(thrd_t t, int* result);
int ThrdDetach(thrd_t t);
thrd_t ThrdCurrent();
[[noreturn]] void ThrdExit(int result);

int MtxInit(mtx_t* m, int type);
int MtxLock(mtx_t* m);
int MtxTimedLock(mtx_t* m, const timespec* abstime);
int MtxTryLock(mtx_t* m);
int MtxUnlock(mtx_t* m);
void MtxDestroy(mtx_t* m);

int CndInit(cnd_t* c);
int CndSignal(cnd_t* c);
int CndBroadcast(cnd_t* c);
int CndWait(cnd_t* c, mtx_t* m);
int CndTimedWait(cnd_t* c, mtx_t* m, const timespec* abstime);
void CndDestroy(cnd_t* c);

int TssCreate(tss_t* key, tss_dtor_t destructor);
void* TssGet(tss_t key);
int TssSet(tss_t key, void* value);
void TssDelete(tss_t key);

void CallOnce(once_flag* flag, void (*fn)());

}  // namespace svm::rt
