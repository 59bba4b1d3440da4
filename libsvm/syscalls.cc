#include "libsvm/syscalls.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "libsvm/next_symbol.h"
#include "libsvm/prim/fault.h"
#include "libsvm/runtime.h"
#include "libsvm/thread_state.h"

extern "C" {
[[noreturn]] void __chk_fail(void);
void _IO_doallocbuf(FILE*);
int __uflow(FILE*);
int __isoc99_vfscanf(FILE*, const char*, va_list);
int __isoc99_vscanf(const char*, va_list);
}

namespace svm::rt {
namespace {

// glibc's functions, resolved when libsvm loads (a first call may come from
// a signal handler, where dlsym is not safe).

struct Real {
  decltype(&::read) read = NextSymbol<decltype(&::read)>("read");
  decltype(&::pread) pread = NextSymbol<decltype(&::pread)>("pread");
  decltype(&::readv) readv = NextSymbol<decltype(&::readv)>("readv");
  decltype(&::preadv) preadv = NextSymbol<decltype(&::preadv)>("preadv");
  decltype(&::recv) recv = NextSymbol<decltype(&::recv)>("recv");
  decltype(&::recvfrom) recvfrom = NextSymbol<decltype(&::recvfrom)>("recvfrom");
  decltype(&::recvmsg) recvmsg = NextSymbol<decltype(&::recvmsg)>("recvmsg");
  decltype(&::write) write = NextSymbol<decltype(&::write)>("write");
  decltype(&::pwrite) pwrite = NextSymbol<decltype(&::pwrite)>("pwrite");
  decltype(&::writev) writev = NextSymbol<decltype(&::writev)>("writev");
  decltype(&::pwritev) pwritev = NextSymbol<decltype(&::pwritev)>("pwritev");
  decltype(&::send) send = NextSymbol<decltype(&::send)>("send");
  decltype(&::sendto) sendto = NextSymbol<decltype(&::sendto)>("sendto");
  decltype(&::sendmsg) sendmsg = NextSymbol<decltype(&::sendmsg)>("sendmsg");
  decltype(&::fread) fread = NextSymbol<decltype(&::fread)>("fread");
  decltype(&::fwrite) fwrite = NextSymbol<decltype(&::fwrite)>("fwrite");
  decltype(&::fgets) fgets = NextSymbol<decltype(&::fgets)>("fgets");
  decltype(&::fgetc) fgetc = NextSymbol<decltype(&::fgetc)>("fgetc");
  decltype(&::getc) getc = NextSymbol<decltype(&::getc)>("getc");
  decltype(&::getchar) getchar = NextSymbol<decltype(&::getchar)>("getchar");
  decltype(&::__uflow) uflow = NextSymbol<decltype(&::__uflow)>("__uflow");
  decltype(&::getdelim) getdelim = NextSymbol<decltype(&::getdelim)>("getdelim");
  decltype(&::vfscanf) vfscanf = NextSymbol<decltype(&::vfscanf)>("vfscanf");
  decltype(&::__isoc99_vfscanf) iso_vfscanf = NextSymbol<decltype(&::__isoc99_vfscanf)>("__isoc99_vfscanf");
};

Real& R() {
  static Real real;
  return real;
}
__attribute__((constructor)) void ResolveEarly() { R(); }

// Whether the caller is a program thread of a running node.
bool Ours() { return t_app && !t_in_runtime && Runtime::Get() != nullptr; }

void Prepare(const void* p, size_t n, Access a) {
  if (p != nullptr && n != 0) Runtime::Get()->PrepareBuffer(p, n, a);
}

void PrepareIov(const iovec* iov, int count, Access a) {
  for (int i = 0; iov != nullptr && i < count; ++i) Prepare(iov[i].iov_base, iov[i].iov_len, a);
}

// What a read of n bytes at offset (-1: the file position) can fill: less
// than n only for a regular file.
size_t Fillable(int fd, size_t n, off_t offset) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return n;
  if (offset < 0) offset = lseek(fd, 0, SEEK_CUR);
  if (offset < 0) return n;
  return st.st_size > offset ? std::min<size_t>(n, size_t(st.st_size - offset)) : 0;
}

// Runs call() (a system call returning -1 and errno on failure) after
// prepare(); on EFAULT prepares again and retries.
template <typename Prepare, typename Call>
auto Retry(Prepare prepare, Call call) {
  for (int attempt = 0;; ++attempt) {
    prepare();
    auto r = call();
    if (r >= 0 || errno != EFAULT || attempt == kSyscallRetries) return r;
  }
}

// Gives f its buffer from private memory if it has none yet (see header).
void PrivateBuffer(FILE* f) {
  if (f != nullptr && f->_IO_buf_base == nullptr) {
    RuntimeScope scope;
    _IO_doallocbuf(f);
  }
}

// fread/fwrite: items move until done, EOF or an error other than EFAULT;
// on EFAULT the stream's error is cleared and the rest retried.
template <typename Call>
size_t Items(char* p, size_t size, size_t n, FILE* f, Access a, Call call) {
  size_t done = 0;
  for (int attempt = 0; done < n; ++attempt) {
    Prepare(p + done * size, (n - done) * size, a);
    const size_t got = call(p + done * size, n - done);
    done += got;
    if (done == n || attempt == kSyscallRetries || !ferror(f) || errno != EFAULT) break;
    clearerr(f);
  }
  return done;
}

}  // namespace

