/* barnes: Barnes-Hut N-body simulation, octree rebuilt every step.
 *
 * Written for svm from the published algorithm (Barnes & Hut 1986, as
 * parallelised in SPLASH-2's Barnes: all threads insert their bodies into
 * one shared octree under cell locks; no SPLASH code). Each step:
 *
 *   1. bounding box: local min/max, combined under a lock      barrier
 *      thread 0 makes the root cell                            barrier
 *   2. insertion: a thread walks down from the root, holding the lock of
 *      one cell at a time (lock coupling without overlap: the lock of the
 *      cell whose child slot it reads or writes); an occupied leaf slot
 *      becomes a new cell (from the thread's own pool), published under the
 *      parent's lock after it is filled                        barrier
 *   3. centres of mass: subtrees two levels down are shared out, thread 0
 *      finishes the top                                        barrier
 *   4. forces by tree walk (opening angle theta, softening eps) and a
 *      kick-drift step for own bodies; energies under a lock    barrier
 *
 * Cell locks are hashed into an array (ALOCK). A leaf holds one body, so
 * the tree depends only on the positions, never on insertion order, and
 * every sum over children runs in octant order: results do not depend on
 * the thread count. -t reruns with one thread and requires positions and
 * energies to match within 1e-9 (relative); exit 3 otherwise.
 */
MAIN_ENV
#include "hash.h"
#include "options.h"
#include "rerun.h"
#include <math.h>

#define NLOCKS 2048
#define MAXDEPTH 64

typedef struct {
  double pos[3], vel[3], acc[3], mass, phi;
} body_t;

typedef struct {
  double center[3], half; /* geometric cube */
  double com[3], mass;    /* centre of mass, after step 3 */
  long child[8];          /* 0 empty, > 0 cell index + 1, < 0 -(body index + 1) */
} cell_t;

struct world {
  BARDEC(bar)
  LOCKDEC(lock)
  ALOCKDEC(clock, NLOCKS)
  long p, cap;             /* threads, cells per thread's pool */
  body_t *body;
  cell_t *cell;            /* pools: thread t owns [t * cap, (t + 1) * cap) */
  long root;
  double lo[3], hi[3];
  double kin[2], pot[2];
  double *ekin, *epot;     /* per step (thread 0) */
  unsigned long t_start, t_end;
};

static struct world *W;           /* the world slave() works on */
struct world *PAR, *REF; /* the parallel run and the 1-thread rerun (-t); global: kept reachable */
static long NBODY, STEPS, P;
static int TEST;
static const double DT = 0.025, EPS2 = 0.05 * 0.05, THETA = 0.7;

/* The command line (common/options.h); the defaults are set from here. */
static const struct app_preset SIZES[] = {
  {"small", "-n256", NULL},
  {"medium", "-n4096", NULL},
  {"seed", "-n32768", NULL},
};
static const struct app_opt OPTS[] = {
  OPT_LONG('p', "threads", "P", &P, "1", "threads"),
  OPT_LONG('n', "bodies", "N", &NBODY, "256", "bodies"),
  OPT_LONG('s', "steps", "S", &STEPS, "3", "time steps"),
  OPT_PRESETS('S', SIZES),
  OPT_SWITCH('t', &TEST, "verify: rerun with one thread, compare positions and energies"),
  OPT_END,
};

/* Plummer sphere, positions by inverse CDF, isotropic small velocities. */
static void init_body(body_t *b, long i) {
  uint64_t s = 8 * (uint64_t)i;
  double u = 0.001 + 0.899 * unit(s);
  double r = 1.0 / sqrt(pow(u, -2.0 / 3.0) - 1.0);
  double z = 2 * unit(s + 1) - 1, ph = 2 * M_PI * unit(s + 2), q = sqrt(1 - z * z);
  double dir[3] = {q * cos(ph), q * sin(ph), z};
  double vz = 2 * unit(s + 3) - 1, vph = 2 * M_PI * unit(s + 4), vq = sqrt(1 - vz * vz);
  double v = 0.3 * unit(s + 5) / pow(1 + r * r, 0.25);
  double vdir[3] = {vq * cos(vph), vq * sin(vph), vz};
  for (int c = 0; c < 3; c++) {
    b->pos[c] = r * dir[c];
    b->vel[c] = v * vdir[c];
    b->acc[c] = 0.0;
  }
  b->mass = 1.0 / (double)NBODY;
  b->phi = 0.0;
}

