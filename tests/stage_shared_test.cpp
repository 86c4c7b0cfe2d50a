// stage_shared: which loops get shared-memory stages, the boxes, fills and
// barriers they get, the index ranges the boxes come from, and that staged
// kernels compute what the interpreter computes at sizes that are multiples
// of the boxes and sizes that leave partial boxes, partial stages and
// clamped edges.
#include "TestSupport.h"
#include "codegen/NvptxTarget.h"
#include "codegen/Ptxas.h"
#include "ir/IRPrinter.h"
#include "ir/Verifier.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"
#include "passes/Remarks.h"
#include "passes/analysis/IndexRange.h"
#include "passes/lowering/ReductionTrees.h"
#include "support/Differential.h"

#include <doctest/doctest.h>

#include <map>
#include <string>

using namespace loopc;
using loopc::test::contains;
using loopc::test::occurrences;

namespace {

ir::Expr var(const std::string &name) { return ir::makeVar(ScalarType::I64, name); }
ir::Expr imm(int64_t value) { return ir::makeI64(value); }
ir::Expr op(ir::BinaryOpKind kind, ir::Expr lhs, ir::Expr rhs) {
  return ir::makeBinary(kind, std::move(lhs), std::move(rhs));
}

} // namespace

TEST_CASE("index ranges: uniform terms combine, threads and constant loops span, one clamp") {
  using ir::BinaryOpKind;
  passes::RangeScope scope;
  passes::IndexRange thread;
  thread.span = 31;
  scope.bindRange("t", thread);
  passes::IndexRange tap;
  tap.span = 4;
  scope.bindRange("u", tap);
  // let x = (b * 4 + 1) * 32 + t: the block's term, a constant, a span.
  scope.bindLet(
      "x", op(BinaryOpKind::Add,
              op(BinaryOpKind::Mul,
                 op(BinaryOpKind::Add, op(BinaryOpKind::Mul, var("b"), imm(4)), imm(1)), imm(32)),
              var("t")));
  auto x = scope.rangeOf(var("x"));
  REQUIRE(x);
  CHECK(ir::toString(x->origin()) == "b * 128 + 32");
  CHECK(x->totalSpan() == 31);
  // A window: x - u + 2 spans both, downwards from x.
  auto window =
      scope.rangeOf(op(BinaryOpKind::Add, op(BinaryOpKind::Sub, var("x"), var("u")), imm(2)));
  REQUIRE(window);
  CHECK(ir::toString(window->origin()) == "b * 128 + 30");
  CHECK(window->totalSpan() == 35);
  // A clamp keeps the span; its origin is clamped too.
  auto clamped = scope.rangeOf(
      op(BinaryOpKind::Add,
         op(BinaryOpKind::Min, var("x"), op(BinaryOpKind::Sub, var("N"), imm(1))), var("u")));
  REQUIRE(clamped);
  CHECK(ir::toString(clamped->origin()) == "min(b * 128 + 32, N + -1)");
  CHECK(clamped->totalSpan() == 35);
  // Boxes share an origin when only constants differ.
  auto next = scope.rangeOf(op(BinaryOpKind::Add, var("x"), imm(7)));
  REQUIRE(next);
  CHECK(x->sharesOrigin(*next));
  x->unite(*next);
  CHECK(x->totalSpan() == 38);
  // No constant span: a product of two varying values, a load, a varying
  // bound of a clamp, a clamp subtracted.
  CHECK(!scope.rangeOf(op(BinaryOpKind::Mul, var("t"), var("u"))));
  CHECK(!scope.rangeOf(op(BinaryOpKind::Min, var("t"), var("u"))));
  CHECK(!scope.rangeOf(op(BinaryOpKind::Sub, imm(0), op(BinaryOpKind::Min, var("t"), var("N")))));
  CHECK(!scope.isUniform(op(BinaryOpKind::Div, var("N"), var("K"))));
  CHECK(scope.isUniform(op(BinaryOpKind::Div, var("N"), imm(2))));
}

