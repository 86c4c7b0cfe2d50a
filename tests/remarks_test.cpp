// Optimization remarks (`--remarks`, passes/Remarks.h): what each pass says it
// did or declined about the samples and about programs written for one
// decision each, with the exact text and place; warnings for uncoalesced
// accesses and ordered walks; and the collector's rules (each remark once, in
// a fixed order). The command line and the REPL are tested in cli_test.cpp and
// repl_test.cpp.
#include "TestSupport.h"

#include "driver/RemarksOutput.h"
#include "passes/Pipeline.h"
#include "passes/Remarks.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace loopc;

namespace {

// Programs written for one decision each, a kernel per decision where a
// program holds several (its name says which).
const char *const kNotmove = R"(kernel notmove(A: in f32[M][4], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) B[k][j] * A[i][0];
  }
}
)";

const char *const kWritten = R"(kernel halve(A: inout f32[N], T: i64) {
  parfor i in 0..N {
    for t in 0..T {
      A[i] = A[i] * 0.5;
    }
  }
}
)";

const char *const kNoreuse = R"(kernel noreuse(A: in f32[M][N][K], O: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    O[i][j] = redomap(+, 0.0, k in 0..K) A[i][j][k];
  }
}
)";

const char *const kRows = R"(assoc fn larger(a: f32, b: f32) -> f32 {
  return a > b ? a : b;
}
kernel readswritten(A: inout f32[M][N]) {
  parfor i in 0..M {
    A[i][0] = redomap(+, 0.0, j in 0..N) A[i][j];
  }
}
kernel twowriters(A: in f32[M][N], B: out f32[M][N]) {
  parfor i in 0..M {
    parfor j in 0..N {
      B[i][j] = A[i][j];
    }
    B[i][0] = 1.0;
  }
}
kernel underif(A: in f32[M][N], y: out f32[M]) {
  parfor i in 0..M {
    let s = redomap(+, 0.0, j in 0..N) A[i][j];
    if s > 0.0 {
      y[i] = redomap(max, -inf, j in 0..N) A[i][j];
    }
  }
}
kernel colsum(A: in f32[M][N], y: out f32[N]) {
  parfor j in 0..N {
    y[j] = redomap(+, 0.0, i in 0..M) A[i][j];
  }
}
kernel ordered(A: in f32[M][N], y: out f32[M]) {
  parfor i in 0..M {
    y[i] = redomap(larger, -inf, j in 0..N) A[i][j];
  }
}
kernel triangle(A: in f32[N][N], y: out f32[N]) {
  parfor i in 0..N {
    y[i] = redomap(+, 0.0, j in 0..i + 1) A[i][j];
  }
}
kernel twoloops(A: in f32[M][N][K], y: out f32[M]) {
  parfor i in 0..M {
    y[i] = redomap(+, 0.0, j in 0..N, k in 0..K) A[i][j][k];
  }
}
kernel notfirst(A: in f32[M][N], y: out f32[M], z: out f32[M]) {
  parfor i in 0..M {
    z[i] = 1.0;
    y[i] = redomap(+, 0.0, j in 0..N) A[i][j];
  }
}
kernel privaterow(A: in f32[M][N], y: out f32[M]) {
  parfor i in 0..M {
    var t: f32[N];
    parfor j in 0..N {
      t[j] = A[i][j] * 2.0;
    }
    y[i] = redomap(+, 0.0, j in 0..N) t[j];
  }
}
)";

const char *const kFusion = R"(kernel fused(x: in f32[N], y: out f32[N]) {
  var t: f32[N];
  parfor i in 0..N {
    t[i] = x[i] * 2.0;
  }
  parfor i in 0..N {
    y[i] = t[i] + 1.0;
  }
}
kernel readtwice(x: in f32[N], y: out f32[N], z: out f32[N]) {
  var t: f32[N];
  parfor i in 0..N {
    t[i] = x[i] * 2.0;
  }
  parfor i in 0..N {
    y[i] = t[i] + 1.0;
  }
  parfor i in 0..N {
    z[i] = t[i] - 1.0;
  }
}
kernel shifted(x: in f32[N], y: out f32[N]) {
  var t: f32[N];
  parfor i in 0..N {
    t[i] = x[i] * 2.0;
  }
  parfor i in 0..N {
    y[i] = t[min(i + 1, N - 1)];
  }
}
kernel divides(x: in i32[N], y: out i32[N]) {
  var t: i32[N];
  parfor i in 0..N {
    t[i] = 100 / x[i];
  }
  parfor i in 0..N {
    y[i] = t[i] + 1;
  }
}
kernel overwritten(x: inout f32[N], y: out f32[N]) {
  var t: f32[N];
  parfor i in 0..N {
    t[i] = x[i] * 2.0;
  }
  parfor i in 0..N {
    x[i] = 0.0;
  }
  parfor i in 0..N {
    y[i] = t[i];
  }
}
kernel inloop(x: in f32[N], y: out f32[N], T: i64) {
  var t: f32[N];
  parfor i in 0..N {
    t[i] = x[i] * 2.0;
  }
  parfor i in 0..N {
    for s in 0..T {
      y[i] += t[i];
    }
  }
}
kernel twice(x: in f32[N], y: out f32[N]) {
  var t: f32[N];
  parfor i in 0..N {
    t[i] = x[i] * 2.0;
  }
  parfor i in 0..N {
    t[i] = x[i] * 3.0;
  }
  parfor i in 0..N {
    y[i] = t[i];
  }
}
)";

const char *const kReductions = R"(assoc fn larger(a: f32, b: f32) -> f32 {
  return a > b ? a : b;
}
kernel siblings(x: in f32[N], y: in f32[M], a: out f32, b: out f32) {
  a = redomap(+, 0.0, i in 0..N) x[i];
  b = redomap(+, 0.0, i in 0..M) y[i];
}
kernel ordered(x: in f32[N], r: out f32) {
  r = redomap(larger, -inf, i in 0..N) x[i];
}
kernel shortmax(A: in f32[M][16], y: out f32[M]) {
  parfor i in 0..M {
    y[i] = redomap(max, -inf, j in 0..16) A[i][j];
  }
}
kernel colmax(A: in f32[M][N], y: out f32[N]) {
  parfor j in 0..N {
    y[j] = redomap(max, -inf, i in 0..M) A[i][j];
  }
}
kernel largest(x: in f32[N], r: out f32) {
  r = redomap(max, -inf, i in 0..N) x[i];
}
kernel ordered2d(A: in f32[M][N], r: out f32) {
  r = redomap(larger, -inf, i in 0..M, j in 0..N) A[i][j];
}
)";

const char *const kCombines = R"(assoc fn biggest(a: f32, b: f32) -> f32 {
  return max(a, b);
}
kernel bigbins(x: in i32[N], H: out i32[100000]) {
  parfor i in 0..N {
    combine(+) H[i64(x[i]) % 100000] = 1;
  }
}
kernel otherwork(x: in f32[N][K], H: out f32[16]) {
  parfor i in 0..N {
    combine(+) H[i % 16] = redomap(+, 0.0, k in 0..K) x[i][k];
  }
}
kernel useroperator(x: in f32[N], H: inout f32[16]) {
  parfor i in 0..N {
    combine(biggest) H[i % 16] = x[i];
  }
}
kernel looped(x: in i32[N][4], H: out i32[64]) {
  parfor i in 0..N {
    for k in 0..4 {
      combine(+) H[i64(x[i][k]) % 64] = 1;
    }
  }
}
)";

