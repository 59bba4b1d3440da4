/* mp_cond P ROUNDS: message passing through a condition variable. Worker 0
 * writes a block, bumps the generation and broadcasts; the others wait for
 * the generation, check the block and count an ack that worker 0 waits for
 * (a second condition variable) before the next round. Prints
 * "mp_cond ACKS". */
#include "prog.h"

#define WORDS 5000
static int* data;
static int workers, rounds, generation, acks;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fresh = PTHREAD_COND_INITIALIZER, acked = PTHREAD_COND_INITIALIZER;

static void* work(void* arg) {
  const long i = (long)arg;
  for (int r = 0; r < rounds; ++r) {
    if (i == 0) {
      for (int w = 0; w < WORDS; ++w) data[w] = r * 100000 + w;
      pthread_mutex_lock(&mu);
      generation = r + 1;
      pthread_cond_broadcast(&fresh);
      while (acks < (workers - 1) * (r + 1)) pthread_cond_wait(&acked, &mu);
      pthread_mutex_unlock(&mu);
    } else {
      pthread_mutex_lock(&mu);
      while (generation < r + 1) pthread_cond_wait(&fresh, &mu);
      pthread_mutex_unlock(&mu);
      for (int w = 0; w < WORDS; ++w) CHECK(data[w] == r * 100000 + w, "round %d word %d: %d", r, w, data[w]);
      pthread_mutex_lock(&mu);
      ++acks;
      pthread_cond_signal(&acked);
      pthread_mutex_unlock(&mu);
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  rounds = arg_int(argc, argv, 2, 3);
  data = malloc(sizeof(int) * WORDS);
  run_workers(workers, work);
  printf("mp_cond %d\n", acks);
  return 0;
}