TEST_CASE("matmul: A and B tiles staged in stages of 32 k, the k loop reads shared memory") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  const std::string staged =
      test::tracePasses(*loaded->program, "matmul", test::withParameters({"pipeline_depth=1"}))
          .after("stage_shared");
  // 32 rows of A by 32 k, 32 k by 128 columns of B (the 4 x 4 register
  // tiles of 8 x 32 threads). No warp reads down a column of either (A's
  // element is the same for a warp, B's row is read along): rows unpadded.
  CHECK(contains(staged, "shared f32 A.shared[32][32]"));
  CHECK(contains(staged, "shared f32 B.shared[32][128]"));
  CHECK(contains(staged, "for k.stage in [0, max((K + 31) / 32, 0)) {"));
  CHECK(occurrences(staged, "barrier") == 2 * 2); // the interior and edge tiles
  // All 256 threads fill, consecutive threads consecutive columns, and
  // nothing outside B is read.
  CHECK(
      contains(staged, "let B.shared.element = B.shared.fill * 256 + (i.thread * 32 + j.thread)"));
  CHECK(contains(staged, "k.stage * 32 + B.shared.element / 128 < K && "));
  CHECK(contains(staged, "B[k.stage * 32 + B.shared.element / 128][min(j.block * 128, N + -1) + "
                         "B.shared.element % 128]"));
  // A full stage runs 32 iterations (a constant count), the last one the rest.
  CHECK(contains(staged, "for k.lane in [0, 32) {"));
  CHECK(contains(staged, "for k.lane in [0, k.rest) {"));
  CHECK(contains(staged, "acc.x3y2 = acc.x3y2 + A.shared[i.y2 - min(i.block * 32, M + -1)][k - "
                         "k.stage * 32] * B.shared[k - k.stage * 32][j.x3 - min(j.block * 128, N "
                         "+ -1)]  (reduction step += from 0.0)"));
  CHECK(!contains(staged, "* B[k]["));
  test::checkGpuKernelsOnCpu(*loaded->program, "matmul",
                             {{{"M", "1"}, {"N", "1"}, {"K", "1"}},
                              {{"M", "32"}, {"N", "128"}, {"K", "64"}}, // whole boxes and stages
                              {{"M", "33"}, {"N", "129"}, {"K", "33"}}, // one more of each
                              {{"M", "70"}, {"N", "300"}, {"K", "5"}},  // only a partial stage
                              {{"M", "5"}, {"N", "257"}, {"K", "100"}},
                              {{"M", "40"}, {"N", "40"}, {"K", "0"}}},
                             11);
}

TEST_CASE("matmul: a thread reads 4 k of a row of A.shared in one 128-bit load") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  auto ptx = codegen::compileToPtx(
      test::tracePasses(*loaded->program, "matmul", test::withParameters({"pipeline_depth=1"}))
          .function,
      "sm_80");
  REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
  // A full stage of 32 k, in the interior and the edge tile: each of the
  // thread's 4 rows of A in 8 vector loads (the rows start 16-byte
  // aligned); in the interior tile B's 4 columns, neighbours
  // (tile_registers' grouped layout), in one more a k; in the edge tile,
  // clamped, they stay scalar.
  CHECK(test::occurrences(*ptx, "ld.shared.v4.f32") >= 2 * 32 + 32);
  CHECK(test::occurrences(*ptx, "ld.shared.f32") < 160);
}

TEST_CASE("matmul, 8 x 8 tiles: A stored transposed, a thread's 8 rows at one k in two 128-bit "
          "loads") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  test::PassTrace trace =
      test::tracePasses(*loaded->program, "matmul", test::withParameters({"register_tile=8"}));
  const std::string &staged = trace.after("stage_shared");
  // 64 rows by 8 k stored [k][row], rows of 68 (17 x 16 bytes, odd: the
  // fill's column writes fall in different banks), 2 buffers.
  CHECK(contains(staged, "shared f32 A.shared[2][8][68]"));
  CHECK(contains(staged, "shared f32 B.shared[2][8][256]"));
  // Filled element by element, each written to its transposed place.
  CHECK(contains(staged, "async_copy A.shared[(k.stage + 1) % 2][A.shared.copy1.element % 8]"
                         "[A.shared.copy1.element / 8] <- "));
  CHECK(!contains(staged, "A.shared.copy4"));
  // Read at one offset plus the copy's row, added last.
  CHECK(contains(staged, "acc.x0y7 = acc.x0y7 + A.shared[k.stage % 2][k - k.stage * 8][i.y0 - "
                         "i.block * 64 + 7] * "));
  // The edge tile's rows are clamped (no provable neighbours): row-major.
  CHECK(contains(staged, "shared f32 A.shared2[64][4]"));
  // With 4 x 4 tiles, one 128-bit load's worth of rows, A stays row-major:
  // its 32 rows first.
  CHECK(contains(
      test::tracePasses(*loaded->program, "matmul", test::withParameters({"register_tile=4"}))
          .after("stage_shared"),
      "shared f32 A.shared[2][32]["));
  auto ptx = codegen::compileToPtx(trace.function, "sm_80");
  REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
  // A full stage of 8 k in the interior tile: per k, 2 loads of A's column
  // and 2 of B's row.
  CHECK(test::occurrences(*ptx, "ld.shared.v4.f32") >= 4 * 8);
  for (const char *depth : {"pipeline_depth=1", "pipeline_depth=2"}) {
    CAPTURE(depth);
    test::checkGpuKernelsOnCpu(*loaded->program, "matmul",
                               {{{"M", "64"}, {"N", "256"}, {"K", "16"}},
                                {{"M", "65"}, {"N", "257"}, {"K", "9"}},
                                {{"M", "130"}, {"N", "100"}, {"K", "3"}},
                                {{"M", "1"}, {"N", "1"}, {"K", "1"}}},
                               23, test::withParameters({"register_tile=8", depth}));
  }
}

