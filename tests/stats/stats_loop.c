/* stats_loop: a barrier + lock loop for the statistics end-to-end test.
 * Each of T threads (argv[1], default 4) does ITERS rounds of: write its
 * slice of a shared array ("work" phase), barrier, add to a counter under a
 * mutex ("locked" phase), barrier. Prints "ok <counter>" when the counter
 * and the array add up. Runs with or without svm. With "main-works" as
 * argv[2], main is worker 0 (as ANL programs do) instead of only joining:
 * then every live thread takes part in every barrier. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS 20
#define MAX_THREADS 64
#define SLICE 1024

/* Weak: absent when the program runs without libsvm. */
void svm_phase_begin(const char* name) __attribute__((weak));
void svm_phase_end(const char* name) __attribute__((weak));

static void phase_begin(const char* name) {
  if (svm_phase_begin) svm_phase_begin(name);
}
static void phase_end(const char* name) {
  if (svm_phase_end) svm_phase_end(name);
}

static long data[MAX_THREADS * SLICE];
static long counter;
static int nthreads = 4;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t bar;

static void* worker(void* arg) {
  const long id = (long)arg;
  for (int it = 0; it < ITERS; ++it) {
    phase_begin("work");
    for (int i = 0; i < SLICE; ++i) data[id * SLICE + i] += i + it;
    phase_end("work");
    pthread_barrier_wait(&bar);
    phase_begin("locked");
    pthread_mutex_lock(&mu);
    counter += 1;
    pthread_mutex_unlock(&mu);
    phase_end("locked");
    pthread_barrier_wait(&bar);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) nthreads = atoi(argv[1]);
  const int main_works = argc > 2 && strcmp(argv[2], "main-works") == 0;
  if (nthreads < 1 || nthreads > MAX_THREADS) {
    fprintf(stderr, "stats_loop: 1..%d threads\n", MAX_THREADS);
    return 2;
  }
  pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
  pthread_t t[MAX_THREADS];
  for (long i = main_works; i < nthreads; ++i) pthread_create(&t[i], NULL, worker, (void*)i);
  if (main_works) worker((void*)0);
  for (int i = main_works; i < nthreads; ++i) pthread_join(t[i], NULL);
  long want = 0, got = 0;
  for (int it = 0; it < ITERS; ++it)
    for (int i = 0; i < SLICE; ++i) want += i + it;
  for (int i = 0; i < SLICE; ++i) got += data[(nthreads - 1) * SLICE + i];
  if (counter != (long)nthreads * ITERS || got != want) {
    printf("bad counter %ld (want %ld) or data %ld (want %ld)\n", counter, (long)nthreads * ITERS, got,
           want);
    return 1;
  }
  printf("ok %ld\n", counter);
  return 0;
}
