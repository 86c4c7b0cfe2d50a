/* samples/scan.loop's prefix_sum in plain C: y[i] = x[0] + ... + x[i] over N
 * floats, as a C programmer parallelizes it with OpenMP: each thread sums its
 * block, one thread scans the block sums, then each thread scans its block
 * from the sum of the blocks before it. */
#include "harness.h"

static long N;
static float *x, *y;

static void run(void) {
  int threads = omp_get_max_threads();
  float *sums = calloc((size_t)threads + 1, sizeof(float));
#pragma omp parallel
  {
    int t = omp_get_thread_num(), count = omp_get_num_threads();
    long first = N * t / count, last = N * (t + 1) / count;
    float sum = 0.0f;
    for (long i = first; i < last; ++i)
      sum += x[i];
    sums[t + 1] = sum;
#pragma omp barrier
#pragma omp single
    for (int b = 1; b <= count; ++b)
      sums[b] += sums[b - 1];
    float running = sums[t];
    for (long i = first; i < last; ++i) {
      running += x[i];
      y[i] = running;
    }
  }
  free(sums);
}

static double checksum(void) { return bench_sum(y, (size_t)N); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  x = bench_alloc((size_t)N), y = bench_alloc((size_t)N);
  bench_fill(x, (size_t)N, 1);
  bench_dump("in", "x", x, 1, (long[]){N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "y", y, 1, (long[]){N});
  return 0;
}
