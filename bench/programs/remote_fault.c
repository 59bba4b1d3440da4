/* remote_fault: the cost of a read fault on a page homed on another node.
 * main (node 0) writes K pages, so node 0 is their home; a thread placed on
 * node 1 (svmrun -n 2, block placement) then reads one byte of each, and
 * every first read is a fault that fetches the page. Prints microseconds
 * per fault. Run natively it measures first-touch faults of fresh memory. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kPage = 4096 };
static int pages = 2000;
static volatile char* buf;
static double per_fault_us;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void* reader(void* arg) {
  (void)arg;
  long sum = 0;
  double t0 = now_us();
  for (int i = 0; i < pages; i++) sum += buf[(size_t)i * kPage];
  per_fault_us = (now_us() - t0) / pages;
  return (void*)sum;
}

int main(int argc, char** argv) {
  if (argc > 1) pages = atoi(argv[1]);
  if (pages < 1) {
    fprintf(stderr, "usage: %s [pages]\n", argv[0]);
    return 2;
  }
  buf = aligned_alloc(kPage, (size_t)pages * kPage);
  for (int i = 0; i < pages; i++) buf[(size_t)i * kPage] = (char)i;
  pthread_t t;
  void* sum;
  pthread_create(&t, NULL, reader, NULL);
  pthread_join(t, &sum);
  long want = 0;
  for (int i = 0; i < pages; i++) want += (char)i;
  printf("remote_fault: %d pages, %.2f us per read fault%s\n", pages, per_fault_us,
         (long)sum == want ? "" : " (WRONG DATA)");
  return (long)sum == want ? 0 : 1;
}
