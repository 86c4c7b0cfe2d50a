// split_reductions: which row parfors get their ranges split, the IR of the
// split, and that the GPU pipeline's kernels compute what the interpreter
// computes on both sides of the host's choice (few long rows split, many or
// short rows not).
#include "TestSupport.h"
#include "support/Differential.h"

#include "engine/Bindings.h"
#include "engine/cpu/CpuEngine.h"
#include "engine/gpu/GpuEngine.h"
#include "interp/Interpreter.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <string>

using namespace loopc;
using loopc::test::contains;

namespace {

constexpr const char *kProgram = R"(
assoc fn larger(a: f32, b: f32) -> f32 { return max(a, b); }

kernel row_means(X: in f32[R][C], y: out f32[R]) {
  parfor r in 0..R {
    let scale = 1.0 / f32(C);
    y[r] = redomap(+, 0.0, c in 0..C) X[r][c] * scale + f32(r);
  }
}

kernel row_stats(X: in f32[R][C], hi: out f32[R], lo: out f32[R], n: out i64[R]) {
  parfor r in 1..R + 1 {
    let top = redomap(max, -inf, c in 0..C) X[r - 1][c];
    hi[r - 1] = top;
    lo[r - 1] = redomap(min, inf, c in 0..C) X[r - 1][c] - top;
    n[r - 1] = redomap(+, 0, c in 0..C) X[r - 1][c] > 0.5 ? 1 : 0;
  }
}

kernel row_products(X: in f64[R][C], p: out f64[R]) {
  parfor r in 0..R {
    p[r] = redomap(*, 1.0, c in 0..C) 1.0 + X[r][c] * 0.00001;
  }
}

kernel user_operator(X: in f32[R][C], y: out f32[R]) {
  parfor r in 0..R {
    y[r] = redomap(larger, -inf, c in 0..C) X[r][c];
  }
}

kernel triangle(X: in f32[R][C], y: out f32[R]) {
  parfor r in 0..R {
    y[r] = redomap(+, 0.0, c in 0..min(C, r * 9000 + 1)) X[r][c];
  }
}
)";

const std::vector<std::map<std::string, std::string>> kSizes = {
    {{"R", "1"}, {"C", "100"}},     // short: not split
    {{"R", "1"}, {"C", "16384"}},   // 2 parts
    {{"R", "3"}, {"C", "100003"}},  // 12 parts, the last shorter
    {{"R", "2"}, {"C", "300001"}},  // 36 parts
    {{"R", "700"}, {"C", "16500"}}, // many rows: not split
};

} // namespace

TEST_CASE("few long rows have their ranges split into parts reduced apart") {
  auto loaded = test::loadText(kProgram);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const Program &program = *loaded->program;
  // The parts, their partials and the version the host picks
  // (tests/lit/split_reductions/row_means.lir), a block each
  // (map_rows_to_blocks there); the first reduction of a row split, the rest
  // as it was (row_stats.lir).
  for (const char *kernel : {"row_means", "row_stats", "row_products"}) {
    CAPTURE(kernel);
    test::checkGpuKernelsOnCpu(program, kernel, kSizes, 3);
  }
}

TEST_CASE("user operators and ranges that depend on the row are not split, on either pipeline") {
  auto loaded = test::loadText(kProgram);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const Program &program = *loaded->program;
  // Not split: tests/lit/split_reductions/user_operator_declined.lir and
  // triangle_declined.lir.
  for (const char *kernel : {"user_operator", "triangle"}) {
    CAPTURE(kernel);
    test::checkGpuKernelsOnCpu(program, kernel, kSizes, 5);
  }
  // The CPU pipeline splits too (a row is one thread of one block there:
  // tests/lit/split_reductions/softmax_cpu.lir), and computes the same.
  Interpreter interpreter;
  engine::CpuEngine cpuEngine;
  Engine *engines[] = {&interpreter, &cpuEngine};
  for (const char *kernel : {"row_means", "row_stats", "row_products"})
    for (const auto &sizes : kSizes) {
      CAPTURE(kernel);
      ArgumentRequest request;
      request.seed = 9;
      request.values = sizes;
      test::DifferentialOutcome outcome =
          test::runDifferential(program, *program.findKernel(kernel), request, engines);
      REQUIRE_MESSAGE(!outcome.skipped, outcome.report);
      CHECK_MESSAGE(outcome.agree, outcome.report);
    }
}

TEST_CASE("rows the GPU keeps as threads are split by threads, the part the slow index") {
  // colsum's columns read X[r][c] contiguously along the parfor, so
  // map_rows_to_blocks leaves each a thread: sized by blocks, 1024 columns
  // of 4096 were 1024 threads (4 blocks). Sized by threads, they make
  // min(2^18 / 1024, 4096 / 32) = 128 parts, 2^17 threads (gpu_test checks
  // the launch), and neighbouring threads take neighbouring columns.
  auto loaded = test::loadText(R"(
kernel colsum(X: in f32[R][C], s: out f32[C]) {
  parfor c in 0..C {
    s[c] = redomap(+, 0.0, r in 0..R) X[r][c];
  }
}
)");
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const Program &program = *loaded->program;
  // (The split: tests/lit/split_reductions/colsum_threads.lir.)
  test::PassTrace trace = test::tracePasses(program, "colsum");
  // The (column, part) loop is a thread each, its flat index consecutive
  // across a block's threads; the columns' parfor takes a block per column
  // (its partials contiguous) when there are 64 partials or more.
  const std::string &last = trace.after("extract_kernels");
  CHECK(contains(last, "    gpu_thread.x for c.flat.thread in [0, 256) {\n"
                       "      let c.flat = c.flat.block * 256 + c.flat.thread\n"
                       "      if (c.flat < c.rows * c.parts) {\n"
                       "        let c = c.flat % c.rows\n"
                       "        let c.part = c.flat / c.rows\n"));
  CHECK(contains(last, "    if (c.parts >= 64) {\n"
                       "      launch colsum_kernel1<<<grid(max(C, 0), 1, 1), block(256, 1, 1)>>>"));

  // Rows given a block keep the block sizing and order (mv's rows); the CPU
  // keeps it for all rows (mv_transposed's columns):
  // tests/lit/split_reductions/mv_rows.lir and mv_transposed_cpu.lir.
}

TEST_CASE("the GPU engine runs the split version's host program over the stand-in driver") {
  // The stand-in checks each launch against its kernel's PTX and runs none:
  // this covers the host side (the partials' allocation, the choice, two
  // launches), not the results.
  setenv("LOOPC_CUDA_DRIVER", LOOPC_CUDA_STUB, 1);
  auto gpu = engine::GpuEngine::create();
  unsetenv("LOOPC_CUDA_DRIVER");
  REQUIRE_MESSAGE(gpu, (gpu ? "" : gpu.error().message));
  auto loaded = test::loadText(kProgram);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  for (const char *kernel : {"row_means", "row_stats", "row_products"})
    for (const auto &sizes : kSizes) {
      CAPTURE(kernel);
      ArgumentRequest request;
      request.values = sizes;
      auto args = bindKernelArguments(*loaded->program->findKernel(kernel), request);
      REQUIRE(args);
      auto ran = (*gpu)->run(*loaded->program, *loaded->program->findKernel(kernel), *args);
      CHECK_MESSAGE(ran, (ran ? "" : ran.error().message));
    }
}