static long new_cell(long t, long *used, const double center[3], double half) {
  if (*used >= W->cap) {
    fprintf(stderr, "barnes: thread %ld's cell pool (%ld) is full\n", t, W->cap);
    exit(1);
  }
  long id = t * W->cap + (*used)++;
  cell_t *c = &W->cell[id];
  memset(c, 0, sizeof *c);
  for (int k = 0; k < 3; k++) c->center[k] = center[k];
  c->half = half;
  return id;
}

static int octant(const cell_t *c, const double pos[3]) {
  return (pos[0] >= c->center[0]) | ((pos[1] >= c->center[1]) << 1) | ((pos[2] >= c->center[2]) << 2);
}

static void sub_center(const cell_t *c, int k, double out[3]) {
  double q = 0.5 * c->half;
  for (int d = 0; d < 3; d++) out[d] = c->center[d] + (((k >> d) & 1) ? q : -q);
}

static void insert(long t, long *used, long bi) {
  struct world *w = W;
  const double *pos = w->body[bi].pos;
  long cur = w->root;
  for (int depth = 0;; depth++) {
    if (depth > MAXDEPTH) {
      fprintf(stderr, "barnes: bodies too close to separate (body %ld)\n", bi);
      exit(1);
    }
    ALOCK(w->clock, cur % NLOCKS);
    cell_t *c = &w->cell[cur];
    int k = octant(c, pos);
    long ch = c->child[k];
    if (ch == 0) {
      c->child[k] = -(bi + 1);
      AULOCK(w->clock, cur % NLOCKS);
      return;
    }
    if (ch > 0) {
      AULOCK(w->clock, cur % NLOCKS);
      cur = ch - 1;
      continue;
    }
    /* a body sits here: a new cell takes it, then replaces it */
    double sc[3];
    sub_center(c, k, sc);
    long nc = new_cell(t, used, sc, 0.5 * c->half);
    long other = -ch - 1;
    w->cell[nc].child[octant(&w->cell[nc], w->body[other].pos)] = ch;
    c->child[k] = nc + 1;
    AULOCK(w->clock, cur % NLOCKS);
    cur = nc;
  }
}

static void center_of_mass(long id) {
  cell_t *c = &W->cell[id];
  double m = 0.0, s[3] = {0, 0, 0};
  for (int k = 0; k < 8; k++) {
    long ch = c->child[k];
    if (ch == 0) continue;
    const double *p;
    double mk;
    if (ch > 0) {
      if (W->cell[ch - 1].mass == 0.0) center_of_mass(ch - 1);
      p = W->cell[ch - 1].com;
      mk = W->cell[ch - 1].mass;
    } else {
      p = W->body[-ch - 1].pos;
      mk = W->body[-ch - 1].mass;
    }
    m += mk;
    for (int d = 0; d < 3; d++) s[d] += mk * p[d];
  }
  c->mass = m;
  for (int d = 0; d < 3; d++) c->com[d] = m > 0 ? s[d] / m : c->center[d];
}

/* -t: a lost or doubled insertion shows here, before it blurs into energies. */
static long count_bodies(long ch) {
  if (ch < 0) return 1;
  long n = 0;
  for (int k = 0; k < 8; k++)
    if (W->cell[ch - 1].child[k] != 0) n += count_bodies(W->cell[ch - 1].child[k]);
  return n;
}

