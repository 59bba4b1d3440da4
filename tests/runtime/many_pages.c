/* many_pages P PAGES: a barrier whose arrivals carry a write notice for each
 * of PAGES pages (issue 16: after one byte written in each of 300 K pages a
 * barrier once needed a message larger than the transport's limit). Worker
 * k % P writes byte 0 of page k (its first touch: the page's home under
 * first-touch placement); after a barrier worker (k + 1) % P writes byte
 * 1 + k % 4000 of page k, which shares the page; a second barrier; then
 * every worker checks every 64th page from its own index on. Prints
 * "many_pages PAGES". */
#include "prog.h"

#define PAGE 4096
static unsigned char* block;
static long pages;
static pthread_barrier_t barrier;
static int workers;

static unsigned char* At(long k, int byte) { return block + k * PAGE + byte; }
static int Second(long k) { return 1 + (int)(k % 4000); }
static unsigned char Value(long k, int phase) { return (unsigned char)(k * 29 + phase * 101 + 3); }

static void* work(void* arg) {
  const long i = (long)arg;
  for (long k = i; k < pages; k += workers) *At(k, 0) = Value(k, 0);
  pthread_barrier_wait(&barrier);
  for (long k = (i + workers - 1) % workers; k < pages; k += workers) *At(k, Second(k)) = Value(k, 1);
  pthread_barrier_wait(&barrier);
  for (long k = i; k < pages; k += 64) {
    CHECK(*At(k, 0) == Value(k, 0), "page %ld byte 0", k);
    CHECK(*At(k, Second(k)) == Value(k, 1), "page %ld byte %d", k, Second(k));
    CHECK(*At(k, PAGE - 1) == 0, "page %ld last byte", k);
  }
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  pages = arg_int(argc, argv, 2, 300000);
  block = calloc((size_t)pages, PAGE);
  CHECK(block, "calloc of %ld pages", pages);
  pthread_barrier_init(&barrier, NULL, (unsigned)workers);
  run_workers(workers, work);
  free(block);
  printf("many_pages %ld\n", pages);
  return 0;
}
