/* samples/histogram.loop's histogram in plain C: counts of N floats in B equal
 * bins of [-1, 1), as a C programmer writes it with OpenMP: each thread counts
 * into bins of its own, then adds them to the shared ones. */
#include "harness.h"

static long N, B;
static float *x;
static int *H;

static void reset(void) { memset(H, 0, (size_t)B * sizeof(int)); }

static void run(void) {
#pragma omp parallel
  {
    int *mine = calloc((size_t)B, sizeof(int));
#pragma omp for
    for (long i = 0; i < N; ++i)
      if (x[i] >= -1.0f && x[i] < 1.0f) {
        long bin = (long)((x[i] + 1.0f) / 2.0f * (float)B);
        mine[bin < B - 1 ? bin : B - 1] += 1;
      }
    for (long b = 0; b < B; ++b)
      if (mine[b]) {
#pragma omp atomic
        H[b] += mine[b];
      }
    free(mine);
  }
}

static double checksum(void) {
  double sum = 0;
  for (long b = 0; b < B; ++b)
    sum += (double)H[b] * (double)(b + 1);
  return sum;
}

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  B = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  x = bench_alloc((size_t)N);
  H = calloc((size_t)B, sizeof(int));
  bench_fill(x, (size_t)N, 1);
  bench_dump("in", "x", x, 1, (long[]){N});
  bench_report(reps, reset, run, checksum);
  bench_dump_typed("out", "H", H, "<i4", 1, (long[]){B});
  return 0;
}
