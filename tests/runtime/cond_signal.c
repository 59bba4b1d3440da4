/* cond_signal P: what a signal or a post wakes (issue 17).
 *
 * 1. Workers 1..P-1 wait on one condition for a token; worker 0 hands out
 *    one token and signals once. The waiters that return (a spurious return
 *    loops back) must all be on one node, in one round of three at least:
 *    a signal wakes one node, not all. A broadcast then hands out the rest.
 * 2. Worker 1 waits with a short timeout and times out; then worker 2 waits
 *    for a token and worker 0 signals once: worker 2 must get it (a node
 *    whose waiters all left must not take a signal), in several rounds, so
 *    that the node a signal tries first goes round.
 * 3. The same with a semaphore: sem_timedwait times out, sem_wait gets the
 *    next post.
 * 4. Worker 0 starts three more threads (on its own node in one-node jobs),
 *    each of which waits for one token and ends; it hands out the tokens
 *    one at a time, a signal each, and waits for each to be taken: a signal
 *    that woke one of several waiters of its own node must leave the others
 *    wakeable.
 * Prints "cond_signal ok". */
#include <errno.h>
#include <semaphore.h>
#include <time.h>
#include <unistd.h>

#include "prog.h"

#define ROUNDS 6

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER, cv2 = PTHREAD_COND_INITIALIZER;
static sem_t* sem;
static int workers, waiting, tokens, done, broadcast, returned_on[MAX_WORKERS];
static int round_no, timed_out, waiting2, tokens2, got2, timed_out3, got3;
#define HELPERS 3
static pthread_cond_t cv4 = PTHREAD_COND_INITIALIZER;
static int waiting4, tokens4, got4;

static struct timespec after_ms(int ms) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_nsec += (long)ms * 1000000;
  t.tv_sec += t.tv_nsec / 1000000000;
  t.tv_nsec %= 1000000000;
  return t;
}

/* Waits (polling under mu) until *v reaches want; fails after 20 s. */
static void await(int* v, int want, const char* what) {
  for (int i = 0; i < 20000; ++i) {
    pthread_mutex_lock(&mu);
    const int now = *v;
    pthread_mutex_unlock(&mu);
    if (now >= want) return;
    usleep(1000);
  }
  CHECK(0, "%s: never reached %d", what, want);
}

/* A waiter that had joined but not yet looked when the signal came returns
 * without being woken (allowed), so one round may see two nodes; a signal
 * that wakes every node does so in every round. */
#define ROUNDS1 3
static void phase1(long i) {
  const int w = workers - 1;
  int fewest = MAX_WORKERS;
  for (int r = 0; r < ROUNDS1; ++r) {
    if (i == 0) {
      await(&waiting, w * (r + 1), "waiters");
      usleep(20 * 1000); /* time for them to fall asleep */
      pthread_mutex_lock(&mu);
      memset(returned_on, 0, sizeof returned_on);
      broadcast = 0;
      tokens = 1;
      pthread_cond_signal(&cv);
      pthread_mutex_unlock(&mu);
      await(&done, w * r + 1, "the signalled waiter");
      usleep(100 * 1000); /* time for any other node's waiters to return */
      pthread_mutex_lock(&mu);
      int nodes = 0;
      for (int n = 0; n < MAX_WORKERS; ++n) nodes += returned_on[n] != 0;
      if (nodes < fewest) fewest = nodes;
      tokens += w - 1;
      broadcast = 1;
      pthread_cond_broadcast(&cv);
      pthread_mutex_unlock(&mu);
      await(&done, w * (r + 1), "the broadcast's waiters");
      continue;
    }
    pthread_mutex_lock(&mu);
    ++waiting;
    while (tokens == 0) {
      pthread_cond_wait(&cv, &mu);
      if (!broadcast) returned_on[node_id() % MAX_WORKERS] = 1;
    }
    --tokens;
    ++done;
    pthread_mutex_unlock(&mu);
    await(&done, w * (r + 1), "the round's end");
  }
  if (i == 0) CHECK(fewest == 1, "one signal: waiters returned on %d nodes at best of %d rounds", fewest, ROUNDS1);
}

