// tile_registers: which nests get register tiles, what the jammed body looks
// like, and that tiled kernels compute what the interpreter computes at sizes
// that are multiples of the tile and sizes that leave partial tiles.
#include "TestSupport.h"
#include "codegen/NvptxTarget.h"
#include "codegen/Ptxas.h"
#include "engine/compiled/EngineArguments.h"
#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"
#include "ir/IRPrinter.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"
#include "support/Differential.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace loopc;
using loopc::test::contains;
using loopc::test::occurrences;

// Without staging, matmul's reads of B stay in global memory: x copies a
// block width apart (the grouped layout: the test cases after these).
passes::PassChoices unstaged() {
  passes::PassChoices choices;
  choices.skipped.insert("stage_shared");
  return choices;
}

// `function`'s kernels, assembled for sm_80 and sm_90 where ptxas is
// installed, fit 128 registers (two blocks of 256 threads per SM) without
// spills.
void checkAssemblesInto128Registers(const ir::Function &function) {
  auto ptx = codegen::compileToPtx(function, "sm_80");
  REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
  test::checkAssemblesWithoutSpills(*ptx, 128);
}

TEST_CASE("matmul unstaged: a kernel holding a 4 x 4 tile in registers asks ptxas for room for "
          "it") {
  // The tiles themselves: tests/lit/tile_registers/matmul_unstaged.lir.
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  test::PassTrace matmul = test::tracePasses(*loaded->program, "matmul", unstaged());
  REQUIRE(matmul.function.kernels.size() == 1);
  CHECK(matmul.function.kernels[0].minBlocksPerSM == 2);
  CHECK(matmul.function.kernels[0].maxThreadsPerBlock == 256);
}

TEST_CASE(
    "a tile of 8-byte accumulators asks for registers by their 32-bit words, and does not spill") {
  // 16 f64 or i64 accumulators take 32 registers: as many as an 8 x 4 f32
  // tile. Staged in shared memory, A transposed (4 rows of 8 bytes a column:
  // stage_shared), they fit two blocks per SM (128 registers), which spilled
  // 32 bytes of the f64 tile before A was.
  for (const char *type : {"f64", "i64"}) {
    CAPTURE(type);
    const std::string source = std::string("kernel mm(A: in ") + type + "[M][K], B: in " + type +
                               "[K][N], C: out " + type + "[M][N]) {\n" +
                               "  parfor i in 0..M, j in 0..N {\n"
                               "    C[i][j] = redomap(+, 0, k in 0..K) A[i][k] * B[k][j];\n"
                               "  }\n"
                               "}\n";
    auto loaded = test::loadText(source);
    REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
    ir::Function function =
        test::compiledKernel(*loaded->program, *loaded->program->modules.front()->kernels.front());
    REQUIRE(function.kernels.size() == 1);
    CHECK(function.kernels[0].maxThreadsPerBlock == 256);
    CHECK(function.kernels[0].minBlocksPerSM == 2);
    auto ptx = codegen::compileToPtx(function, "sm_80");
    REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
    test::checkAssemblesWithoutSpills(*ptx);
  }
}

TEST_CASE("an 8 x 8 tile of f32 staged in shared memory fits two blocks per SM, 128 registers, "
          "no spills") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  test::PassTrace trace =
      test::tracePasses(*loaded->program, "matmul", test::withParameters({"register_tile=8"}));
  const ir::Function &function = trace.function;
  REQUIRE(function.kernels.size() == 1);
  CHECK(function.kernels[0].maxThreadsPerBlock == 256);
  CHECK(function.kernels[0].minBlocksPerSM == 2);
  // (The edge tile's stores: tests/lit/tile_registers/matmul_tile8_edge_stores.lir.)
  checkAssemblesInto128Registers(function);
}

