/* tests/programs/polybench/durbin.loop (kernel durbin) in plain C, in f32: r
 * from x scaled by 1 / (4 (i + 1)^2) (parallel), then the Levinson-Durbin
 * recursion: per step a sequential dot product and two loops of k points,
 * parallel as the program's parfors are. */
#include "../harness.h"

static long N;
static float *x, *r, *y, *z;

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_durbin(long N, const float *restrict x, float *restrict r, float *restrict y,
              float *restrict z) {
  PARFOR
  for (long i = 0; i < N; ++i) {
    float d = (float)(i + 1);
    r[i] = x[i] / (4.0f * d * d);
  }
  y[0] = -r[0];
  float beta = 1.0f, alpha = -r[0];
  for (long k = 1; k < N; ++k) {
    beta = (1.0f - alpha * alpha) * beta;
    float sum = 0.0f;
    for (long i = 0; i < k; ++i)
      sum += r[k - i - 1] * y[i];
    alpha = -(r[k] + sum) / beta;
    PARFOR
    for (long i = 0; i < k; ++i)
      z[i] = y[i] + alpha * y[k - i - 1];
    PARFOR
    for (long i = 0; i < k; ++i)
      y[i] = z[i];
    y[k] = alpha;
  }
}

static void run(void) { kernel_durbin(N, x, r, y, z); }

static double checksum(void) { return bench_sum(y, (size_t)N); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  if (N < 1) {
    fprintf(stderr, "durbin: N must be at least 1\n");
    return 2;
  }
  x = bench_alloc((size_t)N), r = bench_alloc((size_t)N);
  y = bench_alloc((size_t)N), z = bench_alloc((size_t)N);
  bench_fill(x, (size_t)N, 1);
  /* z[N - 1] is never written: zero, as an out array starts. */
  memset(z, 0, (size_t)N * sizeof(float));
  bench_dump("in", "x", x, 1, (long[]){N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "r", r, 1, (long[]){N});
  bench_dump("out", "y", y, 1, (long[]){N});
  bench_dump("out", "z", z, 1, (long[]){N});
  return 0;
}
