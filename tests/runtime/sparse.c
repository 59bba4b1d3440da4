/* sparse P GIB: one GIB GiB allocation, touched at a few pages far apart:
 * worker i writes the probes k with k % P == i, then everyone checks all.
 * Prints "sparse PROBES". */
#include <malloc.h>
#include <stdint.h>

#include "prog.h"

#define PROBES 6
static unsigned char* big;
static size_t size;
static size_t at[PROBES];
static pthread_barrier_t barrier;
static int workers;

static void* work(void* arg) {
  const long i = (long)arg;
  for (int k = (int)i; k < PROBES; k += workers) big[at[k]] = (unsigned char)(k * 37 + 1);
  pthread_barrier_wait(&barrier);
  for (int k = 0; k < PROBES; ++k) CHECK(big[at[k]] == (unsigned char)(k * 37 + 1), "probe %d", k);
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  size = (size_t)arg_int(argc, argv, 2, 8) << 30;
  big = malloc(size);
  CHECK(big, "malloc of %zu bytes failed", size);
  CHECK(malloc_usable_size(big) >= size, "usable size");
  const size_t gib = (size_t)1 << 30;
  const size_t want[PROBES] = {0, gib + 123, 3 * gib, 5 * gib + 4095, size / 2 + 77, size - 1};
  for (int k = 0; k < PROBES; ++k) at[k] = want[k] % size;
  pthread_barrier_init(&barrier, NULL, workers);
  run_workers(workers, work);
  free(big);
  printf("sparse %d\n", PROBES);
  return 0;
}