TEST_CASE("register_tile=0: 8 x 8 tiles where their grid fills the GPU, 4 x 4 below, picked at "
          "run time") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  const KernelDecl &matmul = *loaded->program->findKernel("matmul");
  auto tiledFor = [&](int multiprocessors) {
    passes::PipelineOptions options;
    options.multiprocessors = multiprocessors;
    std::string tiled;
    options.afterPass = [&](const std::string &pass, const ir::Function &function) {
      if (pass == "tile_registers")
        tiled = ir::toString(function);
    };
    auto function = passes::runPipeline(ir::lowerKernel(*loaded->program, matmul), options);
    REQUIRE_MESSAGE(function, (function ? "" : function.error().message));
    return std::make_pair(std::move(*function), tiled);
  };
  // The host tests the 8 x 8 tiles' grid against 3/4 of the blocks that fit
  // at once, 2 per SM: 15 on 10 (198 on 132:
  // tests/lit/tile_registers/matmul_tiles_by_grid.lir).
  ir::Function h100 = tiledFor(132).first;
  CHECK(contains(tiledFor(10).second, ") >= 15) {"));
  // Two kernels, the 8 x 8 one first, both asking for two blocks per SM.
  REQUIRE(h100.kernels.size() == 2);
  for (const ir::KernelFunc &kernel : h100.kernels) {
    CAPTURE(kernel.name);
    CHECK(kernel.minBlocksPerSM == 2);
    CHECK(kernel.maxThreadsPerBlock == 256);
  }
  // On one SM the 8 x 8 tiles (64 x 256 points a block) run from 2 blocks:
  // sizes on both sides, partial tiles of both kinds.
  passes::PipelineOptions oneSM;
  oneSM.multiprocessors = 1;
  test::checkGpuKernelsOnCpu(*loaded->program, "matmul",
                             {{{"M", "64"}, {"N", "256"}, {"K", "7"}},  // 1 block: 4 x 4
                              {{"M", "65"}, {"N", "257"}, {"K", "33"}}, // 4 blocks: 8 x 8
                              {{"M", "200"}, {"N", "300"}, {"K", "9"}},
                              {{"M", "1"}, {"N", "600"}, {"K", "1"}},
                              {{"M", "129"}, {"N", "5"}, {"K", "0"}}},
                             41, oneSM);
  // Other choices keep one tile size: a size forced, or deeper pipelines.
  for (const char *parameter :
       {"register_tile=4", "register_tile=8", "pipeline_depth=1", "pipeline_depth=3"}) {
    CAPTURE(parameter);
    passes::PipelineOptions options;
    options.choices = test::withParameters({parameter});
    auto function = passes::runPipeline(ir::lowerKernel(*loaded->program, matmul), options);
    REQUIRE(function);
    CHECK(function->kernels.size() == 1);
  }
}

TEST_CASE("an engine compiles the tiles its run's sizes choose, and reuses them where the choice "
          "holds") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  const KernelDecl &matmul = *loaded->program->findKernel("matmul");
  passes::PipelineOptions oneSM;
  oneSM.multiprocessors = 1; // 8 x 8 tiles from 2 blocks of 64 x 256 points
  struct Compiled {
    ir::Function function;
  };
  engine::CompiledKernelCache<Compiled> cache(oneSM);
  int builds = 0;
  auto compiledAt = [&](int64_t m, int64_t n) {
    // (K beyond the sizes a kernel is specialized for: a short k loop is
    // staged whole, not pipelined, and its 8 x 8 tiles would not pay.)
    auto compiled = cache.get(*loaded->program, matmul, {{"M", m}, {"N", n}, {"K", 33}},
                              [&](Compiled &) -> Status {
                                ++builds;
                                return {};
                              });
    REQUIRE(compiled);
    return *compiled;
  };
  const Compiled *small = compiledAt(64, 256);
  REQUIRE(small->function.kernels.size() == 1);
  REQUIRE(small->function.sizeChoices.size() == 1);
  CHECK(!small->function.sizeChoices[0].holds);
  const Compiled *large = compiledAt(65, 257);
  REQUIRE(large->function.kernels.size() == 1);
  REQUIRE(large->function.sizeChoices.size() == 1);
  CHECK(large->function.sizeChoices[0].holds);
  CHECK(contains(ir::toString(large->function), "acc.x7y7"));
  CHECK(!contains(ir::toString(small->function), "acc.x7y7"));
  CHECK(builds == 2);
  CHECK(compiledAt(1000, 1000) == large);
  CHECK(compiledAt(30, 200) == small); // (N beyond the specialized sizes: it bounds a
                                       // parallel loop inside another)
  CHECK(builds == 2);
}

