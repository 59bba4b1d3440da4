/* posix_cond_sem P: timed waits on condition variables and semaphores, on
 * every clock glibc accepts. A condition whose attribute picks
 * CLOCK_MONOTONIC times out on that clock; pthread_cond_clockwait and
 * sem_clockwait take their clock as an argument; a bad clock is EINVAL.
 * Then a round of hand-offs across the workers: each waits, with a far
 * deadline, for its predecessor's post and signal. sem_open is refused
 * under svm (ENOTSUP). */
#include <fcntl.h>
#include <semaphore.h>
#include <unistd.h>

#include "posix.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mono, plain = PTHREAD_COND_INITIALIZER;
static sem_t sems[MAX_WORKERS];
static long turn, total;
static int workers;

static void* work(void* arg) {
  const long i = (long)arg;
  struct timespec far = in_ms(CLOCK_MONOTONIC, 20000);
  if (i > 0) CHECK(sem_clockwait(&sems[i], CLOCK_MONOTONIC, &far) == 0, "sem_clockwait: errno %d", errno);
  pthread_mutex_lock(&mu);
  struct timespec rfar = in_ms(CLOCK_REALTIME, 20000);
  while (turn != i) CHECK(pthread_cond_timedwait(&plain, &mu, &rfar) == 0, "cond_timedwait");
  ++turn;
  total += i;
  pthread_cond_broadcast(&plain);
  pthread_mutex_unlock(&mu);
  if (i + 1 < workers) CHECK(sem_post(&sems[i + 1]) == 0, "sem_post");
  return 0;
}

int main(int argc, char** argv) {
  const int p = workers = arg_workers(argc, argv);
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  CHECK(pthread_condattr_setclock(&a, CLOCK_MONOTONIC) == 0, "setclock");
  CHECK(pthread_cond_init(&mono, &a) == 0, "cond_init");
  for (int i = 0; i < p; ++i) CHECK(sem_init(&sems[i], 0, 0) == 0, "sem_init");

  pthread_mutex_lock(&mu);
  long long t0 = now_ns(CLOCK_MONOTONIC);
  struct timespec d = in_ms(CLOCK_MONOTONIC, 50);
  CHECK(pthread_cond_timedwait(&mono, &mu, &d) == ETIMEDOUT, "timedwait on a MONOTONIC condition");
  CHECK(now_ns(CLOCK_MONOTONIC) - t0 < 1000000000LL, "it waited on the wrong clock");
  d = in_ms(CLOCK_MONOTONIC, 30);
  CHECK(pthread_cond_clockwait(&plain, &mu, CLOCK_MONOTONIC, &d) == ETIMEDOUT, "clockwait MONOTONIC");
  d = in_ms(CLOCK_REALTIME, 30);
  CHECK(pthread_cond_clockwait(&plain, &mu, CLOCK_REALTIME, &d) == ETIMEDOUT, "clockwait REALTIME");
  CHECK(pthread_cond_clockwait(&plain, &mu, CLOCK_PROCESS_CPUTIME_ID, &d) == EINVAL, "bad clock");
  pthread_mutex_unlock(&mu);

  d = in_ms(CLOCK_REALTIME, 30);
  CHECK(sem_timedwait(&sems[0], &d) == -1 && errno == ETIMEDOUT, "sem_timedwait");
  d = in_ms(CLOCK_MONOTONIC, 30);
  CHECK(sem_clockwait(&sems[0], CLOCK_MONOTONIC, &d) == -1 && errno == ETIMEDOUT, "sem_clockwait");
  CHECK(sem_clockwait(&sems[0], CLOCK_THREAD_CPUTIME_ID, &d) == -1 && errno == EINVAL, "sem bad clock");

  /* Named semaphores: refused under svm (they live in a file each node maps
   * privately), ordinary natively. */
  char name[64];
  snprintf(name, sizeof name, "/svm-posix-%d", (int)getpid());
  sem_t* named = sem_open(name, O_CREAT | O_EXCL, 0600, 1);
  if (under_svm()) {
    CHECK(named == SEM_FAILED && errno == ENOTSUP, "sem_open under svm: errno %d", errno);
  } else {
    CHECK(named != SEM_FAILED && sem_wait(named) == 0, "sem_open natively: errno %d", errno);
    sem_close(named);
    sem_unlink(name);
  }

  run_workers(p, work);
  CHECK(turn == p && total == (long)p * (p - 1) / 2, "turn %ld total %ld", turn, total);
  printf("posix_cond_sem ok\n");
  return 0;
}
