// The symbols a program sees from libsvm: each forwards to the runtime in one
// line. Nothing else lives here.
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "libsvm/entry.h"
#include "libsvm/next_symbol.h"

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

void* malloc(size_t n) { return Malloc(n); }
void free(void* p) { Free(p); }
void* calloc(size_t n, size_t size) { return Calloc(n, size); }
void* realloc(void* p, size_t n) { return Realloc(p, n); }
void* reallocarray(void* p, size_t n, size_t size) { return ReallocArray(p, n, size); }
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
#include <semaphore.h>

#include "libsvm/sync.h"

// glibc's definitions are resolved at load (next_symbol.h): the runtime's own
// threads (the NIC's condition variables, say) call through them.
#define SVM_SYNC(ret, name, params, args, ours)            \
  SVM_NEXT_FN(real_##name, ret(*) params, #name);          \
  extern "C" ret name params {                             \
    if (Managed()) return ours args;                       \
    return real_##name.get() args;                         \
  }

SVM_SYNC(int, pthread_mutex_init, (pthread_mutex_t* m, const pthread_mutexattr_t* a), (m, a), MutexInit)
SVM_SYNC(int, pthread_mutex_lock, (pthread_mutex_t* m), (m), MutexLock)
SVM_SYNC(int, pthread_mutex_trylock, (pthread_mutex_t* m), (m), MutexTryLock)
SVM_SYNC(int, pthread_mutex_timedlock, (pthread_mutex_t* m, const struct timespec* t), (m, t), MutexTimedLock)
SVM_SYNC(int, pthread_mutex_unlock, (pthread_mutex_t* m), (m), MutexUnlock)
SVM_SYNC(int, pthread_mutex_destroy, (pthread_mutex_t* m), (m), MutexDestroy)
SVM_SYNC(int, pthread_cond_init, (pthread_cond_t* c, const pthread_condattr_t* a), (c, a), CondInit)
SVM_SYNC(int, pthread_cond_wait, (pthread_cond_t* c, pthread_mutex_t* m), (c, m), CondWait)
SVM_SYNC(int, pthread_cond_timedwait, (pthread_cond_t* c, pthread_mutex_t* m, const struct timespec* t), (c, m, t), CondTimedWait)
SVM_SYNC(int, pthread_cond_signal, (pthread_cond_t* c), (c), CondSignal)
SVM_SYNC(int, pthread_cond_broadcast, (pthread_cond_t* c), (c), CondBroadcast)
SVM_SYNC(int, pthread_cond_destroy, (pthread_cond_t* c), (c), CondDestroy)
SVM_SYNC(int, pthread_barrier_init, (pthread_barrier_t* b, const pthread_barrierattr_t* a, unsigned n), (b, a, n), BarrierInit)
SVM_SYNC(int, pthread_barrier_wait, (pthread_barrier_t* b), (b), BarrierWait)
SVM_SYNC(int, pthread_barrier_destroy, (pthread_barrier_t* b), (b), BarrierDestroy)
SVM_SYNC(int, pthread_rwlock_init, (pthread_rwlock_t* l, const pthread_rwlockattr_t* a), (l, a), RwlockInit)
SVM_SYNC(int, pthread_rwlock_rdlock, (pthread_rwlock_t* l), (l), RwlockLock)
SVM_SYNC(int, pthread_rwlock_wrlock, (pthread_rwlock_t* l), (l), RwlockLock)
SVM_SYNC(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t* l), (l), RwlockTryLock)
SVM_SYNC(int, pthread_rwlock_trywrlock, (pthread_rwlock_t* l), (l), RwlockTryLock)
SVM_SYNC(int, pthread_rwlock_unlock, (pthread_rwlock_t* l), (l), RwlockUnlock)
SVM_SYNC(int, pthread_rwlock_destroy, (pthread_rwlock_t* l), (l), RwlockDestroy)
SVM_SYNC(int, pthread_spin_init, (pthread_spinlock_t* l, int p), (l, p), SpinInit)
SVM_SYNC(int, pthread_spin_lock, (pthread_spinlock_t* l), (l), SpinLock)
SVM_SYNC(int, pthread_spin_trylock, (pthread_spinlock_t* l), (l), SpinTryLock)
SVM_SYNC(int, pthread_spin_unlock, (pthread_spinlock_t* l), (l), SpinUnlock)
SVM_SYNC(int, pthread_spin_destroy, (pthread_spinlock_t* l), (l), SpinDestroy)
SVM_SYNC(int, sem_init, (sem_t* s, int p, unsigned v), (s, p, v), SemInit)
SVM_SYNC(int, sem_wait, (sem_t* s), (s), SemWait)
SVM_SYNC(int, sem_trywait, (sem_t* s), (s), SemTryWait)
SVM_SYNC(int, sem_timedwait, (sem_t* s, const struct timespec* t), (s, t), SemTimedWait)
SVM_SYNC(int, sem_post, (sem_t* s), (s), SemPost)
SVM_SYNC(int, sem_getvalue, (sem_t* s, int* v), (s, v), SemGetValue)
SVM_SYNC(int, sem_destroy, (sem_t* s), (s), SemDestroy)
SVM_SYNC(int, pthread_once, (pthread_once_t* o, void (*f)()), (o, f), Once)

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
