/* posix.h: helpers of the posix_* conformance programs (tests/runtime).
 *
 * Each program checks one family of the pthreads API (or system calls on
 * shared memory) against what POSIX and the glibc manual promise, prints
 * "<name> ok" and exits 0; it must behave the same natively and under
 * svmrun. Worker i runs on the node svm's block placement gives thread i;
 * with one thread per node, worker 1 is on node 1. */
#ifndef SVM_TESTS_RUNTIME_POSIX_H_
#define SVM_TESTS_RUNTIME_POSIX_H_

#include <errno.h>
#include <time.h>

#include "prog.h"

int svm_nodes(void) __attribute__((weak));

/* Whether svm runs the program (the weak probe resolved). */
static inline int under_svm(void) { return svm_node_id != 0; }

static inline long long now_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* An absolute time ms from now on clock c. */
static inline struct timespec in_ms(clockid_t c, long ms) {
  long long t = now_ns(c) + ms * 1000000LL;
  struct timespec ts = {(time_t)(t / 1000000000LL), (long)(t % 1000000000LL)};
  return ts;
}

static inline void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

#endif /* SVM_TESTS_RUNTIME_POSIX_H_ */
