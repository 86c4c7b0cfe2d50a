// The middle end: the IR printer and verifier on hand-built IR, the lowering
// from checked programs, and each pass, checked on the printed IR.
#include "TestSupport.h"
#include "support/Differential.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "lower/Lower.h"
#include "ir/Verifier.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>

// Inside the IR's namespace, Expr and Stmt are the IR's, not the AST's.
namespace loopc::ir {

using loopc::test::contains;

namespace {

Buffer makeBuffer(const std::string &name, std::vector<Expr> shape,
                  MemorySpace memory = MemorySpace::Global) {
  auto buffer = std::make_shared<BufferInfo>();
  buffer->name = name;
  buffer->shape = std::move(shape);
  buffer->memory = memory;
  return buffer;
}

Expr i64(const std::string &name) { return makeVar(ScalarType::I64, name); }

Stmt loop(const std::string &var, Expr extent, ForKind kind, Stmt body) {
  return std::make_shared<For>(var, makeI64(0), std::move(extent), kind, 0, std::move(body));
}

// A function over `x: f32[N]` with `body`.
Function functionOver(const Buffer &x, Stmt body) {
  Function function;
  // Named after its buffer: assigning a short literal here trips GCC 12's
  // -Wrestrict false positive.
  function.name = x->name + "_function";
  function.buffers = {x};
  function.scalars.push_back({"N", ScalarType::I64});
  function.body = std::move(body);
  return function;
}

std::string verifyProblem(const Function &function, VerifyOptions options = {}) {
  Status status = verifyFunction(function, "test_pass", options);
  return status ? "" : status.error().message;
}

// Lowers kernel `name` of `text` (which must check).
Function lowered(const std::string &text, const std::string &name) {
  auto loaded = test::loadText(text);
  INFO(loaded->diagnostics);
  REQUIRE(loaded->program);
  const KernelDecl *kernel = loaded->program->findKernel(name);
  REQUIRE(kernel);
  Function function = lowerKernel(*loaded->program, *kernel);
  Status status = verifyFunction(function, "lower");
  INFO(toString(function));
  CHECK_MESSAGE(status.has_value(), (status ? "" : status.error().message));
  return function;
}

// Runs the pipeline, returning the IR printed after the last pass named `pass`.
std::string after(const Function &function, const std::string &pass,
                  passes::PipelineTarget target = passes::PipelineTarget::Gpu) {
  std::string printed;
  passes::PipelineOptions options;
  options.target = target;
  options.afterPass = [&](const std::string &name, const Function &result) {
    if (name == pass)
      printed = toString(result);
  };
  auto compiled = passes::runPipeline(function, options);
  REQUIRE_MESSAGE(compiled, (compiled ? "" : compiled.error().message));
  return printed;
}

const char *kMatmul = R"(
kernel matmul(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
  }
}
)";

const char *kDot = R"(
kernel dot(x: in f32[N], y: in f32[N], r: out f32) {
  r = redomap(+, 0.0, i in 0..N) x[i] * y[i];
}
)";

} // namespace

// ---------------------------------------------------------------- printer ---

TEST_CASE("the printer shows loop kinds, memory spaces, barriers and launches") {
  Buffer x = makeBuffer("x", {i64("N")});
  Buffer tile = makeBuffer("tile", {makeI64(16), makeI64(17)}, MemorySpace::Shared);
  Expr t = i64("t");
  Stmt threadBody =
      makeBlock({std::make_shared<Store>(tile, std::vector<Expr>{t, makeI64(0)},
                                         std::make_shared<Load>(x, std::vector<Expr>{t})),
                 std::make_shared<Barrier>()});
  Stmt kernel = std::make_shared<For>(
      "b", makeI64(0), i64("N"), ForKind::GpuBlock, 0,
      std::make_shared<Allocate>(tile, std::make_shared<For>("t", makeI64(0), makeI64(16),
                                                             ForKind::GpuThread, 1, threadBody)));
  CHECK(toString(kernel) == "gpu_block.x for b in [0, N) {\n"
                            "  shared f32 tile[16][17]\n"
                            "  gpu_thread.y for t in [0, 16) {\n"
                            "    tile[t][0] = x[t]\n"
                            "    barrier\n"
                            "  }\n"
                            "}\n");
  Stmt launch =
      std::make_shared<Launch>("kernel_0", std::vector<Expr>{i64("N"), makeI64(1), makeI64(1)},
                               std::vector<Expr>{makeI64(256), makeI64(1), makeI64(1)},
                               std::vector<Buffer>{x}, std::vector<Expr>{i64("N")});
  CHECK(toString(launch) == "launch kernel_0<<<grid(N, 1, 1), block(256, 1, 1)>>>(x; N)\n");
}