// Found by a bug hunt: a full stage of a DCT by redomap was unrolled like
// matmul's, inlining libdevice's cos with its slow path 4 x 32 times (34 KB
// of spills, 8000 lines of PTX). A body calling a math routine runs its
// stage as a loop.
TEST_CASE("a stage whose body calls a math routine is a loop, not unrolled") {
  const char *source = R"(
kernel dct_rows(x: in f64[M][N], X: out f64[M][N]) {
  parfor i in 0..M, k in 0..N {
    X[i][k] = redomap(+, 0.0, n in 0..N) x[i][n] * cos(0.1 * f64(n) * f64(k));
  }
}
)";
  auto loaded = test::loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  test::PassTrace trace = test::tracePasses(*loaded->program, "dct_rows");
  const std::string &staged = trace.after("stage_shared");
  CHECK(contains(staged, "shared f64 x.shared["));
  CHECK(contains(staged, "for n.lane in [0, 32) {"));
  CHECK(!contains(staged, "unrolled for n.lane"));
  auto ptx = codegen::compileToPtx(trace.function, "sm_80");
  if (ptx || !test::skippedForLibdevice(ptx.error().message)) {
    REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
    CHECK(occurrences(*ptx, "\n") < 2000);
  }
  test::checkGpuKernelsOnCpu(*loaded->program, "dct_rows",
                             {{{"M", "3"}, {"N", "70"}}, {{"M", "9"}, {"N", "33"}}}, 19);
}

// Found by a bug hunt: a read down a column anywhere in the nest padded every
// box of its array odd, losing the 16-byte rows of a box read along rows.
TEST_CASE("a box read along rows keeps 16-byte rows beside a column read of its array") {
  // A 3x3 window reads each element 3 times per row: staged only when asked.
  passes::PassChoices smallReuse = test::withParameters({"stage_min_reuse=2"});
  auto loaded = test::loadText(R"(
kernel twobox(A: in f32[H][W], O: out f32[H - 2][W - 2]) {
  parfor y in 0..H - 2, x in 0..W - 2 {
    let s = redomap(+, 0.0, u in 0..3, v in 0..3) A[y + u][x + v];
    O[y][x] = s + A[x % 2][y % 3];
  }
}
)");
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const std::string staged =
      test::tracePasses(*loaded->program, "twobox", smallReuse).after("stage_shared");
  CHECK(contains(staged, "shared f32 A.shared[10][36]"));
  test::checkGpuKernelsOnCpu(*loaded->program, "twobox",
                             {{{"H", "12"}, {"W", "40"}}, {{"H", "3"}, {"W", "3"}}}, 29,
                             smallReuse);
}

TEST_CASE("stage_min_reuse: a box is staged when an iteration reads each element that often") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  // Per k, at 4 x 4 tiles: each of A's 32 elements is read 128 times (every
  // thread of its row), each of B's 128 elements 32 times.
  auto stagedAt = [&](const char *reuse) {
    passes::PassChoices choices =
        test::withParameters({"register_tile=4", std::string("stage_min_reuse=") + reuse});
    return test::tracePasses(*loaded->program, "matmul", choices).after("stage_shared");
  };
  const std::string both = stagedAt("32");
  CHECK(contains(both, "shared f32 A.shared["));
  CHECK(contains(both, "shared f32 B.shared["));
  const std::string onlyA = stagedAt("64");
  CHECK(contains(onlyA, "shared f32 A.shared["));
  CHECK(!contains(onlyA, "B.shared"));
  CHECK(!contains(stagedAt("256"), "shared f32"));
  test::checkGpuKernelsOnCpu(
      *loaded->program, "matmul",
      {{{"M", "65"}, {"N", "257"}, {"K", "37"}}, {{"M", "3"}, {"N", "5"}, {"K", "3"}}}, 7,
      test::withParameters({"stage_min_reuse=64"}));
}

TEST_CASE("other tile sizes, stage lengths and budgets agree") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  const char *parameterSets[][2] = {{"register_tile=8", "stage_length=16"},
                                    {"register_tile=2", "stage_length=4"},
                                    {"register_tile=1", "shared_kib=4"},
                                    {"register_tile=8", "shared_kib=1"}};
  for (const auto &parameters : parameterSets) {
    CAPTURE(parameters[0]);
    CAPTURE(parameters[1]);
    passes::PassChoices choices = test::withParameters({parameters[0], parameters[1]});
    test::checkGpuKernelsOnCpu(*loaded->program, "matmul",
                               {{{"M", "65"}, {"N", "257"}, {"K", "37"}},
                                {{"M", "64"}, {"N", "256"}, {"K", "64"}},
                                {{"M", "3"}, {"N", "5"}, {"K", "3"}}},
                               17, choices);
  }
}

