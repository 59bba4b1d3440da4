// System calls and stdio calls that move data between the kernel and the
// program's memory (interpose.cc forwards each here).
//
// Under the uffd (SIGBUS) and mprotect fault backends the kernel does not
// fault pages in for a system call: a read(2) into a shared page this node
// may not write, or a write(2) from one it may not read, fails with EFAULT.
// So, for program threads (t_app && !t_in_runtime) only:
//   * the buffers are prefaulted first (Runtime::PrepareBuffer: kWrite for
//     what the kernel fills, kRead for what it reads);
//   * a call that still fails with EFAULT (a local acquire invalidated a page
//     in between) is prefaulted and retried, at most kSyscallRetries times;
//     a call that moved some bytes before the bad page returns that short
//     count, as the kernel does;
//   * stdio streams get their buffer from private (glibc) memory before the
//     first input call: the kernel reads into the stream's buffer, which
//     nothing in user mode has touched yet. The buffer must not come from
//     the shared heap, where a fresh page is inaccessible until touched.
// Everyone else (runtime threads, the runtime itself, start-up) gets the
// plain call. Under uffd-thread nothing is needed, and PrepareBuffer does
// nothing.
//
// read/pread fill at most what is left of a regular file, so only that much
// is prefaulted (a large buffer for a small file stays untouched).
//
// Every other system call that takes a pointer goes through one gate
// (Gate, below; interpose.cc lists them, one line each, with the
// description of their buffers): the described buffers are prefaulted, and
// a call that still fails with EFAULT is retried after widening: buffers of
// unknown size (Any: an ioctl's argument, syscall(2)'s pointers) are
// prefaulted for writing over 4 KiB << attempt from where they start. Sizes
// the kernel decides (getcwd, readlink, a /proc read) are prefaulted whole.
// Only idempotent-on-EFAULT calls are gated (the kernel fails them before
// any effect) or described well enough to succeed the first time.
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <time.h>

#include <initializer_list>
#include <type_traits>

#include "protocol/types.h"
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

namespace svm::rt {

inline constexpr int kSyscallRetries = 8;

ssize_t Read(int fd, void* buf, size_t n);
ssize_t Pread(int fd, void* buf, size_t n, off_t offset);
ssize_t Readv(int fd, const iovec* iov, int count);
ssize_t Preadv(int fd, const iovec* iov, int count, off_t offset);
ssize_t Recv(int fd, void* buf, size_t n, int flags);
ssize_t Recvfrom(int fd, void* buf, size_t n, int flags, sockaddr* from, socklen_t* from_len);
ssize_t Recvmsg(int fd, msghdr* msg, int flags);

ssize_t Write(int fd, const void* buf, size_t n);
ssize_t Pwrite(int fd, const void* buf, size_t n, off_t offset);
ssize_t Writev(int fd, const iovec* iov, int count);
ssize_t Pwritev(int fd, const iovec* iov, int count, off_t offset);
ssize_t Send(int fd, const void* buf, size_t n, int flags);
ssize_t Sendto(int fd, const void* buf, size_t n, int flags, const sockaddr* to, socklen_t to_len);
ssize_t Sendmsg(int fd, const msghdr* msg, int flags);

// _FORTIFY_SOURCE entry points: check the object size, then as above.
ssize_t ReadChk(int fd, void* buf, size_t n, size_t buf_len);
ssize_t PreadChk(int fd, void* buf, size_t n, off_t offset, size_t buf_len);
ssize_t RecvChk(int fd, void* buf, size_t n, size_t buf_len, int flags);
ssize_t RecvfromChk(int fd, void* buf, size_t n, size_t buf_len, int flags, sockaddr* from,
                    socklen_t* from_len);

size_t Fread(void* p, size_t size, size_t n, FILE* f);
size_t FreadChk(void* p, size_t p_len, size_t size, size_t n, FILE* f);
size_t Fwrite(const void* p, size_t size, size_t n, FILE* f);
char* Fgets(char* s, int n, FILE* f);
char* FgetsChk(char* s, size_t s_len, int n, FILE* f);
int Fgetc(FILE* f);
int Getc(FILE* f);
int Getchar();
int Uflow(FILE* f);  // __uflow: the refill behind getc_unlocked and friends
ssize_t Getdelim(char** line, size_t* cap, int delim, FILE* f);
ssize_t Getline(char** line, size_t* cap, FILE* f);
// The scanf family; `iso` picks glibc's __isoc99_ variant (what C99 and
// later programs call) over the GNU one.
int Vfscanf(FILE* f, const char* format, va_list ap, bool iso);
int Vscanf(const char* format, va_list ap, bool iso);

// ---- The gate ----

// A buffer the kernel reads (kRead) or fills (kWrite). n == kAnySize: size
// unknown (widened on each retry); str: a NUL-terminated string.
struct KernelBuf {
  const void* p;
  size_t n;
  Access a;
  bool str = false;
};
inline constexpr size_t kAnySize = ~size_t(0);
inline KernelBuf In(const void* p, size_t n) { return {p, n, Access::kRead}; }
inline KernelBuf Out(const void* p, size_t n) { return {p, n, Access::kWrite}; }
template <typename T>
KernelBuf InOf(const T* p) { return In(p, sizeof(T)); }
template <typename T>
KernelBuf OutOf(const T* p) { return Out(p, sizeof(T)); }
inline KernelBuf Str(const char* p) { return {p, 0, Access::kRead, true}; }
inline KernelBuf Any(const void* p) { return {p, kAnySize, Access::kWrite}; }
using KernelBufs = std::initializer_list<KernelBuf>;

// Whether the gate works for the caller (a program thread, a fault backend
// under which the kernel does not fault pages in).
bool Gated();
// Makes the buffers accessible for try number `attempt` (0 first).
void PrepareKernelBufs(KernelBufs bufs, int attempt);

// call() returns -1 (or nullptr) and sets errno on failure.
template <typename Call>
auto Gate(KernelBufs bufs, Call call) {
  using R = decltype(call());
  if (!Gated()) return call();
  for (int attempt = 0;; ++attempt) {
    PrepareKernelBufs(bufs, attempt);
    R r = call();
    bool failed;
    if constexpr (std::is_pointer_v<R>) failed = r == nullptr;
    else failed = r == R(-1);
    if (!failed || errno != EFAULT || attempt == kSyscallRetries) return r;
  }
}

// call() returns the error number (clock_nanosleep, posix_* calls).
template <typename Call>
int GateErr(KernelBufs bufs, Call call) {
  if (!Gated()) return call();
  for (int attempt = 0;; ++attempt) {
    PrepareKernelBufs(bufs, attempt);
    const int r = call();
    if (r != EFAULT || attempt == kSyscallRetries) return r;
  }
}

// Gated calls that need more than a description.
int ClockNanosleep(clockid_t clock, int flags, const timespec* req, timespec* rem);
char* Getcwd(char* buf, size_t n);  // also getcwd(NULL, n) and get_current_dir_name
// _FORTIFY_SOURCE entry points of gated calls: check the object size (abort
// as glibc does), then the gate.
void CheckObjectSize(size_t n, size_t object_len);
long Syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6);

}  // namespace svm::rt
