// The symbols a program sees from libsvm: each forwards to the runtime in one
// line. Nothing else lives here.
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "libsvm/entry.h"
#include "libsvm/next_symbol.h"
#include "libsvm/thread_state.h"

using namespace svm::rt;

extern "C" {

// Start-up: the runtime comes up before the program's constructors; node 0
// then runs main, the other nodes serve.
int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                      void (*init)(), void (*fini)(), void (*rtld_fini)(), void* stack_end) {
  return StartMain(main, argc, argv, init, fini, rtld_fini, stack_end);
}

void exit(int status) { ExitJob(status); }
pid_t fork(void) { return Fork(); }

#define SVM_CALLER __builtin_return_address(0)
void* malloc(size_t n) { return ReadyForLibc(Malloc(n), n, SVM_CALLER); }
void free(void* p) { Free(p); }
void* calloc(size_t n, size_t size) { return ReadyForLibc(Calloc(n, size), n * size, SVM_CALLER); }
void* realloc(void* p, size_t n) { return ReadyForLibc(Realloc(p, n), n, SVM_CALLER); }
void* reallocarray(void* p, size_t n, size_t size) { return ReadyForLibc(ReallocArray(p, n, size), n * size, SVM_CALLER); }
int posix_memalign(void** out, size_t align, size_t n) { return PosixMemalign(out, align, n); }
void* aligned_alloc(size_t align, size_t n) { return AlignedAlloc(align, n); }
void* memalign(size_t align, size_t n) { return Memalign(align, n); }
void* valloc(size_t n) { return Valloc(n); }
void* pvalloc(size_t n) { return Pvalloc(n); }
size_t malloc_usable_size(void* p) { return UsableSize(p); }

int pthread_create(pthread_t* t, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  return ThreadCreate(t, attr, start, arg);
}
int pthread_join(pthread_t t, void** value) { return ThreadJoin(t, value); }
int pthread_detach(pthread_t t) { return ThreadDetach(t); }
pthread_t pthread_self(void) { return ThreadSelf(); }
int pthread_equal(pthread_t a, pthread_t b) { return a == b; }
void pthread_exit(void* value) { ThreadExit(value); }

int svm_node_id(void) { return NodeIdOfCaller(); }
int svm_nodes(void) { return NodeCount(); }

}  // extern "C"

// Synchronisation: the runtime's for program threads, glibc's otherwise
// (the runtime's own threads and locks).
#include <fcntl.h>
#include <semaphore.h>
#include <stdarg.h>

#include "libsvm/sync.h"

