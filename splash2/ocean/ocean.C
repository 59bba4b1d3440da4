/* ocean: the core of an eddy-resolving ocean basin simulation.
 *
 * Written for svm from the published description of SPLASH-2's Ocean
 * (contiguous partitions, multigrid elliptic solver; no SPLASH code), with
 * a simplified physical model of our own: a barotropic vorticity equation
 * on the unit square, n x n cells,
 *
 *   dzeta/dt = -J(psi, zeta) - beta dpsi/dx + F(y) - r zeta + nu lap(zeta)
 *   lap(psi) = zeta,  psi = 0 on the walls
 *
 * Each time step advances zeta explicitly, then solves the elliptic
 * equation for psi with red-black Gauss-Seidel W-cycle multigrid
 * (cell-centred, full-weighting restriction, constant prolongation),
 * warm-started from the last psi, until the max residual falls below tol.
 *
 * Partition: threads form a pr x pc grid; each owns one contiguous
 * (n/pr) x (n/pc) block of every grid at every level (the "4-D arrays":
 * field[level][thread] -> a block with a one-cell ghost border, all of a
 * thread's blocks in one allocation it touches first). Before a stencil a
 * thread copies its neighbours' edge cells into its ghosts; before a red
 * sweep only black cells are copied (and vice versa), so no cell is read
 * while it is written: the program is data-race free.
 *
 * Red-black ordering makes every grid value independent of the partition;
 * the levels are fixed by the coarsest grid (-c), not by P. -t reruns the
 * whole simulation with one thread and requires psi, zeta and the energies
 * to match within 1e-9 (relative); exit 3 otherwise.
 */
MAIN_ENV
#include "options.h"
#include <math.h>

enum { U, F, R, NFIELD };      /* per level: solution / rhs / residual */
#define MAX_LEVELS 16

typedef struct {
  double *a;   /* (r + 2) x (c + 2), ghosts at rows 0, r+1 and cols 0, c+1 */
  long r, c;   /* interior rows and columns */
  long gi, gj; /* global index of interior (1, 1) minus 1 */
} block_t;

struct world {
  BARDEC(bar)
  LOCKDEC(lock)
  long p, pr, pc, n, levels;
  block_t *grid[NFIELD][MAX_LEVELS]; /* [field][level][thread] */
  block_t *zeta, *znew;              /* fine level only */
  double rmax[3];                    /* max reductions, slot r % 3 (see reduce_max) */
  double esum[2], zsum[2];           /* energy reductions, alternating */
  double *energy, *enstrophy;        /* per step, written by thread 0 */
  long *cycles;                      /* multigrid cycles per step */
  unsigned long t_start, t_end;
};

static struct world *W;           /* the world slave() works on */
struct world *PAR, *REF; /* the parallel run and the 1-thread rerun (-t); global: kept reachable */
static long N, STEPS, COARSE, P, MAXCYC = 40;
#define COARSE_ITERS 10 /* red-black iterations on the coarsest grid */
static double TOL;
static int TEST;
static const double DT = 0.05, BETA = 1.0, RFRIC = 0.1, TAU = 1.0;

/* The command line (common/options.h); the defaults are set from here. */
static const struct app_preset SIZES[] = {
  {"small", "-n32 -s2", NULL},
  {"medium", "-n256 -s4", "a 258 x 258 grid"},
  {"seed", "-n512 -s4", "a 514 x 514 grid"},
};
static const struct app_opt OPTS[] = {
  OPT_LONG('p', "threads", "P", &P, "1", "threads (a power of two)"),
  OPT_LONG('n', "cells", "N", &N, "32", "interior cells per side (a power of two; the grid is N+2 square)"),
  OPT_LONG('s', "steps", "S", &STEPS, "2", "time steps"),
  OPT_LONG('c', "coarsest", "C", &COARSE, "8",
           "coarsest multigrid grid, cells per side (power of two, >= thread grid)"),
  OPT_DOUBLE('e', "tol", "E", &TOL, "1e-7", "multigrid tolerance on the max residual (relative to the rhs)"),
  OPT_PRESETS('S', SIZES),
  OPT_SWITCH('t', &TEST, "verify: rerun with one thread, compare psi, zeta and energies"),
  OPT_END,
};

