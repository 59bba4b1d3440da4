/* barrier_rotate ROUNDS cond|file [FILE]: under svmrun -n 4 -t 1, main
 * (node 0) meets one partner at a two-thread barrier each round, the
 * workers of nodes 1, 2 and 3 in turn, and each reads what the other wrote
 * before it. A worker waits for its round on a condition ("cond": the
 * runtime sees it wait elsewhere) or by reading the round from FILE every
 * 100 us, where main writes it ("file": a wait the runtime cannot see, with
 * no DSM operation in it). Prints "ok ROUNDS" when every round checked. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kWorkers = 3, kMaxRounds = 1000 };

static pthread_barrier_t b;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long turn;  /* the round that may start: main has passed the one before */
static long rounds = 30;
/* "file": the round that may start, as a long. A copy: argv lies in each
 * node's own stack. */
static char file_name[4096];
static const char* file;
static long from_main[kMaxRounds], from_partner[kMaxRounds];

static long file_turn(void) {
  long t = -1;
  const int fd = open(file, O_RDONLY);
  if (fd >= 0) {
    if (pread(fd, &t, sizeof t, 0) != sizeof t) t = -1;
    close(fd);
  }
  return t;
}

static void await_turn(long r) {
  if (file) {
    while (file_turn() < r) nanosleep(&(struct timespec){0, 100 * 1000}, NULL);
    return;
  }
  pthread_mutex_lock(&mu);
  while (turn < r) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

static void set_turn(long r) {
  if (file) {
    const int fd = open(file, O_WRONLY | O_CREAT, 0600);
    if (fd < 0 || pwrite(fd, &r, sizeof r, 0) != sizeof r) {
      printf("FAIL writing %s\n", file);
      exit(1);
    }
    close(fd);
    return;
  }
  pthread_mutex_lock(&mu);
  turn = r;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void fail(const char* who, long r, long got, long want) {
  printf("FAIL %s round %ld: read %ld, want %ld\n", who, r, got, want);
  exit(1);
}

static void* worker(void* arg) {
  const long w = (long)arg;
  for (long r = w; r < rounds; r += kWorkers) {
    await_turn(r);
    from_partner[r] = r * 13 + w;
    pthread_barrier_wait(&b);
    if (from_main[r] != r * 7 + 1) fail("worker", r, from_main[r], r * 7 + 1);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) rounds = atol(argv[1]);
  if (argc > 2 && strcmp(argv[2], "file") == 0) {
    snprintf(file_name, sizeof file_name, "%s", argc > 3 ? argv[3] : "barrier_rotate.turn");
    file = file_name;
  }
  if (rounds < 1 || rounds > kMaxRounds) return 2;
  if (file) set_turn(0);
  pthread_barrier_init(&b, NULL, 2);
  pthread_t t[kWorkers];  /* block placement, 1 a node: worker w on node w + 1 */
  for (long w = 0; w < kWorkers; ++w) pthread_create(&t[w], NULL, worker, (void*)w);
  for (long r = 0; r < rounds; ++r) {
    from_main[r] = r * 7 + 1;
    pthread_barrier_wait(&b);
    const long w = r % kWorkers;
    if (from_partner[r] != r * 13 + w) fail("main", r, from_partner[r], r * 13 + w);
    set_turn(r + 1);
  }
  for (long w = 0; w < kWorkers; ++w) pthread_join(t[w], NULL);
  printf("ok %ld\n", rounds);
  return 0;
}