// The first try prefaults what the file can fill; a retry the whole buffer
// (a /proc or /sys file says 0 bytes and the kernel fills it anyway).
ssize_t Read(int fd, void* buf, size_t n) {
  if (!Ours()) return R().read(fd, buf, n);
  int attempt = 0;
  return Retry([&] { Prepare(buf, attempt++ ? n : Fillable(fd, n, -1), Access::kWrite); },
               [&] { return R().read(fd, buf, n); });
}

ssize_t Pread(int fd, void* buf, size_t n, off_t offset) {
  if (!Ours()) return R().pread(fd, buf, n, offset);
  int attempt = 0;
  return Retry([&] { Prepare(buf, attempt++ ? n : Fillable(fd, n, offset), Access::kWrite); },
               [&] { return R().pread(fd, buf, n, offset); });
}

ssize_t Readv(int fd, const iovec* iov, int count) {
  if (!Ours()) return R().readv(fd, iov, count);
  return Retry([&] { PrepareIov(iov, count, Access::kWrite); }, [&] { return R().readv(fd, iov, count); });
}

ssize_t Preadv(int fd, const iovec* iov, int count, off_t offset) {
  if (!Ours()) return R().preadv(fd, iov, count, offset);
  return Retry([&] { PrepareIov(iov, count, Access::kWrite); },
               [&] { return R().preadv(fd, iov, count, offset); });
}

ssize_t Recv(int fd, void* buf, size_t n, int flags) {
  if (!Ours()) return R().recv(fd, buf, n, flags);
  return Retry([&] { Prepare(buf, n, Access::kWrite); }, [&] { return R().recv(fd, buf, n, flags); });
}

ssize_t Recvfrom(int fd, void* buf, size_t n, int flags, sockaddr* from, socklen_t* from_len) {
  if (!Ours()) return R().recvfrom(fd, buf, n, flags, from, from_len);
  return Retry(
      [&] {
        Prepare(buf, n, Access::kWrite);
        if (from_len) {
          Prepare(from_len, sizeof(*from_len), Access::kWrite);
          Prepare(from, *from_len, Access::kWrite);
        }
      },
      [&] { return R().recvfrom(fd, buf, n, flags, from, from_len); });
}