static int is_pow2(long v) { return v > 0 && (v & (v - 1)) == 0; }
#define AT(b, i, j) ((b)->a[(i) * ((b)->c + 2) + (j)])

static block_t *blk(int f, long l, long t) { return &W->grid[f][l][t]; }
static double hlev(long l) { return (double)(1L << l) / (double)W->n; }
static long nlev(long l) { return W->n >> l; }

/* Copies the neighbours' edge cells of colour `color` (-1: all) into the
 * ghosts of thread t's block of the field `all` (indexed by thread); wall
 * ghosts stay zero (walls enter through diag()). */
static void fill_ghosts(block_t *all, long t, int color) {
  block_t *b = &all[t];
  long ti = t / W->pc, tj = t % W->pc;
  for (int side = 0; side < 4; side++) {
    long ni = ti + (side == 0 ? -1 : side == 1 ? 1 : 0);
    long nj = tj + (side == 2 ? -1 : side == 3 ? 1 : 0);
    if (ni < 0 || ni >= W->pr || nj < 0 || nj >= W->pc) continue;
    const block_t *o = &all[ni * W->pc + nj];
    if (side < 2) { /* a row */
      long gi = side == 0 ? 0 : b->r + 1, oi = side == 0 ? o->r : 1;
      for (long j = 1; j <= b->c; j++)
        if (color < 0 || ((b->gi + gi + b->gj + j) & 1) == color) AT(b, gi, j) = AT(o, oi, j);
    } else { /* a column */
      long gj = side == 2 ? 0 : b->c + 1, oj = side == 2 ? o->c : 1;
      for (long i = 1; i <= b->r; i++)
        if (color < 0 || ((b->gi + i + b->gj + gj) & 1) == color) AT(b, i, gj) = AT(o, i, oj);
    }
  }
}

/* 4 + the number of wall faces of global cell (i, j) at a level of m cells. */
static double diag(long i, long j, long m) {
  return 4.0 + (i == 0) + (i == m - 1) + (j == 0) + (j == m - 1);
}

/* One red-black sweep over thread t's cells of one colour: -lap u = f. */
static void sweep(long l, long t, int color) {
  block_t *u = blk(U, l, t), *f = blk(F, l, t);
  double h2 = hlev(l) * hlev(l);
  long m = nlev(l);
  for (long i = 1; i <= u->r; i++) {
    long j0 = 1 + (((u->gi + i + u->gj + 1) & 1) != color);
    for (long j = j0; j <= u->c; j += 2) {
      double s = AT(u, i - 1, j) + AT(u, i + 1, j) + AT(u, i, j - 1) + AT(u, i, j + 1);
      AT(u, i, j) = (s + h2 * AT(f, i, j)) / diag(u->gi + i - 1, u->gj + j - 1, m);
    }
  }
}

/* REQUIRES: a barrier since u at level l was last written. */
static void smooth(long l, long t, int iters) {
  for (int k = 0; k < iters; k++) {
    fill_ghosts(W->grid[U][l], t, 1);
    sweep(l, t, 0);
    BARRIER(W->bar, W->p);
    fill_ghosts(W->grid[U][l], t, 0);
    sweep(l, t, 1);
    BARRIER(W->bar, W->p);
  }
}

/* r = f + lap u on thread t's cells; returns max |r|. */
static double residual(long l, long t) {
  block_t *u = blk(U, l, t), *f = blk(F, l, t), *r = blk(R, l, t);
  double ih2 = 1.0 / (hlev(l) * hlev(l)), mx = 0.0;
  long m = nlev(l);
  fill_ghosts(W->grid[U][l], t, -1);
  for (long i = 1; i <= u->r; i++)
    for (long j = 1; j <= u->c; j++) {
      double s = AT(u, i - 1, j) + AT(u, i + 1, j) + AT(u, i, j - 1) + AT(u, i, j + 1);
      double v = AT(f, i, j) - (diag(u->gi + i - 1, u->gj + j - 1, m) * AT(u, i, j) - s) * ih2;
      AT(r, i, j) = v;
      if (fabs(v) > mx) mx = fabs(v);
    }
  return mx;
}

