/* mp_barrier P ROUNDS: message passing through a barrier. Each round every
 * worker writes its chunk (chunks are not page-aligned), waits, checks its
 * two neighbours' chunks, waits again. Also counts the serial thread of each
 * episode: exactly one. Prints "mp_barrier SERIAL". */
#include "prog.h"

#define CHUNK 1531
static int* data;
static int workers, rounds;
static pthread_barrier_t barrier;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long serial;

static int value(int r, long i, int w) { return (r + 1) * 7919 + (int)i * CHUNK + w; }

static void wait_barrier(void) {
  const int rc = pthread_barrier_wait(&barrier);
  CHECK(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD, "barrier returned %d", rc);
  if (rc == PTHREAD_BARRIER_SERIAL_THREAD) {
    pthread_mutex_lock(&mu);
    ++serial;
    pthread_mutex_unlock(&mu);
  }
}

static void* work(void* arg) {
  const long i = (long)arg;
  for (int r = 0; r < rounds; ++r) {
    for (int w = 0; w < CHUNK; ++w) data[i * CHUNK + w] = value(r, i, w);
    wait_barrier();
    const long left = (i + workers - 1) % workers, right = (i + 1) % workers;
    for (int w = 0; w < CHUNK; ++w) {
      CHECK(data[left * CHUNK + w] == value(r, left, w), "round %d left word %d", r, w);
      CHECK(data[right * CHUNK + w] == value(r, right, w), "round %d right word %d", r, w);
    }
    wait_barrier();
  }
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  rounds = arg_int(argc, argv, 2, 4);
  data = calloc((size_t)CHUNK * workers, sizeof(int));
  pthread_barrier_init(&barrier, NULL, workers);
  run_workers(workers, work);
  printf("mp_barrier %ld\n", serial);
  return 0;
}
