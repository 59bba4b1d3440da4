/* mp_sem P ROUNDS: message passing through semaphores: a token goes round
 * the workers (sem[i] wakes worker i); each holder checks what every worker
 * before it wrote this round, writes its own slot block, and posts the next.
 * Prints "mp_sem HOPS". */
#include <semaphore.h>

#include "prog.h"

#define WORDS 700
static int* data;
static sem_t sem[MAX_WORKERS];
static int workers, rounds;
static long hops;

static int value(int r, long i, int w) { return r * 1000 + (int)i * 7 + w * 3; }

static void* work(void* arg) {
  const long i = (long)arg;
  for (int r = 0; r < rounds; ++r) {
    CHECK(sem_wait(&sem[i]) == 0, "sem_wait");
    for (long k = 0; k < i; ++k)
      for (int w = 0; w < WORDS; ++w)
        CHECK(data[k * WORDS + w] == value(r, k, w), "round %d slot %ld word %d", r, k, w);
    for (int w = 0; w < WORDS; ++w) data[i * WORDS + w] = value(r, i, w);
    ++hops; /* only the token holder touches it */
    if (i + 1 < workers) {
      CHECK(sem_post(&sem[i + 1]) == 0, "sem_post");
    } else {
      CHECK(sem_post(&sem[0]) == 0, "sem_post");
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  rounds = arg_int(argc, argv, 2, 3);
  data = calloc((size_t)WORDS * workers, sizeof(int));
  for (int i = 0; i < workers; ++i) CHECK(sem_init(&sem[i], 0, i == 0) == 0, "sem_init");
  run_workers(workers, work);
  /* Worker 0's last post left one unit on sem[0] (it never waits again). */
  int left = -1;
  sem_getvalue(&sem[0], &left);
  CHECK(left == 1, "sem[0] holds %d", left);
  printf("mp_sem %ld\n", hops);
  return 0;
}