TEST_CASE("the printer parenthesises only where precedence needs it") {
  Expr a = i64("a"), b = i64("b"), c = i64("c");
  CHECK(toString(makeBinary(BinaryOpKind::Mul, makeBinary(BinaryOpKind::Add, a, b), c)) ==
        "(a + b) * c");
  CHECK(toString(makeBinary(BinaryOpKind::Add, a, makeBinary(BinaryOpKind::Mul, b, c))) ==
        "a + b * c");
  CHECK(toString(makeBinary(BinaryOpKind::Sub, a, makeBinary(BinaryOpKind::Sub, b, c))) ==
        "a - (b - c)");
  CHECK(toString(std::make_shared<FloatImm>(ScalarType::F32, 2.0)) == "2.0");
}

// --------------------------------------------------------------- verifier ---

TEST_CASE("the verifier accepts well-formed IR") {
  Buffer x = makeBuffer("x", {i64("N")});
  Stmt body = loop("i", i64("N"), ForKind::Parallel,
                   std::make_shared<Store>(x, std::vector<Expr>{i64("i")},
                                           std::make_shared<FloatImm>(ScalarType::F32, 1.0)));
  CHECK(verifyProblem(functionOver(x, body)) == "");
}

TEST_CASE("the verifier rejects each kind of bad IR, naming the pass") {
  Buffer x = makeBuffer("x", {i64("N")});
  Expr one = std::make_shared<FloatImm>(ScalarType::F32, 1.0);
  auto storeAt = [&](Expr index) {
    return std::make_shared<Store>(x, std::vector<Expr>{std::move(index)}, one);
  };

  SUBCASE("a variable outside its scope") {
    std::string problem = verifyProblem(functionOver(x, storeAt(i64("i"))));
    CHECK(contains(problem, "after pass 'test_pass'"));
    CHECK(contains(problem, "'i' is used outside the scope"));
  }
  SUBCASE("operands of different types") {
    Expr mixed = makeBinary(BinaryOpKind::Add, makeI64(1), makeI64(2));
    Expr bad = std::make_shared<Binary>(BinaryOpKind::Add, mixed, makeVar(ScalarType::I32, "N"));
    CHECK(contains(verifyProblem(functionOver(x, storeAt(bad))), "different types"));
  }
  SUBCASE("a stored value of the wrong type") {
    Stmt store = std::make_shared<Store>(x, std::vector<Expr>{makeI64(0)}, makeI64(1));
    CHECK(contains(verifyProblem(functionOver(x, store)), "stored value has type i64"));
  }
  SUBCASE("an index count that is not the rank") {
    Stmt store = std::make_shared<Store>(x, std::vector<Expr>{makeI64(0), makeI64(0)}, one);
    CHECK(contains(verifyProblem(functionOver(x, store)), "its rank is 1"));
  }
  SUBCASE("a gpu_thread loop outside any gpu_block loop") {
    Stmt body = loop("t", makeI64(32), ForKind::GpuThread, storeAt(i64("t")));
    CHECK(contains(verifyProblem(functionOver(x, body)), "gpu_thread loop outside"));
  }
  SUBCASE("a barrier under a condition on the thread") {
    Stmt branch = std::make_shared<IfThenElse>(makeBinary(BinaryOpKind::Lt, i64("t"), makeI64(8)),
                                               std::make_shared<Barrier>());
    Stmt body = loop("b", makeI64(4), ForKind::GpuBlock,
                     loop("t", makeI64(32), ForKind::GpuThread, branch));
    CHECK(contains(verifyProblem(functionOver(x, body)), "not block-uniform"));
  }
  SUBCASE("a barrier in host code") {
    CHECK(contains(verifyProblem(functionOver(x, std::make_shared<Barrier>())),
                   "barrier outside any gpu_block"));
  }
  SUBCASE("a shared buffer outside any block") {
    Buffer tile = makeBuffer("tile", {makeI64(32)}, MemorySpace::Shared);
    Stmt body = std::make_shared<Allocate>(tile, makeBlock({}));
    CHECK(contains(verifyProblem(functionOver(x, body)), "shared buffer 'tile'"));
  }
  SUBCASE("a buffer used outside its allocation") {
    Buffer local = makeBuffer("tmp", {});
    Stmt body = std::make_shared<Store>(local, std::vector<Expr>{}, one);
    CHECK(contains(verifyProblem(functionOver(x, body)), "'tmp' outside its scope"));
  }
  SUBCASE("a reduce after lower_reductions") {
    Buffer acc = makeBuffer("acc", {});
    Stmt reduce =
        std::make_shared<Reduce>(acc, std::vector<Expr>{}, ReduceOperator{}, one,
                                 std::vector<Reduce::Loop>{{"k", makeI64(0), i64("N")}}, nullptr,
                                 std::make_shared<Load>(x, std::vector<Expr>{i64("k")}));
    Function function = functionOver(x, std::make_shared<Allocate>(acc, reduce));
    CHECK(verifyProblem(function) == "");
    VerifyOptions lowered;
    lowered.reductionsLowered = true;
    CHECK(contains(verifyProblem(function, lowered), "a reduce after lower_reductions"));
  }
}

