/* Shared by the C baselines of bench/cpu/run.sh: seeded inputs in [-1, 1)
 * like loopc's (not the same values: only shapes and layout must match), size
 * arguments, and the median time of several runs measured with
 * omp_get_wtime. Each baseline restores its inout arrays before every run,
 * outside the timed region, as `loopc run --repeat` does. With BENCH_DUMP_DIR
 * set, a baseline also writes its inputs and outputs as .npy files, so that
 * bench/cpu/check.sh can run loopc on the same inputs and compare. */
#pragma once

/* The parallel loops of a baseline. Built with BENCH_SERIAL_SOURCE, a
 * baseline is the sequential program, for a compiler that parallelizes by
 * itself (Polly's -polly-parallel). */
#ifdef BENCH_SERIAL_SOURCE
#define PARFOR
#else
#define PARFOR _Pragma("omp parallel for")
#endif

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline float *bench_alloc(size_t count) {
  float *data = malloc(count * sizeof(float));
  if (!data) {
    fprintf(stderr, "out of memory allocating %zu floats\n", count);
    exit(1);
  }
  return data;
}

/* Uniform in [-1, 1) from a 64-bit LCG; touches every page before timing. */
static inline void bench_fill(float *data, size_t count, uint64_t seed) {
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (size_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    data[i] = (float)((double)(state >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
  }
}

static inline long bench_arg(int argc, char **argv, int index) {
  if (index >= argc) {
    fprintf(stderr, "usage: %s SIZES... REPS\n", argv[0]);
    exit(2);
  }
  return strtol(argv[index], NULL, 10);
}

static int bench_compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Runs reset() then, timed, run(), `reps` times; prints the median in ms and
 * `checksum()` (so the compiler cannot drop the work). */
static inline void bench_report(int reps, void (*reset)(void), void (*run)(void),
                                double (*checksum)(void)) {
  double *ms = malloc((size_t)reps * sizeof(double));
  for (int rep = 0; rep < reps; ++rep) {
    reset();
    double start = omp_get_wtime();
    run();
    ms[rep] = (omp_get_wtime() - start) * 1e3;
  }
  qsort(ms, (size_t)reps, sizeof(double), bench_compare_doubles);
  double median = reps % 2 ? ms[reps / 2] : (ms[reps / 2 - 1] + ms[reps / 2]) / 2;
  printf("%.3f ms (median of %d runs), checksum %g\n", median, reps, checksum());
  free(ms);
}

static inline double bench_sum(const float *data, size_t count) {
  double sum = 0;
  for (size_t i = 0; i < count; ++i)
    sum += data[i];
  return sum;
}

static inline void bench_nothing(void) {}

/* Writes DIR/KIND/NAME.npy (NumPy format 1.0, C order) when BENCH_DUMP_DIR=DIR
 * is set; KIND is "in" or "out" and NAME the parameter's name in the sample.
 * `descr` is the NumPy type ("<f4", "<i4", "<f8"), whose last digit is the
 * element's size in bytes. */
static inline void bench_dump_typed(const char *kind, const char *name, const void *data,
                                    const char *descr, int rank, const long *shape) {
  const char *dir = getenv("BENCH_DUMP_DIR");
  if (!dir)
    return;
  char path[4096], dims[256] = "", header[512];
  snprintf(path, sizeof path, "%s/%s/%s.npy", dir, kind, name);
  size_t count = 1;
  for (int d = 0; d < rank; ++d) {
    size_t used = strlen(dims);
    snprintf(dims + used, sizeof dims - used, rank == 1 ? "%ld," : d ? ", %ld" : "%ld", shape[d]);
    count *= (size_t)shape[d];
  }
  int length = snprintf(header, sizeof header,
                        "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
  /* Magic, version and length take 10 bytes; the header ends in a newline
   * and pads the whole preamble to a multiple of 64. */
  int padded = (10 + length + 1 + 63) / 64 * 64 - 10;
  memset(header + length, ' ', (size_t)(padded - length - 1));
  header[padded - 1] = '\n';
  FILE *file = fopen(path, "wb");
  if (!file) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  unsigned char preamble[10] = {0x93,
                                'N',
                                'U',
                                'M',
                                'P',
                                'Y',
                                1,
                                0,
                                (unsigned char)(padded & 0xff),
                                (unsigned char)(padded >> 8)};
  fwrite(preamble, 1, sizeof preamble, file);
  fwrite(header, 1, (size_t)padded, file);
  fwrite(data, (size_t)(descr[strlen(descr) - 1] - '0'), count, file);
  fclose(file);
}

static inline void bench_dump(const char *kind, const char *name, const float *data, int rank,
                              const long *shape) {
  bench_dump_typed(kind, name, data, "<f4", rank, shape);
}
