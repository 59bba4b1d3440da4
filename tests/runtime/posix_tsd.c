/* posix_tsd P: thread-specific data on every node (issue 13, failure 5: a
 * key made in main gave EINVAL from pthread_setspecific on other nodes and
 * its destructor never ran). Main makes two keys; every created worker sets
 * both, reads them back, and ends; the destructor runs once per worker with
 * that worker's value, wherever it ran. A deleted key is refused. */
#include "posix.h"

static pthread_key_t key, plain;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long destroyed, destroyed_sum;
static long values[MAX_WORKERS];

static void destroy(void* v) {
  pthread_mutex_lock(&mu);
  ++destroyed;
  destroyed_sum += *(long*)v;
  pthread_mutex_unlock(&mu);
}

static void* work(void* arg) {
  const long i = (long)arg;
  CHECK(pthread_getspecific(key) == NULL, "fresh value");
  values[i] = i * 10 + 1;
  CHECK(pthread_setspecific(key, &values[i]) == 0, "setspecific");
  CHECK(pthread_setspecific(plain, (void*)(i + 100)) == 0, "setspecific plain");
  CHECK(pthread_getspecific(key) == &values[i], "getspecific");
  CHECK((long)pthread_getspecific(plain) == i + 100, "getspecific plain");
  return 0;
}

int main(int argc, char** argv) {
  const int p = arg_workers(argc, argv);
  CHECK(pthread_key_create(&key, destroy) == 0, "key_create");
  CHECK(pthread_key_create(&plain, NULL) == 0, "key_create plain");
  CHECK(key != plain, "distinct keys");
  pthread_t t[MAX_WORKERS];
  for (long i = 1; i < p; ++i) CHECK(pthread_create(&t[i], NULL, work, (void*)i) == 0, "create");
  for (int i = 1; i < p; ++i) CHECK(pthread_join(t[i], NULL) == 0, "join");
  long want = 0;
  for (long i = 1; i < p; ++i) want += i * 10 + 1;
  pthread_mutex_lock(&mu);
  CHECK(destroyed == p - 1 && destroyed_sum == want, "destructor ran %ld times, sum %ld, want %d, %ld",
        destroyed, destroyed_sum, p - 1, want);
  pthread_mutex_unlock(&mu);
  CHECK(pthread_getspecific(key) == NULL, "main's value");
  CHECK(pthread_setspecific(key, &values[0]) == 0 && pthread_getspecific(key) == &values[0], "main");
  CHECK(pthread_setspecific(key, NULL) == 0, "clear");
  CHECK(pthread_key_delete(plain) == 0, "key_delete");
  CHECK(pthread_key_delete(key) == 0, "key_delete");
  printf("posix_tsd ok\n");
  return 0;
}