TEST_CASE("a grid of tiles too small to give every SM a block keeps a point a thread") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  const KernelDecl &matmul = *loaded->program->findKernel("matmul");
  struct Compiled {
    ir::Function function;
  };
  engine::CompiledKernelCache<Compiled> cache(passes::PipelineOptions{}); // 132 SMs
  auto compiledAt = [&](int64_t n) {
    auto compiled = cache.get(*loaded->program, matmul, {{"M", n}, {"N", n}, {"K", 40}},
                              [&](Compiled &) -> Status { return {}; });
    REQUIRE(compiled);
    return *compiled;
  };
  // 128^2 points: 64 blocks of a point a thread, 4 of 4 x 4 tiles.
  const Compiled *small = compiledAt(128);
  CHECK(!contains(ir::toString(small->function), "acc.x1y1"));
  REQUIRE(!small->function.sizeChoices.empty());
  CHECK(!small->function.sizeChoices.front().holds);
  // 1024^2: 256 blocks of 4 x 4 tiles.
  const Compiled *large = compiledAt(1024);
  CHECK(contains(ir::toString(large->function), "acc.x1y1"));
  CHECK(large != small);
}

TEST_CASE("unclamped_tiles=1: one tile for every block where the copies read shared boxes only, "
          "and results agree") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  // The tiles, without clamps or an interior test, and the remark that says
  // so: tests/lit/tile_registers/matmul_unclamped.lir.
  for (const char *tile : {"register_tile=4", "register_tile=8"}) {
    CAPTURE(tile);
    test::PassTrace trace = test::tracePasses(*loaded->program, "matmul",
                                              test::withParameters({tile, "unclamped_tiles=1"}));
    REQUIRE(trace.function.kernels.size() == 1);
    CHECK(trace.function.kernels[0].minBlocksPerSM == 2);
  }
  for (const char *tile : {"register_tile=4", "register_tile=8"})
    for (const char *depth : {"pipeline_depth=1", "pipeline_depth=2", "pipeline_depth=3"}) {
      CAPTURE(tile);
      CAPTURE(depth);
      test::checkGpuKernelsOnCpu(*loaded->program, "matmul",
                                 {{{"M", "65"}, {"N", "257"}, {"K", "33"}},
                                  {{"M", "1"}, {"N", "1"}, {"K", "1"}},
                                  {{"M", "130"}, {"N", "100"}, {"K", "70"}},
                                  {{"M", "7"}, {"N", "33"}, {"K", "0"}}},
                                 47, test::withParameters({tile, depth, "unclamped_tiles=1"}));
    }
  // The 8 x 8 tile, even 3 stages deep (whose edge tile spills), fits 128
  // registers without spills.
  for (const char *depth : {"pipeline_depth=2", "pipeline_depth=3"}) {
    CAPTURE(depth);
    checkAssemblesInto128Registers(
        test::tracePasses(*loaded->program, "matmul",
                          test::withParameters({"register_tile=8", depth, "unclamped_tiles=1"}))
            .function);
  }
}

