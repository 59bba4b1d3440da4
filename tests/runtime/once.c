/* once P: pthread_once from every worker: init runs once, and what it wrote
 * (several pages) is visible to every worker after its pthread_once
 * returns. Prints "once CALLS". */
#include "prog.h"

#define WORDS 3000
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int calls;
static int table[WORDS];
static pthread_barrier_t barrier;

static void init(void) {
  ++calls;
  for (int w = 0; w < WORDS; ++w) table[w] = w * 11 + 5;
}

static void* work(void* arg) {
  (void)arg;
  CHECK(pthread_once(&once, init) == 0, "pthread_once");
  for (int w = 0; w < WORDS; ++w) CHECK(table[w] == w * 11 + 5, "word %d: %d", w, table[w]);
  pthread_barrier_wait(&barrier);
  CHECK(pthread_once(&once, init) == 0, "second pthread_once");
  CHECK(calls == 1, "init ran %d times", calls);
  return NULL;
}

int main(int argc, char** argv) {
  const int p = arg_workers(argc, argv);
  pthread_barrier_init(&barrier, NULL, p);
  run_workers(p, work);
  printf("once %d\n", calls);
  return 0;
}