ssize_t Recvmsg(int fd, msghdr* msg, int flags) {
  if (!Ours()) return R().recvmsg(fd, msg, flags);
  return Retry(
      [&] {
        Prepare(msg, sizeof(*msg), Access::kWrite);  // the kernel updates the lengths and flags
        PrepareIov(msg->msg_iov, int(msg->msg_iovlen), Access::kWrite);
        Prepare(msg->msg_iov, msg->msg_iovlen * sizeof(iovec), Access::kRead);
        Prepare(msg->msg_name, msg->msg_namelen, Access::kWrite);
        Prepare(msg->msg_control, msg->msg_controllen, Access::kWrite);
      },
      [&] { return R().recvmsg(fd, msg, flags); });
}

ssize_t Write(int fd, const void* buf, size_t n) {
  if (!Ours()) return R().write(fd, buf, n);
  return Retry([&] { Prepare(buf, n, Access::kRead); }, [&] { return R().write(fd, buf, n); });
}

ssize_t Pwrite(int fd, const void* buf, size_t n, off_t offset) {
  if (!Ours()) return R().pwrite(fd, buf, n, offset);
  return Retry([&] { Prepare(buf, n, Access::kRead); }, [&] { return R().pwrite(fd, buf, n, offset); });
}

ssize_t Writev(int fd, const iovec* iov, int count) {
  if (!Ours()) return R().writev(fd, iov, count);
  return Retry(
      [&] {
        Prepare(iov, size_t(count) * sizeof(iovec), Access::kRead);
        PrepareIov(iov, count, Access::kRead);
      },
      [&] { return R().writev(fd, iov, count); });
}

ssize_t Pwritev(int fd, const iovec* iov, int count, off_t offset) {
  if (!Ours()) return R().pwritev(fd, iov, count, offset);
  return Retry(
      [&] {
        Prepare(iov, size_t(count) * sizeof(iovec), Access::kRead);
        PrepareIov(iov, count, Access::kRead);
      },
      [&] { return R().pwritev(fd, iov, count, offset); });
}

ssize_t Send(int fd, const void* buf, size_t n, int flags) {
  if (!Ours()) return R().send(fd, buf, n, flags);
  return Retry([&] { Prepare(buf, n, Access::kRead); }, [&] { return R().send(fd, buf, n, flags); });
}

ssize_t Sendto(int fd, const void* buf, size_t n, int flags, const sockaddr* to, socklen_t to_len) {
  if (!Ours()) return R().sendto(fd, buf, n, flags, to, to_len);
  return Retry(
      [&] {
        Prepare(buf, n, Access::kRead);
        Prepare(to, to_len, Access::kRead);
      },
      [&] { return R().sendto(fd, buf, n, flags, to, to_len); });
}

ssize_t Sendmsg(int fd, const msghdr* msg, int flags) {
  if (!Ours()) return R().sendmsg(fd, msg, flags);
  return Retry(
      [&] {
        Prepare(msg, sizeof(*msg), Access::kRead);
        Prepare(msg->msg_iov, msg->msg_iovlen * sizeof(iovec), Access::kRead);
        PrepareIov(msg->msg_iov, int(msg->msg_iovlen), Access::kRead);
        Prepare(msg->msg_name, msg->msg_namelen, Access::kRead);
        Prepare(msg->msg_control, msg->msg_controllen, Access::kRead);
      },
      [&] { return R().sendmsg(fd, msg, flags); });
}

ssize_t ReadChk(int fd, void* buf, size_t n, size_t buf_len) {
  if (n > buf_len) __chk_fail();
  return Read(fd, buf, n);
}

ssize_t PreadChk(int fd, void* buf, size_t n, off_t offset, size_t buf_len) {
  if (n > buf_len) __chk_fail();
  return Pread(fd, buf, n, offset);
}

ssize_t RecvChk(int fd, void* buf, size_t n, size_t buf_len, int flags) {
  if (n > buf_len) __chk_fail();
  return Recv(fd, buf, n, flags);
}