TEST_CASE("the pipeline reports an invalid IR as an internal error naming the step") {
  // A barrier outside any block: the verifier rejects the input as lowered,
  // and the pipeline returns the error instead of stopping the process.
  Buffer x = makeBuffer("x", {i64("N")});
  auto compiled = passes::runPipeline(functionOver(x, std::make_shared<Barrier>()));
  REQUIRE_FALSE(compiled);
  CHECK(contains(compiled.error().message, "internal error"));
  CHECK(contains(compiled.error().message, "after pass 'lower'"));
  CHECK(contains(compiled.error().message, "barrier outside any gpu_block"));
}

// --------------------------------------------------------------- lowering ---

TEST_CASE("a parfor nest lowers to parallel loops and a redomap to a reduce") {
  std::string printed = toString(lowered(kMatmul, "matmul"));
  CHECK(contains(printed, "func matmul(global f32 A[M][K], global f32 B[K][N], global f32 "
                          "C[M][N] (written); M: i64, K: i64, N: i64)"));
  CHECK(contains(printed, "  parallel for i in [0, M) {\n    parallel for j in [0, N) {\n"));
  CHECK(contains(printed, "register f32 acc\n"));
  CHECK(contains(printed, "reduce acc += from 0.0 over k in [0, K): A[i][k] * B[k][j]\n"));
  CHECK(contains(printed, "C[i][j] = acc\n"));
}

TEST_CASE("a stepped loop counts iterations and binds its variable") {
  std::string printed = toString(lowered(R"(
kernel evens(x: inout f32[N]) {
  for i in 1..N by 2 { x[i] = 0.0; }
}
)",
                                         "evens"));
  // floor(N / 2) - floor(1 / 2), plus one where N's remainder passes 1's:
  // no span N - 1 that could overflow i64.
  CHECK(contains(printed, "for i.t in [0, N / 2 - select(N % 2 < 0, 1, 0) - (1 / 2 - select(1 % 2 "
                          "< 0, 1, 0)) + select(N % 2 + select(N % 2 < 0, 2, 0) > 1 % 2 + "
                          "select(1 % 2 < 0, 2, 0), 1, 0)) {"));
  CHECK(contains(printed, "let i = 1 + 2 * i.t"));
}

