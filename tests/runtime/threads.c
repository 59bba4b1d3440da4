/* threads MODE P: thread life cycle across nodes.
 *   join    workers return i*1000+7; main joins each and checks the value
 *           and that pthread_self() in the thread equals the handle;
 *           prints "join SUM"
 *   exit    workers leave through pthread_exit(i*3+1) from a nested call;
 *           prints "exit SUM"
 *   detach  workers are detached at once; each writes its result and posts a
 *           semaphore; main waits P-1 times; prints "detach SUM"
 *   names   each worker reads its thread name, wherever it runs: it must be
 *           main's (the program's, not a runtime thread's); prints
 *           "names N" with N the workers whose name was main's */
#include <semaphore.h>
#include <sys/prctl.h>

#include "prog.h"

static pthread_t self_of[MAX_WORKERS];
static char main_name[16], name_of[MAX_WORKERS][16];
static long result[MAX_WORKERS];
static sem_t done;

static void* joined(void* arg) {
  const long i = (long)arg;
  self_of[i] = pthread_self();
  return (void*)(i * 1000 + 7);
}

static void leave(long i) {
  pthread_exit((void*)(i * 3 + 1));
}

static void* exiting(void* arg) {
  leave((long)arg);
  return (void*)-1; /* not reached */
}

/* prctl writes the name in the kernel: into a stack buffer (svm does not
 * fault in shared pages for prctl), then copied. */
static void get_name(char* out) {
  char name[16];
  CHECK(prctl(PR_GET_NAME, name) == 0, "PR_GET_NAME");
  memcpy(out, name, sizeof name);
}

static void* named(void* arg) {
  get_name(name_of[(long)arg]);
  return NULL;
}

static void* detached(void* arg) {
  const long i = (long)arg;
  result[i] = i * i + 5;
  CHECK(sem_post(&done) == 0, "sem_post");
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc >= 3, "usage: threads join|exit|detach P");
  const char* mode = argv[1];
  const int p = arg_int(argc, argv, 2, 1);
  CHECK(p >= 1 && p <= MAX_WORKERS, "workers");
  pthread_t t[MAX_WORKERS];
  long sum = 0;
  if (strcmp(mode, "join") == 0) {
    for (long i = 1; i < p; ++i) CHECK(pthread_create(&t[i], NULL, joined, (void*)i) == 0, "create");
    for (int i = 1; i < p; ++i) {
      void* v = NULL;
      CHECK(pthread_join(t[i], &v) == 0, "join");
      CHECK((long)v == i * 1000 + 7, "worker %d returned %ld", i, (long)v);
      CHECK(pthread_equal(self_of[i], t[i]), "worker %d: pthread_self differs from its handle", i);
      sum += (long)v;
    }
    printf("join %ld\n", sum);
  } else if (strcmp(mode, "exit") == 0) {
    for (long i = 1; i < p; ++i) CHECK(pthread_create(&t[i], NULL, exiting, (void*)i) == 0, "create");
    for (int i = 1; i < p; ++i) {
      void* v = NULL;
      CHECK(pthread_join(t[i], &v) == 0, "join");
      CHECK((long)v == i * 3 + 1, "worker %d exited with %ld", i, (long)v);
      sum += (long)v;
    }
    printf("exit %ld\n", sum);
  } else if (strcmp(mode, "detach") == 0) {
    CHECK(sem_init(&done, 0, 0) == 0, "sem_init");
    for (long i = 1; i < p; ++i) {
      CHECK(pthread_create(&t[i], NULL, detached, (void*)i) == 0, "create");
      CHECK(pthread_detach(t[i]) == 0, "detach %ld", i);
    }
    for (int i = 1; i < p; ++i) CHECK(sem_wait(&done) == 0, "sem_wait");
    for (int i = 1; i < p; ++i) sum += result[i];
    printf("detach %ld\n", sum);
  } else if (strcmp(mode, "names") == 0) {
    get_name(main_name);
    for (long i = 1; i < p; ++i) CHECK(pthread_create(&t[i], NULL, named, (void*)i) == 0, "create");
    for (int i = 1; i < p; ++i) {
      CHECK(pthread_join(t[i], NULL) == 0, "join");
      if (strcmp(name_of[i], main_name) == 0) ++sum;
      else fprintf(stderr, "worker %d is named \"%s\", main \"%s\"\n", i, name_of[i], main_name);
    }
    printf("names %ld\n", sum);
  } else {
    CHECK(0, "unknown mode %s", mode);
  }
  return 0;
}
