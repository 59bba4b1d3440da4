/* radix: parallel integer radix sort.
 *
 * Written for svm from the published algorithm (Blelloch et al.'s parallel
 * radix sort as used in SPLASH-2; no SPLASH code). Keys are cut into digits
 * of log2(radix) bits; each pass, least significant digit first:
 *
 *   1. each thread counts the digits of its contiguous share of keys
 *   2. a binary tree over the threads sums the counts upwards and hands
 *      every thread the counts of all lower-numbered threads downwards;
 *      a tree node waits for its children and parent on PAUSE flags
 *      (mutex + condition variable: never a spin on a plain variable)
 *   3. thread p writes its keys with digit d to the destination starting at
 *      (keys of all digits < d) + (keys with digit d of threads < p)
 *   4. barrier; source and destination swap
 *
 * Keys come from a hash of their index, so the multiset does not depend on
 * the thread count. -t checks the output is sorted and holds the same
 * multiset (count, sum and a hash sum); exit 3 when it does not.
 */
MAIN_ENV
#include "hash.h"
#include "options.h"

#define MAX_LEVELS 12

struct global {
  BARDEC(bar)
  unsigned long t_start, t_end;
};

static struct global *G;
static long NKEYS, RADIX, MAXKEY;
static long P, LOG_RADIX, LEVELS, PASSES;
static int TEST;
static unsigned *KEY[2];
static long *TREE;      /* TREE[(p * LEVELS + l) * RADIX + d]: counts of threads [p, p + 2^l) */
static long *BELOW;     /* BELOW[p * RADIX + d]: digit d among threads < p */
static long *BASE;      /* BASE[d]: keys with a digit < d (all threads) */
static anl_pause_t *UP;   /* UP[p * LEVELS + l]: TREE[p][l] is ready */
static anl_pause_t *DOWN; /* DOWN[p]: BELOW[p] (and BASE) are ready */

/* The command line (common/options.h); the defaults are set from here. */
static const struct app_preset SIZES[] = {
  {"small", "-n65536", NULL},
  {"medium", "-n2097152", "2M keys"},
  {"seed", "-n4194304", "4M keys"},
};
static const struct app_opt OPTS[] = {
  OPT_LONG('p', "threads", "P", &P, "1", "threads (at most 2048)"),
  OPT_LONG('n', "keys", "N", &NKEYS, "65536", "keys"),
  OPT_LONG('r', "radix", "R", &RADIX, "1024", "radix (a power of two, 2..65536)"),
  OPT_LONG('m', "maxkey", "K", &MAXKEY, "524288", "keys lie in [0, K)"),
  OPT_PRESETS('S', SIZES),
  OPT_SWITCH('t', &TEST, "verify: sorted, and the same multiset as the input"),
  OPT_END,
};

static unsigned key_of(long i) { return (unsigned)(mix((uint64_t)i) % (uint64_t)MAXKEY); }

static void slave(void) {
  long me;
  GET_PID(me);
  long lo = NKEYS * me / P, hi = NKEYS * (me + 1) / P;
  for (long i = lo; i < hi; i++) {
    KEY[0][i] = key_of(i);
    KEY[1][i] = 0;
  }
  long *mine = &TREE[(me * LEVELS) * RADIX];
  long *below = &BELOW[me * RADIX];
  long *offset = (long *)malloc((size_t)RADIX * sizeof(long));
  if (offset == NULL) { fprintf(stderr, "radix: out of memory\n"); exit(1); }
  BARRIER(G->bar, P);
  if (me == 0) CLOCK(G->t_start);
  for (long pass = 0; pass < PASSES; pass++) {
    const unsigned *src = KEY[pass & 1];
    unsigned *dst = KEY[(pass + 1) & 1];
    int shift = (int)(pass * LOG_RADIX);
    unsigned mask = (unsigned)RADIX - 1;

    /* 1. local counts (tree level 0) */
    memset(mine, 0, (size_t)RADIX * sizeof(long));
    for (long i = lo; i < hi; i++) mine[(src[i] >> shift) & mask]++;

    /* 2a. up: thread p sums level l+1 while p is a multiple of 2^(l+1) */
    long l = 0;
    for (; l + 1 < LEVELS; l++) {
      long s = 1L << l;
      if (me & s) break; /* left child's partner: publish and stop */
      long *cur = &TREE[(me * LEVELS + l) * RADIX], *nxt = cur + RADIX;
      if (me + s < P) {
        WAITPAUSE(UP[(me + s) * LEVELS + l]);
        CLEARPAUSE(UP[(me + s) * LEVELS + l]);
        const long *other = &TREE[((me + s) * LEVELS + l) * RADIX];
        for (long d = 0; d < RADIX; d++) nxt[d] = cur[d] + other[d];
      } else {
        memcpy(nxt, cur, (size_t)RADIX * sizeof(long));
      }
    }
    long top = l; /* highest level this thread holds */
    if (me != 0) SETPAUSE(UP[me * LEVELS + top]);

    /* 2b. down: thread 0 starts with nothing below it and computes BASE */
    if (me == 0) {
      const long *total = &TREE[(LEVELS - 1) * RADIX];
      long run = 0;
      for (long d = 0; d < RADIX; d++) { BASE[d] = run; run += total[d]; }
      memset(below, 0, (size_t)RADIX * sizeof(long));
    } else {
      WAITPAUSE(DOWN[me]);
      CLEARPAUSE(DOWN[me]);
    }
    for (long k = top - 1; k >= 0; k--) {
      long s = 1L << k, child = me + s;
      if (child >= P) continue;
      const long *left = &TREE[(me * LEVELS + k) * RADIX];
      long *cb = &BELOW[child * RADIX];
      for (long d = 0; d < RADIX; d++) cb[d] = below[d] + left[d];
      SETPAUSE(DOWN[child]);
    }

    /* 3. permutation */
    for (long d = 0; d < RADIX; d++) offset[d] = BASE[d] + below[d];
    for (long i = lo; i < hi; i++) {
      unsigned k = src[i];
      dst[offset[(k >> shift) & mask]++] = k;
    }
    BARRIER(G->bar, P);
  }
  if (me == 0) CLOCK(G->t_end);
  free(offset);
}