TEST_CASE("unclamped_tiles=1 under bounds checks: copies past the ends load speculatively, are "
          "staged, and raise no error of their own") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  passes::PassChoices checked = test::withParameters({"register_tile=4", "unclamped_tiles=1"});
  checked.boundsChecks = true;
  // The copies' loads cannot fault, so no check keeps stage_shared away
  // (it did: the unstaged tile then read past the ends, a false error at
  // M = 1001), and the boxes serve them (tests/lit/tile_registers and
  // tests/lit/stage_shared, matmul_unclamped_checked.lir).
  for (const char *depth : {"pipeline_depth=1", "pipeline_depth=2"}) {
    CAPTURE(depth);
    passes::PassChoices choices =
        test::withParameters({"register_tile=4", depth, "unclamped_tiles=1"});
    choices.boundsChecks = true;
    test::checkGpuKernelsOnCpu(*loaded->program, "matmul",
                               {{{"M", "65"}, {"N", "257"}, {"K", "33"}},
                                {{"M", "130"}, {"N", "101"}, {"K", "70"}},
                                {{"M", "7"}, {"N", "33"}, {"K", "0"}}},
                               48, choices);
  }

  // Where stage_shared does not stage the nest (an index in it not proven
  // in range), the tile reads global memory at clamped indices
  // (tests/lit/stage_shared/gathered_unclamped_checked.lir).
  auto gathered = test::loadText(R"(
kernel mm(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j] + B[0][(K * 7) / 3];
  }
}
)");
  REQUIRE(gathered->program);
  test::checkGpuKernelsOnCpu(
      *gathered->program, "mm",
      {{{"M", "65"}, {"N", "160"}, {"K", "9"}}, {{"M", "33"}, {"N", "79"}, {"K", "3"}}}, 49,
      checked);
}

TEST_CASE("an 8 x 8 tile reading global memory keeps one block per SM") {
  // cnn_conv's tiles read their input and filters from global memory (not
  // staged: stage_shared's remarks), with more operands in flight: at 128
  // registers ptxas spilled 1376 bytes. (The padded form in one nest, whose
  // tests keep the reads where they are.)
  auto loaded = test::loadFile(test::sourcePath("samples/cnn_conv.loop"));
  REQUIRE(loaded->program);
  passes::PassChoices choices = test::withParameters({"register_tile=8"});
  choices.skipped.insert("partition_borders");
  ir::Function function = test::tracePasses(*loaded->program, "cnn_conv_full", choices).function;
  REQUIRE(function.kernels.size() == 1);
  CHECK(function.kernels[0].minBlocksPerSM == 1);
}

TEST_CASE("matmul staged: x copies 4 neighbours a thread, 4 x 4 sub-tiles spread over the warp") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  // The copies' indices: tests/lit/tile_registers/matmul_grouped_columns.lir.
  for (int64_t factor : {4, 8}) {
    CAPTURE(factor);
    passes::PassChoices choices = test::withParameters({"register_tile=" + std::to_string(factor)});
    test::checkGpuKernelsOnCpu(*loaded->program, "matmul",
                               {{{"M", "1"}, {"N", "1"}, {"K", "1"}},
                                {{"M", "7"}, {"N", "33"}, {"K", "7"}},
                                {{"M", "64"}, {"N", "256"}, {"K", "33"}}, // interior tiles only
                                {{"M", "33"}, {"N", "257"}, {"K", "40"}},
                                {{"M", "70"}, {"N", "1000"}, {"K", "3"}},
                                {{"M", "9"}, {"N", "1023"}, {"K", "35"}}},
                               23, choices);
  }
}

