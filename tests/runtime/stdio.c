/* stdio P: node 0's stdin and every node's stdout. Main reads a first line
 * with fgets and then numbers with scanf until EOF (into shared globals);
 * every worker prints "worker I of P" on its own node; main prints
 * "stdin LINE count N sum S". */
#include "prog.h"

static char first[64];
static long value;
static int workers;

static void* work(void* arg) {
  printf("worker %ld of %d\n", (long)arg, workers);
  fflush(stdout);
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  CHECK(fgets(first, sizeof(first), stdin) != NULL, "no first line on stdin");
  first[strcspn(first, "\n")] = '\0';
  long count = 0, sum = 0;
  while (scanf("%ld", &value) == 1) {
    ++count;
    sum += value;
  }
  run_workers(workers, work);
  printf("stdin %s count %ld sum %ld\n", first, count, sum);
  return 0;
}