TEST_CASE("functions are inlined, early returns through a result cell") {
  std::string printed = toString(lowered(R"(
fn sq(v: f32) -> f32 { let w = v * v; return w; }
fn clamp01(v: f32) -> f32 {
  if v < 0.0 { return 0.0; }
  if v > 1.0 { return 1.0; }
  return v;
}
kernel k(x: inout f32[N]) {
  parfor i in 0..N { x[i] = clamp01(sq(x[i])); }
}
)",
                                         "k"));
  CHECK(contains(printed, "let w = v * v"));
  CHECK(contains(printed, "register f32 clamp01.result"));
  CHECK(contains(printed, "register bool clamp01.done"));
  CHECK(contains(printed, "if (!clamp01.done) {"));
  CHECK(contains(printed, "x[i] = clamp01.result"));
}

TEST_CASE("a kernel call expands in place with the caller's buffers and sizes") {
  std::string printed = toString(lowered(R"(
kernel fill(y: out f32[M], v: f32) { parfor i in 0..M { y[i] = v; } }
kernel twice(a: out f32[N], b: out f32[N]) { fill(a, 1.0); fill(b, 2.0); }
)",
                                         "twice"));
  CHECK(contains(printed, "parallel for i in [0, N) {\n    a[i] = 1.0"));
  CHECK(contains(printed, "b[i_2] = 2.0"));
}

TEST_CASE("short-circuit operators evaluate the right side only when needed") {
  std::string printed = toString(lowered(R"(
kernel k(x: inout f32[N], n: i64) {
  parfor i in 0..N {
    if i < n && x[i] > 0.0 { x[i] = 0.0; }
  }
}
)",
                                         "k"));
  CHECK(contains(printed, "if (select(i < n, x[i] > 0.0, false)) {"));
}

// ----------------------------------------------------------------- passes ---

TEST_CASE("map_to_gpu strip-mines a 2-D parfor into blocks and threads with a guard") {
  std::string printed = after(lowered(kMatmul, "matmul"), "map_to_gpu");
  CHECK(contains(printed, "gpu_block.y for i.block in [0, max((M + 8 - 1) / 8, 0)) {"));
  CHECK(contains(printed, "gpu_block.x for j.block in [0, max((N + 32 - 1) / 32, 0)) {"));
  CHECK(contains(printed, "gpu_thread.y for i.thread in [0, 8) {"));
  CHECK(contains(printed, "gpu_thread.x for j.thread in [0, 32) {"));
  CHECK(contains(printed, "let j = j.block * 32 + j.thread"));
  CHECK(contains(printed, "if (j < N && i < M) {"));
}

TEST_CASE("lower_reductions turns a per-element reduce into a serial register loop") {
  std::string printed = after(lowered(kMatmul, "matmul"), "lower_reductions");
  CHECK_FALSE(contains(printed, "reduce "));
  CHECK(contains(printed, "for k in [0, K) {\n"));
  // The combine may be reassociated (partial sums, vector lanes); the
  // printer says so.
  CHECK(contains(printed, "acc = acc + A[i][k] * B[k][j]  (reduction step += from 0.0)\n"));
}

