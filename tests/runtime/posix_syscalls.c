/* posix_syscalls P: system calls svm has no special wrapper for, on shared
 * buffers whose pages another node holds (issue 13, failure 4: they failed
 * with EFAULT under the in-thread uffd backend). Main writes every buffer
 * (each on pages of its own, so no call finds its page valid by chance);
 * the last worker then calls open, stat, fstat, lstat, access, pipe,
 * getcwd, nanosleep, uname, readlink, clock_nanosleep and syscall(2) with
 * them, and getcwd(NULL, 0) and get_current_dir_name, whose buffers glibc
 * allocates; then prctl, wait4, getentropy, getresuid, statvfs, timerfd,
 * sendfile, sched_getparam, prlimit, eventfd_read, sigwait, mincore and a
 * CPU-time clock_gettime (before they were gated, all but sigwait and
 * clock_gettime, which were not tried, failed with EFAULT);
 * main checks the results. */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/statvfs.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
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
/* The calls gated later, one page each. */
static char *thread_name, *got_name;
static int* status;
static struct rusage* usage;
static unsigned char *entropy, *vec;
static uid_t* ids;
static struct statvfs* vfs;
static struct itimerspec *timer_new, *timer_old;
static off_t* offset;
static struct sched_param* param;
static struct rlimit* limit;
static eventfd_t* event;
static sigset_t* set;
static int* sig;
static struct timespec* cpu;
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

static void more(void) {
  CHECK(prctl(PR_SET_NAME, thread_name) == 0, "prctl(PR_SET_NAME): errno %d", errno);
  CHECK(prctl(PR_GET_NAME, got_name) == 0, "prctl(PR_GET_NAME): errno %d", errno);
  pid_t child;
  char* argv[] = {"true", NULL};
  CHECK(posix_spawnp(&child, "true", NULL, NULL, argv, NULL) == 0, "posix_spawnp");
  CHECK(wait4(child, status, 0, usage) == child, "wait4: errno %d", errno);
  CHECK(getentropy(entropy, 32) == 0, "getentropy: errno %d", errno);
  CHECK(getresuid(&ids[0], &ids[1], &ids[2]) == 0, "getresuid: errno %d", errno);
  CHECK(statvfs(path, vfs) == 0, "statvfs: errno %d", errno);
  const int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
  CHECK(timerfd_settime(tfd, 0, timer_new, timer_old) == 0, "timerfd_settime: errno %d", errno);
  CHECK(timerfd_gettime(tfd, timer_old) == 0, "timerfd_gettime: errno %d", errno);
  close(tfd);
  const int in = open("/proc/self/exe", O_RDONLY), out = open("/dev/null", O_WRONLY);
  CHECK(sendfile(out, in, offset, 100) == 100, "sendfile: errno %d", errno);
  close(in);
  close(out);
  CHECK(sched_getparam(0, param) == 0, "sched_getparam: errno %d", errno);
  CHECK(prlimit(0, RLIMIT_NOFILE, NULL, limit) == 0, "prlimit: errno %d", errno);
  const int efd = eventfd(3, 0);
  CHECK(eventfd_read(efd, event) == 0, "eventfd_read: errno %d", errno);
  close(efd);
  CHECK(pthread_sigmask(SIG_BLOCK, set, NULL) == 0, "pthread_sigmask");
  CHECK(pthread_kill(pthread_self(), SIGUSR1) == 0, "pthread_kill");
  CHECK(sigwait(set, sig) == 0, "sigwait");
  CHECK(mincore(vec, 4096, vec) == 0, "mincore: errno %d", errno); /* vec is page-aligned */
  CHECK(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, cpu) == 0, "clock_gettime(CPU): errno %d", errno);
}

static void* work(void* arg) {
  if ((long)arg == workers - 1) {
    io();
    more();
  }
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
  thread_name = page(16);
  strcpy(thread_name, "renamed");
  got_name = page(16);
  status = page(sizeof *status);
  *status = -1;
  usage = page(sizeof *usage);
  entropy = page(32);
  vec = page(1);
  vec[0] = 0xfe;
  ids = page(3 * sizeof *ids);
  memset(ids, 0xff, 3 * sizeof *ids);
  vfs = page(sizeof *vfs);
  timer_new = page(sizeof *timer_new);
  timer_new->it_value.tv_sec = 100;
  timer_old = page(sizeof *timer_old);
  offset = page(sizeof *offset);
  param = page(sizeof *param);
  param->sched_priority = -1;
  limit = page(sizeof *limit);
  event = page(sizeof *event);
  set = page(sizeof *set);
  sigemptyset(set);
  sigaddset(set, SIGUSR1);
  sig = page(sizeof *sig);
  cpu = page(sizeof *cpu);
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
  CHECK(strcmp(got_name, "renamed") == 0, "prctl(PR_GET_NAME) '%s'", got_name);
  CHECK(WIFEXITED(*status) && WEXITSTATUS(*status) == 0 && usage->ru_maxrss > 0, "wait4 status %d", *status);
  int zero = 0;
  for (int i = 0; i < 32; ++i) zero += entropy[i] == 0;
  CHECK(zero < 8, "getentropy left %d zero bytes", zero);
  CHECK(ids[0] == getuid() && ids[1] == geteuid(), "getresuid %d %d", (int)ids[0], (int)ids[1]);
  CHECK(vfs->f_bsize > 0, "statvfs f_bsize %lu", vfs->f_bsize);
  CHECK(timer_old->it_value.tv_sec > 90, "timerfd_gettime %ld s left", (long)timer_old->it_value.tv_sec);
  CHECK(*offset == 100, "sendfile offset %ld", (long)*offset);
  CHECK(param->sched_priority == 0, "sched_getparam priority %d", param->sched_priority);
  CHECK(limit->rlim_cur > 0, "prlimit");
  CHECK(*event == 3, "eventfd_read %lu", (unsigned long)*event);
  CHECK(*sig == SIGUSR1, "sigwait %d", *sig);
  CHECK((vec[0] & ~1) == 0, "mincore %#x", vec[0]);
  CHECK(cpu->tv_sec > 0 || cpu->tv_nsec > 0, "clock_gettime(CPU)");
  printf("%s ok\n", PROGRAM);
  return 0;
}