TEST_CASE("conv2d_5x5: left to L1 by default, and at stage_min_reuse=2 the input window with its "
          "halo staged once, and the weights are a broadcast") {
  auto loaded = test::loadFile(test::sourcePath("samples/conv2d_5x5.loop"));
  REQUIRE(loaded->program);
  // Each input element is read 4-5 times per filter row: under the default
  // stage_min_reuse of 16.
  test::PassTrace unstaged = test::tracePasses(*loaded->program, "conv2d_5x5");
  CHECK(unstaged.after("stage_shared") == unstaged.after("tile_registers"));
  passes::PassChoices smallReuse = test::withParameters({"stage_min_reuse=2"});
  const std::string staged =
      test::tracePasses(*loaded->program, "conv2d_5x5", smallReuse).after("stage_shared");
  // 32 + 4 rows by 128 + 4 columns (rows read along: whole 16 bytes); the
  // u loop whole: one fill, one barrier.
  CHECK(contains(staged, "shared f32 I.shared[36][132]"));
  CHECK(!contains(staged, "F.shared"));
  CHECK(!contains(staged, ".stage in"));
  CHECK(occurrences(staged, "barrier") == 2); // the interior and edge tiles
  CHECK(contains(staged, "I.shared[y.y0 + u - min(y.block * 32, H + -5)][x.x3 + v - "
                         "min(x.block * 128, W + -5)]"));
  test::checkGpuKernelsOnCpu(*loaded->program, "conv2d_5x5",
                             {{{"H", "5"}, {"W", "5"}},
                              {{"H", "36"}, {"W", "132"}},
                              {{"H", "37"}, {"W", "133"}},
                              {{"H", "70"}, {"W", "300"}}},
                             11, smallReuse);
}

TEST_CASE("copies_in_flight: a stage's copies in unrolled groups of unconditional loads") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  passes::PassChoices grouped = test::withParameters({"copies_in_flight=8", "pipeline_depth=1"});
  test::PassTrace matmul = test::tracePasses(*loaded->program, "matmul", grouped);
  const std::string &staged = matmul.after("stage_shared");
  // B's 16 copies a thread in two groups of 8, each unrolled so its loads go
  // out together: every load unconditional, its indices clamped into B
  // (the edge tile's origin clamped too), 0 picked after it where the
  // element lies outside B. A's 4 copies are one group.
  CHECK(contains(staged, "for B.shared.group in [0, 2) {"));
  CHECK(contains(staged, "unrolled for B.shared.copy in [0, 8) {"));
  CHECK(contains(staged, "let B.shared.element = (B.shared.group * 8 + B.shared.copy) * 256 + "
                         "(i.thread * 32 + j.thread)"));
  CHECK(contains(staged, "let B.shared.value = B[max(min(k.stage * 32 + B.shared.element / 128, "
                         "K - 1), 0)][max(min(min(j.block * 128, N + -1) + B.shared.element % "
                         "128, N - 1), 0)]"));
  CHECK(contains(staged, "k.stage * 32 + B.shared.element / 128 < K && "));
  CHECK(contains(staged, ", B.shared.value, 0.0)"));
  CHECK(contains(staged, "unrolled for A.shared.copy in [0, 4) {"));
  CHECK(!contains(staged, "A.shared.group"));
  // What the code generator leaves: A's copy unrolled whole, B's a loop of
  // two iterations of 8 loads, where the guarded copy of B was a loop of 8
  // iterations of 2 (LLVM unrolled it by 2).
  codegen::LoopCensus loops;
  REQUIRE(codegen::compileToPtx(matmul.function, "sm_90", nullptr, &loops));
  CHECK(!loops["matmul_kernel0"].contains("A.shared.copy"));
  CHECK(loops["matmul_kernel0"]["B.shared.group"].globalLoads == 8);
  test::checkGpuKernelsOnCpu(*loaded->program, "matmul",
                             {{{"M", "33"}, {"N", "129"}, {"K", "81"}},
                              {{"M", "7"}, {"N", "300"}, {"K", "1"}},
                              {{"M", "5"}, {"N", "3"}, {"K", "0"}}},
                             21, grouped);
  // A box partly past the array's end, and a last round past the box's end
  // (4752 elements, 19 rounds of 256 in groups of 4).
  auto conv = test::loadFile(test::sourcePath("samples/conv2d_5x5.loop"));
  REQUIRE(conv->program);
  passes::PassChoices staged5x5 = test::withParameters({"copies_in_flight=4", "stage_min_reuse=2"});
  const std::string window =
      test::tracePasses(*conv->program, "conv2d_5x5", staged5x5).after("stage_shared");
  CHECK(contains(window, "for I.shared.group in [0, 5) {"));
  CHECK(contains(window, "I.shared[min(I.shared.element, 4751) / 132]"));
  CHECK(contains(window, "if (I.shared.element < 4752) {"));
  test::checkGpuKernelsOnCpu(*conv->program, "conv2d_5x5",
                             {{{"H", "37"}, {"W", "133"}}, {{"H", "5"}, {"W", "5"}}}, 22,
                             staged5x5);
}

