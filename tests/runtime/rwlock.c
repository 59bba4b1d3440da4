/* rwlock P ITERS: readers check an invariant (two fields on different pages
 * are equal) under rdlock; writers bump both under wrlock; every fourth
 * iteration writes. Prints "rwlock WRITES". */
#include "prog.h"

static struct {
  long a;
  char gap[8192];
  long b;
} shared;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static int iters;

static void* work(void* arg) {
  (void)arg;
  long reads = 0;
  for (int k = 0; k < iters; ++k) {
    if (k % 4 == 0) {
      CHECK(pthread_rwlock_wrlock(&rw) == 0, "wrlock");
      ++shared.a;
      ++shared.b;
      CHECK(pthread_rwlock_unlock(&rw) == 0, "unlock");
    } else {
      CHECK(pthread_rwlock_rdlock(&rw) == 0, "rdlock");
      CHECK(shared.a == shared.b, "a %ld b %ld", shared.a, shared.b);
      ++reads;
      CHECK(pthread_rwlock_unlock(&rw) == 0, "unlock");
    }
  }
  return (void*)reads;
}

int main(int argc, char** argv) {
  const int p = arg_workers(argc, argv);
  iters = arg_int(argc, argv, 2, 200);
  CHECK(pthread_rwlock_init(&rw, NULL) == 0, "init");
  const long reads = run_workers(p, work);
  CHECK(shared.a == shared.b, "final a %ld b %ld", shared.a, shared.b);
  printf("rwlock %ld %ld\n", shared.a, reads);
  return 0;
}
