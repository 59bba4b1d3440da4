/* globals P: .data, .bss and a heap pointer written by main before the
 * workers exist, read by every worker (create orders them); each worker
 * writes its checksum to a global array; prints "globals SUM". */
#include "prog.h"

#define N 6000
int table[N] = {1, 2, 3};  /* .data: initialised */
long counts[N];            /* .bss */
struct {
  int a;
  double b;
  char name[32];
} config;
char* message;
static long checksum[MAX_WORKERS];

static long expected(void) {
  long s = 0;
  for (int k = 0; k < N; ++k) s += (k * 7 + 1) + (long)k * k;
  return s + 42 + (long)(config.b * 2) + (long)strlen(message);
}

static void* work(void* arg) {
  const long i = (long)arg;
  long s = 0;
  for (int k = 0; k < N; ++k) s += table[k] + counts[k];
  CHECK(config.a == 42 && config.b == 2.5 && strcmp(config.name, "svm") == 0,
        "config %d %g %s", config.a, config.b, config.name);
  CHECK(message && strcmp(message, "written by main") == 0, "message");
  checksum[i] = s + config.a + (long)(config.b * 2) + (long)strlen(message);
  return NULL;
}

int main(int argc, char** argv) {
  const int p = arg_workers(argc, argv);
  for (int k = 0; k < N; ++k) {
    table[k] = k * 7 + 1;
    counts[k] = (long)k * k;
  }
  config.a = 42;
  config.b = 2.5;
  strcpy(config.name, "svm");
  message = strdup("written by main");
  run_workers(p, work);
  const long want = expected();
  for (int i = 0; i < p; ++i) CHECK(checksum[i] == want, "worker %d saw %ld, want %ld", i, checksum[i], want);
  printf("globals %ld\n", want);
  return 0;
}