TEST_CASE("transpose: the warps' column reads staged row by row, read back down the columns") {
  auto loaded = test::loadFile(test::sourcePath("samples/transpose.loop"));
  REQUIRE(loaded->program);
  // A point a thread: 32 rows of A (the warp's j) by 8 columns (the
  // block's i), 32 bytes a row; the column read at stride 9 hits 32 banks.
  passes::PassChoices onePoint = test::withParameters({"register_tile=1"});
  const std::string staged =
      test::tracePasses(*loaded->program, "transpose", onePoint).after("stage_shared");
  CHECK(contains(staged, "shared f32 A.shared[32][9]"));
  CHECK(contains(staged, "A[j.block * 32 + A.shared.element / 8][i.block * 8 + "
                         "A.shared.element % 8]"));
  CHECK(contains(staged, "B[i][j] = A.shared[j - j.block * 32][i - i.block * 8]"));
  CHECK(occurrences(staged, "barrier") == 1);
  // 4 points a thread along i (tile_registers' rows in flight): 32 x 32,
  // each row of the box a 128-byte line, 4 copies a thread.
  const std::string square = test::tracePasses(*loaded->program, "transpose").after("stage_shared");
  CHECK(contains(square, "shared f32 A.shared[32][33]"));
  CHECK(contains(square, "for A.shared.fill in [0, 4) {"));
  CHECK(contains(square, "A[j.block * 32 + A.shared.element / 32][i.block * 32 + "
                         "A.shared.element % 32]"));
  CHECK(occurrences(square, "barrier") == 1);
  for (const passes::PassChoices &choices : {onePoint, passes::PassChoices{}})
    test::checkGpuKernelsOnCpu(*loaded->program, "transpose",
                               {{{"M", "1"}, {"N", "1"}},
                                {{"M", "32"}, {"N", "8"}},
                                {{"M", "33"}, {"N", "9"}},
                                {{"M", "300"}, {"N", "7"}},
                                {{"M", "5"}, {"N", "301"}}},
                               19, choices);
}

TEST_CASE("nests without reuse across threads in a loop, or organised by block, are left alone") {
  // jacobi2d has no loop and reads along its rows; reverse reads a vector;
  // mv and softmax are a block per row already; nbody reads every body
  // alike in all threads (a broadcast) and its own body, several times, in
  // every iteration (registers); cnn_conv's windows are loops of symbolic
  // length inside the channel loop.
  const std::pair<const char *, const char *> samples[] = {
      {"jacobi2d", "jacobi2d"}, {"reverse", "reverse"}, {"mv", "mv"},
      {"softmax", "softmax"},   {"nbody", "nbody"},     {"cnn_conv", "cnn_conv_same"}};
  for (auto [sample, kernel] : samples) {
    CAPTURE(sample);
    auto loaded = test::loadFile(test::sourcePath(std::string("samples/") + sample + ".loop"));
    REQUIRE(loaded->program);
    test::PassTrace trace = test::tracePasses(*loaded->program, kernel);
    CHECK(trace.after("stage_shared") == trace.after("tile_registers"));
  }
}

TEST_CASE("clamped indices, a uniform let under the guard, and a window inside a time loop agree") {
  auto loaded = test::loadText(R"(
kernel neighbours(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[min(i + 1, M - 1)][k] * B[k][min(j + 2, N - 1)];
  }
}

kernel half(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    let n = K / 2;
    C[i][j] = redomap(+, 0.0, k in 0..n) A[i][k] * B[k][j];
  }
}

kernel frames(T: i32, I: in f32[5][H][W], O: out f32[H - 2][W - 2]) {
  parfor y in 0..H - 2, x in 0..W - 2 {
    var s: f32 = 0.0;
    for t in 0..T {
      let w = f32(t + 1);
      for u in 0..3 {
        for v in 0..3 {
          s += I[(t * 7) % 5][y + u][x + v] * w;
        }
      }
    }
    O[y][x] = s;
  }
}
)");
  INFO(loaded->diagnostics);
  REQUIRE(loaded->program);
  const std::string neighbours =
      test::tracePasses(*loaded->program, "neighbours", test::withParameters({"pipeline_depth=1"}))
          .after("stage_shared");
  // A program's own clamp: the box starts at the clamped first row, so the
  // last block, whose rows all clamp to M - 1, finds that row in it.
  CHECK(contains(neighbours, "shared f32 A.shared[32][32]"));
  CHECK(contains(neighbours, "min(i.block * 32 + 1, min(M, M - 1))"));
  test::checkGpuKernelsOnCpu(*loaded->program, "neighbours",
                             {{{"M", "1"}, {"N", "1"}, {"K", "3"}},
                              {{"M", "33"}, {"N", "129"}, {"K", "40"}},
                              {{"M", "65"}, {"N", "2"}, {"K", "31"}},
                              {{"M", "2"}, {"N", "131"}, {"K", "64"}}},
                             13);
  // A let above the loop, under the guard, bounds it: it stays uniform.
  const std::string half =
      test::tracePasses(*loaded->program, "half", test::withParameters({"pipeline_depth=1"}))
          .after("stage_shared");
  CHECK(contains(half, "let n = K / 2"));
  CHECK(contains(half, "for k.stage in [0, max((n + 31) / 32, 0)) {"));
  test::checkGpuKernelsOnCpu(
      *loaded->program, "half",
      {{{"M", "33"}, {"N", "129"}, {"K", "81"}}, {{"M", "7"}, {"N", "9"}, {"K", "1"}}}, 13);
  // The frame (t * 7) % 5 is no range over t: inside the time loop the u
  // loop is staged whole, 8 + 2 rows by 32 + 2 columns of one frame, with a
  // barrier after it before the next frame refills the box (a 3x3 window,
  // 3 reads per element and row: staged when asked).
  passes::PassChoices smallReuse = test::withParameters({"stage_min_reuse=2"});
  const std::string frames =
      test::tracePasses(*loaded->program, "frames", smallReuse).after("stage_shared");
  CHECK(contains(frames, "shared f32 I.shared[1][10][36]"));
  CHECK(contains(frames, "I[i64(t * 7 % 5) + I.shared.element / 340]"));
  CHECK(occurrences(frames, "barrier") == 2);
  test::checkGpuKernelsOnCpu(*loaded->program, "frames",
                             {{{"T", "1"}, {"H", "3"}, {"W", "3"}},
                              {{"T", "3"}, {"H", "34"}, {"W", "130"}},
                              {{"T", "2"}, {"H", "41"}, {"W", "150"}}},
                             13, smallReuse);
}

