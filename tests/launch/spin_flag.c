/* spin_flag: the unsupported pattern --stall-report is for. A worker on
 * node 1 polls a flag in shared memory with plain loads while main (node 0)
 * sets it without a lock: node 1 keeps reading its own copy of the page and
 * never sees the write (svm synchronizes memory at locks, barriers, thread
 * create and join). Prints the flag's page first, so that a test can check
 * that the stall report names it. Under svm it spins until killed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile int* flag;

static void* spin(void* arg) {
  (void)arg;
  volatile int* f = flag;
  while (*f == 0) {
  }
  return NULL;
}

int main(void) {
  flag = calloc(1024, sizeof(int));
  flag += 100;
  printf("flag page 0x%lx\n", (unsigned long)flag & ~4095ul);
  fflush(stdout);
  pthread_t t;
  pthread_create(&t, NULL, spin, NULL);
  sleep(1);
  *flag = 1; /* no lock: node 1 never sees it */
  pthread_join(t, NULL);
  printf("spin_flag done\n");
  return 0;
}
