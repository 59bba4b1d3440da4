/* gather_elsewhere ROUNDS: under svmrun -n 2 -t 2, a barrier whose node-0
 * participants change. Each round main and w1 (both on node 0) meet at
 * barrier b, then main meets w2 (node 1) there while w1 waits on a
 * condition that w2 signals after that episode. Node 0 gathers main and w1
 * for the second episode (they took part in the first); w1 waits in the
 * condition, and the runtime must say so (Node::WaitingElsewhere) or the
 * episode costs kGatherNs. The conditions order the pairs: w2 comes to the
 * barrier once main has passed the round's first episode, w1 to the next
 * round's once w2 has passed this one. Prints "ok" when every round
 * completed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t b;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long turn = -1;  /* w2 has passed round `turn`'s barrier */
static long phase = -1; /* main has passed round `phase`'s first barrier */
static long rounds = 200;

static void await_value(long* v, long at_least) {
  pthread_mutex_lock(&mu);
  while (*v < at_least) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

static void set_value(long* v, long to) {
  pthread_mutex_lock(&mu);
  *v = to;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void* w1(void* arg) {
  (void)arg;
  for (long r = 0; r < rounds; ++r) {
    pthread_barrier_wait(&b);
    await_value(&turn, r);
  }
  return NULL;
}

static void* w2(void* arg) {
  (void)arg;
  for (long r = 0; r < rounds; ++r) {
    await_value(&phase, r);
    pthread_barrier_wait(&b);
    set_value(&turn, r);
  }
  return NULL;
}

static void* idle(void* arg) { return arg; }

int main(int argc, char** argv) {
  if (argc > 1) rounds = atol(argv[1]);
  pthread_barrier_init(&b, NULL, 2);
  /* Threads 1..3 (block placement, 2 a node): w1 on node 0, w2 and an idle
   * thread on node 1. */
  pthread_t t1, t2, t3;
  pthread_create(&t1, NULL, w1, NULL);
  pthread_create(&t2, NULL, w2, NULL);
  pthread_create(&t3, NULL, idle, NULL);
  for (long r = 0; r < rounds; ++r) {
    pthread_barrier_wait(&b); /* with w1: w2 waits for phase r */
    set_value(&phase, r);
    pthread_barrier_wait(&b); /* with w2: w1 waits for turn r */
  }
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  pthread_join(t3, NULL);
  printf("ok %ld\n", rounds);
  return 0;
}
