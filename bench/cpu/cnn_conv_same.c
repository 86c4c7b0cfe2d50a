/* samples/cnn_conv.loop (kernel cnn_conv_same) in plain C: a padded ("same")
 * multi-channel convolution, O[o][y][x] = sum over c, u, v of
 * I[c][y+u-P][x+v-P] * F[o][c][u][v] with P = K / 2 and zeros outside the
 * image, parallel over output channels and rows. The window's test is written
 * as the .loop writes it, inside the loops. */
#include "harness.h"

static long Ic, Oc, H, W, K;
static float *I, *F, *O;

static void run(void) {
  long P = K / 2;
#pragma omp parallel for collapse(2)
  for (long o = 0; o < Oc; ++o)
    for (long y = 0; y < H; ++y)
      for (long x = 0; x < W; ++x) {
        float sum = 0.0f;
        for (long c = 0; c < Ic; ++c)
          for (long u = 0; u < K; ++u)
            for (long v = 0; v < K; ++v)
              sum += (y + u >= P && y + u - P < H && x + v >= P && x + v - P < W)
                         ? I[(c * H + y + u - P) * W + x + v - P] * F[((o * Ic + c) * K + u) * K + v]
                         : 0.0f;
        O[(o * H + y) * W + x] = sum;
      }
}

static double checksum(void) { return bench_sum(O, (size_t)(Oc * H * W)); }

int main(int argc, char **argv) {
  Ic = bench_arg(argc, argv, 1), Oc = bench_arg(argc, argv, 2);
  H = bench_arg(argc, argv, 3), W = bench_arg(argc, argv, 4), K = bench_arg(argc, argv, 5);
  int reps = (int)bench_arg(argc, argv, 6);
  I = bench_alloc((size_t)(Ic * H * W)), F = bench_alloc((size_t)(Oc * Ic * K * K));
  O = bench_alloc((size_t)(Oc * H * W));
  bench_fill(I, (size_t)(Ic * H * W), 1), bench_fill(F, (size_t)(Oc * Ic * K * K), 2);
  bench_fill(O, (size_t)(Oc * H * W), 3);
  bench_dump("in", "I", I, 3, (long[]){Ic, H, W});
  bench_dump("in", "F", F, 4, (long[]){Oc, Ic, K, K});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "O", O, 3, (long[]){Oc, H, W});
  return 0;
}