const char *const kLayout = R"(kernel window(I: in f32[H][W], F: in f32[K][K], O: out f32[H][W]) {
  parfor y in 0..H - K + 1, x in 0..W - K + 1 {
    O[y][x] = redomap(+, 0.0, u in 0..K, v in 0..K) I[y + u][x + v] * F[u][v];
  }
}
kernel flip(A: in f32[N][M], B: out f32[M][N]) {
  parfor i in 0..N, j in 0..M {
    B[j][i] = A[i][j] + 1.0;
  }
}
)";

const char *const kLocality = R"(kernel triangle(d: in f32[N][M], c: out f32[M][M]) {
  parfor i in 0..M, j in i..M {
    c[i][j] = 0.0;
    for k in 0..N {
      c[i][j] += d[k][i] * d[k][j];
    }
  }
}
kernel square(d: in f32[N][M], c: out f32[M][M]) {
  parfor i in 0..M, j in 0..M {
    c[i][j] = 0.0;
    for k in 0..N {
      c[i][j] += d[k][i] * d[k][j];
    }
  }
}
kernel scalar(d: in f32[N][M], c: out f32[M][M]) {
  parfor i in 0..M, j in i..M {
    var t: f32 = 0.0;
    for k in 0..N {
      t += d[k][i] * d[k][j];
    }
    c[i][j] = t;
  }
}
kernel columns(alpha: f32, A: in f32[M][M], B: inout f32[M][N]) {
  for i in 0..M {
    parfor j in 0..N {
      for k in i + 1..M {
        B[i][j] += A[k][i] * B[k][j];
      }
      B[i][j] = alpha * B[i][j];
    }
  }
}
kernel shrinking(x: inout f32[N]) {
  for k in 0..N {
    parfor i in k..N {
      x[i] = x[i] * 0.5;
    }
  }
}
kernel rows(A: inout f32[N][N]) {
  for i in 0..N {
    for j in i..N {
      for k in 0..i {
        A[i][j] -= A[i][k] * A[k][j];
      }
    }
  }
}
kernel chained(X: inout f32[N][N]) {
  for j in 1..N {
    for k in 0..N {
      X[k][j] += X[k][j - 1];
    }
  }
}
kernel first(steps: i32, y: inout f32[N]) {
  for t in 0..steps {
    let s = y[0];
    parfor i in 1..N {
      y[i] = y[i] + s;
    }
  }
}
kernel leftlooking(A: inout f32[N][N]) {
  for i in 0..N {
    for j in 0..i {
      for k in 0..j {
        A[i][j] -= A[i][k] * A[k][j];
      }
      A[i][j] /= A[j][j];
    }
  }
}
kernel nextelement(A: inout f32[N][N]) {
  for i in 0..N {
    for j in 0..i {
      for k in 0..j {
        A[i][j] -= A[i][k + 1] * A[k][j];
      }
    }
  }
}
kernel splits(T: inout i32[N][N]) {
  for row in 0..N {
    let i = N - 1 - row;
    for j in i + 1..N {
      T[i][j] = max(T[i][j - 1], redomap(max, 0, k in i + 1..j) T[i][k] + T[k + 1][j]);
    }
  }
}
)";

// What to compile: a sample or a program's text, one of its kernels (the
// last when empty), the pipeline, the sizes a run would have and the pass
// parameters.
struct Compilation {
  std::string file; // a .loop file of the source tree, or:
  const char *text = nullptr;
  std::string kernelName;
  passes::PipelineTarget target = passes::PipelineTarget::Gpu;
  std::map<std::string, int64_t> sizes;
  std::vector<std::string> parameters;
  std::set<std::string> skipped;

  Compilation kernel(std::string name) const {
    Compilation changed = *this;
    changed.kernelName = std::move(name);
    return changed;
  }
  Compilation onCpu() const {
    Compilation changed = *this;
    changed.target = passes::PipelineTarget::Cpu;
    return changed;
  }
  Compilation at(std::map<std::string, int64_t> runSizes) const {
    Compilation changed = *this;
    changed.sizes = std::move(runSizes);
    return changed;
  }
  Compilation without(const std::string &pass) const {
    Compilation changed = *this;
    changed.skipped.insert(pass);
    return changed;
  }
  Compilation with(std::vector<std::string> passParameters) const {
    Compilation changed = *this;
    changed.parameters = std::move(passParameters);
    return changed;
  }
};

Compilation sample(const std::string &name) {
  Compilation compilation;
  compilation.file = "samples/" + name + ".loop";
  return compilation;
}

Compilation programFile(std::string path) {
  Compilation compilation;
  compilation.file = std::move(path);
  return compilation;
}

Compilation program(const char *text) {
  Compilation compilation;
  compilation.text = text;
  return compilation;
}

// The remarks of `pass` as `loopc explain --remarks --after PASS` prints
// them, one "LINE:COL: remark|warning: PASS: message" a line, without the
// file name and the quoted source.
std::vector<std::string> remarksOf(const Compilation &compilation, const std::string &pass) {
  std::unique_ptr<test::LoadedProgram> loaded =
      compilation.text ? test::loadText(compilation.text)
                       : test::loadFile(test::sourcePath(compilation.file));
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const KernelDecl *kernel = nullptr;
  for (const auto &candidate : loaded->program->modules.front()->kernels)
    if (compilation.kernelName.empty() || candidate->name == compilation.kernelName)
      kernel = candidate.get();
  REQUIRE_MESSAGE(kernel, "no kernel " << compilation.kernelName);
  passes::PipelineOptions pipeline;
  pipeline.target = compilation.target;
  pipeline.choices = test::withParameters(compilation.parameters);
  pipeline.choices.skipped = compilation.skipped;
  auto remarks =
      driver::kernelRemarks(*loaded->program, *kernel, pipeline, compilation.sizes, pass);
  REQUIRE_MESSAGE(remarks, remarks.error().message);
  std::vector<std::string> lines;
  for (const passes::Remark &remark : *remarks) {
    Diagnostic diagnostic = driver::remarkDiagnostic(remark);
    lines.push_back(std::to_string(remark.range.begin.line) + ":" +
                    std::to_string(remark.range.begin.col) + ": " +
                    (diagnostic.severity == Severity::Warning ? "warning: " : "remark: ") +
                    diagnostic.message);
  }
  return lines;
}

using Lines = std::vector<std::string>;

} // namespace

