/* cond_queue P ITEMS: one producer (worker 0) hands ITEMS items one at a
 * time to P-1 consumers through a one-slot queue, a mutex and two condition
 * variables, signalling once per item (the textbook bounded buffer). Each
 * signal needs one waiter; under svm, what else it wakes costs lock
 * traffic. Prints "cond_queue P ITEMS: U us per item". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t start;
static long items, slot, full, taken, sum;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void* work(void* arg) {
  const long me = (long)arg;
  pthread_barrier_wait(&start);
  if (me == 0) {
    for (long k = 1; k <= items; ++k) {
      pthread_mutex_lock(&mu);
      while (full) pthread_cond_wait(&not_full, &mu);
      slot = k;
      full = 1;
      pthread_cond_signal(&not_empty);
      pthread_mutex_unlock(&mu);
    }
    return NULL;
  }
  for (;;) {
    pthread_mutex_lock(&mu);
    while (!full && taken < items) pthread_cond_wait(&not_empty, &mu);
    if (taken == items) {
      pthread_mutex_unlock(&mu);
      return NULL;
    }
    sum += slot;
    full = 0;
    if (++taken == items) pthread_cond_broadcast(&not_empty); /* the others leave */
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&mu);
  }
}

int main(int argc, char** argv) {
  const int p = argc > 1 ? atoi(argv[1]) : 2;
  items = argc > 2 ? atol(argv[2]) : 1000;
  if (p < 2 || p > 256 || items < 1) {
    fprintf(stderr, "usage: cond_queue P ITEMS (2 <= P <= 256)\n");
    return 2;
  }
  pthread_t t[256];
  pthread_barrier_init(&start, NULL, (unsigned)p);
  for (long i = 1; i < p; ++i) pthread_create(&t[i], NULL, work, (void*)i);
  const double t0 = now_us();
  work((void*)0);
  for (int i = 1; i < p; ++i) pthread_join(t[i], NULL);
  const double t1 = now_us();
  if (sum != items * (items + 1) / 2) {
    printf("cond_queue: wrong sum %ld\n", sum);
    return 1;
  }
  printf("cond_queue %d %ld: %.1f us per item\n", p, items, (t1 - t0) / (double)items);
  return 0;
}