TEST_CASE("matmul staged: every shared load of the hot loop is 128-bit, 8 FMAs or more each") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  auto ptx = codegen::compileToPtx(test::tracePasses(*loaded->program, "matmul").function, "sm_90");
  REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
  std::map<std::string, std::string> blocks; // PTX basic blocks by label
  std::string label = "entry";
  for (size_t at = 0, end; at < ptx->size(); at = end + 1) {
    end = ptx->find('\n', at);
    if (end == std::string::npos)
      end = ptx->size();
    std::string line = ptx->substr(at, end - at);
    if (line.starts_with("$L__BB"))
      label = line;
    blocks[label] += line + "\n";
  }
  // The hot loop: the basic blocks with the most FMAs (a full stage,
  // unrolled), the interior tile's (the edge tile's, whose columns are
  // clamped, reads B a column at a time; few blocks run it) with all its
  // shared loads 128-bit.
  size_t most = 0;
  for (const auto &[name, block] : blocks)
    most = std::max(most, occurrences(block, "fma.rn.f32"));
  auto interior = std::ranges::find_if(blocks, [&](const auto &block) {
    return occurrences(block.second, "fma.rn.f32") == most &&
           occurrences(block.second, "ld.shared.f32") == 0;
  });
  REQUIRE(interior != blocks.end());
  const std::string &hot = interior->second;
  size_t sharedLoads = occurrences(hot, "ld.shared");
  INFO(hot);
  CHECK(sharedLoads > 0);
  CHECK(occurrences(hot, "ld.shared.v4.f32") == sharedLoads);
  CHECK(occurrences(hot, "fma.rn.f32") >= 8 * sharedLoads);
  if (std::optional<std::string> ptxas = codegen::findPtxas()) {
    auto reports = codegen::runPtxas(*ptxas, *ptx, "sm_90");
    REQUIRE_MESSAGE(reports, (reports ? "" : reports.error().message));
    for (const codegen::PtxasKernelReport &report : *reports)
      CHECK(report.spillStoreBytes + report.spillLoadBytes == 0);
  }
}

TEST_CASE("a window over consecutive copies goes innermost, unrolled: each input row loaded once") {
  // Staged (each element is read 5 or 11 times a row, under the default
  // stage_min_reuse), so that the loads counted are the input's alone.
  passes::PassChoices staged = test::withParameters({"stage_min_reuse=2"});
  for (const char *sample : {"conv2d_5x5", "conv2d_11x11"}) {
    CAPTURE(sample);
    auto loaded = test::loadFile(test::sourcePath(std::string("samples/") + sample + ".loop"));
    REQUIRE(loaded->program);
    test::PassTrace conv = test::tracePasses(*loaded->program, sample, staged);
    int64_t taps = std::string(sample) == "conv2d_5x5" ? 5 : 11;
    // The rows' loop inside the columns' one, unrolled, in the interior tile
    // (tests/lit/tile_registers/window_rows_conv2d_5x5.lir and _11x11.lir),
    // both tiles staging into one shared buffer
    // (tests/lit/stage_shared/window_conv2d_5x5.lir and _11x11.lir).
    // Per column offset v, rows y0 + r + u: 4 + taps - 1 distinct for the 4
    // copies, times 4 x copies (32 apart), for 16 * taps multiply-adds; the
    // edge tile loads for each (16 per v).
    auto ptx = codegen::compileToPtx(conv.function, "sm_80");
    REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
    CHECK(occurrences(*ptx, "fma.rn.f32") >= 16 * taps + 16);
    int64_t interiorLoads = occurrences(*ptx, "ld.shared.f32") - occurrences(*ptx, "fma.rn.f32") +
                            16 * taps; // minus the edge tile's, one per multiply-add
    CHECK(interiorLoads == 4 * (4 + taps - 1));
  }
  auto loaded = test::loadFile(test::sourcePath("samples/conv2d_5x5.loop"));
  REQUIRE(loaded->program);
  test::checkGpuKernelsOnCpu(*loaded->program, "conv2d_5x5",
                             {{{"H", "36"}, {"W", "132"}},
                              {{"H", "37"}, {"W", "133"}},
                              {{"H", "72"}, {"W", "300"}},
                              {{"H", "5"}, {"W", "9"}}},
                             23);
}