namespace {

// The GPU pipeline for `kernelName` at `parameters`, with `specialized`
// sizes compiled as constants (as an engine does for sizes up to 16) and
// the kernels compiled for `computeCapability`; its remarks in `remarks`.
ir::Function pipelined(const Program &program, const std::string &kernelName,
                       const std::vector<std::string> &parameters,
                       const std::map<std::string, int64_t> &specialized = {},
                       int computeCapability = 80, passes::Remarks *remarks = nullptr) {
  const KernelDecl *kernel = nullptr;
  for (const auto &candidate : program.modules.front()->kernels)
    if (candidate->name == kernelName)
      kernel = candidate.get();
  REQUIRE_MESSAGE(kernel, "no kernel " << kernelName);
  passes::PipelineOptions options;
  options.choices = test::withParameters(parameters);
  options.specializedSizes = specialized;
  options.computeCapability = computeCapability;
  options.remarks = remarks;
  auto function = passes::runPipeline(ir::lowerKernel(program, *kernel), options);
  REQUIRE_MESSAGE(function, (function ? "" : function.error().message));
  return std::move(*function);
}

// The PTX of `function` for sm_80 and sm_90 holds cp.async copies of
// `widths` bytes, commits and waits for `pending` groups, and assembles
// (without spills, with `noSpills`) where ptxas is installed.
void checkAsyncPtx(const ir::Function &function, const std::vector<int> &widths, int pending,
                   bool noSpills = true) {
  std::optional<std::string> ptxas = codegen::findPtxas();
  for (const char *gpu : {"sm_80", "sm_90"}) {
    CAPTURE(gpu);
    auto ptx = codegen::compileToPtx(function, gpu);
    REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
    for (int width : widths)
      CHECK(contains(*ptx, std::string(width == 16 ? "cp.async.cg.shared.global"
                                                   : "cp.async.ca.shared.global") +
                               " [%") == true);
    for (int width : widths)
      CHECK(contains(*ptx, ", " + std::to_string(width) + ", %r"));
    CHECK(contains(*ptx, "cp.async.commit_group;"));
    CHECK(contains(*ptx, "cp.async.wait_group " + std::to_string(pending) + ";"));
    if (!ptxas)
      continue;
    // Assembled with or without spills, as asked.
    auto reports = codegen::runPtxas(*ptxas, *ptx, gpu);
    REQUIRE_MESSAGE(reports, (reports ? "" : reports.error().message));
    for (const auto &report : *reports) {
      if (!noSpills)
        continue;
      CAPTURE(report.name);
      CHECK(report.spillStoreBytes == 0);
      CHECK(report.spillLoadBytes == 0);
    }
  }
  if (!ptxas)
    MESSAGE("skipped assembling the PTX: ptxas not found (set LOOPC_PTXAS)");
}

} // namespace

TEST_CASE("pipeline_depth: matmul's stages copied by async copies into 2 or 3 buffers, one "
          "barrier a stage") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  // Depth 1 is the synchronous staging.
  CHECK(!contains(
      test::tracePasses(*loaded->program, "matmul", test::withParameters({"pipeline_depth=1"}))
          .after("stage_shared"),
      "async"));
  for (int depth : {2, 3}) {
    CAPTURE(depth);
    std::string parameter = "pipeline_depth=" + std::to_string(depth);
    const std::string staged =
        test::tracePasses(*loaded->program, "matmul",
                          test::withParameters({"register_tile=4", parameter}))
            .after("stage_shared");
    // Every buffer of each box fits shared_kib=24 together: stages of 16 k
    // at depth 2 (2 x 10 KiB), 8 at depth 3 (3 x 5 KiB).
    int64_t length = depth == 2 ? 16 : 8;
    CHECK(contains(staged, "shared f32 A.shared[" + std::to_string(depth) + "][32][" +
                               std::to_string(length) + "]"));
    CHECK(contains(staged, "shared f32 B.shared[" + std::to_string(depth) + "][" +
                               std::to_string(length) + "][128]"));
    // The prologue issues depth - 1 stages; each stage waits for its own,
    // then one barrier, then the copies depth - 1 stages ahead.
    CHECK(contains(staged, "async_wait " + std::to_string(depth - 2) + "\n"));
    CHECK(contains(staged, "if (k.stage + " + std::to_string(depth - 1) + " < max((K + " +
                               std::to_string(length - 1) + ") / " + std::to_string(length) +
                               ", 0)) {"));
    CHECK(occurrences(staged, "async_commit") == 2 * depth); // interior and edge tiles
    // A stage and its loop's end: 2 barriers per tile.
    CHECK(occurrences(staged, "barrier") == 2 * 2);
    CHECK(contains(staged, "A.shared[k.stage % " + std::to_string(depth) + "]"));
    CHECK(contains(staged, "async_copy B.shared[(k.stage + " + std::to_string(depth - 1) + ") % " +
                               std::to_string(depth) + "]"));
    // 16-byte copies where K and N are multiples of 4, element copies else.
    CHECK(contains(staged, "if (K % 4 == 0) {"));
    CHECK(contains(staged, "if (N % 4 == 0) {"));
    CHECK(contains(staged, " x4 (16 bytes, valid "));
    CHECK(contains(staged, " x1 (4 bytes, valid "));
    test::checkGpuKernelsOnCpu(*loaded->program, "matmul",
                               {{{"M", "1"}, {"N", "1"}, {"K", "1"}},
                                {{"M", "7"}, {"N", "33"}, {"K", "257"}},
                                {{"M", "33"}, {"N", "257"}, {"K", "7"}},
                                {{"M", "33"}, {"N", "260"}, {"K", "36"}}, // 16-byte copies
                                {{"M", "65"}, {"N", "132"}, {"K", "1000"}},
                                {{"M", "257"}, {"N", "129"}, {"K", "33"}},
                                {{"M", "40"}, {"N", "40"}, {"K", "0"}}},
                               31, test::withParameters({parameter}));
    checkAsyncPtx(
        test::tracePasses(*loaded->program, "matmul", test::withParameters({parameter})).function,
        {16, 4}, depth - 2);
  }
}

