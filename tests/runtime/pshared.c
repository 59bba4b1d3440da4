/* pshared P ROUNDS: a counter under a process-shared mutex, a process-shared
 * semaphore and barrier. svm warns that it synchronises such objects among
 * the job's threads only, and they work among them like any other.
 * Prints "pshared TOTAL SEMVALUE". */
#include <semaphore.h>

#include "prog.h"

static pthread_mutex_t mutex;
static pthread_barrier_t barrier;
static sem_t sem;
static long counter;
static int rounds;

static void* work(void* arg) {
  (void)arg;
  for (int r = 0; r < rounds; ++r) {
    CHECK(pthread_mutex_lock(&mutex) == 0, "lock");
    ++counter;
    CHECK(pthread_mutex_unlock(&mutex) == 0, "unlock");
  }
  CHECK(sem_post(&sem) == 0, "sem_post");
  pthread_barrier_wait(&barrier);
  return NULL;
}

int main(int argc, char** argv) {
  const int p = arg_workers(argc, argv);
  rounds = arg_int(argc, argv, 2, 100);
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  CHECK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED) == 0, "setpshared");
  CHECK(pthread_mutex_init(&mutex, &ma) == 0, "mutex init");
  pthread_barrierattr_t ba;
  pthread_barrierattr_init(&ba);
  CHECK(pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED) == 0, "setpshared");
  CHECK(pthread_barrier_init(&barrier, &ba, p) == 0, "barrier init");
  CHECK(sem_init(&sem, 1, 0) == 0, "sem_init");
  run_workers(p, work);
  int value = -1;
  CHECK(sem_getvalue(&sem, &value) == 0, "sem_getvalue");
  printf("pshared %ld %d\n", counter, value);
  return 0;
}
