/* big_bss P: 300 MiB of .bss (more than the 256 MiB globals cap svm once
 * had): worker i writes one byte in every 64th page k with k % P == i,
 * then, after a barrier, every worker checks every probe. Prints
 * "big_bss PROBES". */
#include "prog.h"

#define BYTES ((size_t)300 << 20)
#define STRIDE ((size_t)64 << 12)
static unsigned char big[BYTES];
static pthread_barrier_t barrier;
static int workers;

static void* work(void* arg) {
  const long i = (long)arg;
  size_t k = 0;
  for (size_t at = 0; at < BYTES; at += STRIDE, ++k)
    if ((long)(k % (size_t)workers) == i) big[at] = (unsigned char)(k * 13 + 1);
  pthread_barrier_wait(&barrier);
  k = 0;
  for (size_t at = 0; at < BYTES; at += STRIDE, ++k)
    CHECK(big[at] == (unsigned char)(k * 13 + 1), "probe %zu", k);
  CHECK(big[BYTES - 1] == 0, "untouched byte");
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  pthread_barrier_init(&barrier, NULL, (unsigned)workers);
  run_workers(workers, work);
  printf("big_bss %zu\n", (BYTES + STRIDE - 1) / STRIDE);
  return 0;
}
