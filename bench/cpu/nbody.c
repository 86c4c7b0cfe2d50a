/* samples/nbody.loop in plain C: one step of N bodies, pos and vel of N x 3
 * (inout, restored before every run). As in the sample, each component c of
 * every acceleration is its own reduction over all bodies (the distance is
 * recomputed per component), acc is allocated inside the step, then
 * velocities and positions are advanced; both loops parallel over bodies. */
#include "harness.h"

#include <math.h>
#include <string.h>

static long N;
static float dt = 0.01f, softening = 0.1f;
static float *mass, *pos, *vel, *pos0, *vel0;

static float pull(float dc, float dx, float dy, float dz, float m, float soft) {
  float r2 = dx * dx + dy * dy + dz * dz + soft * soft;
  float inv_r = 1.0f / sqrtf(r2);
  return m * dc * inv_r * inv_r * inv_r;
}

static void reset(void) {
  memcpy(pos, pos0, (size_t)(N * 3) * sizeof(float));
  memcpy(vel, vel0, (size_t)(N * 3) * sizeof(float));
}

static void run(void) {
  float *acc = bench_alloc((size_t)(N * 3));
#pragma omp parallel for
  for (long i = 0; i < N; ++i)
    for (long c = 0; c < 3; ++c) {
      float sum = 0.0f;
      for (long j = 0; j < N; ++j)
        sum += pull(pos[j * 3 + c] - pos[i * 3 + c], pos[j * 3] - pos[i * 3],
                    pos[j * 3 + 1] - pos[i * 3 + 1], pos[j * 3 + 2] - pos[i * 3 + 2], mass[j],
                    softening);
      acc[i * 3 + c] = sum;
    }
#pragma omp parallel for
  for (long i = 0; i < N; ++i)
    for (long c = 0; c < 3; ++c) {
      vel[i * 3 + c] += dt * acc[i * 3 + c];
      pos[i * 3 + c] += dt * vel[i * 3 + c];
    }
  free(acc);
}

static double checksum(void) { return bench_sum(pos, (size_t)(N * 3)); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  mass = bench_alloc((size_t)N), pos = bench_alloc((size_t)(N * 3)),
  vel = bench_alloc((size_t)(N * 3));
  pos0 = bench_alloc((size_t)(N * 3)), vel0 = bench_alloc((size_t)(N * 3));
  bench_fill(mass, (size_t)N, 1), bench_fill(pos0, (size_t)(N * 3), 2),
      bench_fill(vel0, (size_t)(N * 3), 3);
  bench_dump("in", "mass", mass, 1, (long[]){N});
  bench_dump("in", "pos", pos0, 2, (long[]){N, 3});
  bench_dump("in", "vel", vel0, 2, (long[]){N, 3});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "pos", pos, 2, (long[]){N, 3});
  bench_dump("out", "vel", vel, 2, (long[]){N, 3});
  return 0;
}
