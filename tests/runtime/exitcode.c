/* exitcode MODE P CODE: how a job ends.
 *   main    main returns CODE once the workers are joined
 *   remote  the last worker (the last node) prints a line and calls
 *           exit(CODE) while main waits for it forever */
#include <unistd.h>

#include "prog.h"

static int code;
static int remote;
static int workers;

static void* work(void* arg) {
  const long i = (long)arg;
  if (remote && i == workers - 1) {
    printf("worker %ld exits with %d\n", i, code);
    exit(code);
  }
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc >= 4, "usage: exitcode main|remote P CODE");
  remote = strcmp(argv[1], "remote") == 0;
  workers = arg_int(argc, argv, 2, 1);
  code = arg_int(argc, argv, 3, 0);
  run_workers(workers, work);
  if (remote) {
    CHECK(0, "the job outlived exit(%d)", code);
  }
  return code;
}
