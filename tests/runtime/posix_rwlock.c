/* posix_rwlock P: the timed read-write lock calls (issue 13, failure 2:
 * they were not interposed, glibc took the lock and the interposed unlock
 * never released it). Worker 1 write-locks until worker 0 is done trying
 * (5 s at most: a loaded machine must not free it early); worker 0's 50 ms
 * timedwrlock, timedrdlock, clockwrlock and clockrdlock give ETIMEDOUT;
 * then every worker takes the lock with each timed call in turn and checks
 * an invariant over two pages. */
#include "posix.h"

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t held, released;
static pthread_mutex_t tried_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tried_cv = PTHREAD_COND_INITIALIZER;
static int tried;
static struct {
  long a;
  char gap[8192];
  long b;
} shared;

static void timed_out(int r, const char* what) {
  CHECK(r == ETIMEDOUT, "%s returned %d, want ETIMEDOUT", what, r);
}

static void* work(void* arg) {
  const long i = (long)arg;
  if (i == 1) CHECK(pthread_rwlock_wrlock(&rw) == 0, "wrlock");
  pthread_barrier_wait(&held);
  if (i == 0) {
    struct timespec d = in_ms(CLOCK_REALTIME, 50);
    timed_out(pthread_rwlock_timedwrlock(&rw, &d), "timedwrlock");
    d = in_ms(CLOCK_REALTIME, 50);
    timed_out(pthread_rwlock_timedrdlock(&rw, &d), "timedrdlock");
    d = in_ms(CLOCK_MONOTONIC, 50);
    timed_out(pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &d), "clockwrlock");
    d = in_ms(CLOCK_MONOTONIC, 50);
    timed_out(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &d), "clockrdlock");
    d = in_ms(CLOCK_MONOTONIC, 50);
    CHECK(pthread_rwlock_clockwrlock(&rw, CLOCK_THREAD_CPUTIME_ID, &d) == EINVAL, "bad clock");
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
    CHECK(pthread_rwlock_unlock(&rw) == 0, "unlock");
  }
  pthread_barrier_wait(&released);
  for (int k = 0; k < 20; ++k) {
    struct timespec far = in_ms(CLOCK_REALTIME, 20000);
    struct timespec mfar = in_ms(CLOCK_MONOTONIC, 20000);
    if (k % 2 == 0) {
      CHECK((k % 4 ? pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &mfar)
                   : pthread_rwlock_timedwrlock(&rw, &far)) == 0, "timed write lock");
      ++shared.a;
      ++shared.b;
    } else {
      CHECK((k % 4 == 1 ? pthread_rwlock_timedrdlock(&rw, &far)
                        : pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &mfar)) == 0,
            "timed read lock");
      CHECK(shared.a == shared.b, "a %ld b %ld", shared.a, shared.b);
    }
    CHECK(pthread_rwlock_unlock(&rw) == 0, "unlock");
  }
  return 0;
}

int main(int argc, char** argv) {
  const int p = arg_workers(argc, argv);
  CHECK(p >= 2, "needs 2 workers");
  pthread_barrier_init(&held, NULL, p);
  pthread_barrier_init(&released, NULL, p);
  run_workers(p, work);
  CHECK(shared.a == 10L * p && shared.b == 10L * p, "a %ld b %ld", shared.a, shared.b);
  printf("posix_rwlock ok\n");
  return 0;
}
