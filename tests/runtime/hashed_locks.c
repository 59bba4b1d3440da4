/* hashed_locks P ROUNDS: Barnes-Hut's tree insertion in small. SLOTS
 * counters share one page, slot s guarded by lock[s % NLOCKS]: the page is
 * written by every node at once under many locks (multiple writers, false
 * sharing), every lock moves between nodes, and a node often applies
 * several notices for the page in one acquire. Each worker adds its number
 * + 1 to OPS pseudo-random slots a round; after each round's barrier worker
 * 0 checks every slot against a replay, so a lost update names its slot and
 * round. Prints "hashed_locks TOTAL". */
#include "prog.h"

#define SLOTS 64
#define NLOCKS 61
#define OPS 400

static long slot[SLOTS];
static long expect[SLOTS]; /* worker 0's replay */
static pthread_mutex_t lock[NLOCKS];
static pthread_barrier_t barrier;
static int workers, rounds;

static unsigned pick(long i, int r, int k) {
  unsigned long x = (unsigned long)i * 0x9e3779b97f4a7c15UL ^ (unsigned long)(r * OPS + k) * 0xbf58476d1ce4e5b9UL;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebUL;
  x ^= x >> 29;
  return (unsigned)(x % SLOTS);
}

static void* work(void* arg) {
  const long i = (long)arg;
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < OPS; ++k) {
      const unsigned s = pick(i, r, k);
      pthread_mutex_lock(&lock[s % NLOCKS]);
      slot[s] += i + 1;
      pthread_mutex_unlock(&lock[s % NLOCKS]);
    }
    pthread_barrier_wait(&barrier);
    if (i == 0) {
      for (long w = 0; w < workers; ++w)
        for (int k = 0; k < OPS; ++k) expect[pick(w, r, k)] += w + 1;
      for (int s = 0; s < SLOTS; ++s)
        CHECK(slot[s] == expect[s], "round %d slot %d (lock %d): %ld, expected %ld", r, s, s % NLOCKS, slot[s],
              expect[s]);
    }
    pthread_barrier_wait(&barrier);
  }
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  rounds = arg_int(argc, argv, 2, 6);
  for (int l = 0; l < NLOCKS; ++l) pthread_mutex_init(&lock[l], NULL);
  pthread_barrier_init(&barrier, NULL, (unsigned)workers);
  run_workers(workers, work);
  long total = 0;
  for (int s = 0; s < SLOTS; ++s) total += slot[s];
  printf("hashed_locks %ld\n", total);
  return 0;
}