TEST_CASE("stage_shared: boxes staged with their reuse, or why not (reuse, broadcast, box fixed "
          "along the loop, written, too large)") {
  CHECK(
      remarksOf(sample("matmul").with({"register_tile=4"}), "stage_shared") ==
      Lines{
          "8:15: remark: stage_shared: the stages of k pipelined 2 deep: async copies (cp.async) "
          "into 2 buffers per box, each stage's issued 1 stage ahead of its compute",
          "8:42: remark: stage_shared: 'A' staged in shared memory: a box of 32 x 16 f32 (2 KiB) "
          "for stages of 16 iterations of k; each element is read 128 times per iteration of k",
          "8:52: remark: stage_shared: 'B' staged in shared memory: a box of 16 x 128 f32 (8 KiB) "
          "for stages of 16 iterations of k; each element is read 32 times per iteration of k"});
  CHECK(remarksOf(sample("conv2d_5x5"), "stage_shared") ==
        Lines{"10:53: remark: stage_shared: 'I' not staged: each element is read 4.4 times per "
              "iteration of v, fewer than stage_min_reuse=16 (the cache serves such repeats)",
              "10:71: remark: stage_shared: 'F' not staged: every thread of the block reads the "
              "same elements (a broadcast, which the load unit serves once per warp)"});
  CHECK(
      remarksOf(sample("conv2d_5x5").with({"stage_min_reuse=4"}), "stage_shared") ==
      Lines{"10:53: remark: stage_shared: 'I' staged in shared memory: a box of 36 x 132 f32 (18.6 "
            "KiB) for the whole loop over v; each element is read 4.4 times per iteration of v",
            "10:71: remark: stage_shared: 'F' not staged: every thread of the block reads the same "
            "elements (a broadcast, which the load unit serves once per warp)"});
  CHECK(
      remarksOf(program(kNotmove).with({"register_tile=4"}), "stage_shared") ==
      Lines{"3:15: remark: stage_shared: the stages of k pipelined 2 deep: async copies "
            "(cp.async) into 2 buffers per box, each stage's issued 1 stage ahead of its compute",
            "3:42: remark: stage_shared: 'B' staged in shared memory: a box of 32 x 32 f32 (4 KiB) "
            "for stages of 32 iterations of k; each element is read 32 times per iteration of k",
            "3:52: remark: stage_shared: 'A' not staged: its box does not move along k (every "
            "iteration reads all of it: it stays in registers)"});
  CHECK(remarksOf(program(kWritten), "stage_shared") ==
        Lines{"4:14: remark: stage_shared: 'A' not staged: the kernel also writes it (only "
              "read-only arrays are staged)"});
  CHECK(
      remarksOf(sample("matmul").with({"shared_kib=1"}), "stage_shared") ==
      Lines{
          "8:15: remark: stage_shared: the stages of k not pipelined: the boxes of 2 stages do not "
          "fit shared_kib=1 however short the stages",
          "8:42: remark: stage_shared: 'A' not staged: for stages of 2 iterations of k, the boxes "
          "of 'A' (32 x 2 f32, 0.5 KiB) and 'B' (2 x 128 f32, 1 KiB) do not fit in shared_kib=1",
          "8:52: remark: stage_shared: 'B' not staged: for stages of 2 iterations of k, the boxes "
          "of 'A' (32 x 2 f32, 0.5 KiB) and 'B' (2 x 128 f32, 1 KiB) do not fit in shared_kib=1"});
}

TEST_CASE("stage_shared: column reads staged in a transpose, or too narrow to be worth it") {
  CHECK(remarksOf(sample("transpose"), "stage_shared") ==
        Lines{"9:15: remark: stage_shared: 'A' read down columns: staged in shared memory, a box "
              "of 32 x 32 f32 (4.2 KiB) copied along its rows"});
  CHECK(remarksOf(sample("transpose").with({"register_tile=1"}), "stage_shared") ==
        Lines{"9:15: remark: stage_shared: 'A' read down columns: staged in shared memory, a box "
              "of 32 x 8 f32 (1.2 KiB) copied along its rows"});
  CHECK(remarksOf(sample("gauss"), "stage_shared") ==
        Lines{"17:17: remark: stage_shared: 'A' read down columns, not staged: a row of its box is "
              "4 bytes, less than a 32-byte sector"});
}

TEST_CASE("tile_registers: the tile chosen, or why none") {
  const std::string largeVariant =
      "7:10: remark: tile_registers: 8 x 8 points per thread instead where the grid of 8 x 8 "
      "tiles has 198 blocks or more (tested at run time): 3/4 of the 264 that fit at once, 2 per "
      "SM on 132 SMs";
  CHECK(remarksOf(sample("matmul"), "tile_registers") ==
        Lines{"7:10: remark: tile_registers: 4 x 4 points per thread along j (grid x) and i (grid "
              "y); j (grid x) copies 4 consecutive points a thread (its reads of shared memory "
              "128-bit, contiguous across a warp)",
              largeVariant});
  CHECK(remarksOf(sample("matmul").with({"register_tile=4"}), "tile_registers") ==
        Lines{"7:10: remark: tile_registers: 4 x 4 points per thread along j (grid x) and i (grid "
              "y); j (grid x) copies 4 consecutive points a thread (its reads of shared memory "
              "128-bit, contiguous across a warp)"});
  // B is read 32 times per k by a block of 4 x 4 tiles, 64 times by one of
  // 8 x 8: only the large tiles stage it.
  CHECK(remarksOf(sample("matmul").with({"stage_min_reuse=64"}), "tile_registers") ==
        Lines{"7:10: remark: tile_registers: 4 x 4 points per thread along j (grid x) and i (grid "
              "y)",
              "7:10: remark: tile_registers: j (grid x) copies a block width apart, not 4 "
              "consecutive points a thread: 'B' is read from global memory, where 4 points a "
              "thread would not coalesce",
              largeVariant});
  CHECK(remarksOf(sample("matmul").with({"pipeline_depth=3"}), "tile_registers").back() ==
        "7:10: remark: tile_registers: no 8 x 8 variant for grids that fill the GPU at "
        "pipeline_depth=3: its edge tile would spill registers");
  const std::string oneBlockPerSM =
      "remark: tile_registers: no 8 x 8 variant for grids that fill the GPU: its 64 accumulators "
      "a thread would leave room for one block per SM (two need operands streamed from shared "
      "memory filled by async copies, along at most 2 loops)";
  CHECK(remarksOf(sample("sqdist"), "tile_registers") ==
        Lines{"12:10: remark: tile_registers: 4 x 4 points per thread along j (grid x) and i (grid "
              "y)",
              "12:10: remark: tile_registers: j (grid x) copies a block width apart, not 4 "
              "consecutive points a thread: its reads of 'Y' go down a column along it",
              "12:10: " + oneBlockPerSM});
  CHECK(
      remarksOf(sample("matmul").with({"register_tile=2"}), "tile_registers") ==
      Lines{
          "7:10: remark: tile_registers: 2 x 2 points per thread along j (grid x) and i (grid y)"});
  CHECK(remarksOf(sample("cnn_conv").kernel("cnn_conv_valid"), "tile_registers") ==
        Lines{"13:10: remark: tile_registers: 4 x 4 points per thread along x (grid x) and o (grid "
              "z); not along y (grid y): a thread has 4^2 = 16 points already",
              "13:10: remark: tile_registers: x (grid x) copies a block width apart, not 4 "
              "consecutive points a thread: its reads of 'I' slide along the row with 'v' "
              "(unaligned)",
              "13:10: " + oneBlockPerSM});
  CHECK(remarksOf(program(kNoreuse), "tile_registers") ==
        Lines{"2:10: remark: tile_registers: not tiled: no load in a loop of the body is invariant "
              "along j (grid x) or i (grid y), so neighbouring points share no loads"});
  CHECK(remarksOf(sample("mv"), "tile_registers") ==
        Lines{"7:10: remark: tile_registers: not tiled: 1 mapped dimension; tiles need 2 or more, "
              "so that the grid keeps enough blocks"});
  CHECK(remarksOf(sample("gauss"), "tile_registers") ==
        Lines{"19:12: remark: tile_registers: not tiled: the nest reads 'A', which it writes (a "
              "copy past the edge, clamped, could read an element another thread has written)"});
  CHECK(remarksOf(sample("matmul").with({"register_tile=1"}), "tile_registers") ==
        Lines{"7:10: remark: tile_registers: not tiled: register_tile=1"});
  // A body without a loop: rows in flight, unless the grid would leave SMs
  // idle at the run's sizes.
  CHECK(remarksOf(sample("transpose"), "tile_registers") ==
        Lines{"8:10: remark: tile_registers: 4 consecutive points per thread along i (grid y): the "
              "body has no loop, so their loads are in flight together"});
  CHECK(remarksOf(sample("transpose").at({{"M", 64}, {"N", 64}}), "tile_registers") ==
        Lines{"8:10: remark: tile_registers: a point per thread at these sizes: the grid of 4 "
              "points a thread along i (grid y) would have 4 blocks, fewer than the 132 SMs"});
  CHECK(remarksOf(sample("transpose").with({"register_tile=1"}), "tile_registers") ==
        Lines{"8:10: remark: tile_registers: not tiled: register_tile=1"});
}

