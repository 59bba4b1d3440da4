/* trylock_cross: two threads on two nodes each hold one mutex and try the
 * other's (the deadlock-avoiding pattern try-locks are for), with a barrier
 * so that both try while both hold: both tries must fail with EBUSY. It
 * deadlocked while a try-lock of a lock held on another node waited for it.
 * The same for a spin lock and a read-write lock. Then the main thread
 * retries the worker's (now free) mutex until it gets it. Prints
 * "trylock_cross mutex EBUSY EBUSY spin EBUSY EBUSY rwlock EBUSY EBUSY free ok". */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static pthread_spinlock_t sa, sb;
static pthread_rwlock_t ra = PTHREAD_RWLOCK_INITIALIZER, rb = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t bar;
static int got[2][3];

static const char* Name(int e) { return e == EBUSY ? "EBUSY" : e == 0 ? "taken" : strerror(e); }

/* Thread `me` holds its own lock of each kind in turn and tries the other's. */
static void Cross(int me) {
  pthread_mutex_t* mine = me ? &b : &a;
  pthread_mutex_t* theirs = me ? &a : &b;
  pthread_mutex_lock(mine);
  pthread_barrier_wait(&bar);
  got[me][0] = pthread_mutex_trylock(theirs);
  if (got[me][0] == 0) pthread_mutex_unlock(theirs);
  pthread_barrier_wait(&bar);
  pthread_mutex_unlock(mine);

  pthread_spin_lock(me ? &sb : &sa);
  pthread_barrier_wait(&bar);
  got[me][1] = pthread_spin_trylock(me ? &sa : &sb);
  if (got[me][1] == 0) pthread_spin_unlock(me ? &sa : &sb);
  pthread_barrier_wait(&bar);
  pthread_spin_unlock(me ? &sb : &sa);

  pthread_rwlock_wrlock(me ? &rb : &ra);
  pthread_barrier_wait(&bar);
  got[me][2] = pthread_rwlock_trywrlock(me ? &ra : &rb);
  if (got[me][2] == 0) pthread_rwlock_unlock(me ? &ra : &rb);
  pthread_barrier_wait(&bar);
  pthread_rwlock_unlock(me ? &rb : &ra);
  pthread_barrier_wait(&bar);
}

static void* Worker(void* arg) {
  (void)arg;
  Cross(1);
  return NULL;
}

int main(void) {
  pthread_t t;
  pthread_spin_init(&sa, PTHREAD_PROCESS_PRIVATE);
  pthread_spin_init(&sb, PTHREAD_PROCESS_PRIVATE);
  pthread_barrier_init(&bar, NULL, 2);
  pthread_create(&t, NULL, Worker, NULL);
  Cross(0);
  pthread_join(t, NULL);
  /* b's token is on the worker's node, free: a retried try gets it. */
  int free_try = EBUSY;
  for (int i = 0; i < 2000 && (free_try = pthread_mutex_trylock(&b)) == EBUSY; ++i) {
  }
  if (free_try == 0) pthread_mutex_unlock(&b);
  printf("trylock_cross mutex %s %s spin %s %s rwlock %s %s free %s\n", Name(got[0][0]), Name(got[1][0]),
         Name(got[0][1]), Name(got[1][1]), Name(got[0][2]), Name(got[1][2]), free_try == 0 ? "ok" : Name(free_try));
  return 0;
}