static void check_tree(long step, const char *after, int masses) {
  long n = count_bodies(W->root + 1);
  if (n != NBODY)
    fprintf(stderr, "barnes: step %ld, after %s: %ld of %ld bodies in the tree\n", step, after, n, NBODY);
  /* the bodies' masses sum to 1 */
  if (masses && fabs(W->cell[W->root].mass - 1.0) > 1e-9)
    fprintf(stderr, "barnes: step %ld, after %s: root mass %.12f\n", step, after, W->cell[W->root].mass);
}

static void interact(body_t *b, const double p[3], double m) {
  double d[3], r2 = EPS2;
  for (int k = 0; k < 3; k++) { d[k] = p[k] - b->pos[k]; r2 += d[k] * d[k]; }
  double ir = 1.0 / sqrt(r2), ir3 = ir * ir * ir;
  b->phi -= m * ir;
  for (int k = 0; k < 3; k++) b->acc[k] += m * ir3 * d[k];
}

static void walk(body_t *b, long bi, long ch) {
  if (ch < 0) {
    if (-ch - 1 != bi) interact(b, W->body[-ch - 1].pos, W->body[-ch - 1].mass);
    return;
  }
  const cell_t *c = &W->cell[ch - 1];
  double r2 = 0.0;
  for (int k = 0; k < 3; k++) r2 += (c->com[k] - b->pos[k]) * (c->com[k] - b->pos[k]);
  double size = 2 * c->half;
  if (size * size < THETA * THETA * r2) {
    interact(b, c->com, c->mass);
    return;
  }
  for (int k = 0; k < 8; k++)
    if (c->child[k] != 0) walk(b, bi, c->child[k]);
}