ssize_t RecvfromChk(int fd, void* buf, size_t n, size_t buf_len, int flags, sockaddr* from,
                    socklen_t* from_len) {
  if (n > buf_len) __chk_fail();
  return Recvfrom(fd, buf, n, flags, from, from_len);
}

size_t Fread(void* p, size_t size, size_t n, FILE* f) {
  if (!Ours() || size == 0) return R().fread(p, size, n, f);
  PrivateBuffer(f);
  return Items(static_cast<char*>(p), size, n, f, Access::kWrite,
               [&](char* at, size_t items) { return R().fread(at, size, items, f); });
}

size_t FreadChk(void* p, size_t p_len, size_t size, size_t n, FILE* f) {
  size_t bytes;
  if (__builtin_mul_overflow(size, n, &bytes) || bytes > p_len) __chk_fail();
  return Fread(p, size, n, f);
}

size_t Fwrite(const void* p, size_t size, size_t n, FILE* f) {
  if (!Ours() || size == 0) return R().fwrite(p, size, n, f);
  return Items(const_cast<char*>(static_cast<const char*>(p)), size, n, f, Access::kRead,
               [&](char* at, size_t items) { return R().fwrite(at, size, items, f); });
}

char* Fgets(char* s, int n, FILE* f) {
  if (Ours()) {
    PrivateBuffer(f);
    if (n > 0) Prepare(s, size_t(n), Access::kWrite);
  }
  return R().fgets(s, n, f);
}

char* FgetsChk(char* s, size_t s_len, int n, FILE* f) {
  if (n < 0 || size_t(n) > s_len) __chk_fail();
  return Fgets(s, n, f);
}

int Fgetc(FILE* f) {
  if (Ours()) PrivateBuffer(f);
  return R().fgetc(f);
}

int Getc(FILE* f) {
  if (Ours()) PrivateBuffer(f);
  return R().getc(f);
}

int Getchar() {
  if (Ours()) PrivateBuffer(stdin);
  return R().getchar();
}

int Uflow(FILE* f) {
  if (Ours()) PrivateBuffer(f);
  return R().uflow(f);
}

// The line itself is the program's (the shared heap, grown with realloc in
// user mode); only the stream's buffer must be private.
ssize_t Getdelim(char** line, size_t* cap, int delim, FILE* f) {
  if (Ours()) PrivateBuffer(f);
  return R().getdelim(line, cap, delim, f);
}

ssize_t Getline(char** line, size_t* cap, FILE* f) { return Getdelim(line, cap, '\n', f); }

// Conversions store through the program's pointers in user mode (faults are
// served as usual); only the stream's buffer must be private.
int Vfscanf(FILE* f, const char* format, va_list ap, bool iso) {
  if (Ours()) PrivateBuffer(f);
  return iso ? R().iso_vfscanf(f, format, ap) : R().vfscanf(f, format, ap);
}

int Vscanf(const char* format, va_list ap, bool iso) { return Vfscanf(stdin, format, ap, iso); }

// ---- The gate ----

bool Gated() {
  Runtime* rt = Runtime::Get();
  return rt && t_app && !t_in_runtime && prim::NeedsPrefault(rt->options().fault);
}

void PrepareKernelBufs(KernelBufs bufs, int attempt) {
  Runtime* rt = Runtime::Get();
  for (const KernelBuf& b : bufs) {
    if (b.p == nullptr) continue;
    if (b.str) {
      // A string is read in user mode, which faults its pages in.
      if (!rt->IsShared(b.p)) continue;
      for (const volatile char* c = static_cast<const char*>(b.p); *c != 0; ++c) {
      }
    } else if (b.n == kAnySize) {
      if (attempt > 0 && rt->IsShared(b.p)) rt->PrepareBuffer(b.p, size_t(4096) << attempt, b.a);
    } else if (b.n != 0) {
      rt->PrepareBuffer(b.p, b.n, b.a);
    }
  }
}

