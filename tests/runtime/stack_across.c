/* stack_across: main hands a thread a pointer to one of its local
 * variables. Natively (and with the thread on main's node) the thread
 * prints the value; under svm with the thread on another node the access
 * must end the job with a line naming main's node, never read that node's
 * own memory at the address (it printed garbage before stacks had
 * windows: libsvm/stacks.h). */
#include "prog.h"

static void* show(void* arg) {
  printf("stack_across %d\n", *(const int*)arg);
  return NULL;
}

int main(void) {
  int local = 42;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, show, &local) == 0, "create");
  CHECK(pthread_join(t, NULL) == 0, "join");
  return 0;
}
