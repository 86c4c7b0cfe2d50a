/* samples/conv2d_5x5.loop in plain C: valid 5 x 5 convolution of an H x W
 * image, O[y][x] = sum over u, v of I[y+u][x+v] * F[u][v], parallel over
 * output rows. */
#include "harness.h"

static long H, W;
static float *I, F[5][5], *O;

static void run(void) {
  long outW = W - 4;
#pragma omp parallel for
  for (long y = 0; y < H - 4; ++y)
    for (long x = 0; x < outW; ++x) {
      float sum = 0.0f;
      for (long u = 0; u < 5; ++u)
        for (long v = 0; v < 5; ++v)
          sum += I[(y + u) * W + x + v] * F[u][v];
      O[y * outW + x] = sum;
    }
}

static double checksum(void) { return bench_sum(O, (size_t)((H - 4) * (W - 4))); }

int main(int argc, char **argv) {
  H = bench_arg(argc, argv, 1), W = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  I = bench_alloc((size_t)(H * W)), O = bench_alloc((size_t)((H - 4) * (W - 4)));
  bench_fill(I, (size_t)(H * W), 1), bench_fill(&F[0][0], 25, 2);
  bench_fill(O, (size_t)((H - 4) * (W - 4)), 3);
  bench_dump("in", "I", I, 2, (long[]){H, W});
  bench_dump("in", "F", &F[0][0], 2, (long[]){5, 5});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "O", O, 2, (long[]){H - 4, W - 4});
  return 0;
}
