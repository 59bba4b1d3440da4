/* barriers P N: P workers meet at one barrier N times, touching no shared
 * data (an empty barrier). Prints "barriers P N: U us per barrier". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_barrier_t barrier;
static long rounds;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double t0;

/* The first meeting starts the clock (every worker is running by then). */
static void* work(void* arg) {
  pthread_barrier_wait(&barrier);
  if (arg) t0 = now_us();
  for (long k = 0; k < rounds; ++k) pthread_barrier_wait(&barrier);
  return NULL;
}

int main(int argc, char** argv) {
  const int p = argc > 1 ? atoi(argv[1]) : 2;
  rounds = argc > 2 ? atol(argv[2]) : 10000;
  if (p < 1 || p > 256) return 2;
  pthread_t t[256];
  pthread_barrier_init(&barrier, NULL, (unsigned)p);
  for (long i = 1; i < p; ++i) pthread_create(&t[i], NULL, work, NULL);
  work((void*)1);
  const double us = now_us() - t0;
  for (int i = 1; i < p; ++i) pthread_join(t[i], NULL);
  printf("barriers %d %ld: %.1f us per barrier\n", p, rounds, us / (double)rounds);
  return 0;
}