static void wcycle(long l, long t) {
  if (l == W->levels - 1) {
    smooth(l, t, COARSE_ITERS);
    return;
  }
  smooth(l, t, 2);
  residual(l, t);
  block_t *r = blk(R, l, t), *fc = blk(F, l + 1, t), *uc = blk(U, l + 1, t);
  for (long i = 1; i <= fc->r; i++)
    for (long j = 1; j <= fc->c; j++) {
      AT(fc, i, j) = 0.25 * (AT(r, 2 * i - 1, 2 * j - 1) + AT(r, 2 * i, 2 * j - 1) +
                             AT(r, 2 * i - 1, 2 * j) + AT(r, 2 * i, 2 * j));
      AT(uc, i, j) = 0.0;
    }
  BARRIER(W->bar, W->p);
  wcycle(l + 1, t);
  wcycle(l + 1, t);
  block_t *u = blk(U, l, t);
  for (long i = 1; i <= u->r; i++)
    for (long j = 1; j <= u->c; j++) AT(u, i, j) += AT(uc, (i + 1) / 2, (j + 1) / 2);
  BARRIER(W->bar, W->p);
  smooth(l, t, 2);
}

/* Global max of v over threads, the r-th reduction of the run. Slot r % 3
 * collects it; afterwards thread 0 clears slot (r + 2) % 3: its last
 * readers (reduction r - 1) finished before this barrier, and its next
 * writers (reduction r + 2) start only after the next reduction's barrier,
 * which thread 0 reaches after clearing. Two slots would race: a fast
 * thread could add to slot r + 1 before thread 0 cleared it. */
static double reduce_max(double v, long r, long t) {
  LOCK(W->lock);
  if (v > W->rmax[r % 3]) W->rmax[r % 3] = v;
  UNLOCK(W->lock);
  BARRIER(W->bar, W->p);
  double out = W->rmax[r % 3];
  if (t == 0) W->rmax[(r + 2) % 3] = 0.0;
  return out;
}