int main(int argc, char **argv) {
  MAIN_INITENV
  int rc = app_opts_parse(OPTS, argc, argv);
  if (rc >= 0) return rc;
  if (P < 1 || P > 2048 || P > ANL_MAX_THREADS || NKEYS < 1 || NKEYS > (1L << 31) ||
      RADIX < 2 || RADIX > 65536 || (RADIX & (RADIX - 1)) || MAXKEY < 1 || MAXKEY > (1L << 31)) {
    app_opts_usage(stderr, OPTS, argv[0]);
    return 2;
  }
  for (LOG_RADIX = 0; (1L << LOG_RADIX) < RADIX; LOG_RADIX++) {}
  long bits = 0;
  while ((1L << bits) < MAXKEY) bits++;
  PASSES = (bits + LOG_RADIX - 1) / LOG_RADIX;
  if (PASSES == 0) PASSES = 1;
  for (LEVELS = 1; (1L << (LEVELS - 1)) < P; LEVELS++) {}

  G = (struct global *)G_MALLOC(sizeof(struct global));
  BARINIT(G->bar, P);
  KEY[0] = (unsigned *)G_MALLOC((size_t)NKEYS * sizeof(unsigned));
  KEY[1] = (unsigned *)G_MALLOC((size_t)NKEYS * sizeof(unsigned));
  TREE = (long *)G_MALLOC((size_t)(P * LEVELS * RADIX) * sizeof(long));
  BELOW = (long *)G_MALLOC((size_t)(P * RADIX) * sizeof(long));
  BASE = (long *)G_MALLOC((size_t)RADIX * sizeof(long));
  UP = (anl_pause_t *)G_MALLOC((size_t)(P * LEVELS) * sizeof(anl_pause_t));
  DOWN = (anl_pause_t *)G_MALLOC((size_t)P * sizeof(anl_pause_t));
  for (long i = 0; i < P * LEVELS; i++) PAUSEINIT(UP[i]);
  for (long i = 0; i < P; i++) PAUSEINIT(DOWN[i]);

  printf("radix: %ld keys in [0, %ld), radix %ld (%ld passes), %ld threads%s\n", NKEYS, MAXKEY, RADIX,
         PASSES, P, TEST ? ", verify" : "");
  for (long i = 1; i < P; i++) CREATE(slave);
  slave();
  WAIT_FOR_END(P - 1);
  printf("Total time (us): %lu\n", G->t_end - G->t_start);
  int ok = 1;
  if (TEST) {
    const unsigned *out = KEY[PASSES & 1];
    uint64_t sum_in = 0, sum_out = 0, h_in = 0, h_out = 0;
    long unsorted = 0;
    for (long i = 0; i < NKEYS; i++) {
      unsigned k = key_of(i);
      sum_in += k;
      h_in += mix(k ^ 0x5bd1e995u);
      sum_out += out[i];
      h_out += mix(out[i] ^ 0x5bd1e995u);
      if (i > 0 && out[i - 1] > out[i]) unsorted++;
    }
    ok = unsorted == 0 && sum_in == sum_out && h_in == h_out;
    printf("Out-of-order neighbours: %ld; checksum %s\n", unsorted,
           sum_in == sum_out && h_in == h_out ? "matches" : "differs");
    printf("Verification: %s\n", ok ? "PASSED" : "FAILED");
  }
  fflush(stdout);
  MAIN_END(ok ? 0 : 3);
}
