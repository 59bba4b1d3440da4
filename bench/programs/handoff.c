/* handoff N: strict alternation of one mutex between two workers (under
 * svmrun -n 2 -t 1: two nodes). Each worker takes the lock until it finds
 * its turn, N times; a take that finds the other's turn is wasted. Prints
 * "handoff N: U us per handoff, W wasted of A acquisitions (X %)". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static int turn;
static long wasted[2], taken[2];
static long rounds;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void* work(void* arg) {
  const int me = (int)(long)arg;
  long w = 0, a = 0;
  pthread_barrier_wait(&start);
  for (long k = 0; k < rounds; ++k) {
    for (;;) {
      pthread_mutex_lock(&mu);
      ++a;
      if (turn == me) {
        turn = 1 - me;
        pthread_mutex_unlock(&mu);
        break;
      }
      pthread_mutex_unlock(&mu);
      ++w;
    }
  }
  wasted[me] = w;  /* read by main after the second barrier */
  taken[me] = a;
  pthread_barrier_wait(&start);
  return NULL;
}

int main(int argc, char** argv) {
  rounds = argc > 1 ? atol(argv[1]) : 10000;
  pthread_t other;
  pthread_barrier_init(&start, NULL, 2);
  pthread_create(&other, NULL, work, (void*)1L);
  const double t0 = now_us();
  work((void*)0L);
  const double us = now_us() - t0;
  pthread_join(other, NULL);
  const long w = wasted[0] + wasted[1], a = taken[0] + taken[1];
  printf("handoff %ld: %.1f us per handoff, %ld wasted of %ld acquisitions (%.2f %%; %ld + %ld)\n", rounds,
         us / (2.0 * rounds), w, a, 100.0 * w / a, wasted[0], wasted[1]);
  return 0;
}