TEST_CASE("pipeline_depth: cnn_conv's channel stages and sqdist's rows pipelined, the other "
          "staged kernels unchanged in meaning") {
  auto conv = test::loadFile(test::sourcePath("samples/cnn_conv.loop"));
  REQUIRE(conv->program);
  for (int64_t filter : {3, 5})
    for (int depth : {2, 3}) {
      CAPTURE(filter);
      CAPTURE(depth);
      std::string parameter = "pipeline_depth=" + std::to_string(depth);
      ir::Function function =
          pipelined(*conv->program, "cnn_conv_valid", {parameter}, {{"K", filter}});
      std::string printed = ir::toString(function);
      // 3 buffers of stages of 2 channels of a 5 x 5 window (8.4 KiB of
      // input, 2.6 KiB of filters each) do not fit shared_kib=24: staged
      // one stage at a time, in stages of 4 channels.
      if (filter == 5 && depth == 3) {
        CHECK(!contains(printed, "async"));
        CHECK(contains(printed, "shared f32 I.shared[4][8][132]"));
      } else {
        std::string ahead =
            "[(c.stage + " + std::to_string(depth - 1) + ") % " + std::to_string(depth) + "]";
        CHECK(contains(printed, "async_copy I.shared" + ahead));
        CHECK(contains(printed, "async_copy F.shared" + ahead));
        CHECK(contains(printed, "I.shared[c.stage % " + std::to_string(depth) + "]"));
        // The input's rows have run-time length W (16-byte copies where it
        // is a multiple of 4); the filters' rows, K floats, take element
        // copies. At depth 3 and 128 registers the 4 x 4 tiles of the 3 x 3
        // window spill 16 bytes: not asserted there.
        checkAsyncPtx(function, {16, 4}, depth - 2, depth == 2 || filter == 5);
      }
      test::checkGpuKernelsOnCpu(
          *conv->program, "cnn_conv_valid",
          {{{"Ic", "7"}, {"Oc", "3"}, {"H", "9"}, {"W", "33"}, {"K", std::to_string(filter)}},
           {{"Ic", "33"}, {"Oc", "5"}, {"H", "7"}, {"W", "36"}, {"K", std::to_string(filter)}},
           {{"Ic", "1"}, {"Oc", "1"}, {"H", "5"}, {"W", "5"}, {"K", std::to_string(filter)}}},
          41, test::withParameters({parameter}));
    }
  for (const char *kernel : {"cnn_conv_same", "cnn_conv_full"})
    test::checkGpuKernelsOnCpu(*conv->program, kernel,
                               {{{"Ic", "9"}, {"Oc", "3"}, {"H", "7"}, {"W", "33"}, {"K", "3"}}},
                               43, test::withParameters({"pipeline_depth=3"}));
  auto sqdist = test::loadFile(test::sourcePath("samples/sqdist.loop"));
  REQUIRE(sqdist->program);
  for (const char *depth : {"pipeline_depth=2", "pipeline_depth=3"}) {
    CHECK(contains(ir::toString(pipelined(*sqdist->program, "sqdist", {depth})), "async_copy"));
    test::checkGpuKernelsOnCpu(*sqdist->program, "sqdist",
                               {{{"M", "33"}, {"N", "257"}, {"K", "7"}},
                                {{"M", "7"}, {"N", "1"}, {"K", "1000"}},
                                {{"M", "1023"}, {"N", "7"}, {"K", "36"}}},
                               47, test::withParameters({depth}));
  }
  // A window staged whole, and a transpose's columns, have no stages to
  // pipeline: the same staging at every depth.
  auto conv5 = test::loadFile(test::sourcePath("samples/conv2d_5x5.loop"));
  REQUIRE(conv5->program);
  auto transpose = test::loadFile(test::sourcePath("samples/transpose.loop"));
  REQUIRE(transpose->program);
  for (const char *depth : {"pipeline_depth=2", "pipeline_depth=3"}) {
    passes::PassChoices staged5x5 = test::withParameters({depth, "stage_min_reuse=2"});
    CHECK(
        contains(test::tracePasses(*conv5->program, "conv2d_5x5", staged5x5).after("stage_shared"),
                 "shared f32 I.shared["));
    test::checkGpuKernelsOnCpu(*conv5->program, "conv2d_5x5",
                               {{{"H", "37"}, {"W", "133"}}, {{"H", "5"}, {"W", "5"}}}, 53,
                               staged5x5);
    test::checkGpuKernelsOnCpu(*transpose->program, "transpose",
                               {{{"M", "33"}, {"N", "257"}}, {{"M", "1"}, {"N", "7"}}}, 59,
                               test::withParameters({depth}));
  }
}

