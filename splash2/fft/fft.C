/* fft: radix-sqrt(n) six-step FFT of n = 2^m complex doubles.
 *
 * Written for svm from the published algorithm (Bailey's six-step FFT as
 * used in SPLASH-2; no SPLASH code). The data is a sqrt(n) x sqrt(n) matrix;
 * thread p owns a contiguous band of rows of every matrix. One transform:
 *
 *   1. transpose x -> y          (blocked; each thread fills its own rows)
 *   2. sqrt(n)-point FFT of each own row of y
 *   3. y[j1][k2] *= w_n^(j1*k2)  (twiddles of own rows, computed at start)
 *   4. transpose y -> x
 *   5. sqrt(n)-point FFT of each own row of x
 *   6. transpose x -> y          (y holds the result in natural order)
 *
 * Synchronisation: a barrier after each transpose (the only steps that read
 * other threads' rows). -t runs the inverse too, checks the round trip
 * against a copy of the input and a few outputs against direct DFT sums;
 * exit 3 when either is off.
 */
MAIN_ENV
#include "hash.h"
#include "options.h"
#include <math.h>

#define PAGE_DOUBLES 512

typedef struct { double re, im; } cplx;

struct global {
  BARDEC(bar)
  unsigned long t_start, t_fwd, t_end;
};

static struct global *G;
static long M;               /* log2 of the points */
static long N, ROOTN, LOGROOTN;
static long P;
static long ROWS;            /* rows per thread */
static long BLK;             /* transpose tile edge */
static int TEST;
static cplx *X, *Y, *ORIG;   /* data, scratch, copy of the input (-t) */
static cplx *FWD;            /* forward result (-t) */
static cplx *TW;             /* twiddles w_n^(row*col), row-major */
static cplx *ROOTS;          /* w_r^k for the row FFTs, k < ROOTN/2 */

/* The command line (common/options.h); the defaults are set from here. */
static const struct app_preset SIZES[] = {
  {"small", "-m12", NULL},
  {"medium", "-m20", "1M points"},
  {"seed", "-m22", "4M points"},
};
static const struct app_opt OPTS[] = {
  OPT_LONG('p', "threads", "P", &P, "1", "threads (a power of two, at most sqrt(points))"),
  OPT_LONG('m', "log2points", "M", &M, "12", "2^M complex points, M even"),
  OPT_PRESETS('S', SIZES),
  OPT_LONG('b', "tile", "B", &BLK, "16", "transpose tile edge (power of two)"),
  OPT_SWITCH('t', &TEST, "verify: forward then inverse, max error vs the input"),
  OPT_END,
};

static int is_pow2(long v) { return v > 0 && (v & (v - 1)) == 0; }

/* In-place radix-2 FFT of one row of ROOTN points; sign -1 forward. */
static void row_fft(cplx *a, int inverse) {
  long n = ROOTN;
  for (long i = 1, j = 0; i < n; i++) {
    long bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j |= bit;
    if (i < j) { cplx t = a[i]; a[i] = a[j]; a[j] = t; }
  }
  for (long len = 2; len <= n; len <<= 1) {
    long half = len >> 1, step = n / len;
    for (long s = 0; s < n; s += len) {
      for (long k = 0; k < half; k++) {
        cplx w = ROOTS[k * step];
        if (inverse) w.im = -w.im;
        cplx u = a[s + k], v = a[s + k + half];
        cplx t = {v.re * w.re - v.im * w.im, v.re * w.im + v.im * w.re};
        a[s + k].re = u.re + t.re; a[s + k].im = u.im + t.im;
        a[s + k + half].re = u.re - t.re; a[s + k + half].im = u.im - t.im;
      }
    }
  }
}

/* dst rows [lo, hi) = transpose of src; tiles visited starting at the
 * band of the next thread so threads do not all read one band at once. */
static void transpose(cplx *dst, const cplx *src, long me) {
  long lo = me * ROWS, hi = lo + ROWS;
  for (long q = 1; q <= P; q++) {
    long owner = (me + q) % P;
    long clo = owner * ROWS, chi = clo + ROWS;
    for (long i0 = lo; i0 < hi; i0 += BLK)
      for (long j0 = clo; j0 < chi; j0 += BLK)
        for (long i = i0; i < i0 + BLK && i < hi; i++)
          for (long j = j0; j < j0 + BLK && j < chi; j++) dst[i * ROOTN + j] = src[j * ROOTN + i];
  }
}

static void six_step(long me, int inverse) {
  long lo = me * ROWS, hi = lo + ROWS;
  double scale = 1.0 / (double)N;
  transpose(Y, X, me);
  BARRIER(G->bar, P);
  for (long r = lo; r < hi; r++) {
    cplx *row = &Y[r * ROOTN];
    const cplx *tw = &TW[r * ROOTN];
    row_fft(row, inverse);
    for (long c = 0; c < ROOTN; c++) {
      double wi = inverse ? -tw[c].im : tw[c].im;
      double re = row[c].re * tw[c].re - row[c].im * wi;
      double im = row[c].re * wi + row[c].im * tw[c].re;
      row[c].re = re; row[c].im = im;
    }
  }
  BARRIER(G->bar, P);
  transpose(X, Y, me);
  BARRIER(G->bar, P);
  for (long r = lo; r < hi; r++) {
    row_fft(&X[r * ROOTN], inverse);
    if (inverse)
      for (long c = 0; c < ROOTN; c++) { X[r * ROOTN + c].re *= scale; X[r * ROOTN + c].im *= scale; }
  }
  BARRIER(G->bar, P);
  transpose(Y, X, me);
  BARRIER(G->bar, P);
}