// getcwd(NULL, n) makes glibc allocate the buffer (the shared heap, for a
// program thread: a fresh page the kernel cannot fill). So the buffer is
// allocated here, prefaulted, and trimmed as glibc would.
SVM_NEXT_FN(real_getcwd, char* (*)(char*, size_t), "getcwd");

char* Getcwd(char* buf, size_t n) {
  const auto real = real_getcwd.get();
  if (buf != nullptr || !Gated()) return Gate({Out(buf, n)}, [&] { return real(buf, n); });
  const size_t cap = n != 0 ? n : PATH_MAX;
  auto* own = static_cast<char*>(malloc(cap));
  if (own == nullptr) return nullptr;
  char* r = Gate({Out(own, cap)}, [&] { return real(own, cap); });
  if (r == nullptr) {
    const int err = errno;
    free(own);
    errno = err;
    return nullptr;
  }
  if (n != 0) return own;
  char* fit = static_cast<char*>(realloc(own, strlen(own) + 1));
  return fit != nullptr ? fit : own;
}

void CheckObjectSize(size_t n, size_t object_len) {
  if (n > object_len) __chk_fail();
}

SVM_NEXT_FN(real_clock_nanosleep, decltype(&::clock_nanosleep), "clock_nanosleep");

int ClockNanosleep(clockid_t clock, int flags, const timespec* req, timespec* rem) {
  const auto real = real_clock_nanosleep.get();
  return GateErr({InOf(req), OutOf(rem)}, [&] { return real(clock, flags, req, rem); });
}

// Not a function-local static: its guard would recurse. libstdc++ waits
// for a static being initialised by another thread with syscall(SYS_futex),
// which is this function, whose own static was the one being initialised:
// two threads' first syscall() at once overflowed the waiter's stack.
SVM_NEXT_FN(real_syscall, long (*)(long, ...), "syscall");

namespace {
// A futex wait on shared memory: std::atomic<T>::wait, std::promise and
// std::future, std::counting_semaphore, hand-made locks. Among one node's
// threads it works; svm carries no wake-up (and no atomic) between nodes, so
// a thread on another node can never end it, and the program hangs without
// a word (the stall report, if any, comes much later). Said once, with what
// to use instead. write(2): syscall() may run in a signal handler.
void NoteSharedFutexWait(long op, const void* word) {
  const long cmd = op & FUTEX_CMD_MASK;
  if (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET) return;
  if (!Ours()) return;  // the runtime's own waits are not the program's
  const Runtime* rt = Runtime::Get();
  if (rt->options().nodes < 2 || !rt->IsShared(word)) return;
  static std::atomic<bool> said{false};
  if (said.exchange(true, std::memory_order_relaxed)) return;
  char line[512];
  const int n = snprintf(line, sizeof line,
                         "svm: a futex wait on shared memory at %p (std::atomic wait, std::promise/std::future, "
                         "std::counting_semaphore, a hand-made lock): it works among one node's threads, but svm "
                         "carries no futex wake-up between nodes, so a thread on another node cannot end it; use "
                         "pthread mutexes, condition variables or semaphores across nodes (doc/pthreads.md)\n",
                         word);
  if (n > 0) (void)!write(2, line, std::min(size_t(n), sizeof line - 1));
}
}  // namespace

// syscall(2): nothing says which arguments are pointers; every argument
// that points into shared memory is treated as a buffer of unknown size.
long Syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6) {
  if (number == SYS_futex) NoteSharedFutexWait(a2, reinterpret_cast<const void*>(a1));
  const auto real = real_syscall.get();
  auto any = [](long v) { return Any(reinterpret_cast<const void*>(v)); };
  return Gate({any(a1), any(a2), any(a3), any(a4), any(a5), any(a6)},
              [&] { return real(number, a1, a2, a3, a4, a5, a6); });
}

}  // namespace svm::rt
