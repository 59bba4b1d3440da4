/* posix_c11 P: C11 threads (<threads.h>) across nodes. glibc builds them on
 * internal calls that bypass the pthread symbols, so svm routes each one:
 * thrd_create places threads like pthread_create, mtx/cnd synchronise
 * job-wide, tss keys and destructors work on every node, call_once runs
 * once, thrd_sleep takes a shared duration, mtx_timedlock times out.
 * Under svm on several nodes, some C11 threads must run off node 0. */
#include <threads.h>

#include "posix.h"

static mtx_t mu, timed;
static cnd_t cv;
static tss_t key;
static once_flag once = ONCE_FLAG_INIT;
static long counter, inits, destroyed, arrived;
static long values[MAX_WORKERS];
static int nodes[MAX_WORKERS];
static struct timespec nap = {0, 1000000};
static int workers;

static void init(void) { ++inits; }
static void destroy(void* v) {
  mtx_lock(&mu);
  destroyed += *(long*)v;
  mtx_unlock(&mu);
}

static int work(void* arg) {
  const long i = (long)arg;
  call_once(&once, init);
  nodes[i] = node_id();
  values[i] = i;
  CHECK(tss_set(key, &values[i]) == thrd_success && tss_get(key) == &values[i], "tss");
  CHECK(thrd_sleep(&nap, NULL) == 0, "thrd_sleep");
  for (int k = 0; k < 50; ++k) {
    CHECK(mtx_lock(&mu) == thrd_success, "mtx_lock");
    ++counter;
    mtx_unlock(&mu);
  }
  mtx_lock(&mu);
  if (++arrived == workers) cnd_broadcast(&cv);
  while (arrived < workers) cnd_wait(&cv, &mu);
  mtx_unlock(&mu);
  return (int)(i * 3);
}

int main(int argc, char** argv) {
  const int p = workers = arg_workers(argc, argv);
  CHECK(mtx_init(&mu, mtx_plain) == thrd_success, "mtx_init");
  CHECK(mtx_init(&timed, mtx_timed) == thrd_success, "mtx_init timed");
  CHECK(cnd_init(&cv) == thrd_success, "cnd_init");
  CHECK(tss_create(&key, destroy) == thrd_success, "tss_create");
  thrd_t t[MAX_WORKERS];
  for (long i = 1; i < p; ++i) CHECK(thrd_create(&t[i], work, (void*)i) == thrd_success, "thrd_create");
  work((void*)0);
  long sum = 0;
  for (int i = 1; i < p; ++i) {
    int r = -1;
    CHECK(thrd_join(t[i], &r) == thrd_success, "thrd_join");
    sum += r;
  }
  CHECK(sum == 3L * p * (p - 1) / 2, "results %ld", sum);
  /* Placed across nodes as pthread_create places threads: with a worker
   * per thread slot of the job, some run off node 0. */
  if (under_svm() && svm_nodes && svm_nodes() > 1) {
    int away = 0;
    for (int i = 1; i < p; ++i) away += nodes[i] != 0;
    CHECK(away > 0, "every C11 thread ran on node 0");
  }
  CHECK(counter == 50L * p, "counter %ld", counter);
  CHECK(inits == 1, "call_once ran %ld times", inits);
  CHECK(destroyed == (long)p * (p - 1) / 2, "tss destructors %ld", destroyed);
  CHECK(thrd_equal(thrd_current(), thrd_current()), "thrd_current");
  CHECK(mtx_lock(&timed) == thrd_success, "lock timed");
  struct timespec d = in_ms(CLOCK_REALTIME, 30);
  CHECK(mtx_timedlock(&timed, &d) == thrd_timedout, "mtx_timedlock of a mutex this thread holds");
  mtx_unlock(&timed);
  printf("posix_c11 ok\n");
  return 0;
}