TEST_CASE("pipeline_depth: declined with a remark before sm_80, which has no async copies") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  passes::Remarks remarks;
  ir::Function function =
      pipelined(*loaded->program, "matmul", {"pipeline_depth=2"}, {}, 75, &remarks);
  CHECK(!contains(ir::toString(function), "async"));
  CHECK(contains(ir::toString(function), "shared f32 A.shared[32][32]"));
  bool declined = false;
  for (const passes::Remark &remark : remarks.inPipelineOrder())
    if (remark.pass == "stage_shared" && remark.kind == passes::RemarkKind::Declined &&
        remark.message == "the stages of k not pipelined: async copies (cp.async) need sm_80 or "
                          "later, and the kernels are compiled for sm_75")
      declined = true;
  CHECK(declined);
  passes::Remarks applied;
  pipelined(*loaded->program, "matmul", {"pipeline_depth=2"}, {}, 90, &applied);
  bool pipelinedRemark = false;
  for (const passes::Remark &remark : applied.inPipelineOrder())
    pipelinedRemark |= remark.kind == passes::RemarkKind::Applied &&
                       contains(remark.message, "the stages of k pipelined 2 deep");
  CHECK(pipelinedRemark);
}

TEST_CASE("async copies: printed, and verified global into shared in 4, 8 or 16 bytes") {
  using namespace loopc::ir;
  using ir::Expr; // not the AST's
  using ir::Stmt;
  Buffer global = passes::makeBuffer("g", ScalarType::F32, {makeI64(10)}, MemorySpace::Global);
  global->isParameter = true;
  Buffer shared =
      passes::makeBuffer("s", ScalarType::F32, {makeI64(2), makeI64(8)}, MemorySpace::Shared);
  auto kernelWith = [&](std::vector<Stmt> stmts) {
    Function function;
    function.name = "k";
    function.buffers = {global};
    function.body = std::make_shared<For>(
        "b", makeI64(0), makeI64(1), ForKind::GpuBlock, 0,
        std::make_shared<Allocate>(shared, std::make_shared<For>("t", makeI64(0), makeI64(32),
                                                                 ForKind::GpuThread, 0,
                                                                 makeBlock(std::move(stmts)))));
    return function;
  };
  auto copy = [&](const Buffer &target, const Buffer &source, int elements) {
    std::vector<Expr> targetIndices{makeI64(1), makeI64(4)};
    if (target->shape.size() == 1)
      targetIndices = {makeI64(4)};
    std::vector<Expr> sourceIndices{makeI64(4)};
    if (source->shape.size() == 2)
      sourceIndices = {makeI64(1), makeI64(4)};
    return std::make_shared<AsyncCopy>(target, targetIndices, source, sourceIndices, elements,
                                       makeI64(3));
  };
  Function good = kernelWith({copy(shared, global, 4), std::make_shared<AsyncCommit>(),
                              std::make_shared<AsyncWait>(0), std::make_shared<Barrier>()});
  CHECK(ir::verifyFunction(good, "test"));
  std::string printed = ir::toString(good);
  CHECK(contains(printed, "async_copy s[1][4] <- g[4] x4 (16 bytes, valid 3)\n"));
  CHECK(contains(printed, "async_commit\n"));
  CHECK(contains(printed, "async_wait 0\n"));
  auto twelveBytes = ir::verifyFunction(kernelWith({copy(shared, global, 3)}), "test");
  REQUIRE_FALSE(twelveBytes);
  CHECK(contains(twelveBytes.error().message, "an async copy of 12 bytes"));
  auto backwards = ir::verifyFunction(kernelWith({copy(global, shared, 1)}), "test");
  REQUIRE_FALSE(backwards);
  CHECK(contains(backwards.error().message, "not from global into shared memory"));
  auto tooMany = ir::verifyFunction(kernelWith({std::make_shared<AsyncWait>(8)}), "test");
  REQUIRE_FALSE(tooMany);
  CHECK(contains(tooMany.error().message, "8 pending groups"));
}
