/* posix_mutex P: pthread_mutex_timedlock and pthread_mutex_clocklock honour
 * their deadline (issue 13, failure 1: the deadline was ignored). Worker 1
 * holds the mutex until worker 0 is done trying (5 s at most: a loaded
 * machine must not free it early); worker 0's 50 ms timed locks, on
 * CLOCK_REALTIME and CLOCK_MONOTONIC, give ETIMEDOUT near the deadline
 * (well before 5 s: an ignored deadline fails the bound); a bad clock or
 * tv_nsec gives EINVAL; once released, a timed lock succeeds. Recursive and
 * error-checking mutexes keep their kinds under timedlock. */
#include "posix.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t held, released;
static pthread_mutex_t tried_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tried_cv = PTHREAD_COND_INITIALIZER;
static int tried;
static long counter;

static void timed_out(int r, long long t0, const char* what) {
  const long long ms = (now_ns(CLOCK_MONOTONIC) - t0) / 1000000;
  CHECK(r == ETIMEDOUT, "%s returned %d after %lld ms, want ETIMEDOUT", what, r, ms);
  CHECK(ms >= 40 && ms < 2000, "%s timed out after %lld ms, want ~50", what, ms);
}

static void* work(void* arg) {
  const long i = (long)arg;
  if (i == 1) CHECK(pthread_mutex_lock(&m) == 0, "lock");
  pthread_barrier_wait(&held);
  if (i == 0) {
    long long t0 = now_ns(CLOCK_MONOTONIC);
    struct timespec d = in_ms(CLOCK_REALTIME, 50);
    timed_out(pthread_mutex_timedlock(&m, &d), t0, "timedlock");
    t0 = now_ns(CLOCK_MONOTONIC);
    d = in_ms(CLOCK_MONOTONIC, 50);
    timed_out(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &d), t0, "clocklock(MONOTONIC)");
    t0 = now_ns(CLOCK_MONOTONIC);
    d = in_ms(CLOCK_REALTIME, 50);
    timed_out(pthread_mutex_clocklock(&m, CLOCK_REALTIME, &d), t0, "clocklock(REALTIME)");
    d = in_ms(CLOCK_REALTIME, 50);
    CHECK(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &d) == EINVAL, "bad clock");
    d.tv_nsec = 2000000000L;
    CHECK(pthread_mutex_timedlock(&m, &d) == EINVAL, "bad tv_nsec");
    pthread_mutex_lock(&tried_mu);
    tried = 1;
    pthread_cond_signal(&tried_cv);
    pthread_mutex_unlock(&tried_mu);
  }
  if (i == 1) {
    struct timespec until = in_ms(CLOCK_REALTIME, 5000);
    pthread_mutex_lock(&tried_mu);
    while (!tried && pthread_cond_timedwait(&tried_cv, &tried_mu, &until) == 0) {
    }
    pthread_mutex_unlock(&tried_mu);
    CHECK(pthread_mutex_unlock(&m) == 0, "unlock");
  }
  pthread_barrier_wait(&released);
  /* Every worker takes it with a deadline far off. */
  struct timespec far = in_ms(CLOCK_REALTIME, 20000);
  CHECK(pthread_mutex_timedlock(&m, &far) == 0, "timedlock, free mutex");
  ++counter;
  CHECK(pthread_mutex_unlock(&m) == 0, "unlock");
  return 0;
}

int main(int argc, char** argv) {
  const int p = arg_workers(argc, argv);
  CHECK(p >= 2, "needs 2 workers");
  pthread_barrier_init(&held, NULL, p);
  pthread_barrier_init(&released, NULL, p);
  run_workers(p, work);
  CHECK(counter == p, "counter %ld", counter);

  /* Kinds: a recursive mutex relocks under timedlock, an error-checking one
   * reports EDEADLK. */
  pthread_mutexattr_t a;
  pthread_mutex_t r, e;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&r, &a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_init(&e, &a);
  struct timespec d = in_ms(CLOCK_REALTIME, 1000);
  CHECK(pthread_mutex_timedlock(&r, &d) == 0 && pthread_mutex_timedlock(&r, &d) == 0, "recursive");
  CHECK(pthread_mutex_unlock(&r) == 0 && pthread_mutex_unlock(&r) == 0, "recursive unlock");
  CHECK(pthread_mutex_timedlock(&e, &d) == 0, "errorcheck");
  CHECK(pthread_mutex_timedlock(&e, &d) == EDEADLK, "errorcheck relock");
  CHECK(pthread_mutex_unlock(&e) == 0, "errorcheck unlock");
  printf("posix_mutex ok\n");
  return 0;
}
