/* bench/cpu/durbin.loop in plain C (PolyBench's durbin), sequential: each of
 * the N steps is a dot product and two loops of up to N points, too short to
 * share among threads. r is scaled by 0.5 / N as in the .loop program. */
#include "harness.h"

static long N;
static double *r, *rs, *y, *z;

static void run(void) {
  for (long i = 0; i < N; ++i)
    rs[i] = r[i] * (0.5 / (double)N);
  y[0] = -rs[0];
  double beta = 1.0, alpha = -rs[0];
  for (long k = 1; k < N; ++k) {
    beta = (1.0 - alpha * alpha) * beta;
    double sum = 0.0;
    for (long i = 0; i < k; ++i)
      sum += rs[k - i - 1] * y[i];
    alpha = -(rs[k] + sum) / beta;
    for (long i = 0; i < k; ++i)
      z[i] = y[i] + alpha * y[k - i - 1];
    for (long i = 0; i < k; ++i)
      y[i] = z[i];
    y[k] = alpha;
  }
}

static double checksum(void) {
  double sum = 0;
  for (long i = 0; i < N; ++i)
    sum += y[i];
  return sum;
}

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  if (N < 1) {
    fprintf(stderr, "durbin: N must be at least 1\n");
    return 2;
  }
  r = malloc((size_t)N * sizeof(double)), rs = malloc((size_t)N * sizeof(double));
  y = malloc((size_t)N * sizeof(double)), z = malloc((size_t)N * sizeof(double));
  if (!r || !rs || !y || !z) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  float *values = bench_alloc((size_t)N);
  bench_fill(values, (size_t)N, 1);
  for (long i = 0; i < N; ++i)
    r[i] = values[i];
  bench_dump_typed("in", "r", r, "<f8", 1, (long[]){N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump_typed("out", "y", y, "<f8", 1, (long[]){N});
  return 0;
}
