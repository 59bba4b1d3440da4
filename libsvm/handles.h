// glibc calls that take a pthread_t. svm's handles (runtime.h: tag | node |
// number) are not glibc thread pointers, so each call maps the handle first:
//   a thread of this node   -> glibc's call with glibc's handle;
//   a thread of another node -> ENOTSUP (pthread_kill and pthread_sigqueue
//                              included: a signal cannot cross nodes), with
//                              a one-line note on stderr the first time;
//   an unknown handle        -> ESRCH.
// A handle that is not svm's (a thread the runtime did not start) goes to
// glibc unchanged. pthread_cancel and the non-portable joins are refused
// (ENOTSUP and a note): cancellation would unwind through the runtime.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>

namespace svm::rt {

int SetName(pthread_t t, const char* name);
int GetName(pthread_t t, char* name, size_t len);
int Kill(pthread_t t, int sig);
int Sigqueue(pthread_t t, int sig, const union sigval value);
int GetSchedParam(pthread_t t, int* policy, sched_param* param);
int SetSchedParam(pthread_t t, int policy, const sched_param* param);
int SetSchedPrio(pthread_t t, int prio);
int GetAttr(pthread_t t, pthread_attr_t* attr);
int GetAffinity(pthread_t t, size_t size, cpu_set_t* set);
int SetAffinity(pthread_t t, size_t size, const cpu_set_t* set);
int GetCpuClockId(pthread_t t, clockid_t* clock);
int Cancel(pthread_t t);
int TryJoin(pthread_t t, void** value);
int TimedJoin(pthread_t t, void** value, const timespec* abstime);
int ClockJoin(pthread_t t, void** value, clockid_t clock, const timespec* abstime);

}  // namespace svm::rt
