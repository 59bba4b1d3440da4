/* jacobi: a parallel Jacobi solver for Laplace's equation on an n x n grid,
 * rows split into contiguous bands, one barrier per sweep. An ordinary
 * pthreads program: svm runs it unmodified across nodes. It checks itself
 * against a sequential run of the same sweeps (bitwise: each point's update
 * does not depend on the partition) and exits 1 on a mismatch.
 *
 *   jacobi [-p threads] [-n size] [-i sweeps] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static int P = 4, N = 256, SWEEPS = 50;
static double *grid[2];
static pthread_barrier_t barrier;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double change;  /* summed over threads, last sweep */

#define AT(g, i, j) ((g)[(size_t)(i) * N + (j)])

static void sweep(const double* from, double* to, int lo, int hi) {
  for (int i = lo; i < hi; i++)
    for (int j = 1; j < N - 1; j++)
      AT(to, i, j) = 0.25 * (AT(from, i - 1, j) + AT(from, i + 1, j) + AT(from, i, j - 1) +
                             AT(from, i, j + 1));
}

static void* worker(void* arg) {
  long id = (long)arg;
  int rows = N - 2, lo = 1 + (int)(rows * id / P), hi = 1 + (int)(rows * (id + 1) / P);
  double mine = 0;
  for (int s = 0; s < SWEEPS; s++) {
    sweep(grid[s & 1], grid[(s + 1) & 1], lo, hi);
    pthread_barrier_wait(&barrier);
  }
  const double* a = grid[SWEEPS & 1];
  const double* b = grid[(SWEEPS + 1) & 1];
  for (int i = lo; i < hi; i++)
    for (int j = 1; j < N - 1; j++) mine += AT(a, i, j) > AT(b, i, j) ? AT(a, i, j) - AT(b, i, j) : AT(b, i, j) - AT(a, i, j);
  pthread_mutex_lock(&lock);
  change += mine;
  pthread_mutex_unlock(&lock);
  return NULL;
}

static double now(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return tv.tv_sec + tv.tv_usec * 1e-6;
}

static void usage(const char* prog) {
  fprintf(stderr, "usage: %s [-p threads] [-n size >= 3] [-i sweeps]\n", prog);
  exit(2);
}

int main(int argc, char** argv) {
  int c;
  while ((c = getopt(argc, argv, "p:n:i:h")) != -1) {
    switch (c) {
      case 'p': P = atoi(optarg); break;
      case 'n': N = atoi(optarg); break;
      case 'i': SWEEPS = atoi(optarg); break;
      default: usage(argv[0]);
    }
  }
  if (P < 1 || P > 256 || N < 3 || SWEEPS < 1) usage(argv[0]);
  if (P > N - 2) P = N - 2;
  for (int k = 0; k < 2; k++) {
    grid[k] = calloc((size_t)N * N, sizeof(double));
    if (!grid[k]) { perror("calloc"); return 1; }
    for (int j = 0; j < N; j++) AT(grid[k], 0, j) = 100.0;  /* hot top edge */
  }
  pthread_barrier_init(&barrier, NULL, P);
  pthread_t t[256];
  double start = now();
  for (long i = 0; i < P; i++) pthread_create(&t[i], NULL, worker, (void*)i);
  for (int i = 0; i < P; i++) pthread_join(t[i], NULL);
  double elapsed = now() - start;

  /* The same sweeps, sequentially. */
  double* ref[2];
  for (int k = 0; k < 2; k++) {
    ref[k] = calloc((size_t)N * N, sizeof(double));
    for (int j = 0; j < N; j++) AT(ref[k], 0, j) = 100.0;
  }
  for (int s = 0; s < SWEEPS; s++) sweep(ref[s & 1], ref[(s + 1) & 1], 1, N - 1);
  int ok = memcmp(ref[SWEEPS & 1], grid[SWEEPS & 1], (size_t)N * N * sizeof(double)) == 0;
  printf("jacobi: %d threads, %dx%d grid, %d sweeps: %.3f s, last change %.6g, %s\n", P, N, N,
         SWEEPS, elapsed, change, ok ? "verified" : "WRONG");
  return ok ? 0 : 1;
}
