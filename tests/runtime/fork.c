/* fork: inside a job fork() is refused with ENOSYS (the child would share
 * the node's memory without a runtime), while system() starts an ordinary
 * process that neither loads libsvm nor joins the job. Prints
 * "fork refused", then the child's line, then "system 0". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void) {
  pid_t p = fork();
  if (p == 0) _exit(0);
  if (p > 0) {
    printf("fork allowed\n");
    return 1;
  }
  printf("fork %s\n", errno == ENOSYS ? "refused" : "failed oddly");
  fflush(stdout);
  int rc = system("echo child ran: ${SVM_NODE_ID:-no job}");
  printf("system %d\n", rc);
  return 0;
}
