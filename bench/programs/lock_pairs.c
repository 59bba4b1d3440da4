/* lock_pairs P TOTAL: TOTAL lock/unlock pairs of one mutex in all, split over
 * P workers, each incrementing a shared counter in its critical section.
 * Prints "lock_pairs P TOTAL: S s" (the time from the first worker's start
 * to the last one's end, thread creation excluded). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static long counter, each;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void* work(void* arg) {
  (void)arg;
  pthread_barrier_wait(&start);
  for (long k = 0; k < each; ++k) {
    pthread_mutex_lock(&mu);
    ++counter;
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

int main(int argc, char** argv) {
  const int p = argc > 1 ? atoi(argv[1]) : 1;
  const long total = argc > 2 ? atol(argv[2]) : 100000;
  if (p < 1 || p > 256) return 2;
  each = total / p;
  pthread_t t[256];
  pthread_barrier_init(&start, NULL, (unsigned)p + 1);
  for (long i = 0; i < p; ++i) pthread_create(&t[i], NULL, work, (void*)i);
  pthread_barrier_wait(&start);
  const double t0 = now_s();
  for (int i = 0; i < p; ++i) pthread_join(t[i], NULL);
  const double s = now_s() - t0;
  if (counter != each * p) {
    printf("FAIL counter %ld, want %ld\n", counter, each * p);
    return 1;
  }
  printf("lock_pairs %d %ld: %.3f s\n", p, each * p, s);
  return 0;
}
