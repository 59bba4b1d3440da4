/* lu: blocked dense LU factorisation without pivoting.
 *
 * Written for svm from the published algorithm (right-looking blocked LU
 * with a 2-D scatter of contiguous blocks, as in SPLASH-2's "contiguous
 * blocks" LU; no SPLASH code). The n x n matrix is cut into B x B blocks,
 * each stored contiguously; the blocks of one owner are allocated next to
 * each other. Block (I, J) belongs to thread (I mod pr) * pc + (J mod pc)
 * on a pr x pc grid of threads. Step k:
 *
 *   owner of (k,k) factors it (A = L U, L unit lower)     barrier
 *   owners of (k,J), J > k:  A_kJ = L_kk^-1 A_kJ
 *   owners of (I,k), I > k:  A_Ik = A_Ik U_kk^-1           barrier
 *   owners of (I,J), I,J > k: A_IJ -= A_Ik A_kJ
 *
 * The trailing update of step k and the diagonal factorisation of step k+1
 * touch no block another thread writes in between, so two barriers per step
 * suffice. The matrix is diagonally dominant (pivoting not needed) and made
 * from a hash of (i, j), so -t can rebuild it: main solves L U x = b for
 * b = A x_true and checks max |x - x_true| and the residual |A x - b|;
 * exit 3 when either is off.
 */
MAIN_ENV
#include "hash.h"
#include "options.h"
#include <math.h>

struct global {
  BARDEC(bar)
  unsigned long t_start, t_end;
};

static struct global *G;
static long N, B, NB;
static long P, PR = 1, PC = 1;
static int TEST;
static double **BLK;   /* BLK[I * NB + J] -> B*B doubles, row-major */

/* The command line (common/options.h); the defaults are set from here. */
static const struct app_preset SIZES[] = {
  {"small", "-n128 -b16", NULL},
  {"medium", "-n768 -b16", NULL},
  {"seed", "-n4096 -b16", NULL},
};
static const struct app_opt OPTS[] = {
  OPT_LONG('p', "threads", "P", &P, "1", "threads"),
  OPT_LONG('n', "size", "N", &N, "128", "matrix order (a multiple of the block)"),
  OPT_LONG('b', "block", "B", &B, "16", "block edge"),
  OPT_PRESETS('S', SIZES),
  OPT_SWITCH('t', &TEST, "verify: solve A x = b for a known x, check error and residual"),
  OPT_END,
};

/* The original matrix: off-diagonal in [-1, 1), diagonal n + 1. */
static double elem(long i, long j) {
  if (i == j) return (double)N + 1.0;
  return 2.0 * unit((uint64_t)(i * N + j)) - 1.0;
}

static long owner(long I, long J) { return (I % PR) * PC + (J % PC); }
static double *blk(long I, long J) { return BLK[I * NB + J]; }

static void factor_diag(double *a) {
  for (long k = 0; k < B; k++) {
    double piv = a[k * B + k];
    for (long i = k + 1; i < B; i++) {
      double l = a[i * B + k] /= piv;
      for (long j = k + 1; j < B; j++) a[i * B + j] -= l * a[k * B + j];
    }
  }
}

/* a = L^-1 a, L the unit lower triangle of d. */
static void solve_row(double *a, const double *d) {
  for (long i = 1; i < B; i++)
    for (long r = 0; r < i; r++) {
      double l = d[i * B + r];
      for (long j = 0; j < B; j++) a[i * B + j] -= l * a[r * B + j];
    }
}

/* a = a U^-1, U the upper triangle of d. */
static void solve_col(double *a, const double *d) {
  for (long i = 0; i < B; i++)
    for (long j = 0; j < B; j++) {
      double s = a[i * B + j];
      for (long r = 0; r < j; r++) s -= a[i * B + r] * d[r * B + j];
      a[i * B + j] = s / d[j * B + j];
    }
}

/* c -= a b */
static void update(double *c, const double *a, const double *b) {
  for (long i = 0; i < B; i++)
    for (long r = 0; r < B; r++) {
      double x = a[i * B + r];
      for (long j = 0; j < B; j++) c[i * B + j] -= x * b[r * B + j];
    }
}

