/* samples/dot.loop in plain C: r = x . y over N floats, an OpenMP reduction
 * (each thread sums its chunk in float, then the partial sums combine). */
#include "harness.h"

static long N;
static float *x, *y, r;

static void run(void) {
  float sum = 0.0f;
#pragma omp parallel for reduction(+ : sum)
  for (long i = 0; i < N; ++i)
    sum += x[i] * y[i];
  r = sum;
}

static double checksum(void) { return r; }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  x = bench_alloc((size_t)N), y = bench_alloc((size_t)N);
  bench_fill(x, (size_t)N, 1), bench_fill(y, (size_t)N, 2);
  bench_dump("in", "x", x, 1, (long[]){N});
  bench_dump("in", "y", y, 1, (long[]){N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "r", &r, 0, NULL);
  return 0;
}
