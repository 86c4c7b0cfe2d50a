/* samples/softmax.loop in plain C: row-wise softmax of an R x C matrix, one
 * parallel iteration per row: the row maximum, the sum of exp(x - max), then
 * the row written as exp(x - max) / sum (exp evaluated again, as in the
 * sample). */
#include "harness.h"

#include <math.h>

static long R, C;
static float *X, *Y;

static void run(void) {
#pragma omp parallel for
  for (long r = 0; r < R; ++r) {
    const float *row = X + r * C;
    float m = -INFINITY;
    for (long c = 0; c < C; ++c)
      m = fmaxf(m, row[c]);
    float s = 0.0f;
    for (long c = 0; c < C; ++c)
      s += expf(row[c] - m);
    for (long c = 0; c < C; ++c)
      Y[r * C + c] = expf(row[c] - m) / s;
  }
}

static double checksum(void) { return bench_sum(Y, (size_t)(R * C)); }

int main(int argc, char **argv) {
  R = bench_arg(argc, argv, 1), C = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  X = bench_alloc((size_t)(R * C)), Y = bench_alloc((size_t)(R * C));
  bench_fill(X, (size_t)(R * C), 1), bench_fill(Y, (size_t)(R * C), 2);
  bench_dump("in", "X", X, 2, (long[]){R, C});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "Y", Y, 2, (long[]){R, C});
  return 0;
}