static void phase2(long i) {
  for (int r = 0; r < ROUNDS; ++r) {
    if (i == 0) {
      await(&waiting2, r + 1, "worker 2 waiting");
      pthread_mutex_lock(&mu);
      tokens2 = 1;
      pthread_cond_signal(&cv2);
      pthread_mutex_unlock(&mu);
      await(&got2, r + 1, "worker 2 signalled after worker 1 timed out");
      pthread_mutex_lock(&mu);
      ++round_no;
      pthread_mutex_unlock(&mu);
    } else if (i == 1) {
      pthread_mutex_lock(&mu);
      const struct timespec t = after_ms(20);
      while (tokens2 == 0) {
        const int err = pthread_cond_timedwait(&cv2, &mu, &t);
        if (err == ETIMEDOUT) break;
        CHECK(err == 0, "timedwait: %d", err);
      }
      ++timed_out;
      pthread_mutex_unlock(&mu);
      await(&round_no, r + 1, "the round's end");
    } else if (i == 2) {
      await(&timed_out, r + 1, "worker 1's timeout");
      pthread_mutex_lock(&mu);
      ++waiting2;
      while (tokens2 == 0) pthread_cond_wait(&cv2, &mu);
      tokens2 = 0;
      ++got2;
      pthread_mutex_unlock(&mu);
      await(&round_no, r + 1, "the round's end");
    }
  }
}

static void phase3(long i) {
  for (int r = 0; r < ROUNDS; ++r) {
    if (i == 1) {
      const struct timespec t = after_ms(20);
      CHECK(sem_timedwait(sem, &t) == -1 && errno == ETIMEDOUT, "sem_timedwait took a unit never posted");
      pthread_mutex_lock(&mu);
      ++timed_out3;
      pthread_mutex_unlock(&mu);
      await(&got3, r + 1, "the round's end");
    } else if (i == 2) {
      await(&timed_out3, r + 1, "worker 1's sem timeout");
      CHECK(sem_wait(sem) == 0, "sem_wait");
      pthread_mutex_lock(&mu);
      ++got3;
      pthread_mutex_unlock(&mu);
    } else if (i == 0) {
      await(&timed_out3, r + 1, "worker 1's sem timeout");
      usleep(20 * 1000); /* worker 2 waits by now, most rounds */
      CHECK(sem_post(sem) == 0, "sem_post");
      await(&got3, r + 1, "worker 2 posted to after worker 1 timed out");
    }
  }
}

static void* helper4(void* arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  ++waiting4;
  while (tokens4 == 0) pthread_cond_wait(&cv4, &mu);
  --tokens4;
  ++got4;
  pthread_mutex_unlock(&mu);
  return NULL;
}

static void phase4(void) {
  pthread_t t[HELPERS];
  for (int k = 0; k < HELPERS; ++k) CHECK(pthread_create(&t[k], NULL, helper4, NULL) == 0, "create helper %d", k);
  await(&waiting4, HELPERS, "phase 4 waiters");
  for (int k = 1; k <= HELPERS; ++k) {
    pthread_mutex_lock(&mu);
    ++tokens4;
    pthread_cond_signal(&cv4);
    pthread_mutex_unlock(&mu);
    await(&got4, k, "a token handed out with one signal");
  }
  for (int k = 0; k < HELPERS; ++k) CHECK(pthread_join(t[k], NULL) == 0, "join helper %d", k);
}

static void* work(void* arg) {
  const long i = (long)arg;
  if (workers >= 2) phase1(i);
  if (workers >= 3) {
    phase2(i);
    phase3(i);
  }
  if (i == 0) phase4();
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  sem = malloc(sizeof(sem_t));
  CHECK(sem_init(sem, 0, 0) == 0, "sem_init");
  run_workers(workers, work);
  printf("cond_signal ok\n");
  return 0;
}
