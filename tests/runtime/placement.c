/* placement P: prints the node each worker ran on ("placement 0 0 1 1"). */
#include "prog.h"

static int node_of[MAX_WORKERS];

static void* work(void* arg) {
  node_of[(long)arg] = node_id();
  return NULL;
}

int main(int argc, char** argv) {
  const int p = arg_workers(argc, argv);
  run_workers(p, work);
  printf("placement");
  for (int i = 0; i < p; ++i) printf(" %d", node_of[i]);
  printf("\n");
  return 0;
}
