/* scale P ITERS: a job of many nodes (issue 17: 256 nodes x 1 thread). Each
 * worker increments one counter ITERS times under one mutex, writes its
 * number into a shared table (eight workers to a page: pages with many
 * writers), and meets the others at a barrier; then every worker checks the
 * whole table and the counter, and a second barrier ends the round. Two
 * rounds. Prints "scale P counter C table S" once; each worker's resident
 * memory goes to a table too, and worker 0 prints the largest and the mean
 * on stderr (a report, not a result). */
#include <stdint.h>

#include "prog.h"

static long counter;
static long table[2][MAX_WORKERS];
static long rss_kib[MAX_WORKERS], anon_kib[MAX_WORKERS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t barrier;
static int workers, iters;

static long status_kib(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  const size_t n = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0) v = atol(line + n);
  fclose(f);
  return v;
}

static void* work(void* arg) {
  const long i = (long)arg;
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < iters; ++k) {
      pthread_mutex_lock(&mu);
      ++counter;
      pthread_mutex_unlock(&mu);
    }
    table[round][i] = (i + 1) * (round + 1);
    pthread_barrier_wait(&barrier);
    long sum = 0;
    for (int j = 0; j < workers; ++j) sum += table[round][j];
    CHECK(sum == (long)workers * (workers + 1) / 2 * (round + 1), "round %d: table sums to %ld", round, sum);
    pthread_mutex_lock(&mu);
    const long c = counter;
    pthread_mutex_unlock(&mu);
    CHECK(c == (long)workers * iters * (round + 1), "round %d: counter %ld", round, c);
    pthread_barrier_wait(&barrier);
  }
  rss_kib[i] = status_kib("VmRSS:");
  anon_kib[i] = status_kib("RssAnon:");
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  iters = arg_int(argc, argv, 2, 100);
  CHECK(pthread_barrier_init(&barrier, NULL, (unsigned)workers) == 0, "barrier init");
  run_workers(workers, work);
  long max = 0, sum = 0, anon_max = 0;
  for (int i = 0; i < workers; ++i) {
    if (rss_kib[i] > max) max = rss_kib[i];
    if (anon_kib[i] > anon_max) anon_max = anon_kib[i];
    sum += rss_kib[i];
  }
  fprintf(stderr, "scale: resident memory per worker: max %ld KiB, mean %ld KiB, anonymous max %ld KiB\n", max,
          sum / workers, anon_max);
  long total = 0;
  for (int j = 0; j < workers; ++j) total += table[1][j];
  printf("scale %d counter %ld table %ld\n", workers, counter, total);
  return 0;
}