TEST_CASE("map_rows_to_blocks: a block per row, or each reason a row keeps a thread") {
  CHECK(remarksOf(sample("mv"), "map_rows_to_blocks") ==
        Lines{"7:10: remark: map_rows_to_blocks: a block of 256 threads per row of i when N >= 64 "
              "(tested at run time; shorter rows keep a thread each)"});
  CHECK(remarksOf(program(kRows).kernel("readswritten"), "map_rows_to_blocks") ==
        Lines{"5:10: remark: map_rows_to_blocks: each row of i keeps a thread: the block cannot "
              "share the row: it reads 'A', which it writes (thread 0's store would race with the "
              "other threads' reads)"});
  CHECK(remarksOf(program(kRows).kernel("twowriters"), "map_rows_to_blocks") ==
        Lines{"10:10: remark: map_rows_to_blocks: each row of i keeps a thread: the block cannot "
              "share the row: 'B' is written by an inner parfor and by another statement of the "
              "row (nothing orders two threads' stores to one element)"});
  CHECK(remarksOf(program(kRows).kernel("underif"), "map_rows_to_blocks") ==
        Lines{"18:10: remark: map_rows_to_blocks: each row of i keeps a thread: the block cannot "
              "share the row: a redomap sits under an 'if' on a redomap's result (the block tree's "
              "barriers need control flow that is visibly the same in every thread)"});
  CHECK(remarksOf(program(kRows).kernel("privaterow"), "map_rows_to_blocks") ==
        Lines{"52:10: remark: map_rows_to_blocks: each row of i keeps a thread: the block cannot "
              "share the row: an inner parfor writes 't', an array private to the row (each thread "
              "would hold only its share)"});
  CHECK(remarksOf(program(kRows).kernel("colsum"), "map_rows_to_blocks") ==
        Lines{"26:10: remark: map_rows_to_blocks: each row of j keeps a thread: no load of its "
              "redomaps or inner parfors is contiguous along their loop and not along the rows (a "
              "thread per row reads as well)"});
  CHECK(remarksOf(program(kRows).kernel("triangle"), "map_rows_to_blocks") ==
        Lines{"36:10: remark: map_rows_to_blocks: each row of i keeps a thread: a row's length is "
              "known only inside the row, too late to choose"});
  CHECK(remarksOf(program(kRows).kernel("ordered"), "map_rows_to_blocks") ==
        Lines{"31:10: remark: map_rows_to_blocks: a block of 256 threads per row of i when N >= 64 "
              "(tested at run time; shorter rows keep a thread each)",
              "32:12: warning: map_rows_to_blocks: the operator 'larger' does not commute, so this "
              "reduction is walked in order: each thread folds a contiguous chunk (neighbouring "
              "threads read far-apart elements) and the partials combine neighbour by neighbour; "
              "an operator symmetric in its operands, or a builtin one such as max, would allow a "
              "strided walk and a halving tree"});
}

TEST_CASE(
    "split_reductions: the second version and its test, or why a row's reduction is not split") {
  CHECK(remarksOf(sample("mv"), "split_reductions") ==
        Lines{"8:12: remark: split_reductions: a second version splits each row of i into parts "
              "(blocks), which the host picks when min(1024 / M, N / 8192) is 2 or more"});
  CHECK(remarksOf(program(kRows).kernel("colsum"), "split_reductions") ==
        Lines{"27:12: remark: split_reductions: a second version splits each row of j into parts "
              "(threads), which the host picks when min(262144 / N, M / 32) is 2 or more"});
  CHECK(remarksOf(sample("mv").onCpu(), "split_reductions") ==
        Lines{"8:12: remark: split_reductions: a second version splits each row of i into parts "
              "(blocks), which the host picks when min(1024 / M, N / 8192) is 2 or more"});
  CHECK(remarksOf(program(kRows).kernel("ordered"), "split_reductions") ==
        Lines{"32:12: remark: split_reductions: the rows of i are not split: its operator 'larger' "
              "is a user's; only builtin operators' partials are split"});
  CHECK(remarksOf(program(kRows).kernel("triangle"), "split_reductions") ==
        Lines{"37:12: remark: split_reductions: the rows of i are not split: its range depends on "
              "the row (i); only a range the same for every row is split"});
  CHECK(remarksOf(program(kRows).kernel("twoloops"), "split_reductions") ==
        Lines{"42:12: remark: split_reductions: the rows of i are not split: it reduces over 2 "
              "loops; only a reduction over one is split"});
  CHECK(remarksOf(program(kRows).kernel("notfirst"), "split_reductions") ==
        Lines{"48:12: remark: split_reductions: the rows of i are not split: the row does not "
              "start with it (only lets may come before its accumulator)"});
}

TEST_CASE("fuse_producers: an array computed at its read, or why it is stored") {
  CHECK(remarksOf(program(kFusion).kernel("fused"), "fuse_producers") ==
        Lines{"3:10: remark: fuse_producers: 't' fused into its reader at line 7: each element is "
              "computed where it is read, and the array is never stored"});
  CHECK(remarksOf(program(kFusion).kernel("readtwice"), "fuse_producers") ==
        Lines{"12:10: remark: fuse_producers: 't' not fused into its reader: it is read at 2 "
              "places, not once"});
  CHECK(remarksOf(program(kFusion).kernel("shifted"), "fuse_producers") ==
        Lines{"24:10: remark: fuse_producers: 't' not fused into its reader: its read at line 28 "
              "is not indexed by exactly the parallel and reduction loops around it, each once, so "
              "an element would be computed more than once"});
  CHECK(remarksOf(program(kFusion).kernel("divides"), "fuse_producers") ==
        Lines{"33:10: remark: fuse_producers: 't' not fused into its reader: its element divides "
              "integers (a division by zero would move)"});
  CHECK(remarksOf(program(kFusion).kernel("overwritten"), "fuse_producers") ==
        Lines{"42:10: remark: fuse_producers: 't' not fused into its reader: its element reads "
              "'x', which a statement up to its read at line 49 writes"});
  CHECK(remarksOf(program(kFusion).kernel("inloop"), "fuse_producers") ==
        Lines{"54:10: remark: fuse_producers: 't' not fused into its reader: its read at line 59 "
              "is inside a serial loop, which would compute each element again"});
  CHECK(remarksOf(program(kFusion).kernel("twice"), "fuse_producers") ==
        Lines{"65:10: remark: fuse_producers: 't' not fused into its reader: it is written by 2 "
              "statements, not by its producer alone",
              "68:10: remark: fuse_producers: 't' not fused into its reader: it is written by 2 "
              "statements, not by its producer alone"});
  CHECK(remarksOf(sample("nbody"), "fuse_producers") ==
        Lines{"21:10: remark: fuse_producers: 'acc' not fused into its reader: its parfor's body "
              "is more than lets and one store to it"});
}

TEST_CASE("fuse_sibling_reductions: the group, or why a reduction does not join it") {
  CHECK(remarksOf(sample("row_stats"), "fuse_sibling_reductions") ==
        Lines{"11:13: remark: fuse_sibling_reductions: fused with the redomap at line 12: one loop "
              "nest walks their loops once"});
  CHECK(remarksOf(sample("nbody"), "fuse_sibling_reductions") ==
        Lines{"22:17: remark: fuse_sibling_reductions: fused with its 2 unrolled copies: one loop "
              "nest walks their loops once"});
  CHECK(remarksOf(program(kReductions).kernel("siblings"), "fuse_sibling_reductions") ==
        Lines{"6:7: remark: fuse_sibling_reductions: not fused with the redomap at line 5: its "
              "loop over 0..M is not that of the redomap at line 5, over 0..N"});
  CHECK(remarksOf(sample("softmax"), "fuse_sibling_reductions") ==
        Lines{"12:13: remark: fuse_sibling_reductions: not fused with the redomap at line 11: it "
              "uses 'm', bound between them from the group's results"});
}

