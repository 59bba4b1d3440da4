/* posix_handles P: glibc calls that take a pthread_t (issue 13, failure 6:
 * svm's handles are not glibc thread pointers and every such call crashed).
 * Every worker names itself and reads the name back, reads its attributes,
 * scheduling parameters, affinity and CPU clock, and signals itself with
 * signal 0. Main then probes each worker's handle with pthread_kill(t, 0):
 * 0 for a thread of its own node, ENOTSUP (svm's documented answer) for a
 * thread of another node. pthread_cancel of an svm thread is refused with
 * ENOTSUP; natively it cancels. */
#include <sched.h>
#include <signal.h>

#include "posix.h"

static pthread_barrier_t ready, done;
static int nodes[MAX_WORKERS];

static void self_calls(long i) {
  pthread_t me = pthread_self();
  char name[16], got[16];
  snprintf(name, sizeof name, "worker-%ld", i);
  CHECK(pthread_setname_np(me, name) == 0, "setname_np");
  CHECK(pthread_getname_np(me, got, sizeof got) == 0 && strcmp(got, name) == 0, "getname_np '%s'", got);
  pthread_attr_t a;
  size_t stack = 0;
  CHECK(pthread_getattr_np(me, &a) == 0, "getattr_np");
  CHECK(pthread_attr_getstacksize(&a, &stack) == 0 && stack > 0, "stack size");
  pthread_attr_destroy(&a);
  int policy = -1;
  struct sched_param sp;
  CHECK(pthread_getschedparam(me, &policy, &sp) == 0 && policy == SCHED_OTHER, "getschedparam");
  CHECK(pthread_setschedparam(me, policy, &sp) == 0, "setschedparam");
  cpu_set_t set;
  CHECK(pthread_getaffinity_np(me, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0, "getaffinity_np");
  CHECK(pthread_setaffinity_np(me, sizeof set, &set) == 0, "setaffinity_np");
  clockid_t c;
  struct timespec ts;
  CHECK(pthread_getcpuclockid(me, &c) == 0 && clock_gettime(c, &ts) == 0, "getcpuclockid");
  CHECK(pthread_kill(me, 0) == 0, "kill(self, 0)");
  CHECK(pthread_equal(me, pthread_self()), "equal");
}

static void* work(void* arg) {
  const long i = (long)arg;
  self_calls(i);
  nodes[i] = node_id();
  pthread_barrier_wait(&ready);
  pthread_barrier_wait(&done);
  return 0;
}

static void* idle(void* arg) {
  (void)arg;
  for (;;) sleep_ms(1000);
  return 0;
}

int main(int argc, char** argv) {
  const int p = arg_workers(argc, argv);
  pthread_barrier_init(&ready, NULL, p);
  pthread_barrier_init(&done, NULL, p);
  pthread_t t[MAX_WORKERS];
  for (long i = 1; i < p; ++i) CHECK(pthread_create(&t[i], NULL, work, (void*)i) == 0, "create");
  self_calls(0);
  pthread_barrier_wait(&ready);
  for (int i = 1; i < p; ++i) {
    const int want = nodes[i] == node_id() ? 0 : ENOTSUP;
    const int got = pthread_kill(t[i], 0);
    CHECK(got == want, "pthread_kill(worker %d on node %d, 0) = %d, want %d", i, nodes[i], got, want);
    if (got == 0) {
      struct sched_param sp;
      int policy;
      CHECK(pthread_getschedparam(t[i], &policy, &sp) == 0, "getschedparam of worker %d", i);
    }
  }
  pthread_barrier_wait(&done);
  for (int i = 1; i < p; ++i) CHECK(pthread_join(t[i], NULL) == 0, "join");

  /* Cancellation: refused for svm threads. The thread is the next one
   * created, so under svm it lands on a node of its own placement. */
  pthread_t c;
  CHECK(pthread_create(&c, NULL, idle, NULL) == 0, "create");
  const int r = pthread_cancel(c);
  if (under_svm()) {
    CHECK(r == ENOTSUP, "cancel gave %d, want ENOTSUP", r);
  } else {
    CHECK(r == 0, "cancel gave %d", r);
    CHECK(pthread_join(c, NULL) == 0, "join cancelled");
  }
  printf("posix_handles ok\n");
  return 0;
}
