/* malloc P: the malloc family across nodes. Each worker allocates blocks
 * (small to large) and fills them; after a barrier worker i checks and frees
 * the blocks of worker i+1 (another node's), grows one of them with realloc,
 * and checks calloc, posix_memalign, aligned_alloc and malloc_usable_size on
 * its own node. Prints "malloc P". */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>

#include "prog.h"

#define NB 24
static const size_t kSizes[NB] = {1,    8,     16,    24,    100,    500,    1000,   4000,
                                  4096, 5000,  8191,  10000, 16384,  32768,  65536,  65537,
                                  100000, 200000, 1 << 20, 3000, 48, 4095, 12000, 777};
static unsigned char* blocks[MAX_WORKERS][NB];
static int workers;
static pthread_barrier_t barrier;

static unsigned char fill(long owner, int k, size_t at) { return (unsigned char)(owner * 31 + k * 7 + at); }

static void check_calloc(void) {
  /* Reuse: dirty a block, free it, calloc the same size. */
  for (size_t n = 16; n <= (1u << 20); n *= 8) {
    unsigned char* d = malloc(n);
    CHECK(d, "malloc %zu", n);
    memset(d, 0xa5, n);
    free(d);
    unsigned char* z = calloc(n / 8, 8);
    CHECK(z, "calloc %zu", n);
    for (size_t at = 0; at < n; ++at) CHECK(z[at] == 0, "calloc(%zu) byte %zu is %d", n, at, z[at]);
    free(z);
  }
  volatile size_t huge = (size_t)1 << 62; /* hidden from the compiler's size check */
  CHECK(calloc(huge, 16) == NULL, "calloc overflow not refused");
}

static void check_aligned(void) {
  for (size_t align = sizeof(void*); align <= (1u << 20); align *= 2) {
    void* p = NULL;
    CHECK(posix_memalign(&p, align, 100) == 0 && p, "posix_memalign %zu", align);
    CHECK((uintptr_t)p % align == 0, "posix_memalign(%zu) gave %p", align, p);
    CHECK(malloc_usable_size(p) >= 100, "usable size");
    memset(p, 1, 100);
    free(p);
    void* q = aligned_alloc(align, align * 2);
    CHECK(q && (uintptr_t)q % align == 0, "aligned_alloc(%zu) gave %p", align, q);
    free(q);
  }
  void* p = NULL;
  CHECK(posix_memalign(&p, 24, 100) == EINVAL, "posix_memalign(24) not refused");
}

static void check_realloc(unsigned char* p, size_t n, long owner, int k) {
  size_t have = n;
  for (size_t want = n * 3 + 1; want < (4u << 20); want *= 5) {
    p = realloc(p, want);
    CHECK(p, "realloc %zu", want);
    CHECK(malloc_usable_size(p) >= want, "usable %zu < %zu", malloc_usable_size(p), want);
    for (size_t at = 0; at < n; ++at) CHECK(p[at] == fill(owner, k, at), "realloc lost byte %zu", at);
    memset(p + have, 0x3c, want - have);
    have = want;
  }
  p = realloc(p, 10);
  CHECK(p && p[3] == fill(owner, k, 3), "realloc shrink");
  free(p);
}

static void* work(void* arg) {
  const long i = (long)arg;
  for (int k = 0; k < NB; ++k) {
    unsigned char* b = malloc(kSizes[k]);
    CHECK(b, "malloc %zu", kSizes[k]);
    CHECK(malloc_usable_size(b) >= kSizes[k], "usable %zu < %zu", malloc_usable_size(b), kSizes[k]);
    for (size_t at = 0; at < kSizes[k]; ++at) b[at] = fill(i, k, at);
    blocks[i][k] = b;
  }
  pthread_barrier_wait(&barrier);
  const long j = (i + 1) % workers;
  for (int k = 1; k < NB; ++k) {
    unsigned char* b = blocks[j][k];
    for (size_t at = 0; at < kSizes[k]; ++at)
      CHECK(b[at] == fill(j, k, at), "block %d of worker %ld byte %zu", k, j, at);
    if (k == 7 || k == 17) {
      check_realloc(b, kSizes[k], j, k); /* another node's block, grown here */
    } else {
      free(b); /* another node's block, freed here */
    }
  }
  check_calloc();
  check_aligned();
  pthread_barrier_wait(&barrier);
  free(blocks[i][0]);
  return NULL;
}

int main(int argc, char** argv) {
  workers = arg_workers(argc, argv);
  pthread_barrier_init(&barrier, NULL, workers);
  run_workers(workers, work);
  printf("malloc %d\n", workers);
  return 0;
}
