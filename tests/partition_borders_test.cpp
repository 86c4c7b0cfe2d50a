// partition_borders: which nests split into an interior and borders, the
// interior's tests dropped, and that the pieces compute what the interpreter
// computes on every engine at sizes where the interior is empty, one point
// wide, or most of the nest, windows wider than the array included.
#include "TestSupport.h"
#include "support/Differential.h"

#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace loopc;
using loopc::test::contains;

namespace {

const char *const kWindows = R"(
kernel same(I: in f32[C][H][W], F: in f32[D][C][K][K], O: out f32[D][H][W]) {
  let P = K / 2;
  parfor o in 0..D, y in 0..H, x in 0..W {
    O[o][y][x] = redomap(+, 0.0, c in 0..C, u in 0..K, v in 0..K)
        (y + u >= P && y + u - P < H && x + v >= P && x + v - P < W)
            ? I[c][y + u - P][x + v - P] * F[o][c][u][v]
            : 0.0;
  }
}
kernel full(I: in f32[H][W], F: in f32[K][K], O: out f32[H + K - 1][W + K - 1]) {
  let P = K - 1;
  parfor y in 0..H + K - 1, x in 0..W + K - 1 {
    O[y][x] = redomap(+, 0.0, u in 0..K, v in 0..K)
        (y + u >= P && y + u - P < H && x + v >= P && x + v - P < W)
            ? I[y + u - P][x + v - P] * F[u][v]
            : 0.0;
  }
}
kernel causal(A: in f64[N], w: in f64[K], B: out f64[N]) {
  parfor i in 0..N {
    B[i] = redomap(+, 0.0, k in 0..K) (i - k >= 0) ? w[k] * A[i - k] : 0.0;
  }
}
kernel mirrored(A: in i32[N], B: out i32[N], K: i64) {
  parfor i in 0..N {
    var best: i32 = -1;
    for k in 0..K {
      if (i + k < N && i >= k) {
        best = max(best, A[i + k] - A[i - k]);
      }
    }
    B[i] = best;
  }
}
kernel triangle(A: in f32[N][N], B: out f32[N][N], K: i64) {
  parfor i in 0..N, j in 0..i {
    B[i][j] = redomap(+, 0.0, k in 0..K) (j + k < N) ? A[i][j + k] : 0.0;
  }
}
kernel largest(A: in f32[N][M], B: out f32[N][M], R: i64) {
  parfor i in 0..N, j in 0..M {
    B[i][j] = redomap(max, -inf, d in 0..2 * R + 1)
        (j + d - R >= 0 && j + d - R <= M - 1) ? A[i][j + d - R] : -inf;
  }
}
)";

// The interpreter against the CPU pipeline's kernels and the GPU pipeline's
// run on the CPU: sized for a full GPU (whose small grids keep a point a
// thread), for one SM (whose are register-tiled), and each of those with
// border_min_points=0 (these sizes are too small for the GPU's split
// otherwise); those for a full GPU also under bounds checks.
void checkAgainstInterpreter(const Program &program, const std::string &kernel,
                             const std::vector<std::map<std::string, std::string>> &assignments) {
  Interpreter interpreter;
  engine::CpuEngine cpu;
  engine::CpuEngine checkedCpu(passes::PipelineTarget::Cpu, {.boundsChecks = true});
  engine::CpuEngine gpuKernels(test::gpuPipelineOnOneSM());
  engine::CpuEngine checkedGpuKernels(passes::PipelineTarget::Gpu, {.boundsChecks = true});
  passes::PassChoices alwaysSplit = test::withParameters({"border_min_points=0"});
  engine::CpuEngine splitGpuKernels(test::gpuPipelineOnOneSM(alwaysSplit));
  alwaysSplit.boundsChecks = true;
  engine::CpuEngine checkedSplitGpuKernels(passes::PipelineTarget::Gpu, alwaysSplit);
  Engine *engines[] = {
      &interpreter,           &cpu, &checkedCpu, &gpuKernels, &checkedGpuKernels, &splitGpuKernels,
      &checkedSplitGpuKernels};
  CAPTURE(kernel);
  const KernelDecl *found = program.findKernel(kernel);
  REQUIRE(found);
  test::checkAgreementAt(program, *found, engines, assignments);
}

} // namespace

