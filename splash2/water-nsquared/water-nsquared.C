/* water-nsquared: O(n^2) molecular dynamics of water-like molecules.
 *
 * Written for svm from the published algorithm (SPLASH-2's Water-Nsquared:
 * predictor-corrector integration, all pairs within a cutoff of half the
 * box, forces gathered privately and added to each molecule under its own
 * lock; no SPLASH code), with a simple model of our own: three atoms per
 * molecule (O, H, H) held by harmonic springs, Lennard-Jones between
 * oxygens, Coulomb between all atoms of two molecules whose oxygens are
 * within the cutoff; periodic cube, minimum image.
 *
 * Each step (thread p owns a contiguous range of molecules):
 *   1. Gear 5-value predictor for own molecules; forces = intramolecular
 *                                                                 barrier
 *   2. molecule i with i+1 .. i+n/2 (mod n): pair forces into a private
 *      array; then each touched molecule once under its lock      barrier
 *   3. Gear corrector, periodic wrap, kinetic energy; sums under a lock
 *                                                                 barrier
 * -t reruns the simulation with one thread and requires the energies of
 * every step and the final positions to match within 1e-8 (relative /
 * box units); exit 3 otherwise. Force sums arrive in any order, so the
 * match is not bit-exact.
 */
MAIN_ENV
#include "hash.h"
#include "options.h"
#include "rerun.h"
#include <math.h>

#define MAXMOL 32768
#define NA 3   /* atoms per molecule */
#define ND 5   /* Gear values: x, v dt, a dt^2/2, b dt^3/6, c dt^4/24 */

typedef struct {
  double x[ND][NA][3]; /* scaled derivatives per atom and axis */
  double f[NA][3];     /* force on each atom */
} mol_t;

struct world {
  BARDEC(bar)
  LOCKDEC(lock)
  ALOCKDEC(mlock, MAXMOL)
  long p;
  mol_t *mol;
  double pot[2], kin[2];
  double *epot, *ekin;  /* per step (thread 0) */
  unsigned long t_start, t_end;
};

static struct world *W;           /* the world slave() works on */
struct world *PAR, *REF; /* the parallel run and the 1-thread rerun (-t); global: kept reachable */
static long NMOL, STEPS, P;
static int TEST;
static double BOX, RCUT;
static const double DT = 1e-3, MASS[NA] = {1.0, 0.25, 0.25}, CHARGE[NA] = {-0.8, 0.4, 0.4};
static const double SIGMA = 0.8, EPS = 1.0, KBOND = 500.0, LBOND = 0.3, KHH = 200.0, LHH = 0.49;
static const double GEAR[ND] = {19.0 / 120.0, 3.0 / 4.0, 1.0, 1.0 / 2.0, 1.0 / 12.0};

/* The command line (common/options.h); the defaults are set from here. */
static const struct app_preset SIZES[] = {
  {"small", "-n64", NULL},
  {"medium", "-n1024", NULL},
  {"seed", "-n4096", NULL},
};
static const struct app_opt OPTS[] = {
  OPT_LONG('p', "threads", "P", &P, "1", "threads"),
  OPT_LONG('n', "molecules", "N", &NMOL, "64", "molecules (<= " APP_STR(MAXMOL) ")"),
  OPT_LONG('s', "steps", "S", &STEPS, "3", "time steps"),
  OPT_PRESETS('S', SIZES),
  OPT_SWITCH('t', &TEST, "verify: rerun with one thread, compare energies and positions"),
  OPT_END,
};

static double image(double d) {
  if (d > 0.5 * BOX) d -= BOX;
  else if (d < -0.5 * BOX) d += BOX;
  return d;
}

/* Spring between atoms a and b of one molecule; returns its energy. */
static double spring(mol_t *m, int a, int b, double k, double len) {
  double d[3], r2 = 0.0;
  for (int c = 0; c < 3; c++) { d[c] = m->x[0][a][c] - m->x[0][b][c]; r2 += d[c] * d[c]; }
  double r = sqrt(r2), s = -k * (r - len) / r;
  for (int c = 0; c < 3; c++) { m->f[a][c] += s * d[c]; m->f[b][c] -= s * d[c]; }
  return 0.5 * k * (r - len) * (r - len);
}

