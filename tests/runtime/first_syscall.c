/* first_syscall: many threads make their first syscall() at once; run with
 * slow_dlsym.so preloaded after libsvm, which holds the lookup of glibc's
 * syscall for 200 ms. libsvm's syscall() once resolved glibc's in a
 * function-local static: a second thread waited for its initialisation
 * with syscall(SYS_futex), which recursed until its stack overflowed.
 * Prints "first_syscall ok". */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define THREADS 16
static atomic_int ready, go;

static void* run(void* arg) {
  (void)arg;
  atomic_fetch_add(&ready, 1);
  while (!atomic_load(&go)) {
  }
  return (void*)syscall(SYS_gettid);
}

int main(void) {
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    if (pthread_create(&t[i], NULL, run, NULL) != 0) return 1;
  }
  while (atomic_load(&ready) < THREADS) {
  }
  atomic_store(&go, 1);
  for (int i = 0; i < THREADS; ++i) {
    void* tid = NULL;
    if (pthread_join(t[i], &tid) != 0 || tid == NULL) return 1;
  }
  printf("first_syscall ok\n");
  return 0;
}