TEST_CASE("a whole-array reduction becomes two kernels with a shared tree") {
  std::string printed = after(lowered(kDot, "dot"), "extract_kernels");
  CHECK_FALSE(contains(printed, "reduce "));
  CHECK(contains(printed, "launch dot_kernel0<<<grid(red0.grid, 1, 1), block(256, 1, 1)>>>"));
  CHECK(contains(printed, "launch dot_kernel1<<<grid(1, 1, 1), block(256, 1, 1)>>>"));
  CHECK(contains(printed, "shared f32 red0.tile[256]"));
  CHECK(contains(printed, "barrier\n"));
  CHECK(contains(printed, "red0.partials[red0.block] = red0.tile.total"));
  CHECK(contains(printed, "acc = acc + red1.tile.total"));
  CHECK(contains(printed, "r = acc"));
  // The lowering's tree halves the tile; combine_in_warps (its own tests)
  // then shuffles within warps.
  std::string tree = after(lowered(kDot, "dot"), "lower_reductions");
  CHECK(contains(tree, "if (red0.thread < 128) {\n"));
  CHECK(contains(tree, "red0.partials[red0.block] = red0.tile[0]"));
  CHECK(contains(tree, "acc = acc + red1.tile[0]"));
}

// From a bug hunt: each GPU thread of a whole-array reduction over a 2-D
// range walked its own rows, so a warp's reads were 32 rows apart (one
// sector each), and only as many threads as rows worked (one for a single
// row). On the GPU the threads now walk the points of the rectangular loops
// as one range; the CPU keeps a thread per row, vectorized along it.
TEST_CASE("on the GPU a whole-array reduction walks the points of its rectangular loops as one") {
  const char *source = R"(
assoc fn lastnz(a: i32, b: i32) -> i32 { return b != 0 ? b : a; }
kernel total(X: in f32[H][W], s: out f32) {
  s = redomap(+, 0.0, i in 0..H, j in 0..W) X[i][j];
}
kernel cube(X: in f64[H][W][D], lo: i64, m: out f64) {
  m = redomap(max, -inf, i in lo..H, j in 0..W, k in 1..D) X[i][j][k] * f64(k - j);
}
kernel ordered(K: in i32[H][W], r: out i32) {
  r = redomap(lastnz, 0, i in 0..H, j in 0..W) K[i][j] % 7 > 3 ? K[i][j] : 0;
}
kernel upper(X: in f32[H][H], s: out f32) {
  s = redomap(+, 0.0, i in 0..H, j in i..H) X[i][j];
}
)";
  std::string total = after(lowered(source, "total"), "lower_reductions");
  // A block per 4 points a thread, up to 16384 blocks: many waves.
  CHECK(
      contains(total, "let red0.grid = max(min((max(H, 0) * max(W, 0) + 1023) / 1024, 16384), 1)"));
  CHECK(contains(total,
                 "red0.at1 = (red0.block * 256 + red0.thread) / max(1, 1) % max(max(W, 0), 1)"));
  CHECK(contains(total, "let i = 0 + red0.at0\n"));
  CHECK(contains(total, "let j = 0 + red0.at1\n"));
  CHECK(contains(total, "red0.at1 = select(red0.wraps1, red0.next1 - max(W, 0), red0.next1)\n"));
  CHECK(contains(total, "red0.at0 = red0.at0 + red0.stride0 + select(red0.wraps1, 1, 0)\n"));
  // A loop whose bounds use an outer variable is walked inside its point.
  std::string upper = after(lowered(source, "upper"), "lower_reductions");
  CHECK_FALSE(contains(upper, "red0.at"));
  CHECK(contains(upper, "for j in [i, "));
  std::string cpu =
      after(lowered(source, "total"), "lower_reductions", passes::PipelineTarget::Cpu);
  CHECK_FALSE(contains(cpu, "red0.at"));

  auto loaded = test::loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  test::checkGpuKernelsOnCpu(*loaded->program, "total",
                             {{{"H", "1"}, {"W", "1"}},
                              {{"H", "0"}, {"W", "3"}},
                              {{"H", "3"}, {"W", "0"}},
                              {{"H", "1"}, {"W", "3001"}},
                              {{"H", "3001"}, {"W", "1"}},
                              {{"H", "67"}, {"W", "129"}},
                              // Past the grid's cap of 16384 blocks: 5 points a
                              // thread, 64 partials a thread of the second kernel.
                              {{"H", "4099"}, {"W", "4099"}}},
                             3);
  test::checkGpuKernelsOnCpu(*loaded->program, "cube",
                             {{{"H", "4"}, {"W", "5"}, {"D", "6"}, {"lo", "1"}},
                              {{"H", "2"}, {"W", "1"}, {"D", "700"}, {"lo", "0"}},
                              {{"H", "40"}, {"W", "33"}, {"D", "2"}, {"lo", "3"}},
                              {{"H", "5"}, {"W", "5"}, {"D", "5"}, {"lo", "5"}}},
                             4);
  test::checkGpuKernelsOnCpu(
      *loaded->program, "ordered",
      {{{"H", "1"}, {"W", "5000"}},
       {{"H", "300"}, {"W", "7"}},
       {{"H", "61"}, {"W", "67"}},
       {{"H", "1100"}, {"W", "1000"}}}, // 1075 blocks: more partials than the old cap
      5);
}

