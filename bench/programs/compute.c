/* compute: a compute-bound single-threaded kernel (blocked matrix multiply
 * on heap memory) for measuring svm's overhead on one node against a native
 * run of the same binary. Prints seconds and a checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 384;
  if (n < 8) {
    fprintf(stderr, "usage: %s [n >= 8]\n", argv[0]);
    return 2;
  }
  double* a = malloc(sizeof(double) * n * n);
  double* b = malloc(sizeof(double) * n * n);
  double* c = calloc((size_t)n * n, sizeof(double));
  for (int i = 0; i < n * n; i++) {
    a[i] = (i % 7) * 0.5;
    b[i] = (i % 5) * 0.25;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const int bs = 32;
  for (int ii = 0; ii < n; ii += bs)
    for (int kk = 0; kk < n; kk += bs)
      for (int jj = 0; jj < n; jj += bs)
        for (int i = ii; i < ii + bs && i < n; i++)
          for (int k = kk; k < kk + bs && k < n; k++) {
            double x = a[i * n + k];
            for (int j = jj; j < jj + bs && j < n; j++) c[i * n + j] += x * b[k * n + j];
          }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double sum = 0;
  for (int i = 0; i < n * n; i++) sum += c[i];
  printf("compute: n=%d %.3f s checksum %.1f\n", n,
         (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9, sum);
  return 0;
}