// glibc's definitions are resolved at load (next_symbol.h): the runtime's own
// threads (the NIC's condition variables, say) call through them, and so do
// the program's threads in a job of one node (NativeSync), where the calls
// that block are timed for --stats (SVM_SYNC_WAIT: the category a wait goes
// to, and the counter it adds to; the runtime's own split of protocol and
// wait is not there to be had).
#define SVM_SYNC(ret, name, params, args, ours)            \
  SVM_NEXT_FN(real_##name, ret(*) params, #name);          \
  extern "C" ret name params {                             \
    if (Managed() && !NativeSync()) return ours args;      \
    return real_##name.get() args;                         \
  }
#define SVM_SYNC_WAIT(ret, name, params, args, ours, category, counter) \
  SVM_NEXT_FN(real_##name, ret(*) params, #name);                        \
  extern "C" ret name params {                                           \
    if (!Managed()) return real_##name.get() args;                       \
    if (!NativeSync()) return ours args;                                 \
    return NativeWait(category, counter, [&] { return real_##name.get() args; }); \
  }

SVM_SYNC(int, pthread_mutex_init, (pthread_mutex_t* m, const pthread_mutexattr_t* a), (m, a), MutexInit)
SVM_SYNC_WAIT(int, pthread_mutex_lock, (pthread_mutex_t* m), (m), MutexLock, stats::Category::kLockWait, stats::Counter::kAcquires)
SVM_SYNC(int, pthread_mutex_trylock, (pthread_mutex_t* m), (m), MutexTryLock)
SVM_SYNC_WAIT(int, pthread_mutex_timedlock, (pthread_mutex_t* m, const struct timespec* t), (m, t), MutexTimedLock, stats::Category::kLockWait, stats::Counter::kAcquires)
SVM_SYNC_WAIT(int, pthread_mutex_clocklock, (pthread_mutex_t* m, clockid_t c, const struct timespec* t), (m, c, t), MutexClockLock, stats::Category::kLockWait, stats::Counter::kAcquires)
SVM_SYNC(int, pthread_mutex_unlock, (pthread_mutex_t* m), (m), MutexUnlock)
SVM_SYNC(int, pthread_mutex_destroy, (pthread_mutex_t* m), (m), MutexDestroy)
SVM_SYNC(int, pthread_cond_init, (pthread_cond_t* c, const pthread_condattr_t* a), (c, a), CondInit)
SVM_SYNC_WAIT(int, pthread_cond_wait, (pthread_cond_t* c, pthread_mutex_t* m), (c, m), CondWait, stats::Category::kLockWait, std::nullopt)
SVM_SYNC_WAIT(int, pthread_cond_timedwait, (pthread_cond_t* c, pthread_mutex_t* m, const struct timespec* t), (c, m, t), CondTimedWait, stats::Category::kLockWait, std::nullopt)
SVM_SYNC_WAIT(int, pthread_cond_clockwait, (pthread_cond_t* c, pthread_mutex_t* m, clockid_t k, const struct timespec* t), (c, m, k, t), CondClockWait, stats::Category::kLockWait, std::nullopt)
SVM_SYNC(int, pthread_cond_signal, (pthread_cond_t* c), (c), CondSignal)
SVM_SYNC(int, pthread_cond_broadcast, (pthread_cond_t* c), (c), CondBroadcast)
SVM_SYNC(int, pthread_cond_destroy, (pthread_cond_t* c), (c), CondDestroy)
SVM_SYNC(int, pthread_barrier_init, (pthread_barrier_t* b, const pthread_barrierattr_t* a, unsigned n), (b, a, n), BarrierInit)
SVM_SYNC_WAIT(int, pthread_barrier_wait, (pthread_barrier_t* b), (b), BarrierWait, stats::Category::kBarrierWait, stats::Counter::kBarriers)
SVM_SYNC(int, pthread_barrier_destroy, (pthread_barrier_t* b), (b), BarrierDestroy)
SVM_SYNC(int, pthread_rwlock_init, (pthread_rwlock_t* l, const pthread_rwlockattr_t* a), (l, a), RwlockInit)
SVM_SYNC_WAIT(int, pthread_rwlock_rdlock, (pthread_rwlock_t* l), (l), RwlockLock, stats::Category::kLockWait, stats::Counter::kAcquires)
SVM_SYNC_WAIT(int, pthread_rwlock_wrlock, (pthread_rwlock_t* l), (l), RwlockLock, stats::Category::kLockWait, stats::Counter::kAcquires)
SVM_SYNC(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t* l), (l), RwlockTryLock)
SVM_SYNC(int, pthread_rwlock_trywrlock, (pthread_rwlock_t* l), (l), RwlockTryLock)
SVM_SYNC_WAIT(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t* l, const struct timespec* t), (l, t), RwlockTimedLock, stats::Category::kLockWait, stats::Counter::kAcquires)
SVM_SYNC_WAIT(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t* l, const struct timespec* t), (l, t), RwlockTimedLock, stats::Category::kLockWait, stats::Counter::kAcquires)
SVM_SYNC_WAIT(int, pthread_rwlock_clockrdlock, (pthread_rwlock_t* l, clockid_t c, const struct timespec* t), (l, c, t), RwlockClockLock, stats::Category::kLockWait, stats::Counter::kAcquires)
SVM_SYNC_WAIT(int, pthread_rwlock_clockwrlock, (pthread_rwlock_t* l, clockid_t c, const struct timespec* t), (l, c, t), RwlockClockLock, stats::Category::kLockWait, stats::Counter::kAcquires)
SVM_SYNC(int, pthread_rwlock_unlock, (pthread_rwlock_t* l), (l), RwlockUnlock)
SVM_SYNC(int, pthread_rwlock_destroy, (pthread_rwlock_t* l), (l), RwlockDestroy)
SVM_SYNC(int, pthread_spin_init, (pthread_spinlock_t* l, int p), (l, p), SpinInit)
SVM_SYNC_WAIT(int, pthread_spin_lock, (pthread_spinlock_t* l), (l), SpinLock, stats::Category::kLockWait, stats::Counter::kAcquires)
SVM_SYNC(int, pthread_spin_trylock, (pthread_spinlock_t* l), (l), SpinTryLock)
SVM_SYNC(int, pthread_spin_unlock, (pthread_spinlock_t* l), (l), SpinUnlock)
SVM_SYNC(int, pthread_spin_destroy, (pthread_spinlock_t* l), (l), SpinDestroy)
SVM_SYNC(int, sem_init, (sem_t* s, int p, unsigned v), (s, p, v), SemInit)
SVM_SYNC_WAIT(int, sem_wait, (sem_t* s), (s), SemWait, stats::Category::kLockWait, std::nullopt)
SVM_SYNC(int, sem_trywait, (sem_t* s), (s), SemTryWait)
SVM_SYNC_WAIT(int, sem_timedwait, (sem_t* s, const struct timespec* t), (s, t), SemTimedWait, stats::Category::kLockWait, std::nullopt)
SVM_SYNC_WAIT(int, sem_clockwait, (sem_t* s, clockid_t c, const struct timespec* t), (s, c, t), SemClockWait, stats::Category::kLockWait, std::nullopt)
SVM_SYNC(int, sem_post, (sem_t* s), (s), SemPost)
SVM_SYNC(int, sem_getvalue, (sem_t* s, int* v), (s, v), SemGetValue)
SVM_SYNC(int, sem_destroy, (sem_t* s), (s), SemDestroy)
SVM_SYNC(int, pthread_once, (pthread_once_t* o, void (*f)()), (o, f), Once)
extern "C" {
int __cxa_guard_acquire(uint64_t* g) { return GuardAcquire(g); }
void __cxa_guard_release(uint64_t* g) { GuardRelease(g); }
void __cxa_guard_abort(uint64_t* g) { GuardAbort(g); }
}  // extern "C"
extern "C" sem_t* sem_open(const char* n, int f, ...) { va_list ap; va_start(ap, f); mode_t m = f & O_CREAT ? va_arg(ap, mode_t) : 0; unsigned v = f & O_CREAT ? va_arg(ap, unsigned) : 0; va_end(ap); return SemOpen(n, f, m, v); }

// System calls and stdio calls that move data between the kernel and program
// memory: their buffers are made accessible first (syscalls.h).
#include <stdarg.h>
#include <stdio.h>

#include "libsvm/syscalls.h"

// The scanf family under its symbol names: glibc's headers redirect the C
// names to the __isoc99_ ones, so these are named through asm labels.
extern "C" {
int GnuFscanf(FILE* f, const char* fmt, ...) __asm__("fscanf");
int GnuScanf(const char* fmt, ...) __asm__("scanf");
int GnuVfscanf(FILE* f, const char* fmt, va_list ap) __asm__("vfscanf");
int GnuVscanf(const char* fmt, va_list ap) __asm__("vscanf");
int IsoFscanf(FILE* f, const char* fmt, ...) __asm__("__isoc99_fscanf");
int IsoScanf(const char* fmt, ...) __asm__("__isoc99_scanf");
int IsoVfscanf(FILE* f, const char* fmt, va_list ap) __asm__("__isoc99_vfscanf");
int IsoVscanf(const char* fmt, va_list ap) __asm__("__isoc99_vscanf");
ssize_t Getdelim2(char** l, size_t* c, int d, FILE* f) __asm__("__getdelim");
int IoGetc(FILE* f) __asm__("_IO_getc");
}

extern "C" {

ssize_t read(int fd, void* b, size_t n) { return Read(fd, b, n); }
ssize_t pread(int fd, void* b, size_t n, off_t o) { return Pread(fd, b, n, o); }
ssize_t pread64(int fd, void* b, size_t n, off64_t o) { return Pread(fd, b, n, o); }
ssize_t readv(int fd, const struct iovec* v, int c) { return Readv(fd, v, c); }
ssize_t preadv(int fd, const struct iovec* v, int c, off_t o) { return Preadv(fd, v, c, o); }
ssize_t preadv64(int fd, const struct iovec* v, int c, off64_t o) { return Preadv(fd, v, c, o); }
ssize_t recv(int fd, void* b, size_t n, int fl) { return Recv(fd, b, n, fl); }
ssize_t recvfrom(int fd, void* b, size_t n, int fl, sockaddr* a, socklen_t* al) { return Recvfrom(fd, b, n, fl, a, al); }
ssize_t recvmsg(int fd, struct msghdr* m, int fl) { return Recvmsg(fd, m, fl); }
ssize_t write(int fd, const void* b, size_t n) { return Write(fd, b, n); }
ssize_t pwrite(int fd, const void* b, size_t n, off_t o) { return Pwrite(fd, b, n, o); }
ssize_t pwrite64(int fd, const void* b, size_t n, off64_t o) { return Pwrite(fd, b, n, o); }
ssize_t writev(int fd, const struct iovec* v, int c) { return Writev(fd, v, c); }
ssize_t pwritev(int fd, const struct iovec* v, int c, off_t o) { return Pwritev(fd, v, c, o); }
ssize_t pwritev64(int fd, const struct iovec* v, int c, off64_t o) { return Pwritev(fd, v, c, o); }
ssize_t send(int fd, const void* b, size_t n, int fl) { return Send(fd, b, n, fl); }
ssize_t sendto(int fd, const void* b, size_t n, int fl, const sockaddr* a, socklen_t al) { return Sendto(fd, b, n, fl, a, al); }
ssize_t sendmsg(int fd, const struct msghdr* m, int fl) { return Sendmsg(fd, m, fl); }
ssize_t __read_chk(int fd, void* b, size_t n, size_t bl) { return ReadChk(fd, b, n, bl); }
ssize_t __pread_chk(int fd, void* b, size_t n, off_t o, size_t bl) { return PreadChk(fd, b, n, o, bl); }
ssize_t __pread64_chk(int fd, void* b, size_t n, off64_t o, size_t bl) { return PreadChk(fd, b, n, o, bl); }
ssize_t __recv_chk(int fd, void* b, size_t n, size_t bl, int fl) { return RecvChk(fd, b, n, bl, fl); }
ssize_t __recvfrom_chk(int fd, void* b, size_t n, size_t bl, int fl, sockaddr* a, socklen_t* al) { return RecvfromChk(fd, b, n, bl, fl, a, al); }

size_t fread(void* p, size_t s, size_t n, FILE* f) { return Fread(p, s, n, f); }
size_t __fread_chk(void* p, size_t pl, size_t s, size_t n, FILE* f) { return FreadChk(p, pl, s, n, f); }
size_t fwrite(const void* p, size_t s, size_t n, FILE* f) { return Fwrite(p, s, n, f); }
char* fgets(char* s, int n, FILE* f) { return Fgets(s, n, f); }
char* __fgets_chk(char* s, size_t sl, int n, FILE* f) { return FgetsChk(s, sl, n, f); }
int fgetc(FILE* f) { return Fgetc(f); }
int getc(FILE* f) { return Getc(f); }
int IoGetc(FILE* f) { return Getc(f); }
int getchar(void) { return Getchar(); }
int __uflow(FILE* f) { return Uflow(f); }
ssize_t getdelim(char** l, size_t* c, int d, FILE* f) { return Getdelim(l, c, d, f); }
ssize_t Getdelim2(char** l, size_t* c, int d, FILE* f) { return Getdelim(l, c, d, f); }
ssize_t getline(char** l, size_t* c, FILE* f) { return Getline(l, c, f); }
int GnuVfscanf(FILE* f, const char* fmt, va_list ap) { return Vfscanf(f, fmt, ap, false); }
int GnuVscanf(const char* fmt, va_list ap) { return Vscanf(fmt, ap, false); }
int IsoVfscanf(FILE* f, const char* fmt, va_list ap) { return Vfscanf(f, fmt, ap, true); }
int IsoVscanf(const char* fmt, va_list ap) { return Vscanf(fmt, ap, true); }
int GnuFscanf(FILE* f, const char* fmt, ...) { va_list ap; va_start(ap, fmt); int r = Vfscanf(f, fmt, ap, false); va_end(ap); return r; }
int GnuScanf(const char* fmt, ...) { va_list ap; va_start(ap, fmt); int r = Vscanf(fmt, ap, false); va_end(ap); return r; }
int IsoFscanf(FILE* f, const char* fmt, ...) { va_list ap; va_start(ap, fmt); int r = Vfscanf(f, fmt, ap, true); va_end(ap); return r; }
int IsoScanf(const char* fmt, ...) { va_list ap; va_start(ap, fmt); int r = Vscanf(fmt, ap, true); va_end(ap); return r; }

}  // extern "C"

// Every other system call with a pointer argument: the gate (syscalls.h),
// with the description of its buffers: Str (a path), In/Out (a buffer the
// kernel reads/fills), Any (size unknown: widened on EFAULT).
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/statvfs.h>
#include <sys/timerfd.h>
#include <sys/xattr.h>
#include <grp.h>
#include <threads.h>
#include <unistd.h>
#include <utime.h>

#define SVM_GATE(ret, name, params, args, bufs)          \
  SVM_NEXT_FN(real_##name, ret(*) params, #name);         \
  extern "C" ret name params { return Gate(bufs, [&] { return real_##name.get() args; }); }
// The mode argument of open and friends.
#define SVM_MODE(flags)                                                                        \
  ({                                                                                           \
    mode_t m_ = 0;                                                                             \
    if ((flags) & O_CREAT || ((flags) & O_TMPFILE) == O_TMPFILE) {                             \
      va_list ap_;                                                                             \
      va_start(ap_, flags);                                                                    \
      m_ = va_arg(ap_, mode_t);                                                                \
      va_end(ap_);                                                                             \
    }                                                                                          \
    m_;                                                                                        \
  })
#define SVM_B(...) (KernelBufs{__VA_ARGS__})

SVM_NEXT_FN(real_open, int (*)(const char*, int, ...), "open");
SVM_NEXT_FN(real_open64, int (*)(const char*, int, ...), "open64");
SVM_NEXT_FN(real_openat, int (*)(int, const char*, int, ...), "openat");
SVM_NEXT_FN(real_openat64, int (*)(int, const char*, int, ...), "openat64");
extern "C" {
int open(const char* p, int f, ...) { mode_t m = SVM_MODE(f); return Gate({Str(p)}, [&] { return real_open.get()(p, f, m); }); }
int open64(const char* p, int f, ...) { mode_t m = SVM_MODE(f); return Gate({Str(p)}, [&] { return real_open64.get()(p, f, m); }); }
int openat(int d, const char* p, int f, ...) { mode_t m = SVM_MODE(f); return Gate({Str(p)}, [&] { return real_openat.get()(d, p, f, m); }); }
int openat64(int d, const char* p, int f, ...) { mode_t m = SVM_MODE(f); return Gate({Str(p)}, [&] { return real_openat64.get()(d, p, f, m); }); }
int clock_nanosleep(clockid_t c, int f, const struct timespec* r, struct timespec* m) { return ClockNanosleep(c, f, r, m); }
char* getcwd(char* b, size_t n) { return Getcwd(b, n); }
char* get_current_dir_name(void) { return Getcwd(nullptr, 0); }
char* __getcwd_chk(char* b, size_t n, size_t bl) { CheckObjectSize(n, bl); return Getcwd(b, n); }
ssize_t __readlink_chk(const char* p, char* b, size_t n, size_t bl) { CheckObjectSize(n, bl); return readlink(p, b, n); }
ssize_t __readlinkat_chk(int d, const char* p, char* b, size_t n, size_t bl) { CheckObjectSize(n, bl); return readlinkat(d, p, b, n); }
int __poll_chk(struct pollfd* f, nfds_t n, int t, size_t bl) { CheckObjectSize(n * sizeof(*f), bl); return poll(f, n, t); }
long syscall(long n, ...) { va_list ap; va_start(ap, n); long a[6]; for (long& x : a) x = va_arg(ap, long); va_end(ap); return Syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]); }
}  // extern "C"

SVM_GATE(int, creat, (const char* p, mode_t m), (p, m), SVM_B(Str(p)))
SVM_GATE(int, creat64, (const char* p, mode_t m), (p, m), SVM_B(Str(p)))
SVM_GATE(int, access, (const char* p, int m), (p, m), SVM_B(Str(p)))
SVM_GATE(int, faccessat, (int d, const char* p, int m, int f), (d, p, m, f), SVM_B(Str(p)))
SVM_GATE(int, stat, (const char* p, struct stat* s), (p, s), SVM_B(Str(p), OutOf(s)))
SVM_GATE(int, stat64, (const char* p, struct stat64* s), (p, s), SVM_B(Str(p), OutOf(s)))
SVM_GATE(int, lstat, (const char* p, struct stat* s), (p, s), SVM_B(Str(p), OutOf(s)))
SVM_GATE(int, lstat64, (const char* p, struct stat64* s), (p, s), SVM_B(Str(p), OutOf(s)))
SVM_GATE(int, fstat, (int fd, struct stat* s), (fd, s), SVM_B(OutOf(s)))
SVM_GATE(int, fstat64, (int fd, struct stat64* s), (fd, s), SVM_B(OutOf(s)))
SVM_GATE(int, fstatat, (int d, const char* p, struct stat* s, int f), (d, p, s, f), SVM_B(Str(p), OutOf(s)))
SVM_GATE(int, fstatat64, (int d, const char* p, struct stat64* s, int f), (d, p, s, f), SVM_B(Str(p), OutOf(s)))
SVM_GATE(int, statx, (int d, const char* p, int f, unsigned m, struct statx* s), (d, p, f, m, s), SVM_B(Str(p), OutOf(s)))
SVM_GATE(int, statfs, (const char* p, struct statfs* s), (p, s), SVM_B(Str(p), OutOf(s)))
SVM_GATE(int, fstatfs, (int fd, struct statfs* s), (fd, s), SVM_B(OutOf(s)))
SVM_GATE(int, truncate, (const char* p, off_t n), (p, n), SVM_B(Str(p)))
SVM_GATE(int, chdir, (const char* p), (p), SVM_B(Str(p)))
SVM_GATE(int, chroot, (const char* p), (p), SVM_B(Str(p)))
SVM_GATE(int, mkdir, (const char* p, mode_t m), (p, m), SVM_B(Str(p)))
SVM_GATE(int, mkdirat, (int d, const char* p, mode_t m), (d, p, m), SVM_B(Str(p)))
SVM_GATE(int, mkfifo, (const char* p, mode_t m), (p, m), SVM_B(Str(p)))
SVM_GATE(int, mknod, (const char* p, mode_t m, dev_t v), (p, m, v), SVM_B(Str(p)))
SVM_GATE(int, rmdir, (const char* p), (p), SVM_B(Str(p)))
SVM_GATE(int, unlink, (const char* p), (p), SVM_B(Str(p)))
SVM_GATE(int, unlinkat, (int d, const char* p, int f), (d, p, f), SVM_B(Str(p)))
SVM_GATE(int, rename, (const char* a, const char* b), (a, b), SVM_B(Str(a), Str(b)))
SVM_GATE(int, renameat, (int d, const char* a, int e, const char* b), (d, a, e, b), SVM_B(Str(a), Str(b)))
SVM_GATE(int, link, (const char* a, const char* b), (a, b), SVM_B(Str(a), Str(b)))
SVM_GATE(int, linkat, (int d, const char* a, int e, const char* b, int f), (d, a, e, b, f), SVM_B(Str(a), Str(b)))
SVM_GATE(int, symlink, (const char* a, const char* b), (a, b), SVM_B(Str(a), Str(b)))
SVM_GATE(int, symlinkat, (const char* a, int d, const char* b), (a, d, b), SVM_B(Str(a), Str(b)))
SVM_GATE(ssize_t, readlink, (const char* p, char* b, size_t n), (p, b, n), SVM_B(Str(p), Out(b, n)))
SVM_GATE(ssize_t, readlinkat, (int d, const char* p, char* b, size_t n), (d, p, b, n), SVM_B(Str(p), Out(b, n)))
SVM_GATE(int, chmod, (const char* p, mode_t m), (p, m), SVM_B(Str(p)))
SVM_GATE(int, fchmodat, (int d, const char* p, mode_t m, int f), (d, p, m, f), SVM_B(Str(p)))
SVM_GATE(int, chown, (const char* p, uid_t u, gid_t g), (p, u, g), SVM_B(Str(p)))
SVM_GATE(int, lchown, (const char* p, uid_t u, gid_t g), (p, u, g), SVM_B(Str(p)))
SVM_GATE(int, fchownat, (int d, const char* p, uid_t u, gid_t g, int f), (d, p, u, g, f), SVM_B(Str(p)))
SVM_GATE(int, utime, (const char* p, const struct utimbuf* t), (p, t), SVM_B(Str(p), InOf(t)))
SVM_GATE(int, utimes, (const char* p, const struct timeval t[2]), (p, t), SVM_B(Str(p), In(t, 2 * sizeof(struct timeval))))
SVM_GATE(int, utimensat, (int d, const char* p, const struct timespec t[2], int f), (d, p, t, f), SVM_B(Str(p), In(t, 2 * sizeof(struct timespec))))
SVM_GATE(int, futimens, (int fd, const struct timespec t[2]), (fd, t), SVM_B(In(t, 2 * sizeof(struct timespec))))
SVM_GATE(ssize_t, getdents64, (int fd, void* b, size_t n), (fd, b, n), SVM_B(Out(b, n)))
SVM_GATE(int, pipe, (int f[2]), (f), SVM_B(Out(f, 2 * sizeof(int))))
SVM_GATE(int, pipe2, (int f[2], int fl), (f, fl), SVM_B(Out(f, 2 * sizeof(int))))
SVM_GATE(int, socketpair, (int d, int t, int p, int f[2]), (d, t, p, f), SVM_B(Out(f, 2 * sizeof(int))))
SVM_GATE(int, nanosleep, (const struct timespec* r, struct timespec* m), (r, m), SVM_B(InOf(r), OutOf(m)))
SVM_GATE(int, thrd_sleep, (const struct timespec* r, struct timespec* m), (r, m), SVM_B(InOf(r), OutOf(m)))
SVM_GATE(int, uname, (struct utsname* u), (u), SVM_B(OutOf(u)))
SVM_GATE(int, sysinfo, (struct sysinfo* i), (i), SVM_B(OutOf(i)))
SVM_GATE(clock_t, times, (struct tms* t), (t), SVM_B(OutOf(t)))
SVM_GATE(int, getrlimit, (__rlimit_resource_t r, struct rlimit* l), (r, l), SVM_B(OutOf(l)))
SVM_GATE(int, setrlimit, (__rlimit_resource_t r, const struct rlimit* l), (r, l), SVM_B(InOf(l)))
SVM_GATE(int, getrusage, (__rusage_who_t w, struct rusage* u), (w, u), SVM_B(OutOf(u)))
SVM_GATE(int, getitimer, (__itimer_which_t w, struct itimerval* v), (w, v), SVM_B(OutOf(v)))
SVM_GATE(int, setitimer, (__itimer_which_t w, const struct itimerval* v, struct itimerval* o), (w, v, o), SVM_B(InOf(v), OutOf(o)))
SVM_GATE(pid_t, wait, (int* s), (s), SVM_B(OutOf(s)))
SVM_GATE(pid_t, waitpid, (pid_t p, int* s, int o), (p, s, o), SVM_B(OutOf(s)))
SVM_GATE(int, waitid, (idtype_t t, id_t i, siginfo_t* s, int o), (t, i, s, o), SVM_B(OutOf(s)))
SVM_GATE(int, bind, (int fd, const struct sockaddr* a, socklen_t n), (fd, a, n), SVM_B(In(a, n)))
SVM_GATE(int, connect, (int fd, const struct sockaddr* a, socklen_t n), (fd, a, n), SVM_B(In(a, n)))
SVM_GATE(int, accept, (int fd, struct sockaddr* a, socklen_t* n), (fd, a, n), SVM_B(OutOf(n), Out(a, n ? *n : 0)))
SVM_GATE(int, accept4, (int fd, struct sockaddr* a, socklen_t* n, int f), (fd, a, n, f), SVM_B(OutOf(n), Out(a, n ? *n : 0)))
SVM_GATE(int, getsockname, (int fd, struct sockaddr* a, socklen_t* n), (fd, a, n), SVM_B(OutOf(n), Out(a, n ? *n : 0)))
SVM_GATE(int, getpeername, (int fd, struct sockaddr* a, socklen_t* n), (fd, a, n), SVM_B(OutOf(n), Out(a, n ? *n : 0)))
SVM_GATE(int, getsockopt, (int fd, int l, int o, void* v, socklen_t* n), (fd, l, o, v, n), SVM_B(OutOf(n), Out(v, n ? *n : 0)))
SVM_GATE(int, setsockopt, (int fd, int l, int o, const void* v, socklen_t n), (fd, l, o, v, n), SVM_B(In(v, n)))
SVM_GATE(int, poll, (struct pollfd* f, nfds_t n, int t), (f, n, t), SVM_B(Out(f, n * sizeof(struct pollfd))))
SVM_GATE(int, ppoll, (struct pollfd* f, nfds_t n, const struct timespec* t, const sigset_t* s), (f, n, t, s), SVM_B(Out(f, n * sizeof(struct pollfd)), InOf(t), InOf(s)))
SVM_GATE(int, select, (int n, fd_set* r, fd_set* w, fd_set* e, struct timeval* t), (n, r, w, e, t), SVM_B(OutOf(r), OutOf(w), OutOf(e), OutOf(t)))
SVM_GATE(int, epoll_ctl, (int e, int o, int fd, struct epoll_event* v), (e, o, fd, v), SVM_B(InOf(v)))
SVM_GATE(int, epoll_wait, (int e, struct epoll_event* v, int n, int t), (e, v, n, t), SVM_B(Out(v, size_t(n > 0 ? n : 0) * sizeof(struct epoll_event))))
SVM_GATE(ssize_t, getrandom, (void* b, size_t n, unsigned f), (b, n, f), SVM_B(Out(b, n)))
SVM_GATE(int, sched_getaffinity, (pid_t p, size_t n, cpu_set_t* s), (p, n, s), SVM_B(Out(s, n)))
SVM_GATE(int, sched_setaffinity, (pid_t p, size_t n, const cpu_set_t* s), (p, n, s), SVM_B(In(s, n)))
SVM_GATE(int, sigprocmask, (int h, const sigset_t* s, sigset_t* o), (h, s, o), SVM_B(InOf(s), OutOf(o)))
SVM_NEXT_FN(real_pthread_sigmask, int (*)(int, const sigset_t*, sigset_t*), "pthread_sigmask");
extern "C" int pthread_sigmask(int h, const sigset_t* s, sigset_t* o) { return GateErr({InOf(s), OutOf(o)}, [&] { return real_pthread_sigmask.get()(h, s, o); }); }
SVM_GATE(int, sigpending, (sigset_t* s), (s), SVM_B(OutOf(s)))
SVM_GATE(int, sigsuspend, (const sigset_t* s), (s), SVM_B(InOf(s)))
SVM_GATE(int, sigwait, (const sigset_t* s, int* n), (s, n), SVM_B(InOf(s), OutOf(n)))
SVM_GATE(int, sigwaitinfo, (const sigset_t* s, siginfo_t* i), (s, i), SVM_B(InOf(s), OutOf(i)))
SVM_GATE(int, sigtimedwait, (const sigset_t* s, siginfo_t* i, const struct timespec* t), (s, i, t), SVM_B(InOf(s), OutOf(i), InOf(t)))
SVM_GATE(pid_t, wait3, (int* s, int o, struct rusage* u), (s, o, u), SVM_B(OutOf(s), OutOf(u)))
SVM_GATE(pid_t, wait4, (pid_t p, int* s, int o, struct rusage* u), (p, s, o, u), SVM_B(OutOf(s), OutOf(u)))
SVM_GATE(int, clock_gettime, (clockid_t c, struct timespec* t), (c, t), SVM_B(OutOf(t)))
SVM_GATE(int, clock_getres, (clockid_t c, struct timespec* t), (c, t), SVM_B(OutOf(t)))
SVM_GATE(int, timer_create, (clockid_t c, struct sigevent* e, timer_t* t), (c, e, t), SVM_B(InOf(e), OutOf(t)))
SVM_GATE(int, timer_settime, (timer_t t, int f, const struct itimerspec* v, struct itimerspec* o), (t, f, v, o), SVM_B(InOf(v), OutOf(o)))
SVM_GATE(int, timer_gettime, (timer_t t, struct itimerspec* v), (t, v), SVM_B(OutOf(v)))
SVM_GATE(int, timerfd_settime, (int fd, int f, const struct itimerspec* v, struct itimerspec* o), (fd, f, v, o), SVM_B(InOf(v), OutOf(o)))
SVM_GATE(int, timerfd_gettime, (int fd, struct itimerspec* v), (fd, v), SVM_B(OutOf(v)))
SVM_GATE(int, eventfd_read, (int fd, eventfd_t* v), (fd, v), SVM_B(OutOf(v)))
SVM_GATE(int, getentropy, (void* b, size_t n), (b, n), SVM_B(Out(b, n)))
SVM_GATE(int, getresuid, (uid_t* r, uid_t* e, uid_t* s), (r, e, s), SVM_B(OutOf(r), OutOf(e), OutOf(s)))
SVM_GATE(int, getresgid, (gid_t* r, gid_t* e, gid_t* s), (r, e, s), SVM_B(OutOf(r), OutOf(e), OutOf(s)))
SVM_GATE(int, getgroups, (int n, gid_t* l), (n, l), SVM_B(Out(l, size_t(n > 0 ? n : 0) * sizeof(gid_t))))
SVM_GATE(int, setgroups, (size_t n, const gid_t* l), (n, l), SVM_B(In(l, n * sizeof(gid_t))))
SVM_GATE(int, prlimit, (pid_t p, enum __rlimit_resource r, const struct rlimit* l, struct rlimit* o), (p, r, l, o), SVM_B(InOf(l), OutOf(o)))
SVM_GATE(int, sched_getparam, (pid_t p, struct sched_param* s), (p, s), SVM_B(OutOf(s)))
SVM_GATE(int, sched_setparam, (pid_t p, const struct sched_param* s), (p, s), SVM_B(InOf(s)))
SVM_GATE(int, sched_setscheduler, (pid_t p, int y, const struct sched_param* s), (p, y, s), SVM_B(InOf(s)))
SVM_GATE(int, sched_rr_get_interval, (pid_t p, struct timespec* t), (p, t), SVM_B(OutOf(t)))
SVM_GATE(int, statvfs, (const char* p, struct statvfs* s), (p, s), SVM_B(Str(p), OutOf(s)))
SVM_GATE(int, statvfs64, (const char* p, struct statvfs64* s), (p, s), SVM_B(Str(p), OutOf(s)))
SVM_GATE(ssize_t, sendfile, (int o, int i, off_t* f, size_t n), (o, i, f, n), SVM_B(OutOf(f)))
SVM_GATE(ssize_t, sendfile64, (int o, int i, off64_t* f, size_t n), (o, i, f, n), SVM_B(OutOf(f)))
SVM_GATE(ssize_t, copy_file_range, (int i, off64_t* a, int o, off64_t* b, size_t n, unsigned f), (i, a, o, b, n, f), SVM_B(OutOf(a), OutOf(b)))
SVM_GATE(ssize_t, splice, (int i, off64_t* a, int o, off64_t* b, size_t n, unsigned f), (i, a, o, b, n, f), SVM_B(OutOf(a), OutOf(b)))
SVM_GATE(int, mincore, (void* a, size_t n, unsigned char* v), (a, n, v), SVM_B(Out(v, (n + 4095) / 4096)))
SVM_GATE(int, inotify_add_watch, (int fd, const char* p, uint32_t m), (fd, p, m), SVM_B(Str(p)))
SVM_GATE(ssize_t, getxattr, (const char* p, const char* n, void* v, size_t z), (p, n, v, z), SVM_B(Str(p), Str(n), Out(v, z)))
SVM_GATE(ssize_t, lgetxattr, (const char* p, const char* n, void* v, size_t z), (p, n, v, z), SVM_B(Str(p), Str(n), Out(v, z)))
SVM_GATE(ssize_t, fgetxattr, (int fd, const char* n, void* v, size_t z), (fd, n, v, z), SVM_B(Str(n), Out(v, z)))
SVM_GATE(int, setxattr, (const char* p, const char* n, const void* v, size_t z, int f), (p, n, v, z, f), SVM_B(Str(p), Str(n), In(v, z)))
SVM_GATE(int, fsetxattr, (int fd, const char* n, const void* v, size_t z, int f), (fd, n, v, z, f), SVM_B(Str(n), In(v, z)))
SVM_GATE(ssize_t, listxattr, (const char* p, char* l, size_t z), (p, l, z), SVM_B(Str(p), Out(l, z)))
SVM_GATE(ssize_t, flistxattr, (int fd, char* l, size_t z), (fd, l, z), SVM_B(Out(l, z)))
// prctl: PR_SET_NAME reads a name of up to 16 bytes, PR_GET_NAME fills 16;
// other options' pointers are of unknown size.
SVM_NEXT_FN(real_prctl, int (*)(int, ...), "prctl");
extern "C" int prctl(int o, ...) {
  va_list ap; va_start(ap, o); unsigned long a[4]; for (unsigned long& x : a) x = va_arg(ap, unsigned long); va_end(ap);
  const void* p = reinterpret_cast<const void*>(a[0]);
  const KernelBuf first = o == PR_SET_NAME ? In(p, 16) : o == PR_GET_NAME ? Out(p, 16) : Any(p);
  auto any = [](unsigned long v) { return Any(reinterpret_cast<const void*>(v)); };
  return Gate({first, any(a[1]), any(a[2]), any(a[3])}, [&] { return real_prctl.get()(o, a[0], a[1], a[2], a[3]); });
}
SVM_GATE(FILE*, fopen, (const char* p, const char* m), (p, m), SVM_B(Str(p), Str(m)))
SVM_GATE(FILE*, fopen64, (const char* p, const char* m), (p, m), SVM_B(Str(p), Str(m)))
SVM_GATE(FILE*, freopen, (const char* p, const char* m, FILE* f), (p, m, f), SVM_B(Str(p), Str(m)))
// glibc allocates the stream and has the kernel fill its buffer: private
// memory, as for stdio's buffers (closedir frees by address).
#define SVM_GATE_PRIVATE(ret, name, params, args, bufs)   \
  SVM_NEXT_FN(real_##name, ret(*) params, #name);         \
  extern "C" ret name params { return Gate(bufs, [&] { RuntimeScope s_; return real_##name.get() args; }); }
SVM_GATE_PRIVATE(DIR*, opendir, (const char* p), (p), SVM_B(Str(p)))
SVM_GATE_PRIVATE(DIR*, fdopendir, (int fd), (fd), SVM_B())
SVM_GATE(int, mkstemp, (char* p), (p), SVM_B(Str(p)))
SVM_GATE(char*, mkdtemp, (char* p), (p), SVM_B(Str(p)))

// The third argument, whatever it is, as a pointer (the ABI passes both alike).
#define SVM_ARG3(last) ({ va_list ap_; va_start(ap_, last); void* a_ = va_arg(ap_, void*); va_end(ap_); a_; })
SVM_NEXT_FN(real_ioctl, int (*)(int, unsigned long, ...), "ioctl");
SVM_NEXT_FN(real_fcntl, int (*)(int, int, ...), "fcntl");
SVM_NEXT_FN(real_fcntl64, int (*)(int, int, ...), "fcntl64");
extern "C" {
int ioctl(int fd, unsigned long r, ...) { void* a = SVM_ARG3(r); return Gate({Any(a)}, [&] { return real_ioctl.get()(fd, r, a); }); }
int fcntl(int fd, int c, ...) { void* a = SVM_ARG3(c); return Gate({Any(a)}, [&] { return real_fcntl.get()(fd, c, a); }); }
int fcntl64(int fd, int c, ...) { void* a = SVM_ARG3(c); return Gate({Any(a)}, [&] { return real_fcntl64.get()(fd, c, a); }); }
}  // extern "C"

// Thread-specific data (tsd.h), calls that take a pthread_t (handles.h) and
// C11 threads (c11_threads.h).
#include "libsvm/c11_threads.h"
#include "libsvm/handles.h"
#include "libsvm/tsd.h"

extern "C" {

int pthread_key_create(pthread_key_t* k, void (*d)(void*)) { return KeyCreate(k, d); }
int pthread_key_delete(pthread_key_t k) { return KeyDelete(k); }
void* pthread_getspecific(pthread_key_t k) { return GetSpecific(k); }
// glibc declares v access-none, and gcc then takes it for uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
int pthread_setspecific(pthread_key_t k, const void* v) { return SetSpecific(k, v); }
#pragma GCC diagnostic pop

int pthread_setname_np(pthread_t t, const char* n) { return SetName(t, n); }
int pthread_getname_np(pthread_t t, char* n, size_t l) { return GetName(t, n, l); }
int pthread_kill(pthread_t t, int s) { return Kill(t, s); }
int pthread_sigqueue(pthread_t t, int s, const union sigval v) { return Sigqueue(t, s, v); }
int pthread_getschedparam(pthread_t t, int* p, struct sched_param* s) { return GetSchedParam(t, p, s); }
int pthread_setschedparam(pthread_t t, int p, const struct sched_param* s) { return SetSchedParam(t, p, s); }
int pthread_setschedprio(pthread_t t, int p) { return SetSchedPrio(t, p); }
int pthread_getattr_np(pthread_t t, pthread_attr_t* a) { return GetAttr(t, a); }
int pthread_getaffinity_np(pthread_t t, size_t n, cpu_set_t* s) { return GetAffinity(t, n, s); }
int pthread_setaffinity_np(pthread_t t, size_t n, const cpu_set_t* s) { return SetAffinity(t, n, s); }
int pthread_getcpuclockid(pthread_t t, clockid_t* c) { return GetCpuClockId(t, c); }
int pthread_cancel(pthread_t t) { return Cancel(t); }
int pthread_tryjoin_np(pthread_t t, void** v) { return TryJoin(t, v); }
int pthread_timedjoin_np(pthread_t t, void** v, const struct timespec* a) { return TimedJoin(t, v, a); }
int pthread_clockjoin_np(pthread_t t, void** v, clockid_t c, const struct timespec* a) { return ClockJoin(t, v, c, a); }

int thrd_create(thrd_t* t, thrd_start_t f, void* a) { return ThrdCreate(t, f, a); }
int thrd_join(thrd_t t, int* r) { return ThrdJoin(t, r); }
int thrd_detach(thrd_t t) { return ThrdDetach(t); }
thrd_t thrd_current(void) { return ThrdCurrent(); }
int thrd_equal(thrd_t a, thrd_t b) { return a == b; }
void thrd_exit(int r) { ThrdExit(r); }
int mtx_init(mtx_t* m, int t) { return MtxInit(m, t); }
int mtx_lock(mtx_t* m) { return MtxLock(m); }
int mtx_timedlock(mtx_t* m, const struct timespec* a) { return MtxTimedLock(m, a); }
int mtx_trylock(mtx_t* m) { return MtxTryLock(m); }
int mtx_unlock(mtx_t* m) { return MtxUnlock(m); }
void mtx_destroy(mtx_t* m) { MtxDestroy(m); }
int cnd_init(cnd_t* c) { return CndInit(c); }
int cnd_signal(cnd_t* c) { return CndSignal(c); }
int cnd_broadcast(cnd_t* c) { return CndBroadcast(c); }
int cnd_wait(cnd_t* c, mtx_t* m) { return CndWait(c, m); }
int cnd_timedwait(cnd_t* c, mtx_t* m, const struct timespec* a) { return CndTimedWait(c, m, a); }
void cnd_destroy(cnd_t* c) { CndDestroy(c); }
int tss_create(tss_t* k, tss_dtor_t d) { return TssCreate(k, d); }
void* tss_get(tss_t k) { return TssGet(k); }
int tss_set(tss_t k, void* v) { return TssSet(k, v); }
void tss_delete(tss_t k) { TssDelete(k); }
void call_once(once_flag* f, void (*fn)(void)) { CallOnce(f, fn); }

}  // extern "C"