TEST_CASE("on the CPU a whole-array reduction of few points is a loop in the host code") {
  const char *source = R"(
kernel dots(steps: i32, x: in f32[N], s: out f32[steps]) {
  for t in 0..steps {
    s[t] = redomap(+, 0.0, i in 0..N) x[i] * f32(t);
  }
}
kernel area(X: in f32[H][W], s: out f32) {
  s = redomap(+, 0.0, i in 0..H, j in 0..W) X[i][j];
}
kernel upper(X: in f32[H][H], s: out f32) {
  s = redomap(+, 0.0, i in 0..H, j in i..H) X[i][j];
}
kernel nested(x: in f32[N], s: out f32) {
  s = redomap(+, 0.0, i in 0..N) redomap(max, -inf, k in 0..i % 5) x[k];
}
)";
  // 2^17 operations: the step (loads of x and acc, the product, the sum, the
  // store) is 5, so up to 26214 points; the tree is the other branch.
  std::string dots = after(lowered(source, "dots"), "extract_kernels", passes::PipelineTarget::Cpu);
  CHECK(contains(dots, "if (min(max(N, 0), 26215) <= 26214) {\n"));
  CHECK(contains(dots, "acc.reg2 = acc.reg2 + x[i] * f32(t)  (reduction step += from 0.0)\n"));
  CHECK(contains(dots, "} else {\n"));
  CHECK(contains(dots, "launch dots_kernel0<<<grid(red0.grid, 1, 1), block(256, 1, 1)>>>"));
  // A block per 64 points a thread, each block a contiguous range.
  CHECK(contains(dots, "let red0.grid = max(min((N + 16383) / 16384, 1024), 1)"));
  CHECK(contains(dots, "let i = red0.block * (((N + (red0.grid - 1)) / red0.grid + 255) / 256 * "
                       "256) + red0.thread + red0.step * 256\n"));
  // Rectangular loops count their points; each product is clamped first.
  std::string area =
      after(lowered(source, "area"), "lower_reductions", passes::PipelineTarget::Cpu);
  CHECK(
      contains(area, "if (min(min(max(H, 0), 32769) * min(max(W, 0), 32769), 32769) <= 32768) {"));
  // A triangular range or a value with a loop of its own: the tree only.
  for (const char *kernel : {"upper", "nested"}) {
    CAPTURE(kernel);
    std::string tree =
        after(lowered(source, kernel), "lower_reductions", passes::PipelineTarget::Cpu);
    CHECK_FALSE(contains(tree, ") <= "));
    CHECK(contains(tree, "red0.partials"));
  }
  // The GPU keeps its tree.
  CHECK_FALSE(contains(after(lowered(source, "dots"), "lower_reductions"), ") <= 26214"));
}

TEST_CASE("extract_kernels leaves serial loops and launches in the host code") {
  std::string printed = after(lowered(R"(
kernel smooth(steps: i32, a: inout f32[N], b: inout f32[N]) {
  for t in 0..steps {
    parfor i in 1..N-1 { b[i] = 0.5 * (a[i-1] + a[i+1]); }
    parfor i in 1..N-1 { a[i] = b[i]; }
  }
}
)",
                                      "smooth"),
                              "extract_kernels");
  CHECK(contains(printed, "  for t in [0, steps) {\n    launch smooth_kernel0<<<"));
  CHECK(contains(printed, "launch smooth_kernel1<<<"));
  CHECK(contains(printed, "kernel smooth_kernel0("));
  CHECK(contains(printed, "maxntid(256)"));
}