static void init_molecule(mol_t *m, long i) {
  long side = 1;
  while (side * side * side < NMOL) side++;
  double cell = BOX / (double)side;
  double o[3] = {((double)(i % side) + 0.5) * cell, ((double)((i / side) % side) + 0.5) * cell,
                 ((double)(i / (side * side)) + 0.5) * cell};
  double th = 2 * M_PI * unit(4 * (uint64_t)i), ph = M_PI * unit(4 * (uint64_t)i + 1);
  double ax[3] = {sin(ph) * cos(th), sin(ph) * sin(th), cos(ph)};
  double bx[3] = {-sin(th), cos(th), 0.0}; /* orthogonal to ax */
  double half = 0.5 * LHH, along = sqrt(LBOND * LBOND - half * half);
  memset(m, 0, sizeof *m);
  for (int c = 0; c < 3; c++) {
    m->x[0][0][c] = o[c];
    m->x[0][1][c] = o[c] + along * ax[c] + half * bx[c];
    m->x[0][2][c] = o[c] + along * ax[c] - half * bx[c];
    double v = 0.3 * (unit(4 * (uint64_t)i + 2 + (uint64_t)c * 7919) - 0.5);
    for (int a = 0; a < NA; a++) m->x[1][a][c] = v * DT;
  }
}

static void slave(void) {
  long t;
  GET_PID(t);
  struct world *w = W;
  long lo = NMOL * t / w->p, hi = NMOL * (t + 1) / w->p;
  for (long i = lo; i < hi; i++) init_molecule(&w->mol[i], i);
  double (*priv)[NA][3] = malloc((size_t)NMOL * sizeof *priv);
  char *touched = malloc((size_t)NMOL);
  if (priv == NULL || touched == NULL) { fprintf(stderr, "water: out of memory\n"); exit(1); }
  if (t == 0) w->pot[0] = w->pot[1] = w->kin[0] = w->kin[1] = 0.0;
  BARRIER(w->bar, w->p);
  if (t == 0) CLOCK(w->t_start);
  for (long step = 0; step < STEPS; step++) {
    long k = step & 1;
    double pot = 0.0, kin = 0.0;
    /* 1. predict; intramolecular forces */
    for (long i = lo; i < hi; i++) {
      mol_t *m = &w->mol[i];
      for (int a = 0; a < NA; a++)
        for (int c = 0; c < 3; c++) {
          double x0 = m->x[0][a][c], x1 = m->x[1][a][c], x2 = m->x[2][a][c], x3 = m->x[3][a][c],
                 x4 = m->x[4][a][c];
          m->x[0][a][c] = x0 + x1 + x2 + x3 + x4;
          m->x[1][a][c] = x1 + 2 * x2 + 3 * x3 + 4 * x4;
          m->x[2][a][c] = x2 + 3 * x3 + 6 * x4;
          m->x[3][a][c] = x3 + 4 * x4;
          m->f[a][c] = 0.0;
        }
      pot += spring(m, 0, 1, KBOND, LBOND) + spring(m, 0, 2, KBOND, LBOND) + spring(m, 1, 2, KHH, LHH);
    }
    BARRIER(w->bar, w->p);
    /* 2. intermolecular forces, half the pairs each */
    memset(priv, 0, (size_t)NMOL * sizeof *priv);
    memset(touched, 0, (size_t)NMOL);
    for (long i = lo; i < hi; i++) {
      const mol_t *mi = &w->mol[i];
      long half = NMOL / 2;
      for (long s = 1; s <= half; s++) {
        if (2 * s == NMOL && i >= half) break; /* the opposite pair once */
        long j = (i + s) % NMOL;
        const mol_t *mj = &w->mol[j];
        double sh[3], r2 = 0.0;
        for (int c = 0; c < 3; c++) {
          double d = mi->x[0][0][c] - mj->x[0][0][c];
          sh[c] = image(d) - d; /* shift making j the nearest image */
          r2 += (d + sh[c]) * (d + sh[c]);
        }
        if (r2 > RCUT * RCUT) continue;
        touched[i] = touched[j] = 1;
        /* Lennard-Jones between oxygens */
        double s2 = SIGMA * SIGMA / r2, s6 = s2 * s2 * s2;
        pot += 4 * EPS * (s6 * s6 - s6);
        double flj = 24 * EPS * (2 * s6 * s6 - s6) / r2;
        for (int c = 0; c < 3; c++) {
          double d = mi->x[0][0][c] - mj->x[0][0][c] + sh[c];
          priv[i][0][c] += flj * d;
          priv[j][0][c] -= flj * d;
        }
        /* Coulomb between all atoms */
        for (int a = 0; a < NA; a++)
          for (int b = 0; b < NA; b++) {
            double d[3], q2 = 0.0;
            for (int c = 0; c < 3; c++) { d[c] = mi->x[0][a][c] - mj->x[0][b][c] + sh[c]; q2 += d[c] * d[c]; }
            double r = sqrt(q2), qq = CHARGE[a] * CHARGE[b];
            pot += qq / r;
            double fc = qq / (q2 * r);
            for (int c = 0; c < 3; c++) { priv[i][a][c] += fc * d[c]; priv[j][b][c] -= fc * d[c]; }
          }
      }
    }
    for (long q = 0; q < NMOL; q++) {
      long j = (lo + q) % NMOL; /* start at own molecules: fewer lock collisions */
      if (!touched[j]) continue;
      ALOCK(w->mlock, j);
      for (int a = 0; a < NA; a++)
        for (int c = 0; c < 3; c++) w->mol[j].f[a][c] += priv[j][a][c];
      AULOCK(w->mlock, j);
    }
    BARRIER(w->bar, w->p);
    /* 3. correct; wrap into the box; kinetic energy */
    for (long i = lo; i < hi; i++) {
      mol_t *m = &w->mol[i];
      for (int a = 0; a < NA; a++)
        for (int c = 0; c < 3; c++) {
          double delta = m->f[a][c] / MASS[a] * DT * DT * 0.5 - m->x[2][a][c];
          for (int d = 0; d < ND; d++) m->x[d][a][c] += GEAR[d] * delta;
          double v = m->x[1][a][c] / DT;
          kin += 0.5 * MASS[a] * v * v;
        }
      for (int c = 0; c < 3; c++) {
        double shift = 0.0;
        if (m->x[0][0][c] >= BOX) shift = -BOX;
        else if (m->x[0][0][c] < 0.0) shift = BOX;
        for (int a = 0; a < NA; a++) m->x[0][a][c] += shift;
      }
    }
    LOCK(w->lock);
    w->pot[k] += pot;
    w->kin[k] += kin;
    UNLOCK(w->lock);
    BARRIER(w->bar, w->p);
    if (t == 0) {
      w->epot[step] = w->pot[k];
      w->ekin[step] = w->kin[k];
      w->pot[k ^ 1] = w->kin[k ^ 1] = 0.0;
    }
  }
  BARRIER(w->bar, w->p);
  if (t == 0) CLOCK(w->t_end);
  free(priv);
  free(touched);
}

