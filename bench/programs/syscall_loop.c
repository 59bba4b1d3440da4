/* syscall_loop ITERS: a system-call-heavy loop on buffers in the (shared) heap:
 * per iteration stat, fstat, getcwd, access, read from /dev/zero, write to
 * /dev/null, pipe + 2 close: 9 calls, 6 of them through svm's gate
 * (libsvm/syscalls.h). Prints "syscalls: N calls, X ns/call, C cpu-ns/call":
 * wall time, and the calling thread's CPU time (user + system), which a
 * busy shared machine disturbs less. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const long iters = argc > 1 ? atol(argv[1]) : 100000;
  char* path = malloc(64);
  strcpy(path, "/dev/null");
  struct stat* st = malloc(sizeof *st);
  char* buf = malloc(4096);
  int* fds = malloc(2 * sizeof *fds);
  /* Touched first: the loop measures the steady state (pages valid). */
  memset(st, 0, sizeof *st);
  memset(buf, 0, 4096);
  fds[0] = fds[1] = -1;
  const int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
  if (zero < 0 || null < 0) return 1;
  struct timespec t0, t1, c0, c1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  for (long i = 0; i < iters; ++i) {
    if (stat(path, st) != 0 || fstat(zero, st) != 0 || !getcwd(buf, 4096) || access(path, W_OK) != 0 ||
        read(zero, buf, 64) != 64 || write(null, buf, 64) != 64 || pipe(fds) != 0)
      return 1;
    close(fds[0]);
    close(fds[1]);
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
  const double cpu = (c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec);
  printf("syscalls: %ld calls, %.1f ns/call, %.1f cpu-ns/call\n", iters * 9, ns / (iters * 9.0),
         cpu / (iters * 9.0));
  return 0;
}
