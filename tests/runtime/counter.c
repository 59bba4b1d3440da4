/* counter P ITERS: every worker increments one global counter ITERS times
 * under one mutex, and its own per-worker count (another page) under the
 * same mutex. Prints "counter TOTAL". */
#include "prog.h"

static long counter;
static long per_worker[MAX_WORKERS * 512]; /* a page per worker */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int iters;

static void* work(void* arg) {
  const long i = (long)arg;
  for (int k = 0; k < iters; ++k) {
    pthread_mutex_lock(&mu);
    ++counter;
    ++per_worker[i * 512];
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

int main(int argc, char** argv) {
  const int p = arg_workers(argc, argv);
  iters = arg_int(argc, argv, 2, 1000);
  run_workers(p, work);
  for (int i = 0; i < p; ++i) CHECK(per_worker[i * 512] == iters, "worker %d counted %ld", i, per_worker[i * 512]);
  CHECK(counter == (long)p * iters, "counter %ld", counter);
  printf("counter %ld\n", counter);
  return 0;
}