static void slave(void) {
  long t;
  GET_PID(t);
  struct world *w = W;
  long lo = NBODY * t / w->p, hi = NBODY * (t + 1) / w->p;
  for (long i = lo; i < hi; i++) init_body(&w->body[i], i);
  if (t == 0) w->kin[0] = w->kin[1] = w->pot[0] = w->pot[1] = 0.0;
  BARRIER(w->bar, w->p);
  if (t == 0) CLOCK(w->t_start);
  for (long step = 0; step < STEPS; step++) {
    long k = step & 1, used = 0;
    /* 1. bounding box */
    double mn[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, mx[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    for (long i = lo; i < hi; i++)
      for (int d = 0; d < 3; d++) {
        if (w->body[i].pos[d] < mn[d]) mn[d] = w->body[i].pos[d];
        if (w->body[i].pos[d] > mx[d]) mx[d] = w->body[i].pos[d];
      }
    if (t == 0)
      for (int d = 0; d < 3; d++) { w->lo[d] = HUGE_VAL; w->hi[d] = -HUGE_VAL; }
    BARRIER(w->bar, w->p);
    LOCK(w->lock);
    for (int d = 0; d < 3; d++) {
      if (mn[d] < w->lo[d]) w->lo[d] = mn[d];
      if (mx[d] > w->hi[d]) w->hi[d] = mx[d];
    }
    UNLOCK(w->lock);
    BARRIER(w->bar, w->p);
    if (t == 0) {
      double center[3], half = 0.0;
      for (int d = 0; d < 3; d++) {
        center[d] = 0.5 * (w->lo[d] + w->hi[d]);
        if (0.5 * (w->hi[d] - w->lo[d]) > half) half = 0.5 * (w->hi[d] - w->lo[d]);
      }
      w->root = new_cell(0, &used, center, half * 1.001 + 1e-12);
    }
    BARRIER(w->bar, w->p);
    /* 2. insertion */
    for (long i = lo; i < hi; i++) insert(t, &used, i);
    BARRIER(w->bar, w->p);
    if (TEST && t == 0) check_tree(step, "insertion", 0);
    /* 3. centres of mass: subtrees of depth 2 shared out, top by thread 0 */
    long n2 = 0;
    const cell_t *root = &w->cell[w->root];
    for (int a = 0; a < 8; a++) {
      if (root->child[a] <= 0) continue;
      const cell_t *c1 = &w->cell[root->child[a] - 1];
      for (int b = 0; b < 8; b++) {
        if (c1->child[b] <= 0) continue;
        if (n2++ % w->p == t) center_of_mass(c1->child[b] - 1);
      }
    }
    BARRIER(w->bar, w->p);
    if (t == 0) center_of_mass(w->root);
    BARRIER(w->bar, w->p);
    if (TEST && t == 0) check_tree(step, "centres of mass", 1);
    /* 4. forces, kick-drift, energies */
    double kin = 0.0, pot = 0.0;
    for (long i = lo; i < hi; i++) {
      body_t *b = &w->body[i];
      b->phi = 0.0;
      for (int d = 0; d < 3; d++) b->acc[d] = 0.0;
      walk(b, i, w->root + 1);
      pot += 0.5 * b->mass * b->phi;
    }
    BARRIER(w->bar, w->p); /* every walk done before positions move */
    for (long i = lo; i < hi; i++) {
      body_t *b = &w->body[i];
      for (int d = 0; d < 3; d++) {
        b->vel[d] += b->acc[d] * DT;
        b->pos[d] += b->vel[d] * DT;
        kin += 0.5 * b->mass * b->vel[d] * b->vel[d];
      }
    }
    LOCK(w->lock);
    w->kin[k] += kin;
    w->pot[k] += pot;
    UNLOCK(w->lock);
    BARRIER(w->bar, w->p);
    if (t == 0) {
      w->ekin[step] = w->kin[k];
      w->epot[step] = w->pot[k];
      w->kin[k ^ 1] = w->pot[k ^ 1] = 0.0;
    }
  }
  BARRIER(w->bar, w->p);
  if (t == 0) CLOCK(w->t_end);
}

static struct world *make_world(long p) {
  struct world *w = (struct world *)G_MALLOC(sizeof(struct world));
  memset(w, 0, sizeof *w);
  w->p = p;
  w->cap = 3 * (NBODY / p) + 256;
  BARINIT(w->bar, p);
  LOCKINIT(w->lock);
  ALOCKINIT(w->clock, NLOCKS);
  w->body = (body_t *)G_MALLOC((size_t)NBODY * sizeof(body_t));
  w->cell = (cell_t *)G_MALLOC((size_t)(w->cap * p) * sizeof(cell_t));
  w->ekin = (double *)G_MALLOC((size_t)STEPS * sizeof(double));
  w->epot = (double *)G_MALLOC((size_t)STEPS * sizeof(double));
  return w;
}

int main(int argc, char **argv) {
  MAIN_INITENV
  int rc = app_opts_parse(OPTS, argc, argv);
  if (rc >= 0) return rc;
  if (P < 1 || P > ANL_MAX_THREADS || NBODY < 2 || NBODY > (1L << 24) || P > NBODY ||
      STEPS < 1 || STEPS > 100000) {
    app_opts_usage(stderr, OPTS, argv[0]);
    return 2;
  }
  W = make_world(P);
  struct world *par = PAR = W;
  printf("barnes: %ld bodies, %ld steps, theta %.2f, %ld threads%s\n", NBODY, STEPS, THETA, P,
         TEST ? ", verify" : "");
  for (long i = 1; i < P; i++) CREATE(slave);
  slave();
  WAIT_FOR_END(P - 1);
  printf("Total time (us): %lu\n", par->t_end - par->t_start);
  for (long s = 0; s < STEPS; s++)
    printf("step %ld: kinetic %.12e, potential %.12e, total %.12e\n", s, par->ekin[s], par->epot[s],
           par->ekin[s] + par->epot[s]);
  int ok = 1;
  if (TEST) {
    struct world *ref = REF = make_world(1);
    W = ref;
    slave();
    double de = rerun_max_rel(0.0, par->ekin, ref->ekin, STEPS);
    de = rerun_max_rel(de, par->epot, ref->epot, STEPS);
    double dx = 0.0;
    for (long i = 0; i < NBODY; i++) dx = rerun_max_abs(dx, par->body[i].pos, ref->body[i].pos, 3);
    ok = RERUN_VERDICT(de, dx, 1e-9);
  }
  fflush(stdout);
  MAIN_END(ok ? 0 : 3);
}