TEST_CASE("a body without a loop: 4 consecutive points a thread along y, their loads in flight") {
  // transpose's staged box becomes 32 x 32; a thread's 4 rows, a block of 8
  // threads along y, 32 rows a block; the edge tile clamps and guards.
  auto transpose = test::loadFile(test::sourcePath("samples/transpose.loop"));
  REQUIRE(transpose->program);
  // (The tiles: tests/lit/tile_registers/rows_in_flight_transpose.lir; the
  // box: tests/lit/stage_shared/transpose_square.lir.)
  test::PassTrace compiled = test::tracePasses(*transpose->program, "transpose");
  for (const ir::KernelFunc &function : compiled.function.kernels)
    CHECK(function.minBlocksPerSM == 0);
  test::checkGpuKernelsOnCpu(*transpose->program, "transpose",
                             {{{"M", "1"}, {"N", "1"}},
                              {{"M", "33"}, {"N", "7"}},
                              {{"M", "301"}, {"N", "257"}},
                              {{"M", "64"}, {"N", "96"}}},
                             3);
  // A stencil's copies share the rows between them; rows and columns of
  // sizes that are multiples of no tile, and a time loop (the tiles:
  // tests/lit/tile_registers/rows_in_flight_smooth.lir).
  auto stencil = test::loadText(R"(
kernel smooth(steps: i32, A: inout f32[R][C], B: out f32[R][C]) {
  for t in 0..steps {
    parfor i in 1..R - 1, j in 1..C - 1 {
      B[i][j] = 0.25 * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]) - A[i][j];
    }
    parfor i in 1..R - 1, j in 1..C - 1 {
      A[i][j] = B[i][j] * 0.5;
    }
  }
}
)");
  REQUIRE(stencil->program);
  test::checkGpuKernelsOnCpu(*stencil->program, "smooth",
                             {{{"steps", "1"}, {"R", "3"}, {"C", "3"}},
                              {{"steps", "2"}, {"R", "37"}, {"C", "45"}},
                              {{"steps", "3"}, {"R", "130"}, {"C", "67"}}},
                             7);
}

TEST_CASE("nests without reuse in a loop, 1-D nests and block reductions keep one point a thread") {
  for (const char *sample : {"mv", "dot", "nbody", "softmax"}) {
    CAPTURE(sample);
    auto loaded = test::loadFile(test::sourcePath(std::string("samples/") + sample + ".loop"));
    REQUIRE(loaded->program);
    // (The IR tile_registers leaves as it was: tests/lit/tile_registers/untiled_mv.lir,
    // untiled_dot.lir, untiled_nbody.lir and untiled_softmax.lir.)
    test::PassTrace compiled = test::tracePasses(*loaded->program, sample);
    for (const ir::KernelFunc &function : compiled.function.kernels)
      CHECK(function.minBlocksPerSM == 0);
  }
}

TEST_CASE("copies whose loops, branches, lets and private arrays depend on the copy") {
  // A triangular loop (its bounds differ per copy), a branch on the copy's
  // column inside the shared loop, a let of the row, a private array and a
  // user function: every kind of statement the jam copies per dimension.
  auto loaded = test::loadText(R"(
fn weight(a: f32, b: f32) -> f32 {
  let d = a - b;
  return d * d + 1.0;
}

kernel banded(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    let row = i % 5;
    var partial: f32[2];
    for k in 0..K {
      if (j % 3 == 0) {
        partial[0] += A[i][k] * B[k][j];
      } else {
        partial[1] += weight(A[i][k], B[k][j]);
      }
    }
    let tri = redomap(+, 0.0, k in 0..min(i + 1, K)) A[i][k] * B[k][j];
    C[i][j] = partial[0] - partial[1] + tri * f32(row);
  }
}
)");
  INFO(loaded->diagnostics);
  REQUIRE(loaded->program);
  // (The copies: tests/lit/tile_registers/copies_per_dimension_banded.lir.)
  test::checkGpuKernelsOnCpu(
      *loaded->program, "banded",
      {{{"M", "1"}, {"N", "1"}, {"K", "1"}},
       {{"M", "32"}, {"N", "128"}, {"K", "9"}}, // whole tiles only
       {{"M", "33"}, {"N", "129"}, {"K", "7"}}, // a partial tile in each dimension
       {{"M", "70"}, {"N", "300"}, {"K", "40"}},
       {{"M", "5"}, {"N", "257"}, {"K", "3"}}},
      7);
}