TEST_CASE("privatize_combines: a histogram per block, or why an array keeps its global atomics") {
  CHECK(remarksOf(sample("histogram").kernel("histogram"), "privatize_combines") ==
        Lines{"25:18: remark: privatize_combines: 'H' gets a copy per block in shared memory (room "
              "for 6144 i32), which the host picks when it fits and its elements times the blocks "
              "(at most 528) are at most the iterations; a thread's iterations 4 at a time, their "
              "loads of 'x' issued first, all in flight together"});
  CHECK(remarksOf(sample("histogram").kernel("histogram").onCpu(), "privatize_combines") ==
        Lines{"25:18: remark: privatize_combines: 'H' gets a copy per block in shared memory (room "
              "for 6144 i32), which the host picks when it fits and its elements times the blocks "
              "(at most 1024) are at most the iterations; its combines staged, 256 iterations at "
              "a time: a vector loop finds where they go, a scalar loop makes them"});
  CHECK(remarksOf(program(kCombines).kernel("looped").onCpu(), "privatize_combines") ==
        Lines{"20:10: remark: privatize_combines: combines not staged (a loop in the body): each "
              "iteration's work stays scalar",
              "22:18: remark: privatize_combines: 'H' gets a copy per block in shared memory (room "
              "for 6144 i32), which the host picks when it fits and its elements times the blocks "
              "(at most 1024) are at most the iterations"});
  // On the GPU a thread's iterations go 4 at a time where each makes loads
  // whatever its data: not x's in a loop, nor values' under a test.
  CHECK(remarksOf(program(kCombines).kernel("looped"), "privatize_combines") ==
        Lines{"22:18: remark: privatize_combines: 'H' gets a copy per block in shared memory (room "
              "for 6144 i32), which the host picks when it fits and its elements times the blocks "
              "(at most 528) are at most the iterations"});
  CHECK(remarksOf(sample("histogram").kernel("bin_stats"), "privatize_combines") ==
        Lines{"14:18: remark: privatize_combines: 'sum' gets a copy per block in shared memory "
              "(room for 3072 f32), which the host picks when it fits and its elements times the "
              "blocks (at most 528) are at most the iterations; a thread's iterations 4 at a time, "
              "their loads of 'keys' issued first, all in flight together",
              "15:20: remark: privatize_combines: 'largest' gets a copy per block in shared memory "
              "(room for 3072 f32), which the host picks when it fits and its elements times the "
              "blocks (at most 528) are at most the iterations; a thread's iterations 4 at a time, "
              "their loads of 'keys' issued first, all in flight together"});
  CHECK(remarksOf(program(kCombines).kernel("bigbins"), "privatize_combines") ==
        Lines{"6:16: remark: privatize_combines: 'H' keeps its global atomics: its 100000 elements "
              "are more than the 6144 its share of shared_kib=24 holds"});
  CHECK(remarksOf(program(kCombines).kernel("otherwork"), "privatize_combines") ==
        Lines{"10:10: remark: privatize_combines: no private copies: the nest does more than "
              "combine (a redomap, or a loop without a combine), work left to the tiling passes"});
  CHECK(remarksOf(program(kCombines).kernel("useroperator"), "privatize_combines") ==
        Lines{"16:22: remark: privatize_combines: 'H' keeps its global atomics: its operator "
              "'biggest' is a user's, with no known neutral element"});
}

const char *const kLagged = R"(kernel far(A: inout f32[N][M], B: inout f32[N][M]) {
  parfor i in 5..N - 5, j in 0..M { B[i][j] = A[i - 5][j] + A[i + 5][j]; }
  parfor i in 5..N - 5, j in 0..M { A[i][j] = B[i][j]; }
}
kernel apart(A: inout f32[N][M], B: inout f32[N][M]) {
  parfor i in 0..N, j in 0..M { B[i][j] = A[(i * 7) % N][j]; }
  parfor i in 0..N, j in 0..M { A[i][j] = B[i][j]; }
}
)";

TEST_CASE("fuse_with_lag: nests fused a few rows apart, or why not") {
  CHECK(remarksOf(sample("jacobi2d").onCpu(), "fuse_with_lag") ==
        Lines{"13:12: remark: fuse_with_lag: fused with the parfor before it, 1 row behind: each "
              "chunk of rows is read and written once while in cache, its first and last 1 row in "
              "a second launch"});
  CHECK(remarksOf(sample("jacobi1d").onCpu(), "fuse_with_lag") ==
        Lines{"13:12: remark: fuse_with_lag: not fused with the parfor before it, a few rows "
              "behind: a nest of one dimension (its points are the vector lanes, which a lag "
              "would serialize)"});
  CHECK(remarksOf(program(kLagged).kernel("far").onCpu(), "fuse_with_lag") ==
        Lines{"3:10: remark: fuse_with_lag: not fused with the parfor before it, a few rows "
              "behind: its rows read 5 rows away, more than 4"});
  // Rows no constant distance apart: nothing of this kind, nothing said.
  CHECK(remarksOf(program(kLagged).kernel("apart").onCpu(), "fuse_with_lag").empty());
}

TEST_CASE("interchange_column_walks and hoist_independent_parfors: CPU locality, or why not") {
  CHECK(remarksOf(program(kLocality).kernel("triangle").onCpu(), "interchange_column_walks") ==
        Lines{"2:21: remark: interchange_column_walks: interchanged with the loop over k (line 4): "
              "j runs innermost, along the rows of 'd', each j's terms in their order"});
  CHECK(remarksOf(program(kLocality).kernel("square").onCpu(), "interchange_column_walks") ==
        Lines{"10:21: remark: interchange_column_walks: not interchanged with the loop over k "
              "(line 12): j is mapped to CPU threads, whose loop already runs inside it"});
  CHECK(remarksOf(program(kLocality).kernel("scalar").onCpu(), "interchange_column_walks") ==
        Lines{"18:21: remark: interchange_column_walks: not interchanged with the loop over k "
              "(line 20): the body binds names its statements share"});
  // rows and leftlooking are serial chains that jam_serial_chains runs
  // several at a time (faster still); without it, their columns are walked
  // along rows.
  CHECK(remarksOf(program(kLocality).kernel("rows").onCpu(), "jam_serial_chains") ==
        Lines{"45:9: remark: jam_serial_chains: the loop over j runs 16 iterations together: their "
              "chains over k interleaved, each element's steps in their order"});
  CHECK(
      remarksOf(program(kLocality).kernel("rows").onCpu().without("jam_serial_chains"),
                "interchange_column_walks") ==
      Lines{"45:9: remark: interchange_column_walks: interchanged with the loop over k (line 46): "
            "j runs innermost, along the rows of 'A', each j's terms in their order"});
  CHECK(remarksOf(program(kLocality).kernel("chained").onCpu(), "interchange_column_walks") ==
        Lines{"53:7: remark: interchange_column_walks: not interchanged with the loop over k (line "
              "54): the iterations of the serial loop over j are not proven independent (each "
              "writing its own slice, reading no other's)"});
  CHECK(
      remarksOf(program(kLocality).kernel("leftlooking").onCpu().without("jam_serial_chains"),
                "interchange_column_walks") ==
      Lines{"69:9: remark: interchange_column_walks: interchanged with its loop over k (line 70): "
            "each k finishes its element, then updates the later js along the rows of 'A', each "
            "j's terms in their order"});
  // Pushed, A[i][k + 1] would be read before its own statements finish it.
  CHECK(remarksOf(program(kLocality).kernel("nextelement").onCpu(), "interchange_column_walks") ==
        Lines{"79:9: remark: interchange_column_walks: not interchanged with its loop over k below "
              "j (line 80): it reads 'A' elsewhere than at element j, element k or another slice"});
  CHECK(remarksOf(program(kLocality).kernel("splits").onCpu(), "interchange_column_walks") ==
        Lines{"90:34: remark: interchange_column_walks: the reduction over k below j pushed by "
              "each k into the later js' partial results, along the rows of 'T'"});
  CHECK(remarksOf(program(kLocality).kernel("columns").onCpu(), "promote_invariant_elements") ==
        Lines{"30:9: remark: promote_invariant_elements: 'B' kept in a register across the loop "
              "over k: the element it updates at each iteration, which no other access there "
              "touches"});
  CHECK(remarksOf(program(kLocality).kernel("nextelement").onCpu(), "promote_invariant_elements") ==
        Lines{"81:9: remark: promote_invariant_elements: 'A' not kept in a register across the "
              "loop over k: the access at line 81 is not proven to touch another element"});
  CHECK(
      remarksOf(program(kLocality).kernel("columns").onCpu(), "hoist_independent_parfors") ==
      Lines{"28:12: remark: hoist_independent_parfors: hoisted out of the serial loop over i: one "
            "launch, each point's slices of the arrays written stay in its cache across i"});
  CHECK(
      remarksOf(program(kLocality).kernel("shrinking").onCpu(), "hoist_independent_parfors") ==
      Lines{"38:12: remark: hoist_independent_parfors: not hoisted out of the serial loop over k: "
            "its bounds move with k"});
  CHECK(
      remarksOf(program(kLocality).kernel("first").onCpu(), "hoist_independent_parfors") ==
      Lines{"62:12: remark: hoist_independent_parfors: not hoisted out of the serial loop over t: "
            "'y' is accessed outside the slice each i owns"});
}

