/* prog.h: helpers shared by the tests/runtime programs.
 *
 * The programs are ordinary pthreads C: nothing here knows svm except the
 * weak svm_node_id probe, which reads as 0 outside svm. Every program takes
 * P (the number of workers) as argv[1]; worker 0 is main itself and workers
 * 1..P-1 are created in order, so under svmrun worker i is thread number i
 * and lands where the placement puts thread i.
 *
 * A failed CHECK prints "FAIL file:line: ..." on stdout and exits 1 from
 * whatever thread (and node) it runs on. */
#ifndef SVM_TESTS_RUNTIME_PROG_H_
#define SVM_TESTS_RUNTIME_PROG_H_

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int svm_node_id(void) __attribute__((weak));

static inline int node_id(void) { return svm_node_id ? svm_node_id() : 0; }

#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
      printf(__VA_ARGS__);                                            \
      printf(" (worker on node %d)\n", node_id());                    \
      fflush(stdout);                                                 \
      exit(1);                                                        \
    }                                                                 \
  } while (0)

#define MAX_WORKERS 256

static inline int arg_int(int argc, char** argv, int i, int def) {
  return argc > i ? atoi(argv[i]) : def;
}

static inline int arg_workers(int argc, char** argv) {
  int p = arg_int(argc, argv, 1, 1);
  CHECK(p >= 1 && p <= MAX_WORKERS, "workers %d out of range", p);
  return p;
}

/* Runs fn(i) for i in [0, p): i = 0 on the calling thread, the rest on
 * threads created in order; joins them. Returns the sum of the values the
 * workers returned (as longs). */
static inline long run_workers(int p, void* (*fn)(void*)) {
  pthread_t t[MAX_WORKERS];
  for (long i = 1; i < p; ++i) CHECK(pthread_create(&t[i], NULL, fn, (void*)i) == 0, "create %ld", i);
  long sum = (long)fn((void*)0);
  for (int i = 1; i < p; ++i) {
    void* v = NULL;
    CHECK(pthread_join(t[i], &v) == 0, "join %d", i);
    sum += (long)v;
  }
  return sum;
}

#endif /* SVM_TESTS_RUNTIME_PROG_H_ */