static struct world *make_world(long p) {
  struct world *w = (struct world *)G_MALLOC(sizeof(struct world));
  memset(w, 0, sizeof *w);
  w->p = p;
  BARINIT(w->bar, p);
  LOCKINIT(w->lock);
  ALOCKINIT(w->mlock, NMOL);
  w->mol = (mol_t *)G_MALLOC((size_t)NMOL * sizeof(mol_t));
  w->epot = (double *)G_MALLOC((size_t)STEPS * sizeof(double));
  w->ekin = (double *)G_MALLOC((size_t)STEPS * sizeof(double));
  return w;
}

int main(int argc, char **argv) {
  MAIN_INITENV
  int rc = app_opts_parse(OPTS, argc, argv);
  if (rc >= 0) return rc;
  if (P < 1 || P > ANL_MAX_THREADS || NMOL < 2 || NMOL > MAXMOL || P > NMOL ||
      STEPS < 1 || STEPS > 100000) {
    app_opts_usage(stderr, OPTS, argv[0]);
    return 2;
  }
  BOX = cbrt((double)NMOL); /* one molecule per unit volume */
  RCUT = 0.5 * BOX;

  W = make_world(P);
  struct world *par = PAR = W;
  printf("water-nsquared: %ld molecules, box %.3f, cutoff %.3f, %ld steps, %ld threads%s\n", NMOL, BOX, RCUT,
         STEPS, P, TEST ? ", verify" : "");
  for (long i = 1; i < P; i++) CREATE(slave);
  slave();
  WAIT_FOR_END(P - 1);
  printf("Total time (us): %lu\n", par->t_end - par->t_start);
  for (long s = 0; s < STEPS; s++)
    printf("step %ld: potential %.12e, kinetic %.12e, total %.12e\n", s, par->epot[s], par->ekin[s],
           par->epot[s] + par->ekin[s]);
  int ok = 1;
  if (TEST) {
    struct world *ref = REF = make_world(1);
    W = ref;
    slave();
    double de = rerun_max_rel(0.0, par->epot, ref->epot, STEPS);
    de = rerun_max_rel(de, par->ekin, ref->ekin, STEPS);
    double dx = 0.0;
    for (long i = 0; i < NMOL; i++)
      for (int a = 0; a < NA; a++) dx = rerun_max_abs(dx, par->mol[i].x[0][a], ref->mol[i].x[0][a], 3);
    ok = RERUN_VERDICT(de, dx, 1e-8);
  }
  fflush(stdout);
  MAIN_END(ok ? 0 : 3);
}
