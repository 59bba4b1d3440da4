/* false_sharing P ROUNDS: byte-granularity false sharing. Worker i owns the
 * bytes k with k % P == i of a buffer spanning several pages, so
 * neighbouring bytes of every word belong to different workers (and nodes).
 * Each round: write own bytes, barrier, check every byte, barrier.
 * Prints "false_sharing BYTES". */
#include "prog.h"

#define BYTES (3 * 4096 + 123)
static unsigned char* buf;
static int workers, rounds;
static pthread_barrier_t barrier;

static unsigned char value(int r, long k) { return (unsigned char)(r * 7 + k * 13 + k % workers + 1); }

static void* work(void* arg) {
  const long i = (long)arg;
  for (int r = 0; r < rounds; ++r) {
    for (long k = i; k < BYTES; k += workers) buf[k] = value(r, k);
    pthread_barrier_wait(&barrier);
    for (long k = 0; k < BYTES; ++k) CHECK(buf[k] == value(r, k), "round %d byte %ld: %d", r, k, buf[k]);
    pthread_barrier_wait(&barrier);
  }
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  rounds = arg_int(argc, argv, 2, 4);
  buf = malloc(BYTES);
  memset(buf, 0, BYTES);
  pthread_barrier_init(&barrier, NULL, workers);
  run_workers(workers, work);
  long sum = 0;
  for (long k = 0; k < BYTES; ++k) sum += buf[k];
  printf("false_sharing %ld\n", sum);
  return 0;
}
