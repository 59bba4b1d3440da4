/* rerun.h: -t for the apps that check a parallel run against a rerun with
 * one thread in the same process (barnes, water-nsquared) (ours).
 *
 * Their sums arrive in an order that depends on the threads, so the check
 * is a tolerance: the largest relative difference of the per-step energies
 * and the largest absolute difference of the positions.
 *
 *   double de = rerun_max_rel(0.0, par->ekin, ref->ekin, STEPS);
 *   double dx = rerun_max_abs(0.0, par->pos, ref->pos, 3 * N);
 *   ok = RERUN_VERDICT(de, dx, 1e-9);
 */
#ifndef SPLASH2_RERUN_H
#define SPLASH2_RERUN_H

#include <math.h>
#include <stdio.h>

/* |a - b| relative to |b|; to 1 where b is about zero. */
static inline double rerun_rel(double a, double b) { return fabs(a - b) / (fabs(b) > 1e-300 ? fabs(b) : 1.0); }

/* The largest of worst and rerun_rel(par[i], ref[i]), i < n. */
static inline double rerun_max_rel(double worst, const double *par, const double *ref, long n) {
  for (long i = 0; i < n; i++)
    if (rerun_rel(par[i], ref[i]) > worst) worst = rerun_rel(par[i], ref[i]);
  return worst;
}

/* The largest of worst and |par[i] - ref[i]|, i < n. */
static inline double rerun_max_abs(double worst, const double *par, const double *ref, long n) {
  for (long i = 0; i < n; i++)
    if (fabs(par[i] - ref[i]) > worst) worst = fabs(par[i] - ref[i]);
  return worst;
}

/* Prints both differences and the verdict; 1 when both are within tol.
 * tol is a literal: it is printed as written. */
#define RERUN_VERDICT(energies, positions, tol) rerun_verdict((energies), (positions), (tol), #tol)
static inline int rerun_verdict(double energies, double positions, double tol, const char *tol_text) {
  int ok = energies <= tol && positions <= tol;
  printf("vs 1 thread: energies %.3e (relative), positions %.3e (tolerance %s)\n", energies, positions, tol_text);
  printf("Verification: %s\n", ok ? "PASSED" : "FAILED");
  return ok;
}

#endif
