/* mp_join P: messages through create and join. Main fills an input array
 * before the workers exist; each worker sums it and returns a block it
 * allocated and filled (several pages); main checks each block after the
 * join and frees it (another node's block). Prints "mp_join SUM". */
#include "prog.h"

#define IN 20000
#define OUT 3000
static int input[IN];

static void* work(void* arg) {
  const long i = (long)arg;
  long s = 0;
  for (int k = 0; k < IN; ++k) s += input[k];
  long* out = malloc(sizeof(long) * OUT);
  CHECK(out, "malloc");
  for (int k = 0; k < OUT; ++k) out[k] = s + i * OUT + k;
  return out;
}

int main(int argc, char** argv) {
  const int p = arg_workers(argc, argv);
  long want = 0;
  for (int k = 0; k < IN; ++k) want += input[k] = k % 97 + 1;
  pthread_t t[MAX_WORKERS];
  for (long i = 1; i < p; ++i) CHECK(pthread_create(&t[i], NULL, work, (void*)i) == 0, "create");
  long* mine = work((void*)0);
  free(mine);
  long sum = want;
  for (int i = 1; i < p; ++i) {
    long* out = NULL;
    CHECK(pthread_join(t[i], (void**)&out) == 0 && out, "join %d", i);
    for (int k = 0; k < OUT; ++k) CHECK(out[k] == want + (long)i * OUT + k, "worker %d word %d: %ld", i, k, out[k]);
    sum += out[0] - (long)i * OUT;
    free(out);
  }
  printf("mp_join %ld\n", sum);
  return 0;
}
