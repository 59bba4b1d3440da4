/* mp_mutex P ROUNDS: message passing through one mutex. In each round
 * worker i writes a block (several pages) and publishes ready[i] under the
 * mutex; worker i+1 polls ready[i] under the mutex, checks the block and
 * acknowledges; the writer waits for the ack before the next round.
 * Prints "mp_mutex CHECKED" (words checked in all). */
#include <unistd.h>

#include "prog.h"

#define WORDS 3000
static int* data;
static int ready[MAX_WORKERS], ack[MAX_WORKERS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int workers, rounds;

static int value(int r, long i, int w) { return r * 1000003 + (int)i * WORDS + w; }

static void wait_for(int* word, int at_least) {
  for (;;) {
    pthread_mutex_lock(&mu);
    const int v = *word;
    pthread_mutex_unlock(&mu);
    if (v >= at_least) return;
    usleep(50);
  }
}

static void* work(void* arg) {
  const long i = (long)arg, from = (i + workers - 1) % workers;
  long checked = 0;
  for (int r = 0; r < rounds; ++r) {
    if (r > 0) wait_for(&ack[i], r);
    for (int w = 0; w < WORDS; ++w) data[i * WORDS + w] = value(r, i, w);
    pthread_mutex_lock(&mu);
    ready[i] = r + 1;
    pthread_mutex_unlock(&mu);
    wait_for(&ready[from], r + 1);
    for (int w = 0; w < WORDS; ++w, ++checked)
      CHECK(data[from * WORDS + w] == value(r, from, w), "round %d word %d of %ld: %d", r, w, from,
            data[from * WORDS + w]);
    pthread_mutex_lock(&mu);
    ack[from] = r + 1;
    pthread_mutex_unlock(&mu);
  }
  return (void*)checked;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  rounds = arg_int(argc, argv, 2, 3);
  data = malloc(sizeof(int) * WORDS * workers);
  memset(data, 0xee, sizeof(int) * WORDS * workers);
  printf("mp_mutex %ld\n", run_workers(workers, work));
  return 0;
}
