/* lock_chain P ROUNDS: a token passed through every worker, each hop under a
 * different mutex (worker i polls flag[i] under lock[i]). The token carries
 * a log and a total that no single lock protects: worker i sees what every
 * earlier holder wrote only if release/acquire is transitive along the
 * chain. Prints "lock_chain TOTAL". */
#include <unistd.h>

#include "prog.h"

static pthread_mutex_t lock[MAX_WORKERS];
static int flag[MAX_WORKERS];
static int* trace; /* trace[h] = worker of hop h */
static long total;
static int workers, rounds;

static void* work(void* arg) {
  const long i = (long)arg;
  for (int r = 0; r < rounds; ++r) {
    for (;;) {
      pthread_mutex_lock(&lock[i]);
      const int mine = flag[i];
      flag[i] = 0;
      pthread_mutex_unlock(&lock[i]);
      if (mine) break;
      usleep(20);
    }
    const int hop = r * workers + (int)i;
    for (int h = 0; h < hop; ++h) CHECK(trace[h] == h % workers, "hop %d sees trace[%d] = %d", hop, h, trace[h]);
    trace[hop] = (int)i;
    total += hop + 1;
    const long next = (i + 1) % workers;
    pthread_mutex_lock(&lock[next]);
    flag[next] = 1;
    pthread_mutex_unlock(&lock[next]);
  }
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  rounds = arg_int(argc, argv, 2, 3);
  trace = malloc(sizeof(int) * workers * rounds);
  memset(trace, 0xff, sizeof(int) * workers * rounds);
  for (int i = 0; i < workers; ++i) pthread_mutex_init(&lock[i], NULL);
  flag[0] = 1;
  run_workers(workers, work);
  printf("lock_chain %ld\n", total);
  return 0;
}