TEST_CASE("transpose_column_reads: columns read again from a transposed copy, or why not") {
  Compilation transposes = programFile("tests/programs/passes/transpose.loop");
  auto copied = [](int line, int col, const std::string &array, const std::string &along) {
    return std::to_string(line) + ":" + std::to_string(col) +
           ": remark: transpose_column_reads: '" + array + "' read down a column along " + along +
           ", again at each iteration over i: read from a copy transposed before the nest, along "
           "its rows";
  };
  CHECK(remarksOf(transposes.kernel("tri2").onCpu(), "transpose_column_reads") ==
        Lines{copied(12, 20, "A", "j"), copied(12, 48, "B", "j")});
  CHECK(remarksOf(transposes.kernel("three").onCpu(), "transpose_column_reads") ==
        Lines{copied(35, 25, "X", "j")});
  CHECK(remarksOf(transposes.kernel("written").onCpu(), "transpose_column_reads") ==
        Lines{"75:20: remark: transpose_column_reads: 'A' read down a column along j: no "
              "transposed copy, the nest writes it",
              "78:19: remark: transpose_column_reads: 'C' read down a column along i: no "
              "transposed copy, the nest writes it"});
  CHECK(remarksOf(sample("transpose").onCpu(), "transpose_column_reads") ==
        Lines{"9:15: remark: transpose_column_reads: 'A' read down a column along j: no "
              "transposed copy, each element is read once"});
  // B[j][k] runs along k, but across the lanes (j) down a column.
  CHECK(
      remarksOf(transposes.kernel("nt").onCpu(), "transpose_column_reads") ==
      Lines{"88:28: remark: transpose_column_reads: 'B' read down a column along j, again at "
            "each iteration over i: read from a copy transposed before the nest, along its rows"});
  // gemm's B[k][j] is a column along k, but the threads over j run inside
  // k as vector lanes, which read it along a row.
  CHECK(remarksOf(programFile("tests/programs/polybench/gemm.loop").kernel("gemm").onCpu(),
                  "transpose_column_reads")
            .empty());
}

TEST_CASE("jam_serial_chains: iterations of a serial loop run together, or why not") {
  Compilation chains = programFile("tests/programs/passes/chains.loop");
  auto jammed = [](int line, int col, const std::string &loop, int copies,
                   const std::string &steps) {
    return std::to_string(line) + ":" + std::to_string(col) +
           ": remark: jam_serial_chains: the loop over " + loop + " runs " +
           std::to_string(copies) + " iterations together: their chains over " + steps +
           " interleaved, each element's steps in their order";
  };
  CHECK(remarksOf(chains.kernel("solve").onCpu(), "jam_serial_chains") ==
        Lines{jammed(7, 7, "i", 4, "j")});
  // The copies' loads side by side: more copies, made vectors by LLVM.
  CHECK(remarksOf(chains.kernel("lu").onCpu(), "jam_serial_chains") ==
        Lines{jammed(19, 9, "j", 16, "k"), jammed(26, 9, "j", 16, "k")});
  CHECK(remarksOf(chains.kernel("lumem").onCpu(), "jam_serial_chains") ==
        Lines{jammed(87, 9, "j", 16, "k"), jammed(93, 9, "j", 16, "k")});
  // A parfor's points are independent: rows apart, 4 run together in a
  // thread; side by side, the threads' vector lanes run them.
  CHECK(remarksOf(chains.kernel("rowdots").onCpu(), "jam_serial_chains") ==
        Lines{jammed(105, 10, "i", 4, "j")});
  CHECK(remarksOf(chains.kernel("coldots").onCpu(), "jam_serial_chains").empty());
  // The statements around a chain may hold loops of their own.
  CHECK(remarksOf(chains.kernel("atax").onCpu(), "jam_serial_chains") ==
        Lines{jammed(131, 7, "i", 4, "j")});
  CHECK(remarksOf(chains.kernel("rows").onCpu(), "jam_serial_chains") ==
        Lines{jammed(38, 7, "i", 4, "k")});
  CHECK(remarksOf(chains.kernel("upper").onCpu(), "jam_serial_chains") ==
        Lines{jammed(51, 7, "i", 4, "j")});
  CHECK(remarksOf(chains.kernel("back").onCpu(), "jam_serial_chains") ==
        Lines{"63:7: remark: jam_serial_chains: the iterations of the loop over ii not run "
              "together: the access at line 67 would run before an access of an earlier "
              "iteration, one of them a write, not proven to touch another element"});
  CHECK(remarksOf(chains.kernel("reaching").onCpu(), "jam_serial_chains") ==
        Lines{"76:7: remark: jam_serial_chains: the iterations of the loop over i not run "
              "together: the access at line 78 would run before an access of an earlier "
              "iteration, one of them a write, not proven to touch another element"});
}

TEST_CASE("interleave_reductions: a CPU fold in vector lanes, or why not") {
  CHECK(remarksOf(sample("softmax").onCpu(), "interleave_reductions") ==
        Lines{"11:13: remark: interleave_reductions: the fold (max) runs in 64 f32 lanes, halved "
              "into the result at the end (LLVM would combine one element at a time)"});
  CHECK(remarksOf(program(kReductions).kernel("shortmax").onCpu(), "interleave_reductions") ==
        Lines{"13:12: remark: interleave_reductions: the fold (max) keeps one combine at a time: "
              "its 16 iterations are fewer than 2 x 64 lanes"});
  CHECK(remarksOf(program(kReductions).kernel("colmax").onCpu(), "interleave_reductions") ==
        Lines{"18:12: remark: interleave_reductions: the fold (max) is not interleaved: the "
              "threads' vector lanes run it side by side already"});
  // A whole-array fold: the host code's loop for few points in lanes, the
  // tree's threads side by side.
  CHECK(remarksOf(program(kReductions).kernel("largest").onCpu(), "interleave_reductions") ==
        Lines{"22:7: remark: interleave_reductions: the fold (max) runs in 64 f32 lanes in the "
              "host code when the run finds few points (else the tree), halved into the result "
              "at the end",
              "22:7: remark: interleave_reductions: the fold (max) is not interleaved: the "
              "threads' vector lanes run it side by side already"});
}