/* Copies Y (result) back into X, own rows, so the next transform reads X;
 * keeps the forward result in FWD for main's spot checks. */
static void copy_back(long me) {
  size_t off = (size_t)(me * ROWS * ROOTN), len = (size_t)(ROWS * ROOTN) * sizeof(cplx);
  memcpy(&X[off], &Y[off], len);
  memcpy(&FWD[off], &Y[off], len);
  BARRIER(G->bar, P);
}

static void slave(void) {
  long me;
  GET_PID(me);
  long lo = me * ROWS, hi = lo + ROWS;
  /* Owner-initialised: input, twiddles, copy (first touch places pages). */
  for (long r = lo; r < hi; r++) {
    for (long c = 0; c < ROOTN; c++) {
      long i = r * ROOTN + c;
      X[i].re = unit(2 * (uint64_t)i);
      X[i].im = unit(2 * (uint64_t)i + 1);
      if (TEST) ORIG[i] = X[i];
      Y[i].re = Y[i].im = 0.0;
      double a = -2.0 * M_PI * (double)((r * c) % N) / (double)N;
      TW[i].re = cos(a);
      TW[i].im = sin(a);
    }
  }
  BARRIER(G->bar, P);
  if (me == 0) CLOCK(G->t_start);
  six_step(me, 0);
  if (me == 0) CLOCK(G->t_fwd);
  if (TEST) {
    copy_back(me);
    six_step(me, 1);
  }
  if (me == 0) CLOCK(G->t_end);
}

int main(int argc, char **argv) {
  MAIN_INITENV
  int rc = app_opts_parse(OPTS, argc, argv);
  if (rc >= 0) return rc;
  if (M < 2 || M > 30 || (M & 1) || !is_pow2(P) || P > ANL_MAX_THREADS || !is_pow2(BLK)) {
    app_opts_usage(stderr, OPTS, argv[0]);
    return 2;
  }
  N = 1L << M;
  LOGROOTN = M / 2;
  ROOTN = 1L << LOGROOTN;
  if (P > ROOTN) {
    fprintf(stderr, "fft: -p %ld exceeds sqrt(points) = %ld\n", P, ROOTN);
    app_opts_usage(stderr, OPTS, argv[0]);
    return 2;
  }
  ROWS = ROOTN / P;

  G = (struct global *)G_MALLOC(sizeof(struct global));
  BARINIT(G->bar, P);
  X = (cplx *)G_MALLOC((size_t)N * sizeof(cplx));
  Y = (cplx *)G_MALLOC((size_t)N * sizeof(cplx));
  TW = (cplx *)G_MALLOC((size_t)N * sizeof(cplx));
  ROOTS = (cplx *)G_MALLOC((size_t)(ROOTN / 2 + 1) * sizeof(cplx));
  if (TEST) {
    ORIG = (cplx *)G_MALLOC((size_t)N * sizeof(cplx));
    FWD = (cplx *)G_MALLOC((size_t)N * sizeof(cplx));
  }
  for (long k = 0; k <= ROOTN / 2; k++) {
    double a = -2.0 * M_PI * (double)k / (double)ROOTN;
    ROOTS[k].re = cos(a);
    ROOTS[k].im = sin(a);
  }

  printf("fft: %ld points (2^%ld), %ld threads, tile %ld%s\n", N, M, P, BLK, TEST ? ", verify" : "");
  for (long i = 1; i < P; i++) CREATE(slave);
  slave();
  WAIT_FOR_END(P - 1);

  unsigned long fwd = G->t_fwd - G->t_start, total = G->t_end - G->t_start;
  printf("Forward FFT time (us): %lu\n", fwd);
  printf("Total time (us): %lu\n", total);
  int ok = 1;
  if (TEST) {
    double maxerr = 0.0;
    for (long i = 0; i < N; i++) {
      double dr = fabs(Y[i].re - ORIG[i].re), di = fabs(Y[i].im - ORIG[i].im);
      if (dr > maxerr) maxerr = dr;
      if (di > maxerr) maxerr = di;
    }
    /* Spot checks of the forward transform against direct DFT sums. */
    double spot = 0.0;
    long ks[6] = {0, 1, 3, N / 2, N - 1, N / 3};
    for (int t = 0; t < 6; t++) {
      long k = ks[t];
      long double sr = 0.0L, si = 0.0L;
      for (long j = 0; j < N; j++) {
        double a = -2.0 * M_PI * (double)((long)(((unsigned long)j * (unsigned long)k) % (unsigned long)N)) / (double)N;
        double c = cos(a), s = sin(a);
        sr += ORIG[j].re * c - ORIG[j].im * s;
        si += ORIG[j].re * s + ORIG[j].im * c;
      }
      double er = fabs((double)sr - FWD[k].re) / sqrt((double)N), ei = fabs((double)si - FWD[k].im) / sqrt((double)N);
      if (er > spot) spot = er;
      if (ei > spot) spot = ei;
    }
    ok = maxerr < 1e-9 && spot < 1e-9;
    printf("Round-trip max error: %.3e (tolerance 1e-9)\n", maxerr);
    printf("Spot DFT max error / sqrt(n): %.3e (tolerance 1e-9)\n", spot);
    printf("Verification: %s\n", ok ? "PASSED" : "FAILED");
  }
  fflush(stdout);
  MAIN_END(ok ? 0 : 3);
}