TEST_CASE("simplify folds constants and drops trivial lets") {
  Buffer x = makeBuffer("x", {i64("N")});
  Expr index = makeBinary(BinaryOpKind::Add, makeBinary(BinaryOpKind::Mul, i64("j"), makeI64(1)),
                          makeBinary(BinaryOpKind::Sub, makeI64(3), makeI64(3)));
  Stmt body = loop("i", i64("N"), ForKind::Serial,
                   std::make_shared<LetStmt>(
                       "j", i64("i"),
                       std::make_shared<Store>(x, std::vector<Expr>{index},
                                               std::make_shared<FloatImm>(ScalarType::F32, 0.0))));
  Function simplified = passes::simplify(functionOver(x, body));
  CHECK(toString(simplified.body) == "for i in [0, N) {\n  x[i] = 0.0\n}\n");
}

TEST_CASE("mentionsVar finds a name anywhere, in an array's extents too, and only that name") {
  Buffer x = makeBuffer("x", {i64("N")});
  Buffer local = makeBuffer("t", {i64("m")});
  Stmt store = std::make_shared<Store>(x, std::vector<Expr>{i64("i")},
                                       std::make_shared<FloatImm>(ScalarType::F32, 0.0));
  Stmt body = loop("i", i64("N"), ForKind::Serial, std::make_shared<Allocate>(local, store));
  CHECK(mentionsVar(body, "i"));
  CHECK(mentionsVar(body, "N"));
  CHECK(mentionsVar(body, "m")); // the allocated array's extent
  CHECK_FALSE(mentionsVar(body, "j"));
  CHECK_FALSE(mentionsVar(body, "x")); // an array, not a variable
}

TEST_CASE("a chain of thousands of lets compiles in linear time") {
  // simplify asked each let whether its body used its name by collecting
  // the body's free names: a chain of n lets cost n^2 (4000 took 11 s; a
  // bug hunt's generated kernel). Linear, it takes a fraction of a second;
  // the bound leaves room for a loaded machine.
  std::string source = "kernel chain(X: in f32[N], Y: out f32[N]) {\n  parfor i in 0..N {\n"
                       "    let v0 = X[i];\n";
  const int lets = 4000;
  for (int k = 1; k < lets; ++k)
    source +=
        "    let v" + std::to_string(k) + " = v" + std::to_string(k - 1) + " * 0.999 + 0.001;\n";
  source += "    Y[i] = v" + std::to_string(lets - 1) + ";\n  }\n}\n";
  auto loaded = test::loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  auto start = std::chrono::steady_clock::now();
  Function function =
      test::compiledKernel(*loaded->program, *loaded->program->modules.front()->kernels.front());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(contains(toString(function), "let v3999 = v3998 * 0.999 + 0.001"));
  CHECK(seconds < 4.0);
}

TEST_CASE("every sample compiles through the pipeline to kernels without a reduce") {
  for (const auto &entry : std::filesystem::directory_iterator(test::sourcePath("samples"))) {
    if (entry.path().extension() != ".loop")
      continue;
    auto loaded = test::loadFile(entry.path().string());
    INFO(entry.path().string());
    INFO(loaded->diagnostics);
    REQUIRE(loaded->program);
    for (const auto &kernel : loaded->program->modules.front()->kernels) {
      Function function = test::compiledKernel(*loaded->program, *kernel);
      std::string printed = toString(function);
      INFO(printed);
      CHECK_FALSE(function.kernels.empty());
      CHECK_FALSE(contains(printed, "reduce "));
      CHECK_FALSE(contains(printed, "parallel for"));
    }
  }
}

} // namespace loopc::ir
