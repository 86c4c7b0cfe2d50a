// combine_in_warps: which block trees become warp shuffles (the IR of one:
// five exchanges, one barrier, the warps' totals folded in every thread), the
// trees left alone, the verifier's rules for shuffles, the PTX of shuffles of
// every type, and that the GPU pipeline's kernels (shuffles exchanged through
// shared memory on the CPU) compute what the interpreter computes.
#include "TestSupport.h"
#include "support/Differential.h"

#include "codegen/NvptxTarget.h"
#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"
#include "ir/IRPrinter.h"
#include "ir/Verifier.h"
#include "passes/Passes.h"
#include "passes/lowering/ReductionTrees.h"

#include <doctest/doctest.h>

#include <string>

using namespace loopc;
using loopc::test::contains;
using loopc::test::occurrences;

namespace {

constexpr const char *kReductions = R"(
assoc fn absmax(a: f64, b: f64) -> f64 { return max(abs(a), abs(b)); }

kernel whole(x: in f64[N], k: in i64[N], s: out f64, m: out i64, any: out bool, w: out i32,
             f: out f32) {
  s = redomap(+, 0.0, i in 0..N) x[i];
  m = redomap(max, -9223372036854775807, i in 0..N) k[i];
  any = redomap(||, false, i in 0..N) x[i] > 2.5;
  w = redomap(+, 0, i in 0..N) i32(k[i] % 7);
  f = redomap(min, inf, i in 0..N) f32(x[i]);
}

kernel rows(x: in f64[R][C], k: in i64[R][C], s: out f64[R], m: out i64[R], all: out bool[R]) {
  parfor r in 0..R {
    s[r] = redomap(+, 0.0, c in 0..C) x[r][c];
    m[r] = redomap(min, 9223372036854775807, c in 0..C) k[r][c];
    all[r] = redomap(&&, true, c in 0..C) x[r][c] < 2.5;
  }
}

kernel rows_user(x: in f64[R][C], u: out f64[R]) {
  parfor r in 0..R {
    u[r] = redomap(absmax, 0.0, c in 0..C) x[r][c] / f64(c + 1);
  }
}

assoc fn first(a: i64, b: i64) -> i64 { return a != 0 ? a : b; }

kernel rows_first(x: in f64[R][C], f: out i64[R]) {
  parfor r in 0..R {
    f[r] = redomap(first, 0, c in 0..C) (x[r][c] > 2.5 ? c + 1 : 0);
  }
}
)";

ir::Function compiled(const std::string &source, const std::string &kernel,
                      bool combineInWarps = true) {
  auto loaded = test::loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  passes::PipelineOptions options;
  if (!combineInWarps)
    options.choices.skipped.insert("combine_in_warps");
  for (const auto &declaration : loaded->program->modules.front()->kernels)
    if (declaration->name == kernel) {
      auto function = passes::runPipeline(ir::lowerKernel(*loaded->program, *declaration), options);
      REQUIRE_MESSAGE(function, (function ? "" : function.error().message));
      return std::move(*function);
    }
  FAIL("no kernel " << kernel);
  return {};
}

std::string kernelsText(const ir::Function &function) {
  std::string text;
  for (const ir::KernelFunc &kernel : function.kernels)
    text += ir::toString(kernel);
  return text;
}

} // namespace

TEST_CASE("a block tree becomes five shuffles per member and one barrier") {
  std::string dot = kernelsText(compiled("kernel dot(x: in f32[N], y: in f32[N], r: out f32) {\n"
                                         "  r = redomap(+, 0.0, i in 0..N) x[i] * y[i];\n}",
                                         "dot"));
  // Two tree kernels (partials per block, then one block), each: the tile
  // filled, a barrier, the warps' shuffles, the warps' totals, a barrier.
  CHECK(occurrences(dot, "shuffle_xor(") == 10);
  for (int mask : {16, 8, 4, 2, 1})
    CHECK(occurrences(dot, ".lane, " + std::to_string(mask) + ")") == 2);
  CHECK(occurrences(dot, "barrier") == 4);
  CHECK(contains(dot, "if (red0.thread % 32 == 0) {\n        red0.tile[red0.thread] = "
                      "red0.tile.lane"));
  CHECK(contains(dot, "red0.tile.total = red0.tile[0]\n"));
  for (int warp = 1; warp < 8; ++warp)
    CHECK(contains(dot, "red0.tile.total = red0.tile.total + red0.tile[" +
                            std::to_string(32 * warp) + "]\n"));
  CHECK(contains(dot, "red0.partials[red0.block] = red0.tile.total"));
  CHECK_FALSE(contains(dot, "< 128"));

  std::string halving =
      kernelsText(compiled("kernel dot(x: in f32[N], y: in f32[N], r: out f32) {\n"
                           "  r = redomap(+, 0.0, i in 0..N) x[i] * y[i];\n}",
                           "dot", false));
  CHECK(occurrences(halving, "barrier") == 18);
  CHECK_FALSE(contains(halving, "shuffle_xor"));
}

