/* samples/sum_max.loop's sum_and_max in plain C: the sum and the largest of
 * N floats, two OpenMP reductions one after the other as the sample writes
 * them (each thread folds its chunk, then the partials combine). */
#include "harness.h"

#include <math.h>

static long N;
static float *x, total, largest;

static void run(void) {
  float sum = 0.0f;
#pragma omp parallel for reduction(+ : sum)
  for (long i = 0; i < N; ++i)
    sum += x[i];
  float top = -INFINITY;
#pragma omp parallel for reduction(max : top)
  for (long i = 0; i < N; ++i)
    top = top > x[i] ? top : x[i];
  total = sum, largest = top;
}

static double checksum(void) { return total + largest; }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  x = bench_alloc((size_t)N);
  bench_fill(x, (size_t)N, 1);
  bench_dump("in", "x", x, 1, (long[]){N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "total", &total, 0, NULL);
  bench_dump("out", "largest", &largest, 0, NULL);
  return 0;
}
