/* remote_fault: the cost of a read fault on a page homed on another node.
 * main (node 0) writes K pages, so node 0 is their home; a thread placed on
 * node 1 (svmrun -n 2, block placement) then reads one byte of each, and
 * every first read is a fault that fetches the page. Prints microseconds
 * per fault. With ROUNDS > 0, main then rewrites every page ROUNDS times and
 * the reader re-reads them after each (a barrier between), which costs a
 * fault per page invalidated by main's write notices: prints microseconds
 * per re-read page too, and last the microseconds per page of main's first
 * writes (first touches: under first-touch homes, each claims its home)
 * and, with ROUNDS > 0, per page of its rewrites (writes to pages another
 * node holds: a write fault each, or none when writes are found by scans).
 * Run natively it measures first-touch faults of
 * fresh memory (and re-reads of cached pages).
 * Under svmrun --stats the reader's sweeps are phases (faults only: the
 * barriers lie outside): "cold" (the first), "first reread" and "reread"
 * (the later ones, when the runtime's pools have their working size). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kPage = 4096 };
static int pages = 2000;
static int rounds = 0;
static volatile char* buf;
static double per_fault_us, per_reread_us, per_touch_us, per_rewrite_us;
static pthread_barrier_t barrier;

/* svm.h's phase marks; absent outside svm. */
void svm_phase_begin(const char* name) __attribute__((weak));
void svm_phase_end(const char* name) __attribute__((weak));

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static long sweep(const char* phase) {
  if (svm_phase_begin) svm_phase_begin(phase);
  long sum = 0;
  for (int i = 0; i < pages; i++) sum += buf[(size_t)i * kPage];
  if (svm_phase_end) svm_phase_end(phase);
  return sum;
}

static void* reader(void* arg) {
  long* sums = arg;
  double t0 = now_us();
  sums[0] = sweep("cold");
  per_fault_us = (now_us() - t0) / pages;
  double reread = 0;
  for (int r = 1; r <= rounds; r++) {
    pthread_barrier_wait(&barrier); /* main rewrites */
    pthread_barrier_wait(&barrier);
    t0 = now_us();
    sums[r] = sweep(r == 1 ? "first reread" : "reread");
    reread += now_us() - t0;
  }
  if (rounds > 0) per_reread_us = reread / ((double)rounds * pages);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) pages = atoi(argv[1]);
  if (argc > 2) rounds = atoi(argv[2]);
  if (pages < 1 || rounds < 0) {
    fprintf(stderr, "usage: %s [pages [rounds]]\n", argv[0]);
    return 2;
  }
  buf = aligned_alloc(kPage, (size_t)pages * kPage);
  long* sums = calloc((size_t)rounds + 1, sizeof(long));
  double t0 = now_us();
  for (int i = 0; i < pages; i++) buf[(size_t)i * kPage] = (char)i;
  per_touch_us = (now_us() - t0) / pages;
  pthread_barrier_init(&barrier, NULL, 2);
  pthread_t t;
  pthread_create(&t, NULL, reader, sums);
  double rewrite = 0;
  for (int r = 1; r <= rounds; r++) {
    pthread_barrier_wait(&barrier);
    t0 = now_us();
    for (int i = 0; i < pages; i++) buf[(size_t)i * kPage] = (char)(i + r);
    rewrite += now_us() - t0;
    pthread_barrier_wait(&barrier);
  }
  if (rounds > 0) per_rewrite_us = rewrite / ((double)rounds * pages);
  pthread_join(t, NULL);
  int ok = 1;
  for (int r = 0; r <= rounds; r++) {
    long want = 0;
    for (int i = 0; i < pages; i++) want += (char)(i + r);
    ok &= sums[r] == want;
  }
  printf("remote_fault: %d pages, %.2f us per read fault", pages, per_fault_us);
  if (rounds > 0) printf(", %.2f us per re-read page", per_reread_us);
  printf(", %.2f us per home first touch", per_touch_us);
  if (rounds > 0) printf(", %.2f us per home rewrite", per_rewrite_us);
  printf("%s\n", ok ? "" : " (WRONG DATA)");
  return ok ? 0 : 1;
}