TEST_CASE("every member of a group and every row tree is combined in warps") {
  std::string rows = kernelsText(compiled(kReductions, "rows"));
  // Three members share each row version's tree (the first member also has
  // a tree of its own over the parts of a split row): five shuffles per
  // member and tree, and no halving step left anywhere.
  CHECK(occurrences(rows, "shuffle_xor(") % 5 == 0);
  CHECK(occurrences(rows, "shuffle_xor(") >= 30);
  CHECK_FALSE(contains(rows, " < 128"));
  CHECK(contains(rows, "acc_3.tile.lane = acc_3.tile.lane && acc_3.tile.partner"));
  CHECK(contains(rows, "acc_2.tile.lane = min(acc_2.tile.lane, acc_2.tile.partner)"));
  // A user's operator whose combine is symmetric in its operands commutes:
  // its combine is rebuilt for the shuffled operands.
  std::string user = kernelsText(compiled(kReductions, "rows_user"));
  CHECK(contains(user, "acc.tile.lane = max(abs(acc.tile.lane), abs(acc.tile.partner))"));
  // One that does not keeps the range's order (neighbours pair up in its
  // tree), which butterflies would not: it is left as it is.
  std::string first = kernelsText(compiled(kReductions, "rows_first"));
  CHECK_FALSE(contains(first, "shuffle_xor"));
  CHECK(contains(first, "if (r.thread % 2 == 0) {"));
}

TEST_CASE(
    "an operator using its operands several times is folded across warps one step at a time") {
  // From a bug hunt: the eight warps' totals were folded as one nested
  // expression, copying this operator's body 4^7 times (885,000 characters;
  // LLVM ran for minutes).
  std::string lse = kernelsText(compiled(R"(
assoc fn logaddexp(a: f32, b: f32) -> f32 {
  let m = max(a, b);
  return m == -inf ? -inf : m + log(1.0 + exp(min(a, b) - m));
}
kernel lse(x: in f32[N], r: out f32) {
  r = redomap(logaddexp, -inf, i in 0..N) x[i];
}
)",
                                         "lse"));
  CHECK(contains(lse, "shuffle_xor"));
  CHECK(lse.size() < 30000);
}

TEST_CASE("a tree whose tile is read again after it keeps its halving steps") {
  using namespace loopc::ir;
  using ir::Expr;
  using ir::Stmt;
  Buffer tile = passes::makeBuffer("t.tile", ScalarType::F32, {makeI64(256)}, MemorySpace::Shared);
  Buffer out = passes::makeBuffer("out", ScalarType::F32, {makeI64(2)}, MemorySpace::Global);
  Expr thread = makeVar(ScalarType::I64, "t.thread");
  ReduceOperator add;
  auto body = [&](Expr afterIndex) {
    return makeBlock({passes::store(tile, {thread}, std::make_shared<FloatImm>(ScalarType::F32, 1)),
                      std::make_shared<Barrier>(),
                      passes::treeHalving({{add, tile}}, thread, false),
                      std::make_shared<IfThenElse>(
                          makeBinary(BinaryOpKind::Eq, thread, makeI64(0)),
                          passes::store(out, {makeI64(0)}, passes::load(tile, {afterIndex})))});
  };
  auto kernelOf = [&](Stmt threadBody) {
    Function function;
    function.name = "k";
    function.buffers = {out};
    function.body = std::make_shared<For>(
        "t.block", makeI64(0), makeI64(1), ForKind::GpuBlock, 0,
        std::make_shared<Allocate>(tile, std::make_shared<For>("t.thread", makeI64(0), makeI64(256),
                                                               ForKind::GpuThread, 0, threadBody)));
    return function;
  };
  Function reads0 = passes::combineInWarps(kernelOf(body(makeI64(0))));
  CHECK(ir::verifyFunction(reads0, "combine_in_warps"));
  CHECK(contains(ir::toString(reads0), "shuffle_xor"));
  CHECK(contains(ir::toString(reads0), "out[0] = t.tile.total"));
  Function reads5 = passes::combineInWarps(kernelOf(body(makeI64(5))));
  CHECK_FALSE(contains(ir::toString(reads5), "shuffle_xor"));
  CHECK(contains(ir::toString(reads5), "if (t.thread < 128)"));
}

