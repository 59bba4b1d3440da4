/* secret_pages P: worker 0 fills pages of shared memory with a marker text,
 * the other workers (on other nodes) read every page back after a barrier,
 * then worker 1 writes them back with the marker upside down (ESREVER) and
 * worker 0 checks. The page contents cross the network both ways, so a
 * capture of the link shows whether they travel in clear (the marker is the
 * needle; seal e2e test in multihost_test.cc). Prints "secret_pages ok". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGES 64
#define PAGE 4096
static const char kMarker[] = "SVM-SECRET-PAGE-MARKER:";
static const char kBack[] = "SVM-SECRET-ESREVER-MARK:";
static char* buf;
static int workers;
static pthread_barrier_t barrier;

static void fill(const char* text) {
  size_t n = strlen(text);
  for (size_t at = 0; at + n <= (size_t)PAGES * PAGE; at += n) memcpy(buf + at, text, n);
}

static int holds(const char* text) {
  size_t n = strlen(text);
  for (size_t at = 0; at + n <= (size_t)PAGES * PAGE; at += n)
    if (memcmp(buf + at, text, n) != 0) return 0;
  return 1;
}

static void* work(void* arg) {
  long i = (long)arg;
  if (i == 0) fill(kMarker);
  pthread_barrier_wait(&barrier);
  if (!holds(kMarker)) {
    printf("FAIL worker %ld read wrong page contents\n", i);
    exit(1);
  }
  pthread_barrier_wait(&barrier);
  if (i == 1) fill(kBack);
  pthread_barrier_wait(&barrier);
  if (!holds(kBack)) {
    printf("FAIL worker %ld read wrong page contents back\n", i);
    exit(1);
  }
  return NULL;
}

int main(int argc, char** argv) {
  workers = argc > 1 ? atoi(argv[1]) : 2;
  if (workers < 2 || workers > 64) return 2;
  buf = malloc((size_t)PAGES * PAGE);
  pthread_barrier_init(&barrier, NULL, (unsigned)workers);
  pthread_t t[64];
  for (long i = 1; i < workers; ++i) pthread_create(&t[i], NULL, work, (void*)i);
  work((void*)0);
  for (int i = 1; i < workers; ++i) pthread_join(t[i], NULL);
  printf("secret_pages ok\n");
  return 0;
}
