/* posix_syscalls P: system calls svm has no special wrapper for, on shared
 * buffers whose pages another node holds (issue 13, failure 4: they failed
 * with EFAULT under the in-thread uffd backend). Main writes every buffer
 * (each on pages of its own, so no call finds its page valid by chance);
 * the last worker then calls open, stat, fstat, lstat, access, pipe,
 * getcwd, nanosleep, uname, readlink, clock_nanosleep and syscall(2) with
 * them, and getcwd(NULL, 0) and get_current_dir_name, whose buffers glibc
 * allocates; main checks the results. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "posix.h"

#ifndef PROGRAM
#define PROGRAM "posix_syscalls"
#endif

static int workers;
static char *path, *cwd, *link_buf, *raw_cwd, *alloc_cwd, *dir_name;
static struct stat *st_path, *st_fd, *st_link;
static int* fds;
static struct timespec *req, *rem;
static struct utsname* uts;
static char g_path[256] = "/proc/self/exe";
static long results[16];
/* Globals of known size: built with _FORTIFY_SOURCE (posix_syscalls_fortify),
 * the calls on them go to glibc's __getcwd_chk and __readlink_chk. */
static char g_cwd[512], g_link[512];

static void* page(size_t n) {
  void* p = NULL;
  CHECK(posix_memalign(&p, 4096, (n + 4095) / 4096 * 4096) == 0, "posix_memalign");
  memset(p, 0, n);
  return p;
}

static void io(void) {
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0, "open(shared path): errno %d", errno);
  CHECK(stat(path, st_path) == 0, "stat: errno %d", errno);
  CHECK(fstat(fd, st_fd) == 0, "fstat: errno %d", errno);
  close(fd);
  CHECK(access(path, R_OK) == 0, "access: errno %d", errno);
  CHECK(lstat(g_path, st_link) == 0, "lstat(shared global): errno %d", errno);
  CHECK(pipe(fds) == 0, "pipe: errno %d", errno);
  CHECK(getcwd(cwd, 4096) == cwd, "getcwd: errno %d", errno);
  CHECK(nanosleep(req, rem) == 0, "nanosleep: errno %d", errno);
  CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, req, rem) == 0, "clock_nanosleep");
  CHECK(uname(uts) == 0, "uname: errno %d", errno);
  results[0] = readlink(g_path, link_buf, 4096);
  CHECK(results[0] > 0, "readlink: errno %d", errno);
  results[1] = syscall(SYS_getcwd, raw_cwd, 4096);
  CHECK(results[1] > 0, "syscall(SYS_getcwd): errno %d", errno);
  volatile size_t len = sizeof g_cwd; /* unknown to the compiler: the _chk calls */
  CHECK(getcwd(g_cwd, len) == g_cwd, "getcwd(global): errno %d", errno);
  CHECK(readlink(g_path, g_link, len) > 0, "readlink(global): errno %d", errno);
  /* glibc allocates these buffers itself. */
  alloc_cwd = getcwd(NULL, 0);
  CHECK(alloc_cwd != NULL, "getcwd(NULL, 0): errno %d", errno);
  dir_name = get_current_dir_name();
  CHECK(dir_name != NULL, "get_current_dir_name: errno %d", errno);
}

static void* work(void* arg) {
  if ((long)arg == workers - 1) io();
  return 0;
}

int main(int argc, char** argv) {
  const int p = workers = arg_workers(argc, argv);
  path = page(4096);
  strcpy(path, "/proc/self/status");
  cwd = page(4096);
  link_buf = page(4096);
  raw_cwd = page(4096);
  st_path = page(sizeof *st_path);
  st_fd = page(sizeof *st_fd);
  st_link = page(sizeof *st_link);
  fds = page(2 * sizeof *fds);
  req = page(sizeof *req);
  req->tv_nsec = 1000000;
  rem = page(sizeof *rem);
  uts = page(sizeof *uts);
  g_path[100] = 1; /* main writes the global, so its page is node 0's */
  run_workers(p, work);

  char here[4096];
  CHECK(getcwd(here, sizeof here) && strcmp(here, cwd) == 0, "cwd '%s'", cwd);
  CHECK(strcmp(here, raw_cwd) == 0, "raw cwd '%s'", raw_cwd);
  CHECK(strcmp(here, alloc_cwd) == 0, "getcwd(NULL, 0) '%s'", alloc_cwd);
  CHECK(strcmp(here, g_cwd) == 0 && strcmp(link_buf, g_link) == 0, "globals '%s' '%s'", g_cwd, g_link);
  CHECK(strcmp(here, dir_name) == 0, "get_current_dir_name '%s'", dir_name);
  free(alloc_cwd);
  free(dir_name);
  CHECK(st_path->st_mode != 0 && st_fd->st_mode != 0, "stat results");
  CHECK(S_ISLNK(st_link->st_mode), "lstat of /proc/self/exe: mode %o", st_link->st_mode);
  CHECK(fds[0] > 2 && fds[1] > 2 && fds[0] != fds[1], "pipe fds %d %d", fds[0], fds[1]);
  CHECK(strcmp(uts->sysname, "Linux") == 0, "uname '%s'", uts->sysname);
  CHECK(link_buf[0] == '/', "readlink '%s'", link_buf);
  printf("%s ok\n", PROGRAM);
  return 0;
}
