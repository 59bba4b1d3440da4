/* posix_libc_files P: libc functions that read files into buffers libc
 * allocates itself, through its own read(2), which no gate of svm sees: the
 * name service (getpwuid, getgrgid, getaddrinfo, gethostbyname,
 * getservbyname read nsswitch.conf, /etc/passwd, /etc/group, /etc/hosts,
 * /etc/services) and time zones (localtime of a TZ read from its file).
 * Under the uffd (SIGBUS) and mprotect backends the kernel could not fill
 * those fresh shared pages: the lookups failed with EFAULT, and localtime
 * silently fell back to UTC. Main and the last worker (another node) each
 * make every call. Needs the Debian packages tzdata and netbase
 * (scripts/install-deps). */
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <unistd.h>

#include "posix.h"

static int workers;

static void lookups(const char* who) {
  errno = 0;
  struct passwd* pw = getpwuid(0);
  CHECK(pw != NULL && strcmp(pw->pw_name, "root") == 0, "%s: getpwuid(0): errno %d", who, errno);
  struct group* gr = getgrgid(0);
  CHECK(gr != NULL && strcmp(gr->gr_name, "root") == 0, "%s: getgrgid(0): errno %d", who, errno);
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
  struct addrinfo* ai = NULL;
  int r = getaddrinfo("localhost", "80", &hints, &ai);
  CHECK(r == 0 && ai != NULL, "%s: getaddrinfo(localhost): %s", who, gai_strerror(r));
  const struct sockaddr_in* in = (const struct sockaddr_in*)ai->ai_addr;
  CHECK(ntohl(in->sin_addr.s_addr) == INADDR_LOOPBACK && ntohs(in->sin_port) == 80,
        "%s: getaddrinfo(localhost) gave %08x port %d", who, ntohl(in->sin_addr.s_addr), ntohs(in->sin_port));
  freeaddrinfo(ai);
  struct hostent* h = gethostbyname("localhost");
  CHECK(h != NULL && h->h_addrtype == AF_INET, "%s: gethostbyname(localhost): h_errno %d", who, h_errno);
  struct servent* se = getservbyname("ssh", "tcp");
  CHECK(se != NULL && ntohs(se->s_port) == 22, "%s: getservbyname(ssh) (netbase installed?)", who);
  /* 1700000000 is 2023-11-14 22:13:20 UTC, 17:13:20 EST. */
  setenv("TZ", "America/New_York", 1);
  tzset();
  time_t t = 1700000000;
  struct tm tm;
  CHECK(localtime_r(&t, &tm) != NULL, "%s: localtime_r", who);
  CHECK(tm.tm_hour == 17 && tm.tm_min == 13 && strcmp(tm.tm_zone, "EST") == 0,
        "%s: localtime in America/New_York is %02d:%02d %s (tzdata installed?)", who, tm.tm_hour, tm.tm_min,
        tm.tm_zone);
}

static void* work(void* arg) {
  if ((long)arg == workers - 1) lookups("worker");
  return 0;
}

int main(int argc, char** argv) {
  const int p = workers = arg_workers(argc, argv);
  lookups("main");
  run_workers(p, work);
  printf("posix_libc_files ok\n");
  return 0;
}
