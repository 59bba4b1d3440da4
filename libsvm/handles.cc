#include "libsvm/handles.h"

#include <errno.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "libsvm/next_symbol.h"
#include "libsvm/runtime.h"
#include "libsvm/syscalls.h"
#include "libsvm/thread_state.h"

namespace svm::rt {
namespace {

// Says once per call that it is not supported for `what`.
void Note(const char* call, const char* what, std::atomic<bool>* said) {
  if (said->exchange(true)) return;
  char line[200];
  const int n = snprintf(line, sizeof line, "svm: %s on %s is not supported (ENOTSUP)\n", call, what);
  if (n > 0) (void)!write(2, line, size_t(n) < sizeof line ? size_t(n) : sizeof line - 1);
}

// Maps t to glibc's handle in *real: 0, ENOTSUP (another node: noted) or ESRCH.
int Resolve(pthread_t t, pthread_t* real, const char* call, std::atomic<bool>* said) {
  const auto h = uint64_t(t);
  if (!IsHandle(h) || !Runtime::Get()) {
    *real = t;
    return 0;
  }
  const int err = Runtime::Get()->RealThread(h, real);
  if (err == ENOTSUP) Note(call, "a thread of another node", said);
  return err;
}

}  // namespace

// One forwarding function per call: resolve, then glibc's with the real
// handle, through the system-call gate (syscalls.h) for the buffers the
// kernel reads or fills.
#define SVM_BY_HANDLE(Name, sym, Params, Args, ...)                                        \
  SVM_NEXT_FN(real_##Name, int(*) Params, #sym);                                            \
  int Name Params {                                                                         \
    static std::atomic<bool> said{false};                                                   \
    pthread_t real;                                                                         \
    if (int err = Resolve(t, &real, #sym, &said); err != 0) return err;                     \
    return GateErr(KernelBufs{__VA_ARGS__}, [&] { return real_##Name.get() Args; });                \
  }

SVM_BY_HANDLE(SetName, pthread_setname_np, (pthread_t t, const char* name), (real, name), Str(name))
SVM_BY_HANDLE(GetName, pthread_getname_np, (pthread_t t, char* name, size_t len), (real, name, len), Out(name, len))
SVM_BY_HANDLE(Kill, pthread_kill, (pthread_t t, int sig), (real, sig), )
SVM_BY_HANDLE(Sigqueue, pthread_sigqueue, (pthread_t t, int sig, const union sigval v), (real, sig, v), )
SVM_BY_HANDLE(GetSchedParam, pthread_getschedparam, (pthread_t t, int* policy, sched_param* p), (real, policy, p), OutOf(policy), OutOf(p))
SVM_BY_HANDLE(SetSchedParam, pthread_setschedparam, (pthread_t t, int policy, const sched_param* p), (real, policy, p), InOf(p))
SVM_BY_HANDLE(SetSchedPrio, pthread_setschedprio, (pthread_t t, int prio), (real, prio), )
SVM_BY_HANDLE(GetAffinity, pthread_getaffinity_np, (pthread_t t, size_t n, cpu_set_t* s), (real, n, s), Out(s, n))
SVM_BY_HANDLE(SetAffinity, pthread_setaffinity_np, (pthread_t t, size_t n, const cpu_set_t* s), (real, n, s), In(s, n))
SVM_BY_HANDLE(GetCpuClockId, pthread_getcpuclockid, (pthread_t t, clockid_t* c), (real, c), OutOf(c))

SVM_NEXT_FN(real_getattr, int (*)(pthread_t, pthread_attr_t*), "pthread_getattr_np");
// glibc allocates the attribute's CPU set and has the kernel fill it: from
// private memory (a fresh shared page would give EFAULT). attr_destroy
// frees it by its address, wherever it lies.
int GetAttr(pthread_t t, pthread_attr_t* attr) {
  static std::atomic<bool> said{false};
  pthread_t real;
  if (int err = Resolve(t, &real, "pthread_getattr_np", &said); err != 0) return err;
  RuntimeScope scope;
  return real_getattr.get()(real, attr);
}

#undef SVM_BY_HANDLE

// Refused for svm threads; glibc's for others.
#define SVM_REFUSED(Name, sym, Params, Args)                                   \
  SVM_NEXT_FN(real_##Name, int(*) Params, #sym);                          \
  int Name Params {                                                            \
    static std::atomic<bool> said{false};                                      \
    if (!IsHandle(uint64_t(t)) || !Runtime::Get()) return real_##Name.get() Args; \
    Note(#sym, "an svm thread", &said);                                        \
    return ENOTSUP;                                                            \
  }

SVM_REFUSED(Cancel, pthread_cancel, (pthread_t t), (t))
SVM_REFUSED(TryJoin, pthread_tryjoin_np, (pthread_t t, void** v), (t, v))
SVM_REFUSED(TimedJoin, pthread_timedjoin_np, (pthread_t t, void** v, const timespec* a), (t, v, a))
SVM_REFUSED(ClockJoin, pthread_clockjoin_np, (pthread_t t, void** v, clockid_t c, const timespec* a), (t, v, c, a))

#undef SVM_REFUSED

}  // namespace svm::rt
