/* block_end ROUNDS: under svmrun -n 2 -t 1 (main on node 0, the worker on
 * node 1), main allocates a large block that the worker then sweeps first
 * (its claims take pages ahead: 1, 2, 4, ... up to a page run), and after
 * the sweep a second block, carved right after the first. Each thread then
 * writes its own block every round. Had the sweep claimed past the end of
 * its block, the first pages of main's were the worker's node's, and node 0
 * diffed them there every round: --stats counts both nodes' diffs
 * (tests/stats/stats_e2e.py). Prints "ok"; exits 2 when the second block
 * is not where this test needs it. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Not a multiple of a page run: the sweep's last claim could reach past. */
enum { kPage = 4096, kPages = 201 };
static pthread_barrier_t b;
static char* first;
static char* second;
static long rounds = 50;

static void write_pages(char* block, long value) {
  for (long i = 0; i < kPages; ++i) block[i * kPage + (value % 64)] = (char)value;
}

static void* worker(void* arg) {
  (void)arg;
  pthread_barrier_wait(&b); /* the first block exists */
  write_pages(first, 1);
  pthread_barrier_wait(&b); /* swept */
  for (long r = 0; r < rounds; ++r) {
    pthread_barrier_wait(&b);
    write_pages(first, r + 2);
  }
  pthread_barrier_wait(&b);
  return NULL;
}

static int check(const char* name, char* block) {
  for (long i = 0; i < kPages; ++i)
    if (block[i * kPage + ((rounds + 1) % 64)] != (char)(rounds + 1)) {
      printf("%s block, page %ld: %d, expected %ld\n", name, i, block[i * kPage + ((rounds + 1) % 64)],
             rounds + 1);
      return 1;
    }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1) rounds = atol(argv[1]);
  pthread_barrier_init(&b, NULL, 2);
  pthread_t w;
  pthread_create(&w, NULL, worker, NULL);
  first = malloc(kPages * kPage);
  if (first == NULL) return 1;
  pthread_barrier_wait(&b);
  pthread_barrier_wait(&b);
  second = malloc(kPages * kPage);
  if (second != first + (kPages + 1) * kPage) { /* + the second's header page */
    printf("the second block is at %p, not after the first (%p)\n", (void*)second, (void*)first);
    return 2;
  }
  write_pages(second, 1);
  for (long r = 0; r < rounds; ++r) {
    pthread_barrier_wait(&b);
    write_pages(second, r + 2);
  }
  pthread_barrier_wait(&b);
  pthread_join(w, NULL);
  if (check("first", first) || check("second", second)) return 1;
  printf("ok\n");
  return 0;
}