TEST_CASE("a 3-D nest tiles the two dimensions with the most reuse, and results agree") {
  auto loaded = test::loadFile(test::sourcePath("samples/cnn_conv.loop"));
  REQUIRE(loaded->program);
  // (The tiles: tests/lit/tile_registers/three_dimensions_cnn_conv_valid.lir.)
  test::checkGpuKernelsOnCpu(*loaded->program, "cnn_conv_valid",
                             {{{"Ic", "3"}, {"Oc", "5"}, {"H", "37"}, {"W", "131"}, {"K", "3"}},
                              {{"Ic", "2"}, {"Oc", "8"}, {"H", "34"}, {"W", "130"}, {"K", "3"}}},
                             7);
}

TEST_CASE("tiles of offset ranges, guarded windows and kernels inside a time loop agree") {
  auto loaded = test::loadText(R"(
kernel shifted(A: in f32[M][K], B: in f32[K][N], C: inout f32[M][N]) {
  parfor i in 1..M - 1, j in 2..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j] + A[i - 1][k];
  }
}

kernel masked_conv(I: in f32[H][W], F: in f32[R][R], O: out f32[H][W]) {
  parfor y in 0..H, x in 0..W {
    var s: f32 = 0.0;
    for u in 0..R {
      for v in 0..R {
        let yy = y + u - R / 2;
        let xx = x + v - R / 2;
        if (yy >= 0 && yy < H && xx >= 0 && xx < W) {
          s += I[yy][xx] * F[u][v];
        }
      }
    }
    O[y][x] = s;
  }
}

kernel sweeps(steps: i32, W: in f32[K][N], X: inout f32[M][N], Y: out f32[M][N]) {
  for t in 0..steps {
    parfor i in 0..M, j in 0..N {
      Y[i][j] = redomap(+, 0.0, k in 0..K) X[i][k % N] * W[k][j];
    }
    parfor i in 0..M, j in 0..N {
      X[i][j] = Y[i][j] * 0.5;
    }
  }
}
)");
  INFO(loaded->diagnostics);
  REQUIRE(loaded->program);
  // (The tiles: tests/lit/tile_registers/offset_ranges_shifted.lir,
  // guarded_window_masked_conv.lir and time_loop_sweeps.lir.)
  test::checkGpuKernelsOnCpu(*loaded->program, "shifted",
                             {{{"M", "2"}, {"N", "3"}, {"K", "1"}},
                              {{"M", "35"}, {"N", "133"}, {"K", "5"}},
                              {{"M", "71"}, {"N", "40"}, {"K", "9"}}},
                             7);
  test::checkGpuKernelsOnCpu(*loaded->program, "masked_conv",
                             {{{"H", "1"}, {"W", "1"}, {"R", "3"}},
                              {{"H", "37"}, {"W", "131"}, {"R", "5"}},
                              {{"H", "32"}, {"W", "128"}, {"R", "2"}}},
                             7);
  test::checkGpuKernelsOnCpu(*loaded->program, "sweeps",
                             {{{"steps", "2"}, {"M", "33"}, {"N", "129"}, {"K", "7"}},
                              {{"steps", "3"}, {"M", "5"}, {"N", "3"}, {"K", "4"}}},
                             7);
}

TEST_CASE("lets of bool and float type are copied with the tile, not rescaled as indices") {
  // A causal mask and a bool reduction next to a loop: the copies' lets are
  // renamed per copy (a compiler crash once, when every name was rescaled).
  auto loaded = test::loadText(R"(
kernel masked_scores(A: in f32[N][N], S: out f32[N][N], C: out bool[N][N]) {
  parfor i in 0..N, j in 0..N {
    let keep = j <= i;
    let positive = redomap(||, false, k in 0..N) A[i][k] > 0.5;
    let s = redomap(+, 0.0, d in 0..N) A[i][d] * A[j][d];
    S[i][j] = keep ? s : 0.0;
    C[i][j] = positive;
  }
}
)");
  INFO(loaded->diagnostics);
  REQUIRE(loaded->program);
  // (The copies' lets: tests/lit/tile_registers/lets_of_any_type_masked_scores.lir.)
  test::checkGpuKernelsOnCpu(*loaded->program, "masked_scores",
                             {{{"N", "1"}}, {{"N", "37"}}, {{"N", "64"}}}, 3);
}

