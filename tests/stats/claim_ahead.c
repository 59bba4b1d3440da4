/* claim_ahead ROUNDS: under svmrun -n 2 -t 1 (main on node 0, the worker on
 * node 1), two blocks of pages side by side that each thread first touches
 * and then writes every round. The worker touches the first page of its
 * block before main sweeps its own and that page, so main's sweep, whose
 * claims take pages ahead (1, 2, 4, ... up to a page run), reaches a page
 * another node holds and then loses a claim: the pages after it are still
 * the worker's to claim. Were they main's, the worker would diff them to
 * node 0 every round: --stats counts the worker's node's diffs
 * (tests/stats/stats_e2e.py). Prints "ok". */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { kPage = 4096, kMine = 40, kTheirs = 40 };
static pthread_barrier_t b;
static char* base;
static long rounds = 50;

static void write_pages(long first, long count, long value) {
  for (long i = first; i < first + count; ++i) base[i * kPage + (value % 64)] = (char)value;
}

static void* worker(void* arg) {
  (void)arg;
  base[kMine * kPage] = 1; /* the first touch of the worker's block */
  pthread_barrier_wait(&b);
  pthread_barrier_wait(&b); /* main swept its block */
  write_pages(kMine, kTheirs, 1);
  for (long r = 0; r < rounds; ++r) {
    pthread_barrier_wait(&b);
    write_pages(kMine, kTheirs, r + 2);
  }
  pthread_barrier_wait(&b);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) rounds = atol(argv[1]);
  /* Aligned to 1 MiB: the blocks start at a manager's block (SVM_PAGE_RUN
   * pages), the worker's 40 pages into it. */
  char* raw = malloc((kMine + kTheirs) * kPage + (2 << 20));
  if (raw == NULL) return 1;
  base = (char*)(((uintptr_t)raw + kPage + (1 << 20)) & ~(uintptr_t)((1 << 20) - 1));
  pthread_barrier_init(&b, NULL, 2);
  pthread_t w;
  pthread_create(&w, NULL, worker, NULL);
  pthread_barrier_wait(&b); /* the worker touched its first page */
  write_pages(0, kMine + 1, 1);
  pthread_barrier_wait(&b);
  for (long r = 0; r < rounds; ++r) {
    pthread_barrier_wait(&b);
    write_pages(0, kMine, r + 2);
  }
  pthread_barrier_wait(&b);
  pthread_join(w, NULL);
  for (long i = 0; i < kMine + kTheirs; ++i)
    if (base[i * kPage + ((rounds + 1) % 64)] != (char)(rounds + 1)) {
      printf("page %ld: %d, expected %ld\n", i, base[i * kPage + ((rounds + 1) % 64)], rounds + 1);
      return 1;
    }
  printf("ok\n");
  return 0;
}
