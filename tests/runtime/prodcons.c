/* prodcons P ITEMS: a bounded queue on two condition variables. Even
 * workers produce ITEMS items each (a malloc'd record), odd workers consume
 * them (checking and freeing records made on other nodes); with one worker
 * main adds a consumer thread. Prints "prodcons COUNT SUM". */
#include "prog.h"

#define CAP 8
struct item {
  long producer, seq, check;
  char pad[200];
};
static struct {
  struct item* slot[CAP];
  int head, tail, size, producers_left;
  long count, sum;
} q;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
static int workers, items;

static void produce(long i) {
  for (long s = 0; s < items; ++s) {
    struct item* it = malloc(sizeof(*it));
    CHECK(it, "malloc");
    it->producer = i;
    it->seq = s;
    it->check = i * 1000003 + s * 7;
    memset(it->pad, (int)(s & 0xff), sizeof(it->pad));
    pthread_mutex_lock(&mu);
    while (q.size == CAP) pthread_cond_wait(&not_full, &mu);
    q.slot[q.tail] = it;
    q.tail = (q.tail + 1) % CAP;
    ++q.size;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&mu);
  }
  pthread_mutex_lock(&mu);
  --q.producers_left;
  pthread_cond_broadcast(&not_empty);
  pthread_mutex_unlock(&mu);
}

static void consume(void) {
  for (;;) {
    pthread_mutex_lock(&mu);
    while (q.size == 0 && q.producers_left > 0) pthread_cond_wait(&not_empty, &mu);
    if (q.size == 0) {
      pthread_mutex_unlock(&mu);
      return;
    }
    struct item* it = q.slot[q.head];
    q.head = (q.head + 1) % CAP;
    --q.size;
    pthread_cond_broadcast(&not_full);
    CHECK(it->check == it->producer * 1000003 + it->seq * 7, "item %ld/%ld check %ld", it->producer, it->seq,
          it->check);
    for (size_t k = 0; k < sizeof(it->pad); ++k) CHECK(it->pad[k] == (char)(it->seq & 0xff), "pad");
    ++q.count;
    q.sum += it->check;
    pthread_mutex_unlock(&mu);
    free(it);
  }
}

static void* work(void* arg) {
  const long i = (long)arg;
  if (i % 2 == 0) {
    produce(i);
  } else {
    consume();
  }
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  items = arg_int(argc, argv, 2, 200);
  int threads = workers == 1 ? 2 : workers;
  q.producers_left = (threads + 1) / 2;
  long want = 0;
  for (long i = 0; i < threads; i += 2)
    for (long s = 0; s < items; ++s) want += i * 1000003 + s * 7;
  run_workers(threads, work);
  CHECK(q.count == (long)((threads + 1) / 2) * items, "count %ld", q.count);
  CHECK(q.sum == want, "sum %ld want %ld", q.sum, want);
  printf("prodcons %ld %ld\n", q.count, q.sum);
  return 0;
}