TEST_CASE("on the CPU a thread computes two rows of a window, its sums in the program's order") {
  const char *source = R"(
kernel conv5(I: in f32[H][W], F: in f32[5][5], O: out f32[H - 4][W - 4]) {
  parfor y in 0..H - 4, x in 0..W - 4 {
    O[y][x] = redomap(+, 0.0, u in 0..5, v in 0..5) I[y + u][x + v] * F[u][v];
  }
}
fn tap(k: i64) -> f32 { return k == 1 ? 2.0 : 1.0; }
kernel blur3(I: in f32[H][W], O: out f32[H - 2][W - 2]) {
  parfor y in 0..H - 2, x in 0..W - 2 {
    O[y][x] = redomap(+, 0.0, u in 0..3, v in 0..3) tap(u) * tap(v) / 16.0 * I[y + u][x + v];
  }
}
kernel conv11(I: in f32[H][W], F: in f32[11][11], O: out f32[H - 10][W - 10]) {
  parfor y in 0..H - 10, x in 0..W - 10 {
    O[y][x] = redomap(+, 0.0, u in 0..11, v in 0..11) I[y + u][x + v] * F[u][v];
  }
}
kernel product(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
  }
}
)";
  using passes::PipelineTarget;
  // Two rows a thread, x left to the vector lanes, the window's rows u
  // outside its columns v, as written (conv5, blur3); one row where 121
  // weights would not stay in vector registers (conv11) and where k slides
  // nothing along i (product): tests/lit/tile_registers/cpu_*.lir.
  // The interpreter agrees, and the rows compute bit for bit what one row a
  // thread computes, at sizes that fill whole tiles, leave partial ones, or
  // give a single row or column.
  auto loaded = test::loadText(source);
  REQUIRE(loaded->program);
  passes::PassChoices untiledChoices;
  untiledChoices.skipped.insert("tile_registers");
  Interpreter interpreter;
  engine::CpuEngine rows;
  engine::CpuEngine untiled(PipelineTarget::Cpu, untiledChoices);
  Engine *engines[] = {&interpreter, &rows};
  const std::vector<std::pair<const char *, std::vector<std::pair<int, int>>>> cases = {
      {"conv5", {{5, 5}, {6, 9}, {20, 36}, {21, 37}, {37, 70}, {52, 133}}},
      {"blur3", {{3, 3}, {19, 34}, {35, 131}}}};
  for (const auto &[name, sizes] : cases) {
    const KernelDecl *kernel = nullptr;
    for (const auto &candidate : loaded->program->modules.front()->kernels)
      if (candidate->name == name)
        kernel = candidate.get();
    REQUIRE(kernel);
    for (auto [height, width] : sizes) {
      CAPTURE(name);
      CAPTURE(height);
      CAPTURE(width);
      ArgumentRequest request;
      request.seed = 11;
      request.values = {{"H", std::to_string(height)}, {"W", std::to_string(width)}};
      test::DifferentialOutcome outcome =
          test::runDifferential(*loaded->program, *kernel, request, engines);
      REQUIRE(!outcome.skipped);
      CHECK_MESSAGE(outcome.agree, outcome.report);
      Expected<KernelArgs> tiledArgs = bindKernelArguments(*kernel, request);
      REQUIRE(tiledArgs);
      KernelArgs untiledArgs = *tiledArgs;
      REQUIRE(rows.run(*loaded->program, *kernel, *tiledArgs));
      REQUIRE(untiled.run(*loaded->program, *kernel, untiledArgs));
      CHECK(tiledArgs->params.back().bytes == untiledArgs.params.back().bytes);
    }
  }
}