static void slave(void) {
  long me;
  GET_PID(me);
  for (long I = 0; I < NB; I++)
    for (long J = 0; J < NB; J++) {
      if (owner(I, J) != me) continue;
      double *a = blk(I, J);
      for (long i = 0; i < B; i++)
        for (long j = 0; j < B; j++) a[i * B + j] = elem(I * B + i, J * B + j);
    }
  BARRIER(G->bar, P);
  if (me == 0) CLOCK(G->t_start);
  for (long k = 0; k < NB; k++) {
    if (owner(k, k) == me) factor_diag(blk(k, k));
    BARRIER(G->bar, P);
    const double *d = blk(k, k);
    for (long J = k + 1; J < NB; J++)
      if (owner(k, J) == me) solve_row(blk(k, J), d);
    for (long I = k + 1; I < NB; I++)
      if (owner(I, k) == me) solve_col(blk(I, k), d);
    BARRIER(G->bar, P);
    for (long I = k + 1; I < NB; I++)
      for (long J = k + 1; J < NB; J++)
        if (owner(I, J) == me) update(blk(I, J), blk(I, k), blk(k, J));
  }
  BARRIER(G->bar, P);
  if (me == 0) CLOCK(G->t_end);
}

static double at(long i, long j) { return blk(i / B, j / B)[(i % B) * B + (j % B)]; }

static int verify(void) {
  double *x = (double *)G_MALLOC((size_t)N * sizeof(double));
  double *b = (double *)G_MALLOC((size_t)N * sizeof(double));
  double *xt = (double *)G_MALLOC((size_t)N * sizeof(double));
  for (long i = 0; i < N; i++) xt[i] = 1.0 + (double)(i % 7) * 0.25;
  for (long i = 0; i < N; i++) {
    double s = 0.0;
    for (long j = 0; j < N; j++) s += elem(i, j) * xt[j];
    b[i] = s;
  }
  for (long i = 0; i < N; i++) { /* L y = b */
    double s = b[i];
    for (long j = 0; j < i; j++) s -= at(i, j) * x[j];
    x[i] = s;
  }
  for (long i = N - 1; i >= 0; i--) { /* U x = y */
    double s = x[i];
    for (long j = i + 1; j < N; j++) s -= at(i, j) * x[j];
    x[i] = s / at(i, i);
  }
  double err = 0.0, res = 0.0, bnorm = 0.0;
  for (long i = 0; i < N; i++) {
    double e = fabs(x[i] - xt[i]);
    if (e > err) err = e;
    double s = 0.0;
    for (long j = 0; j < N; j++) s += elem(i, j) * x[j];
    double r = fabs(s - b[i]);
    if (r > res) res = r;
    if (fabs(b[i]) > bnorm) bnorm = fabs(b[i]);
  }
  double rel = res / bnorm;
  int ok = err < 1e-8 && rel < 1e-12;
  printf("Max |x - x_true|: %.3e (tolerance 1e-8)\n", err);
  printf("Relative residual |Ax - b| / |b|: %.3e (tolerance 1e-12)\n", rel);
  printf("Verification: %s\n", ok ? "PASSED" : "FAILED");
  G_FREE(x);
  G_FREE(b);
  G_FREE(xt);
  return ok;
}

int main(int argc, char **argv) {
  MAIN_INITENV
  int rc = app_opts_parse(OPTS, argc, argv);
  if (rc >= 0) return rc;
  if (P < 1 || P > ANL_MAX_THREADS || B < 1 || B > 1024 || N < B || N > 65536 || N % B != 0) {
    app_opts_usage(stderr, OPTS, argv[0]);
    return 2;
  }
  NB = N / B;
  for (long r = 1; r * r <= P; r++)
    if (P % r == 0) PR = r;
  PC = P / PR;

  G = (struct global *)G_MALLOC(sizeof(struct global));
  BARINIT(G->bar, P);
  BLK = (double **)G_MALLOC((size_t)(NB * NB) * sizeof(double *));
  double *store = (double *)G_MALLOC((size_t)(N * N) * sizeof(double));
  long next = 0; /* each owner's blocks side by side */
  for (long p = 0; p < P; p++)
    for (long I = 0; I < NB; I++)
      for (long J = 0; J < NB; J++)
        if (owner(I, J) == p) { BLK[I * NB + J] = store + next * B * B; next++; }

  printf("lu: %ld x %ld, block %ld, %ld threads (%ld x %ld grid)%s\n", N, N, B, P, PR, PC,
         TEST ? ", verify" : "");
  for (long i = 1; i < P; i++) CREATE(slave);
  slave();
  WAIT_FOR_END(P - 1);
  printf("Total time (us): %lu\n", G->t_end - G->t_start);
  int ok = 1;
  if (TEST) ok = verify();
  fflush(stdout);
  MAIN_END(ok ? 0 : 3);
}
