/* probe: the smallest program exercising what the SPLASH-2 apps need from
 * a runtime (threads, a mutex, a barrier, a condition variable, shared heap
 * and globals). svm_case.sh runs it first with the same svmrun
 * configuration; if it fails, the application test is skipped (the
 * runtime's own tests own that failure). Usage: probe THREADS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t bar;
static long counter, flag;
static long *heap;

static void *worker(void *arg) {
  long id = (long)(size_t)arg;
  pthread_mutex_lock(&mu);
  counter++;
  heap[id] = id + 1;
  pthread_mutex_unlock(&mu);
  pthread_barrier_wait(&bar);
  pthread_mutex_lock(&mu);
  while (!flag) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  return NULL;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? strtol(argv[1], NULL, 10) : 2;
  if (n < 1 || n > 256) return 2;
  heap = calloc((size_t)n, sizeof *heap);
  pthread_t *t = malloc((size_t)n * sizeof *t);
  if (heap == NULL || t == NULL) return 1;
  pthread_barrier_init(&bar, NULL, (unsigned)n);
  for (long i = 1; i < n; i++) pthread_create(&t[i], NULL, worker, (void *)(size_t)i);
  pthread_mutex_lock(&mu);
  counter++;
  heap[0] = 1;
  pthread_mutex_unlock(&mu);
  pthread_barrier_wait(&bar);
  pthread_mutex_lock(&mu);
  flag = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  for (long i = 1; i < n; i++) pthread_join(t[i], NULL);
  long sum = 0;
  for (long i = 0; i < n; i++) sum += heap[i];
  int ok = counter == n && sum == n * (n + 1) / 2;
  printf("probe: %s\n", ok ? "ok" : "wrong");
  return ok ? 0 : 1;
}