TEST_CASE("combine_in_warps: block trees of reductions and rows combined in warps") {
  CHECK(remarksOf(sample("dot"), "combine_in_warps") ==
        Lines{"7:7: remark: combine_in_warps: the block tree combines in warps: 5 register "
              "shuffles and 1 barrier instead of 8 halving steps with a barrier each"});
  CHECK(remarksOf(sample("row_stats"), "combine_in_warps") ==
        Lines{"10:10: remark: combine_in_warps: the block tree of 2 reductions combines in warps: "
              "5 register shuffles and 1 barrier instead of 8 halving steps with a barrier each"});
}

TEST_CASE("specialize_sizes: a small window size compiled as a constant, a large one not, none "
          "without a value") {
  CHECK(remarksOf(program(kLayout).kernel("window").at({{"K", 5}}), "specialize_sizes") ==
        Lines{"2:29: remark: specialize_sizes: K = 5 is compiled as a constant: its loops may "
              "unroll, and boxes spanning them have constant sizes"});
  CHECK(remarksOf(program(kLayout).kernel("window").at({{"K", 64}}), "specialize_sizes") ==
        Lines{"2:29: remark: specialize_sizes: K = 64 stays a run-time value: only sizes up to 16 "
              "are compiled as constants"});
  CHECK(remarksOf(program(kLayout).kernel("window"), "specialize_sizes") == Lines{});
}

TEST_CASE("warnings: uncoalesced accesses, and reductions walked in order by an operator that does "
          "not commute") {
  CHECK(remarksOf(program(kLayout).kernel("flip"), "map_to_gpu") ==
        Lines{"8:5: warning: map_to_gpu: 'B' is written uncoalesced: the threads of a warp take "
              "consecutive values of j (grid x), its first index, so they touch elements N apart; "
              "with j as its last index (the loops or the array's layout swapped) a warp would "
              "touch neighbouring elements"});
  CHECK(remarksOf(sample("gauss"), "map_to_gpu") ==
        Lines{"17:7: warning: map_to_gpu: 'L' is written uncoalesced: the threads of a warp take "
              "consecutive values of i (grid x), its first index, so they touch elements N apart; "
              "with i as its last index (the loops or the array's layout swapped) a warp would "
              "touch neighbouring elements",
              "17:17: warning: map_to_gpu: 'A' is read uncoalesced: the threads of a warp take "
              "consecutive values of i (grid x), its first index, so they touch elements N apart; "
              "with i as its last index (the loops or the array's layout swapped) a warp would "
              "touch neighbouring elements"});
  CHECK(remarksOf(sample("nbody"), "map_to_gpu") == Lines{});
  CHECK(remarksOf(program(kRows).kernel("privaterow"), "map_to_gpu") ==
        Lines{"55:14: warning: map_to_gpu: 'A' is read uncoalesced: the threads of a warp take "
              "consecutive values of i (grid x), its first index, so they touch elements N apart; "
              "with i as its last index (the loops or the array's layout swapped) a warp would "
              "touch neighbouring elements"});
  // Over one loop the GPU loads a chunk's pieces coalesced: a remark; over
  // two, and on the CPU, a warning.
  CHECK(remarksOf(program(kReductions).kernel("ordered"), "lower_reductions") ==
        Lines{"9:7: remark: lower_reductions: the operator 'larger' does not commute, so this "
              "reduction is walked in order: each thread folds a contiguous chunk, 8 points at a "
              "time, which its block loads coalesced and hands over in shared memory; the "
              "partials combine neighbour by neighbour"});
  CHECK(remarksOf(program(kReductions).kernel("ordered2d"), "lower_reductions") ==
        Lines{"25:7: warning: lower_reductions: the operator 'larger' does not commute, so this "
              "reduction is walked in order: each thread folds a contiguous chunk (neighbouring "
              "threads read far-apart elements) and the partials combine neighbour by neighbour; "
              "an operator symmetric in its operands, or a builtin one such as max, would allow a "
              "strided walk and a halving tree"});
  CHECK(remarksOf(program(kReductions).kernel("ordered").onCpu(), "lower_reductions") ==
        Lines{"9:7: warning: lower_reductions: the operator 'larger' does not commute, so this "
              "reduction is walked in order: each thread folds a contiguous chunk (neighbouring "
              "threads read far-apart elements) and the partials combine neighbour by neighbour; "
              "an operator symmetric in its operands, or a builtin one such as max, would allow a "
              "strided walk and a halving tree"});
  CHECK(remarksOf(program(kRows).kernel("ordered"), "map_rows_to_blocks") ==
        Lines{"31:10: remark: map_rows_to_blocks: a block of 256 threads per row of i when N >= 64 "
              "(tested at run time; shorter rows keep a thread each)",
              "32:12: warning: map_rows_to_blocks: the operator 'larger' does not commute, so this "
              "reduction is walked in order: each thread folds a contiguous chunk (neighbouring "
              "threads read far-apart elements) and the partials combine neighbour by neighbour; "
              "an operator symmetric in its operands, or a builtin one such as max, would allow a "
              "strided walk and a halving tree"});
  CHECK(remarksOf(sample("sum_max").kernel("sum_and_max"), "fuse_sibling_reductions") ==
        Lines{"22:11: remark: fuse_sibling_reductions: fused with the redomap at line 23: one pair "
              "of tree kernels walks their loops once",
              "23:13: remark: fuse_sibling_reductions: the operator 'larger' does not commute, so "
              "this reduction is walked in order: each thread folds a contiguous chunk, 8 points "
              "at a time, which its block loads coalesced and hands over in shared memory; the "
              "partials combine neighbour by neighbour"});
}

