/* bench/cpu/nussinov.loop in plain C (PolyBench's nussinov), sequential:
 * every cell depends on the cells to its left and below it. Bases are
 * seq[i] % 4 with seq in [0, 16), as loopc generates integer inputs. The
 * table is an output: zeroed before every timed run. */
#include "harness.h"

static long N;
static int *seq, *table;

static void reset(void) { memset(table, 0, (size_t)(N * N) * sizeof(int)); }

static int maxInt(int a, int b) { return a > b ? a : b; }

static void run(void) {
  for (long i = N - 1; i >= 0; --i)
    for (long j = i + 1; j < N; ++j) {
      int pairs = (seq[i] % 4 + seq[j] % 4 == 3) && i < j - 1;
      int best = maxInt(table[i * N + j - 1], table[(i + 1) * N + j]);
      best = maxInt(best, table[(i + 1) * N + j - 1] + pairs);
      for (long k = i + 1; k < j; ++k)
        best = maxInt(best, table[i * N + k] + table[(k + 1) * N + j]);
      table[i * N + j] = best;
    }
}

static double checksum(void) { return N > 0 ? table[N - 1] : 0; }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  seq = malloc((size_t)N * sizeof(int)), table = malloc((size_t)(N * N) * sizeof(int));
  if (!seq || !table) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  uint64_t state = 7;
  for (long i = 0; i < N; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    seq[i] = (int)(state >> 60);
  }
  bench_dump_typed("in", "seq", seq, "<i4", 1, (long[]){N});
  bench_report(reps, reset, run, checksum);
  bench_dump_typed("out", "table", table, "<i4", 2, (long[]){N, N});
  return 0;
}