static void slave(void) {
  long t;
  GET_PID(t);
  struct world *w = W;
  /* first touch of own blocks; initial state: psi = 0, zeta = 0 */
  for (int f = 0; f < NFIELD; f++)
    for (long l = 0; l < w->levels; l++) {
      block_t *b = blk(f, l, t);
      memset(b->a, 0, (size_t)((b->r + 2) * (b->c + 2)) * sizeof(double));
    }
  memset(w->zeta[t].a, 0, (size_t)((w->zeta[t].r + 2) * (w->zeta[t].c + 2)) * sizeof(double));
  memset(w->znew[t].a, 0, (size_t)((w->znew[t].r + 2) * (w->znew[t].c + 2)) * sizeof(double));
  if (t == 0) { w->rmax[0] = w->rmax[1] = w->rmax[2] = 0.0; w->esum[0] = w->esum[1] = 0.0; w->zsum[0] = w->zsum[1] = 0.0; }
  BARRIER(w->bar, w->p);
  if (t == 0) CLOCK(w->t_start);

  double h = hlev(0), nu = 0.02 * h * h / DT;
  block_t *psi = blk(U, 0, t), *rhs = blk(F, 0, t), *z = &w->zeta[t], *zn = &w->znew[t];
  long red = 0; /* reductions so far (slot parity) */
  for (long step = 0; step < STEPS; step++) {
    /* 1. explicit vorticity step */
    fill_ghosts(w->grid[U][0], t, -1);
    fill_ghosts(w->zeta, t, -1);
    for (long i = 1; i <= z->r; i++)
      for (long j = 1; j <= z->c; j++) {
        double y = ((double)(z->gi + i - 1) + 0.5) * h;
        double px = (AT(psi, i, j + 1) - AT(psi, i, j - 1)) / (2 * h);
        double py = (AT(psi, i + 1, j) - AT(psi, i - 1, j)) / (2 * h);
        double zx = (AT(z, i, j + 1) - AT(z, i, j - 1)) / (2 * h);
        double zy = (AT(z, i + 1, j) - AT(z, i - 1, j)) / (2 * h);
        double lap = (AT(z, i - 1, j) + AT(z, i + 1, j) + AT(z, i, j - 1) + AT(z, i, j + 1) - 4 * AT(z, i, j)) / (h * h);
        double forcing = -TAU * M_PI * sin(M_PI * y);
        AT(zn, i, j) = AT(z, i, j) + DT * (-(px * zy - py * zx) - BETA * px + forcing - RFRIC * AT(z, i, j) + nu * lap);
      }
    BARRIER(w->bar, w->p);
    double fmax = 0.0;
    for (long i = 1; i <= z->r; i++)
      for (long j = 1; j <= z->c; j++) {
        AT(z, i, j) = AT(zn, i, j);
        AT(rhs, i, j) = -AT(zn, i, j); /* -lap psi = -zeta */
        if (fabs(AT(rhs, i, j)) > fmax) fmax = fabs(AT(rhs, i, j));
      }
    double fnorm = reduce_max(fmax, red++, t);
    /* 2. multigrid for psi, warm start */
    long cyc = 0;
    for (;;) {
      double rn = reduce_max(residual(0, t), red++, t);
      if (rn <= TOL * (fnorm > 0 ? fnorm : 1.0) || cyc >= MAXCYC) break;
      wcycle(0, t);
      cyc++;
    }
    /* 3. energies: E = 1/2 sum |grad psi|^2 h^2 = -1/2 sum psi zeta h^2 */
    double e = 0.0, en = 0.0;
    for (long i = 1; i <= z->r; i++)
      for (long j = 1; j <= z->c; j++) {
        e += -0.5 * AT(psi, i, j) * AT(z, i, j) * h * h;
        en += AT(z, i, j) * AT(z, i, j) * h * h;
      }
    long k = step & 1;
    LOCK(w->lock);
    w->esum[k] += e;
    w->zsum[k] += en;
    UNLOCK(w->lock);
    BARRIER(w->bar, w->p);
    if (t == 0) {
      w->energy[step] = w->esum[k];
      w->enstrophy[step] = w->zsum[k];
      w->cycles[step] = cyc;
      w->esum[k ^ 1] = w->zsum[k ^ 1] = 0.0;
    }
  }
  BARRIER(w->bar, w->p);
  if (t == 0) CLOCK(w->t_end);
}

static struct world *make_world(long p, long levels) {
  struct world *w = (struct world *)G_MALLOC(sizeof(struct world));
  memset(w, 0, sizeof *w);
  w->p = p;
  w->pr = 1;
  while (w->pr * w->pr * 2 <= p) w->pr *= 2;
  w->pc = p / w->pr;
  w->n = N;
  w->levels = levels;
  BARINIT(w->bar, p);
  LOCKINIT(w->lock);
  long r0 = N / w->pr, c0 = N / w->pc;
  for (int f = 0; f < NFIELD; f++)
    for (long l = 0; l < levels; l++) w->grid[f][l] = (block_t *)G_MALLOC((size_t)p * sizeof(block_t));
  w->zeta = (block_t *)G_MALLOC((size_t)p * sizeof(block_t));
  w->znew = (block_t *)G_MALLOC((size_t)p * sizeof(block_t));
  for (long t = 0; t < p; t++) {
    size_t total = 0;
    for (long l = 0; l < levels; l++) total += (size_t)NFIELD * (size_t)(((r0 >> l) + 2) * ((c0 >> l) + 2));
    total += 2 * (size_t)((r0 + 2) * (c0 + 2));
    double *chunk = (double *)G_MALLOC(total * sizeof(double)); /* touched first by thread t */
    for (int f = 0; f < NFIELD; f++)
      for (long l = 0; l < levels; l++) {
        block_t *b = &w->grid[f][l][t];
        b->r = r0 >> l; b->c = c0 >> l;
        b->gi = (t / w->pc) * b->r; b->gj = (t % w->pc) * b->c;
        b->a = chunk; chunk += (b->r + 2) * (b->c + 2);
      }
    block_t *bs[2] = {&w->zeta[t], &w->znew[t]};
    for (int k = 0; k < 2; k++) {
      bs[k]->r = r0; bs[k]->c = c0;
      bs[k]->gi = (t / w->pc) * r0; bs[k]->gj = (t % w->pc) * c0;
      bs[k]->a = chunk; chunk += (r0 + 2) * (c0 + 2);
    }
  }
  w->energy = (double *)G_MALLOC((size_t)STEPS * sizeof(double));
  w->enstrophy = (double *)G_MALLOC((size_t)STEPS * sizeof(double));
  w->cycles = (long *)G_MALLOC((size_t)STEPS * sizeof(long));
  return w;
}

