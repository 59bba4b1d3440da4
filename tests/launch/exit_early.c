/* exit_early: prints a line, then ends with _exit(STATUS) (default 0),
 * skipping exit(): what a program that calls _exit, or a wrapper that ends on
 * its own, does to a job (tests/launch/faults_test.cc). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  printf("exit_early %s\n", argc > 1 ? argv[1] : "0");
  fflush(stdout);
  _exit(argc > 1 ? atoi(argv[1]) : 0);
}