TEST_CASE("the verifier keeps shuffles in registers, in uniform control flow, on lane masks") {
  using namespace loopc::ir;
  using ir::Expr;
  using ir::Stmt;
  Buffer value = passes::makeBuffer("v", ScalarType::F32, {}, MemorySpace::Register);
  Buffer shared = passes::makeBuffer("s", ScalarType::F32, {}, MemorySpace::Shared);
  Expr thread = makeVar(ScalarType::I64, "t");
  auto kernelWith = [&](Stmt shuffle) {
    Function function;
    function.name = "k";
    function.body = std::make_shared<For>(
        "b", makeI64(0), makeI64(1), ForKind::GpuBlock, 0,
        std::make_shared<Allocate>(
            shared, std::make_shared<For>("t", makeI64(0), makeI64(64), ForKind::GpuThread, 0,
                                          std::make_shared<Allocate>(value, shuffle))));
    return function;
  };
  Expr one = std::make_shared<FloatImm>(ScalarType::F32, 1);
  CHECK(ir::verifyFunction(kernelWith(std::make_shared<WarpShuffle>(value, one, 4)), "test"));
  auto divergent = ir::verifyFunction(
      kernelWith(std::make_shared<IfThenElse>(makeBinary(BinaryOpKind::Lt, thread, makeI64(3)),
                                              std::make_shared<WarpShuffle>(value, one, 4))),
      "test");
  REQUIRE_FALSE(divergent);
  CHECK(contains(divergent.error().message, "not block-uniform"));
  auto sharedTarget =
      ir::verifyFunction(kernelWith(std::make_shared<WarpShuffle>(shared, one, 4)), "test");
  REQUIRE_FALSE(sharedTarget);
  CHECK(contains(sharedTarget.error().message, "outside registers"));
  auto badMask =
      ir::verifyFunction(kernelWith(std::make_shared<WarpShuffle>(value, one, 3)), "test");
  REQUIRE_FALSE(badMask);
  CHECK(contains(badMask.error().message, "lane mask"));
}

TEST_CASE("shuffles of every type are shfl.sync.bfly on 32-bit pieces and assemble") {
  for (const char *kernel : {"whole", "rows"}) {
    CAPTURE(kernel);
    ir::Function function = compiled(kReductions, kernel);
    auto ptx = codegen::compileToPtx(function, "sm_80");
    REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
    CHECK(contains(*ptx, "shfl.sync.bfly.b32"));
    test::checkAssemblesWithoutSpills(*ptx);
  }
}

TEST_CASE("kernels combined in warps compute what the interpreter computes") {
  auto loaded = test::loadText(kReductions);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  Interpreter interpreter;
  engine::CpuEngine gpuKernels(test::gpuPipelineOnOneSM());
  Engine *engines[] = {&interpreter, &gpuKernels};
  struct Case {
    const char *kernel;
    std::map<std::string, std::string> sizes;
  };
  const Case cases[] = {
      {"whole", {{"N", "1"}}},
      {"whole", {{"N", "33"}}},
      {"whole", {{"N", "70001"}}},
      {"rows", {{"R", "3"}, {"C", "100"}}},
      {"rows", {{"R", "1"}, {"C", "40000"}}},
      {"rows", {{"R", "37"}, {"C", "65"}}},
  };
  for (const Case &testCase : cases)
    for (const auto &declaration : loaded->program->modules.front()->kernels) {
      if (declaration->name != testCase.kernel)
        continue;
      CAPTURE(testCase.kernel);
      ArgumentRequest request;
      request.seed = 5;
      request.values = testCase.sizes;
      test::DifferentialOutcome outcome =
          test::runDifferential(*loaded->program, *declaration, request, engines);
      REQUIRE_MESSAGE(!outcome.skipped, outcome.report);
      CHECK_MESSAGE(outcome.agree, outcome.report);
    }
}
