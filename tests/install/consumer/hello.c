/* hello: one thread per node of the job says where it runs, and which
 * libsvm.so serves it (the installed one, if the prefix is right). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <svm/svm.h>

static int* seen; /* on the shared heap: every node writes its slot */

static void* work(void* arg) {
  seen[(long)arg] = svm_node_id();
  return NULL;
}

int main(void) {
  const int n = svm_nodes();
  seen = calloc((size_t)n, sizeof *seen);
  pthread_t t[64];
  for (long i = 1; i < n && i < 64; ++i) pthread_create(&t[i], NULL, work, (void*)i);
  for (long i = 1; i < n && i < 64; ++i) pthread_join(t[i], NULL);
  printf("nodes %d:", n);
  for (int i = 1; i < n && i < 64; ++i) printf(" %d", seen[i]);
  Dl_info info;
  printf("\nlibsvm %s\n", dladdr((void*)svm_nodes, &info) ? info.dli_fname : "?");
  return 0;
}