static double field_diff(struct world *a, struct world *b, int zeta, double *scale) {
  double d = 0.0, s = 0.0;
  for (long gi = 0; gi < N; gi++)
    for (long gj = 0; gj < N; gj++) {
      double v[2];
      struct world *ws[2] = {a, b};
      for (int k = 0; k < 2; k++) {
        struct world *w = ws[k];
        long t = (gi / (N / w->pr)) * w->pc + gj / (N / w->pc);
        block_t *bl = zeta ? &w->zeta[t] : &w->grid[U][0][t];
        v[k] = AT(bl, gi - bl->gi + 1, gj - bl->gj + 1);
      }
      if (fabs(v[0] - v[1]) > d) d = fabs(v[0] - v[1]);
      if (fabs(v[1]) > s) s = fabs(v[1]);
    }
  *scale = s;
  return d;
}

int main(int argc, char **argv) {
  MAIN_INITENV
  int rc = app_opts_parse(OPTS, argc, argv);
  if (rc >= 0) return rc;
  long pr = 1;
  while (pr * pr * 2 <= P) pr *= 2;
  long pc = P / pr;
  if (!is_pow2(P) || P > ANL_MAX_THREADS || !is_pow2(N) || N < 4 || N > 8192 ||
      STEPS < 1 || STEPS > 100000 || !is_pow2(COARSE) || COARSE > N || COARSE < pc || !(TOL > 0)) {
    app_opts_usage(stderr, OPTS, argv[0]);
    return 2;
  }
  long levels = 1;
  while ((N >> levels) >= COARSE && levels < MAX_LEVELS) levels++;

  W = make_world(P, levels);
  struct world *par = PAR = W;
  printf("ocean: %ld x %ld grid (%ld x %ld cells), %ld steps, %ld levels, %ld threads (%ld x %ld)%s\n",
         N + 2, N + 2, N, N, STEPS, levels, P, par->pr, par->pc, TEST ? ", verify" : "");
  for (long i = 1; i < P; i++) CREATE(slave);
  slave();
  WAIT_FOR_END(P - 1);
  printf("Total time (us): %lu\n", par->t_end - par->t_start);
  for (long s = 0; s < STEPS; s++)
    printf("step %ld: %ld W-cycles, energy %.12e, enstrophy %.12e\n", s, par->cycles[s], par->energy[s],
           par->enstrophy[s]);
  int ok = 1;
  if (TEST) {
    struct world *ref = REF = make_world(1, levels);
    W = ref;
    slave();
    double sp, sz, worst = 0.0;
    double dp = field_diff(par, ref, 0, &sp) / (sp > 0 ? sp : 1.0);
    double dz = field_diff(par, ref, 1, &sz) / (sz > 0 ? sz : 1.0);
    for (long s = 0; s < STEPS; s++) {
      double de = fabs(par->energy[s] - ref->energy[s]) / (fabs(ref->energy[s]) > 0 ? fabs(ref->energy[s]) : 1.0);
      double dn = fabs(par->enstrophy[s] - ref->enstrophy[s]) / (fabs(ref->enstrophy[s]) > 0 ? fabs(ref->enstrophy[s]) : 1.0);
      if (de > worst) worst = de;
      if (dn > worst) worst = dn;
    }
    ok = dp <= 1e-9 && dz <= 1e-9 && worst <= 1e-9 && sp > 0;
    printf("vs 1 thread: psi %.3e, zeta %.3e, energies %.3e (relative; tolerance 1e-9)\n", dp, dz, worst);
    printf("Verification: %s\n", ok ? "PASSED" : "FAILED");
  }
  fflush(stdout);
  MAIN_END(ok ? 0 : 3);
}