TEST_CASE("a padded window's nest splits into its interior, without the tests, and its borders") {
  std::string cpu = test::compiledKernelText(kWindows, "same", passes::PipelineTarget::Cpu);
  // The interior reads the image with no test left.
  CHECK(contains(cpu, "I[c][y + u - P][x + v - P] * F[o][c][u][v]"));
  CHECK(!contains(cpu, "select(y + u >= P"));
  // Four borders keep the tests: the rows above and below, the columns
  // left and right of the interior's rows.
  for (const char *border : {".border0", ".border1", ".border2", ".border3"})
    CHECK(contains(cpu, border));
  CHECK(!contains(cpu, ".border4"));
  // One bound only (a causal filter reads before i): one border, before.
  std::string causal = test::compiledKernelText(kWindows, "causal", passes::PipelineTarget::Cpu);
  CHECK(contains(causal, ".border0"));
  CHECK(!contains(causal, ".border1"));
  CHECK(contains(causal, "w[k] * A[i - k]"));
  // A branch's tests, on a point variable with the coefficient -1, and `<=`.
  std::string mirrored =
      test::compiledKernelText(kWindows, "mirrored", passes::PipelineTarget::Cpu);
  CHECK(contains(mirrored, ".border1"));
  // On the GPU, the split where the host finds the nest large enough and
  // mostly interior, the nest whole otherwise.
  std::string largest = test::compiledKernelText(kWindows, "largest", passes::PipelineTarget::Gpu);
  CHECK(contains(largest, ".border1"));
  CHECK(contains(largest, ".whole"));
  CHECK(contains(largest, ">= 1048576 && "));
  // A nest whose ranges move with its own variables: split on the CPU, whole
  // on the GPU, whose host could not count its points.
  CHECK(contains(test::compiledKernelText(kWindows, "triangle", passes::PipelineTarget::Cpu),
                 ".border0"));
  CHECK(!contains(test::compiledKernelText(kWindows, "triangle", passes::PipelineTarget::Gpu),
                  ".border"));
}

TEST_CASE("split into interior and borders, the nests compute what the interpreter computes") {
  auto loaded = test::loadText(kWindows);
  INFO(loaded->diagnostics);
  REQUIRE(loaded->program);
  // Interiors empty (windows wider than the image), a point wide, and most
  // of the nest; windows of 1 (no border), 3 and 5.
  checkAgainstInterpreter(*loaded->program, "same",
                          {{{"C", "2"}, {"D", "3"}, {"H", "1"}, {"W", "1"}, {"K", "3"}},
                           {{"C", "1"}, {"D", "2"}, {"H", "2"}, {"W", "3"}, {"K", "5"}},
                           {{"C", "2"}, {"D", "3"}, {"H", "3"}, {"W", "3"}, {"K", "3"}},
                           {{"C", "3"}, {"D", "5"}, {"H", "9"}, {"W", "37"}, {"K", "3"}},
                           {{"C", "2"}, {"D", "9"}, {"H", "33"}, {"W", "67"}, {"K", "5"}},
                           {{"C", "1"}, {"D", "4"}, {"H", "7"}, {"W", "7"}, {"K", "1"}}});
  checkAgainstInterpreter(*loaded->program, "full",
                          {{{"H", "1"}, {"W", "2"}, {"K", "3"}},
                           {{"H", "5"}, {"W", "3"}, {"K", "4"}},
                           {{"H", "31"}, {"W", "45"}, {"K", "3"}}});
  checkAgainstInterpreter(*loaded->program, "causal",
                          {{{"N", "1"}, {"K", "4"}},
                           {{"N", "3"}, {"K", "7"}},
                           {{"N", "1000"}, {"K", "9"}},
                           {{"N", "10"}, {"K", "0"}}});
  checkAgainstInterpreter(
      *loaded->program, "mirrored",
      {{{"N", "1"}, {"K", "3"}}, {{"N", "6"}, {"K", "9"}}, {{"N", "301"}, {"K", "4"}}});
  checkAgainstInterpreter(
      *loaded->program, "triangle",
      {{{"N", "1"}, {"K", "3"}}, {{"N", "6"}, {"K", "9"}}, {{"N", "41"}, {"K", "4"}}});
  checkAgainstInterpreter(*loaded->program, "largest",
                          {{{"N", "2"}, {"M", "1"}, {"R", "2"}},
                           {{"N", "5"}, {"M", "4"}, {"R", "3"}},
                           {{"N", "17"}, {"M", "130"}, {"R", "1"}}});
}

TEST_CASE("the borders' columns, too narrow to fill a warp, get no warning about coalescing") {
  // Their threads run down a column (the border's few columns in each
  // thread): no layout would let a warp read neighbouring elements there.
  auto explained = test::runLoopc("explain samples/cnn_conv.loop --kernel cnn_conv_same --set Ic=8 "
                                  "--set Oc=8 --set H=256 --set W=256 --set K=5 --remarks");
  CHECK(explained.exitCode == 0);
  CHECK(contains(explained.output, "remark: partition_borders: split into its interior, where the "
                                   "tests of y in [2, H - 2) and x in [2, W - 2) hold"));
  CHECK(!contains(explained.output, "uncoalesced"));
  // The nest in one piece reads the image as before, along x: no warning either.
  auto whole = test::runLoopc("explain samples/cnn_conv.loop --kernel cnn_conv_same --set Ic=8 "
                              "--set Oc=8 --set H=256 --set W=256 --set K=5 --remarks "
                              "--skip-pass partition_borders");
  CHECK(whole.exitCode == 0);
  CHECK(!contains(whole.output, "uncoalesced"));
}
