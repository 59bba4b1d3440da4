/* mutex_kinds P: recursive and error-checking mutex semantics across nodes.
 *   recursive: lock three times (static initialiser and attr-made), trylock
 *              by the owner succeeds, the counter is exact
 *   errorcheck: relock by the owner is EDEADLK, unlock by a non-owner (other
 *              workers, other nodes) and of an unlocked mutex is EPERM
 *   normal: trylock by the owner is EBUSY
 * Prints "mutex_kinds C0 C1 C2" (one counter per mutex). */
#include <errno.h>

#include "prog.h"

static pthread_mutex_t rec_static = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t rec_attr, errcheck;
static pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t barrier;
static long counter[3]; /* under rec_static, rec_attr, errcheck */
static int workers;

static void* work(void* arg) {
  const long i = (long)arg;
  for (int k = 0; k < 20; ++k) {
    pthread_mutex_t* m = k % 2 ? &rec_attr : &rec_static;
    CHECK(pthread_mutex_lock(m) == 0, "lock 1");
    CHECK(pthread_mutex_lock(m) == 0, "lock 2");
    CHECK(pthread_mutex_trylock(m) == 0, "trylock by owner");
    counter[k % 2] += 1;
    CHECK(pthread_mutex_unlock(m) == 0, "unlock 3");
    CHECK(pthread_mutex_unlock(m) == 0, "unlock 2");
    counter[k % 2] += 1; /* still held once */
    CHECK(pthread_mutex_unlock(m) == 0, "unlock 1");
  }
  if (i == 0) {
    CHECK(pthread_mutex_lock(&errcheck) == 0, "errorcheck lock");
    CHECK(pthread_mutex_lock(&errcheck) == EDEADLK, "errorcheck relock");
    CHECK(pthread_mutex_lock(&normal) == 0, "normal lock");
    CHECK(pthread_mutex_trylock(&normal) == EBUSY, "normal trylock by owner");
    CHECK(pthread_mutex_unlock(&normal) == 0, "normal unlock");
  }
  pthread_barrier_wait(&barrier);
  if (i != 0) CHECK(pthread_mutex_unlock(&errcheck) == EPERM, "errorcheck unlock by non-owner");
  pthread_barrier_wait(&barrier);
  if (i == 0) {
    CHECK(pthread_mutex_unlock(&errcheck) == 0, "errorcheck unlock");
    CHECK(pthread_mutex_unlock(&errcheck) == EPERM, "errorcheck unlock of unlocked");
  }
  pthread_barrier_wait(&barrier);
  /* Every worker can now take it in turn. */
  CHECK(pthread_mutex_lock(&errcheck) == 0, "errorcheck lock by %ld", i);
  counter[2] += 100;
  CHECK(pthread_mutex_unlock(&errcheck) == 0, "errorcheck unlock by %ld", i);
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  CHECK(pthread_mutex_init(&rec_attr, &a) == 0, "init recursive");
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
  CHECK(pthread_mutex_init(&errcheck, &a) == 0, "init errorcheck");
  pthread_mutexattr_destroy(&a);
  pthread_barrier_init(&barrier, NULL, workers);
  run_workers(workers, work);
  printf("mutex_kinds %ld %ld %ld\n", counter[0], counter[1], counter[2]);
  return 0;
}
