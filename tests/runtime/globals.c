/* globals P: .data, .bss and a heap pointer written by main before the
 * workers exist, read by every worker (create orders them), and main's argv
 * and an environment string kept in globals (strings of node 0's first
 * stack, unless svm moved them); each worker writes its checksum to a
 * global array; prints "globals SUM". */
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
static char** args;
static char args1[32];
static const char* path;
static size_t path_len;
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
  CHECK(args && args[1] && strcmp(args[1], args1) == 0 && args[2] == NULL, "worker %ld: argv[1] is not \"%s\"", i,
        args1);
  CHECK(path && strlen(path) == path_len, "worker %ld: getenv(\"PATH\") has another length", i);
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
  CHECK(argc == 2, "usage: globals P");
  args = argv;
  snprintf(args1, sizeof args1, "%s", argv[1]);
  path = getenv("PATH");
  CHECK(path != NULL, "no PATH");
  path_len = strlen(path);
  run_workers(p, work);
  const long want = expected();
  for (int i = 0; i < p; ++i) CHECK(checksum[i] == want, "worker %d saw %ld, want %ld", i, checksum[i], want);
  printf("globals %ld\n", want);
  return 0;
}