TEST_CASE("samples: every remark of a kernel, in source order") {
  // (At the default register_tile=0 the 8 x 8 variant's remarks come too:
  // the tile_registers test case.)
  CHECK(
      remarksOf(sample("matmul").with({"register_tile=4"}), "") ==
      Lines{
          "7:10: remark: tile_registers: 4 x 4 points per thread along j (grid x) and i (grid y); "
          "j (grid x) copies 4 consecutive points a thread (its reads of shared memory 128-bit, "
          "contiguous across a warp)",
          "8:15: remark: stage_shared: the stages of k pipelined 2 deep: async copies (cp.async) "
          "into 2 buffers per box, each stage's issued 1 stage ahead of its compute",
          "8:42: remark: stage_shared: 'A' staged in shared memory: a box of 32 x 16 f32 (2 KiB) "
          "for stages of 16 iterations of k; each element is read 128 times per iteration of k",
          "8:52: remark: stage_shared: 'B' staged in shared memory: a box of 16 x 128 f32 (8 KiB) "
          "for stages of 16 iterations of k; each element is read 32 times per iteration of k"});
  CHECK(remarksOf(sample("transpose"), "") ==
        Lines{"8:10: remark: tile_registers: 4 consecutive points per thread along i (grid y): the "
              "body has no loop, so their loads are in flight together",
              "9:15: remark: stage_shared: 'A' read down columns: staged in shared memory, a box "
              "of 32 x 32 f32 (4.2 KiB) copied along its rows"});
  CHECK(remarksOf(sample("softmax"), "") ==
        Lines{"10:10: remark: map_rows_to_blocks: a block of 256 threads per row of r when C >= 64 "
              "(tested at run time; shorter rows keep a thread each)",
              "10:10: remark: combine_in_warps: the block tree combines in warps: 5 register "
              "shuffles and 1 barrier instead of 8 halving steps with a barrier each",
              "10:10: remark: tile_registers: not tiled: 1 mapped dimension; tiles need 2 or more, "
              "so that the grid keeps enough blocks",
              "11:13: remark: split_reductions: a second version splits each row of r into parts "
              "(blocks), which the host picks when min(1024 / R, C / 8192) is 2 or more",
              "11:43: remark: stage_shared: 'X' not staged: each element is read once per "
              "iteration of c, fewer than stage_min_reuse=16 (the cache serves such repeats)",
              "12:13: remark: fuse_sibling_reductions: not fused with the redomap at line 11: it "
              "uses 'm', bound between them from the group's results",
              "12:44: remark: stage_shared: 'X' not staged: each element is read once per "
              "iteration of c, fewer than stage_min_reuse=16 (the cache serves such repeats)",
              "14:21: remark: stage_shared: 'X' not staged: each element is read once per "
              "iteration of c, fewer than stage_min_reuse=16 (the cache serves such repeats)"});
  CHECK(remarksOf(sample("softmax").onCpu(), "") ==
        Lines{"11:13: remark: split_reductions: a second version splits each row of r into parts "
              "(blocks), which the host picks when min(1024 / R, C / 8192) is 2 or more",
              "11:13: remark: interleave_reductions: the fold (max) runs in 64 f32 lanes, halved "
              "into the result at the end (LLVM would combine one element at a time)",
              "12:13: remark: fuse_sibling_reductions: not fused with the redomap at line 11: it "
              "uses 'm', bound between them from the group's results"});
  CHECK(remarksOf(sample("histogram").kernel("histogram"), "") ==
        Lines{"25:18: remark: privatize_combines: 'H' gets a copy per block in shared memory (room "
              "for 6144 i32), which the host picks when it fits and its elements times the blocks "
              "(at most 528) are at most the iterations; a thread's iterations 4 at a time, their "
              "loads of 'x' issued first, all in flight together"});
  CHECK(remarksOf(sample("sum_max").kernel("sum_and_max").onCpu(), "") ==
        Lines{"22:11: remark: fuse_sibling_reductions: fused with the redomap at line 23: one pair "
              "of tree kernels walks their loops once",
              "23:13: warning: fuse_sibling_reductions: the operator 'larger' does not commute, so "
              "this reduction is walked in order: each thread folds a contiguous chunk "
              "(neighbouring threads read far-apart elements) and the partials combine neighbour "
              "by neighbour; an operator symmetric in its operands, or a builtin one such as max, "
              "would allow a strided walk and a halving tree"});
}

TEST_CASE(
    "every sample's remarks: the same every run, each once, in source order, on both pipelines") {
  std::vector<std::string> samples;
  for (const auto &entry : std::filesystem::directory_iterator(test::sourcePath("samples")))
    if (entry.path().extension() == ".loop")
      samples.push_back(entry.path().stem().string());
  std::ranges::sort(samples);
  REQUIRE(samples.size() > 10);
  for (const std::string &file : samples) {
    auto loaded = test::loadFile(test::sourcePath("samples/" + file + ".loop"));
    REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
    for (const auto &kernel : loaded->program->modules.front()->kernels)
      for (bool cpu : {false, true}) {
        CAPTURE(file);
        CAPTURE(kernel->name);
        CAPTURE(cpu);
        Compilation compilation =
            cpu ? sample(file).kernel(kernel->name).onCpu() : sample(file).kernel(kernel->name);
        Lines first = remarksOf(compilation, "");
        CHECK(remarksOf(compilation, "") == first);
        CHECK(std::set<std::string>(first.begin(), first.end()).size() == first.size());
        passes::PipelineOptions pipeline;
        pipeline.target = compilation.target;
        auto remarks = driver::kernelRemarks(*loaded->program, *kernel, pipeline, {});
        REQUIRE(remarks);
        // By file, line and column (a called kernel's remarks are in its file).
        CHECK(std::ranges::is_sorted(*remarks, {}, [](const passes::Remark &remark) {
          return std::pair(!remark.range.valid(), remark.range.begin);
        }));
      }
  }
}

TEST_CASE("a pass left out by --skip-pass says nothing, and bounds checks keep what is proven") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  const KernelDecl &kernel = *loaded->program->modules.front()->kernels.front();
  auto passesReporting = [&](const passes::PassChoices &choices) {
    passes::PipelineOptions pipeline;
    pipeline.choices = choices;
    auto remarks = driver::kernelRemarks(*loaded->program, kernel, pipeline, {});
    REQUIRE(remarks);
    std::set<std::string> names;
    for (const passes::Remark &remark : *remarks)
      names.insert(remark.pass);
    return names;
  };
  CHECK(passesReporting({}) == std::set<std::string>{"stage_shared", "tile_registers"});
  passes::PassChoices skipped;
  skipped.skipped = {"tile_registers"};
  CHECK(passesReporting(skipped) == std::set<std::string>{"stage_shared"});
  // matmul's indices are all proven in range: under bounds checks every
  // pass runs, and none is left to check.
  passes::PassChoices checked;
  checked.boundsChecks = true;
  CHECK(passesReporting(checked) == std::set<std::string>{"stage_shared", "tile_registers"});
}

TEST_CASE("the collector keeps each remark once, in the order reported, and shows them by place") {
  passes::Remarks remarks;
  SourceRange early{{1, 2, 1}, {1, 2, 4}}, late{{1, 3, 5}, {1, 3, 9}};
  passes::RemarkReporter tile(&remarks, "tile_registers"), stage(&remarks, "stage_shared");
  stage.declined(late, "not staged");
  tile.applied(early, "tiled");
  stage.declined(late, "not staged"); // a second look at the same loop
  stage.declined(late, "other reason");
  tile.warning({}, "nowhere");
  tile.applied(late, "not staged"); // the same words from another pass
  auto describe = [](const std::vector<passes::Remark> &list) {
    std::vector<std::string> lines;
    for (const passes::Remark &remark : list)
      lines.push_back(std::to_string(remark.range.begin.line) + " " + remark.pass + " " +
                      remark.message);
    return lines;
  };
  CHECK(describe(remarks.inPipelineOrder()) ==
        Lines{"3 stage_shared not staged", "2 tile_registers tiled", "3 stage_shared other reason",
              "0 tile_registers nowhere", "3 tile_registers not staged"});
  CHECK(describe(remarks.inSourceOrder()) ==
        Lines{"2 tile_registers tiled", "3 stage_shared not staged", "3 stage_shared other reason",
              "3 tile_registers not staged", "0 tile_registers nowhere"});
  CHECK(remarks.inPipelineOrder()[3].kind == passes::RemarkKind::Warning);

  // A pass run alone reports nowhere.
  passes::RemarkReporter alone;
  CHECK(!alone.enabled());
  alone.applied(early, "lost");
  CHECK(remarks.inPipelineOrder().size() == 5);

  // Names as the program writes them.
  passes::RemarkReporter named(&remarks, "stage_shared", {{"c_2", "c"}});
  CHECK(named.programName("c_2") == "c");
  CHECK(named.programName("c_2.lane") == "c");
  CHECK(named.programName("j.c0") == "j");
  CHECK(named.programName("acc.x1y0") == "acc");
  CHECK(named.programName("k") == "k");
}
