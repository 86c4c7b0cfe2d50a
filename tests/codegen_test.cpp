// The CPU code generator on hand-built Loop IR, run through the JIT: C
// semantics of the arithmetic, row-major addressing, loops, kernels spread
// over the thread pool, and barriers (loop fission with shared memory and
// per-thread values live across a barrier); integer division that never
// traps, reporting zero divisors through the device error channel; threads
// as vector lanes inside per-thread loops.
#include "codegen/CpuJit.h"
#include "codegen/CpuPanel.h"
#include "codegen/CpuThreadNest.h"
#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"
#include "ir/IR.h"
#include "ir/IRVisitor.h"
#include "loopc/generated.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"

#include "TestSupport.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

using loopc::Builtin;
using loopc::HostArray;
using loopc::KernelArgs;
using loopc::KernelDecl;
using loopc::ScalarType;
using namespace loopc::ir;

namespace {

Expr i64(int64_t value) { return makeI64(value); }
Expr i32(int64_t value) { return makeInt(ScalarType::I32, value); }
Expr f64(double value) { return std::make_shared<FloatImm>(ScalarType::F64, value); }
Expr var(const std::string &name, ScalarType type = ScalarType::I64) { return makeVar(type, name); }
Expr bin(BinaryOpKind op, Expr lhs, Expr rhs) {
  return makeBinary(op, std::move(lhs), std::move(rhs));
}
Expr cast(ScalarType type, Expr value) { return std::make_shared<Cast>(type, std::move(value)); }
Expr call(ScalarType type, Builtin builtin, std::vector<Expr> args) {
  return std::make_shared<Call>(type, builtin, std::move(args));
}
Expr load(const Buffer &buffer, std::vector<Expr> indices) {
  return std::make_shared<Load>(buffer, std::move(indices));
}
Stmt store(const Buffer &buffer, std::vector<Expr> indices, Expr value) {
  return std::make_shared<Store>(buffer, std::move(indices), std::move(value));
}
Stmt loop(const std::string &name, Expr min, Expr extent, Stmt body,
          ForKind kind = ForKind::Serial) {
  return std::make_shared<For>(name, std::move(min), std::move(extent), kind, 0, std::move(body));
}
Stmt let(const std::string &name, Expr value, Stmt body) {
  return std::make_shared<LetStmt>(name, std::move(value), std::move(body));
}
Buffer buffer(const std::string &name, ScalarType element, std::vector<Expr> shape,
              MemorySpace memory = MemorySpace::Global) {
  auto info = std::make_shared<BufferInfo>();
  info->name = name;
  info->element = element;
  info->shape = std::move(shape);
  info->memory = memory;
  return info;
}

// Compiles `function` and runs it on the given buffers and i64 scalars.
void compileAndRun(const Function &function, std::vector<void *> buffers,
                   std::vector<int64_t> scalars) {
  auto program = loopc::codegen::CpuProgram::compile(function);
  REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
  auto ran = (*program)->run(buffers.data(), scalars.data());
  REQUIRE_MESSAGE(ran.has_value(), (ran ? "" : ran.error().message));
}

// The last kernel of samples/<sample>.loop through the CPU pipeline, the
// passes `skipped` left out.
Function cpuPipelineSample(const std::string &sample, std::set<std::string> skipped = {}) {
  auto loaded = loopc::test::loadFile(loopc::test::sourcePath("samples/" + sample + ".loop"));
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const KernelDecl &kernel = *loaded->program->modules.front()->kernels.back();
  loopc::passes::PipelineOptions options;
  options.target = loopc::passes::PipelineTarget::Cpu;
  options.choices.skipped = std::move(skipped);
  auto function =
      loopc::passes::runPipeline(loopc::ir::lowerKernel(*loaded->program, kernel), options);
  REQUIRE_MESSAGE(function, (function ? "" : function.error().message));
  return std::move(*function);
}

} // namespace

TEST_CASE("integer division and casts follow C semantics") {
  Buffer out = buffer("out", ScalarType::I64, {i64(12)});
  Expr a = var("a", ScalarType::I32), b = var("b", ScalarType::I32);
  Expr x = var("x", ScalarType::F64);
  std::vector<Expr> values = {
      cast(ScalarType::I64, bin(BinaryOpKind::Div, a, b)),             // -7 / 2 = -3
      cast(ScalarType::I64, bin(BinaryOpKind::Rem, a, b)),             // -7 % 2 = -1
      cast(ScalarType::I64, cast(ScalarType::I32, x)),                 // i32(-2.75) = -2
      cast(ScalarType::I64, cast(ScalarType::Bool, x)),                // bool(-2.75) = 1
      cast(ScalarType::I64, bin(BinaryOpKind::Min, a, b)),             // -7
      cast(ScalarType::I64, call(ScalarType::I32, Builtin::Abs, {a})), // 7
      cast(ScalarType::I64, call(ScalarType::F64, Builtin::Floor, {x})),
      cast(ScalarType::I64, bin(BinaryOpKind::Mul, call(ScalarType::F64, Builtin::Tanh, {x}),
                                f64(1000))), // tanh(-2.75) * 1000 = -991.8...
      std::make_shared<Select>(bin(BinaryOpKind::Lt, a, b), i64(10), i64(20)),
      // A Select must not evaluate its untaken side (a division by zero).
      std::make_shared<Select>(bin(BinaryOpKind::Ne, b, i32(0)), i64(42),
                               cast(ScalarType::I64, bin(BinaryOpKind::Div, b, i32(0)))),
      cast(ScalarType::I64, bin(BinaryOpKind::Ne, f64(NAN), f64(NAN))), // NaN != NaN
      cast(ScalarType::I64, call(ScalarType::F64, Builtin::Pow, {f64(2), f64(10)})),
  };
  std::vector<Stmt> stores;
  for (size_t i = 0; i < values.size(); ++i)
    stores.push_back(store(out, {i64(int64_t(i))}, values[i]));
  Function function;
  function.name = "arith";
  function.buffers = {out};
  function.scalars = {{"a", ScalarType::I32}, {"b", ScalarType::I32}, {"x", ScalarType::F64}};
  function.body = makeBlock(std::move(stores));

  std::vector<int64_t> results(12, -1);
  std::vector<int64_t> scalars(3, 0);
  int32_t a32 = -7, b32 = 2;
  double xValue = -2.75;
  std::memcpy(&scalars[0], &a32, 4);
  std::memcpy(&scalars[1], &b32, 4);
  std::memcpy(&scalars[2], &xValue, 8);
  compileAndRun(function, {results.data()}, scalars);
  CHECK(results[0] == -3);
  CHECK(results[1] == -1);
  CHECK(results[2] == -2);
  CHECK(results[3] == 1);
  CHECK(results[4] == -7);
  CHECK(results[5] == 7);
  CHECK(results[6] == -3);
  CHECK(results[7] == int64_t(std::tanh(-2.75) * 1000));
  CHECK(results[8] == 10);
  CHECK(results[9] == 42);
  CHECK(results[10] == 1);
  CHECK(results[11] == 1024);
}

TEST_CASE("serial loops address arrays in row-major order, bool arrays as bytes") {
  Buffer grid = buffer("grid", ScalarType::I32, {var("M"), var("N")});
  Buffer odd = buffer("odd", ScalarType::Bool, {var("M"), var("N")});
  Buffer total = buffer("total", ScalarType::F64, {});
  Expr i = var("i"), j = var("j");
  Expr value = cast(ScalarType::I32, bin(BinaryOpKind::Add, bin(BinaryOpKind::Mul, i, i64(10)), j));
  Stmt body = makeBlock({
      store(grid, {i, j}, value),
      store(odd, {i, j}, bin(BinaryOpKind::Eq, bin(BinaryOpKind::Rem, j, i64(2)), i64(1))),
      store(total, {}, bin(BinaryOpKind::Add, load(total, {}), cast(ScalarType::F64, value))),
  });
  Function function;
  function.name = "fill";
  function.buffers = {grid, odd, total};
  function.scalars = {{"M", ScalarType::I64}, {"N", ScalarType::I64}};
  function.body = loop("i", i64(0), var("M"), loop("j", i64(0), var("N"), body));

  const int64_t rows = 3, columns = 5;
  std::vector<int32_t> gridData(rows * columns, -1);
  std::vector<uint8_t> oddData(rows * columns, 7);
  double sum = 0;
  compileAndRun(function, {gridData.data(), oddData.data(), &sum}, {rows, columns});
  double expected = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c) {
      CHECK(gridData[r * columns + c] == r * 10 + c);
      CHECK(oddData[r * columns + c] == (c % 2 == 1 ? 1 : 0));
      expected += double(r * 10 + c);
    }
  CHECK(sum == expected);
}

TEST_CASE("a kernel with many blocks runs on the thread pool") {
  Buffer input = buffer("input", ScalarType::F32, {var("N")});
  Buffer output = buffer("output", ScalarType::F32, {var("N")});
  Expr index = bin(BinaryOpKind::Add, bin(BinaryOpKind::Mul, var("b"), i64(64)), var("t"));
  Expr blocks = bin(BinaryOpKind::Div, bin(BinaryOpKind::Add, var("N"), i64(63)), i64(64));
  Stmt guarded =
      std::make_shared<IfThenElse>(bin(BinaryOpKind::Lt, var("idx"), var("N")),
                                   store(output, {var("idx")},
                                         bin(BinaryOpKind::Mul, load(input, {var("idx")}),
                                             std::make_shared<FloatImm>(ScalarType::F32, 2.0))));
  KernelFunc kernel;
  kernel.name = "twice";
  kernel.buffers = {input, output};
  kernel.scalars = {{"N", ScalarType::I64}};
  kernel.body = loop("b", i64(0), blocks,
                     loop("t", i64(0), i64(64), let("idx", index, guarded), ForKind::GpuThread),
                     ForKind::GpuBlock);
  Function function;
  function.name = "twice";
  function.buffers = {input, output};
  function.scalars = {{"N", ScalarType::I64}};
  function.kernels.push_back(kernel);
  function.body =
      std::make_shared<Launch>("twice", std::vector<Expr>{blocks, i64(1), i64(1)},
                               std::vector<Expr>{i64(64), i64(1), i64(1)},
                               std::vector<Buffer>{input, output}, std::vector<Expr>{var("N")});
  const int64_t n = 100003;
  std::vector<float> in(n), out(n, -1);
  for (int64_t k = 0; k < n; ++k)
    in[k] = float(k % 1000) - 3.5f;
  compileAndRun(function, {in.data(), out.data()}, {n});
  for (int64_t k = 0; k < n; ++k)
    REQUIRE(out[k] == in[k] * 2);
  CHECK(loopc_cpu_worker_count() >= 1);
}

TEST_CASE("barriers split thread loops, and values live across them stay per thread") {
  // Per block of T threads: reverse the block's elements through a shared
  // tile, adding the thread's own value (a let live across the barrier), then
  // a serial loop with barriers accumulating neighbours into a register
  // buffer that is also live across them.
  const int64_t threads = 8;
  Buffer input = buffer("input", ScalarType::F64, {var("N")});
  Buffer output = buffer("output", ScalarType::F64, {var("N")});
  Buffer tile = buffer("tile", ScalarType::F64, {i64(threads)}, MemorySpace::Shared);
  Buffer accumulator = buffer("acc", ScalarType::F64, {i64(1)}, MemorySpace::Register);
  Expr t = var("t"), own = var("own", ScalarType::F64);
  Expr global = bin(BinaryOpKind::Add, bin(BinaryOpKind::Mul, var("b"), i64(threads)), t);
  Expr mirrored = bin(BinaryOpKind::Sub, i64(threads - 1), t);
  Expr neighbour = bin(BinaryOpKind::Rem, bin(BinaryOpKind::Add, t, var("k")), i64(threads));
  Stmt rounds =
      loop("k", i64(0), i64(3),
           makeBlock({
               store(tile, {t}, bin(BinaryOpKind::Mul, own, cast(ScalarType::F64, var("k")))),
               std::make_shared<Barrier>(),
               store(accumulator, {i64(0)},
                     bin(BinaryOpKind::Add, load(accumulator, {i64(0)}), load(tile, {neighbour}))),
               std::make_shared<Barrier>(),
           }));
  Stmt threadBody = let(
      "own", load(input, {global}),
      makeBlock({
          store(tile, {t}, own),
          std::make_shared<Barrier>(),
          store(output, {global}, bin(BinaryOpKind::Add, load(tile, {mirrored}), own)),
          std::make_shared<Barrier>(),
          std::make_shared<Allocate>(
              accumulator, makeBlock({rounds, store(output, {global},
                                                    bin(BinaryOpKind::Add, load(output, {global}),
                                                        load(accumulator, {i64(0)})))})),
      }));
  Expr blocks = bin(BinaryOpKind::Div, var("N"), i64(threads));
  KernelFunc kernel;
  kernel.name = "mirror";
  kernel.buffers = {input, output};
  kernel.scalars = {{"N", ScalarType::I64}};
  kernel.body = loop("b", i64(0), blocks,
                     std::make_shared<Allocate>(
                         tile, loop("t", i64(0), i64(threads), threadBody, ForKind::GpuThread)),
                     ForKind::GpuBlock);
  Function function;
  function.name = "mirror";
  function.buffers = {input, output};
  function.scalars = {{"N", ScalarType::I64}};
  function.kernels.push_back(kernel);
  function.body =
      std::make_shared<Launch>("mirror", std::vector<Expr>{blocks, i64(1), i64(1)},
                               std::vector<Expr>{i64(threads), i64(1), i64(1)},
                               std::vector<Buffer>{input, output}, std::vector<Expr>{var("N")});

  const int64_t n = threads * 50;
  std::vector<double> in(n), out(n, -1);
  for (int64_t k = 0; k < n; ++k)
    in[k] = double(k * 7 % 13) + 0.25;
  compileAndRun(function, {in.data(), out.data()}, {n});
  for (int64_t block = 0; block < n / threads; ++block)
    for (int64_t lane = 0; lane < threads; ++lane) {
      int64_t k = block * threads + lane;
      double expected = in[block * threads + threads - 1 - lane] + in[k];
      for (int64_t round = 0; round < 3; ++round)
        expected += in[block * threads + (lane + round) % threads] * double(round);
      REQUIRE(out[k] == expected);
    }
}

TEST_CASE("an unlowered Reduce is reported, not compiled") {
  Buffer out = buffer("out", ScalarType::F32, {});
  Function function;
  function.name = "bad";
  function.buffers = {out};
  function.body = std::make_shared<Reduce>(
      out, std::vector<Expr>{}, ReduceOperator{}, std::make_shared<FloatImm>(ScalarType::F32, 0.0),
      std::vector<Reduce::Loop>{}, nullptr, std::make_shared<FloatImm>(ScalarType::F32, 1.0));
  auto program = loopc::codegen::CpuProgram::compile(function);
  REQUIRE_FALSE(program.has_value());
  CHECK(program.error().message.find("Reduce") != std::string::npos);
}

namespace {

// A kernel dividing x by d element by element, through the CPU engine.
constexpr const char *kDivisionProgram = "kernel divide(x: in i32[N], d: in i32[N],\n"
                                         "              q: out i32[N], r: out i32[N]) {\n"
                                         "  parfor i in 0..N {\n"
                                         "    q[i] = x[i] / d[i];\n"
                                         "    r[i] = x[i] % d[i];\n"
                                         "  }\n"
                                         "}\n";

KernelArgs divisionArgs(const std::vector<int32_t> &x, const std::vector<int32_t> &d) {
  auto n = static_cast<int64_t>(x.size());
  KernelArgs args;
  args.sizes["N"] = n;
  for (const auto *values : {&x, &d, &x, &x}) {
    HostArray array(ScalarType::I32, {n});
    std::memcpy(array.bytes.data(), values->data(), values->size() * sizeof(int32_t));
    args.params.push_back(std::move(array));
  }
  return args;
}

} // namespace

TEST_CASE("CPU integer division never traps: zero divisors are reported, MIN / -1 wraps") {
  auto loaded = loopc::test::loadText(kDivisionProgram);
  REQUIRE(loaded->program);
  const KernelDecl &kernel = *loaded->program->findKernel("divide");
  loopc::engine::CpuEngine engine;
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();

  // INT_MIN / -1 is INT_MIN and its remainder 0, as the interpreter defines.
  KernelArgs wrapping = divisionArgs({kMin, 7, -7}, {-1, -1, 2});
  auto ran = engine.run(*loaded->program, kernel, wrapping);
  REQUIRE_MESSAGE(ran.has_value(), (ran ? "" : ran.error().message));
  CHECK(wrapping.params[2].getAsInt(0) == kMin);
  CHECK(wrapping.params[3].getAsInt(0) == 0);
  CHECK(wrapping.params[2].getAsInt(1) == -7);
  CHECK(wrapping.params[3].getAsInt(1) == 0);
  CHECK(wrapping.params[2].getAsInt(2) == -3);
  CHECK(wrapping.params[3].getAsInt(2) == -1);

  // A zero divisor is an error at the assignment that divides, not a crash.
  KernelArgs zero = divisionArgs({1, 2, 3}, {1, 0, 1});
  auto failed = engine.run(*loaded->program, kernel, zero);
  REQUIRE_FALSE(failed.has_value());
  CHECK(failed.error().message == "integer division by zero");
  CHECK(failed.error().range.begin.line == 4);

  // The status word starts clear on every run.
  KernelArgs again = divisionArgs({9, 8}, {3, 4});
  auto recovered = engine.run(*loaded->program, kernel, again);
  REQUIRE_MESSAGE(recovered.has_value(), (recovered ? "" : recovered.error().message));
  CHECK(again.params[2].getAsInt(0) == 3);
  CHECK(again.params[2].getAsInt(1) == 2);
}

TEST_CASE("a division by a constant divisor other than 0 and -1 is not guarded") {
  auto loaded = loopc::test::loadText("kernel halve(x: in i32[N], q: out i32[N]) {\n"
                                      "  parfor i in 0..N {\n"
                                      "    q[i] = x[i] / 2;\n"
                                      "  }\n"
                                      "}\n");
  REQUIRE(loaded->program);
  Function function =
      loopc::test::compiledKernel(*loaded->program, *loaded->program->findKernel("halve"));
  auto text = loopc::codegen::cpuLlvmText(function, /*optimize=*/false);
  REQUIRE(text.has_value());
  CHECK(text->find("cmpxchg") == std::string::npos);
  CHECK(text->find("sdiv") != std::string::npos);
}

TEST_CASE("the CPU runs consecutive threads as vector lanes inside a per-thread loop") {
  // matmul's threads each run `for k` over a row of A and a column of B;
  // with the thread loop moved inside `for k`, consecutive threads read
  // consecutive elements of B's row and LLVM vectorizes across them.
  // Left inside each thread, the column walk of B does not vectorize.
  auto compiled = loopc::test::runLoopc(
      "compile " + loopc::test::sourcePath("samples/matmul.loop") + " --emit llvm --target cpu");
  REQUIRE(compiled.exitCode == 0);
  // `acc + A[i][k] * B[k][j]` is one fused multiply-add, on vectors.
  CHECK(compiled.output.find("x float> @llvm.fmuladd.v") != std::string::npos);
}

TEST_CASE("blocks inside the range run full thread loops around an interchanged loop") {
  // With constant thread loops LLVM keeps matmul's per-thread accumulators
  // in vector registers across `for k` (a phi of vectors); the blocks at the
  // edges keep the clipped loops. A loop-free kernel has one version.
  auto compile = [](const std::string &sample) {
    auto compiled = loopc::test::runLoopc("compile " + loopc::test::sourcePath(sample) +
                                          " --emit llvm --target cpu");
    REQUIRE(compiled.exitCode == 0);
    return compiled.output;
  };
  std::string matmul = compile("samples/matmul.loop");
  CHECK(matmul.find("clip.then") != std::string::npos); // whole blocks
  CHECK(matmul.find("clip.else") != std::string::npos); // edge blocks
  // ...which run every thread as whole blocks do, the stores kept to the
  // guard, where the block has a thread inside it (else the clipped loops).
  CHECK(matmul.find("edge_lanes.then") != std::string::npos);
  CHECK(matmul.find("edge_lanes.else") != std::string::npos);
  std::istringstream lines(matmul);
  bool vectorAccumulator = false; // `%a = phi <W x float> ...`, whatever the vector width
  for (std::string line; std::getline(lines, line);)
    vectorAccumulator |=
        line.find("= phi <") != std::string::npos && line.find(" x float> ") != std::string::npos;
  CHECK(vectorAccumulator);
  CHECK(compile("samples/transpose.loop").find("clip.then") == std::string::npos);
}

TEST_CASE("edge blocks run every thread where what runs past the guard is unseen") {
  // splitEdge (CpuThreadNest.cpp): the rows past a guard compute again what
  // the last row computes, so they may run wherever no piece that stores
  // beyond its thread also writes the thread's own values; x's lanes past
  // it read what no lane of the edge reads, so they run only where every
  // read is proven inside its array for any lane (a panel's copy, or an
  // element all lanes read), and no loop bound, condition or divisor
  // depends on x or on memory.
  auto edgeKind = [](const std::string &body) {
    std::string source = "kernel k(A: in f32[M][K], B: in f32[K][N], D: in i32[K][N], "
                         "C: out f32[M][N]) {\n  parfor i in 0..M, j in 0..N {\n" +
                         body + "\n  }\n}\n";
    auto loaded = loopc::test::loadText(source);
    REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
    Function function = loopc::test::compiledKernel(
        *loaded->program, *loaded->program->findKernel("k"), loopc::passes::PipelineTarget::Cpu);
    auto text = loopc::codegen::cpuLlvmText(function, /*optimize=*/false);
    REQUIRE(text.has_value());
    // The kind of each edge branch: "lanes", "rows", or "none" for none.
    auto count = [&](const std::string &label) {
      size_t found = 0;
      for (size_t at = text->find(label); at != std::string::npos; at = text->find(label, at + 1))
        ++found;
      return found;
    };
    size_t lanes = count("\nedge_lanes.then"), rows = count("\nedge_rows.then");
    if (lanes + rows == 0)
      return std::string("none");
    std::string kinds;
    for (size_t i = 0; i < lanes; ++i)
      kinds += kinds.empty() ? "lanes" : " lanes";
    for (size_t i = 0; i < rows; ++i)
      kinds += kinds.empty() ? "rows" : " rows";
    return kinds;
  };
  // A kernel with a column's panel has its blocks in two versions, the
  // first reading the panel from its copy and the second in place; in
  // place, lanes past the array's last column would read past it.
  CHECK(edgeKind("C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];") == "lanes rows");
  CHECK(edgeKind("C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][N - 1 - j];") == "rows");
  CHECK(edgeKind("C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] / f32(10 / (D[k][j] + 1));") ==
        "rows rows");
  CHECK(edgeKind("C[i][j] = redomap(+, 0.0, k in 0..min(j + 1, K)) A[i][k] * B[k][j];") ==
        "rows rows");
  CHECK(edgeKind("var s: f32;\n for k in 0..K {\n if (B[k][j] > 0.5) { s += A[i][k]; }\n }\n"
                 "C[i][j] = s;") == "rows rows");
  CHECK(edgeKind("var s: f32;\n for k in 0..K {\n s += A[i][k] * B[k][j];\n C[i][j] = s;\n }") ==
        "none");
  // A value a guard's then-case sets for the code after it: the rows past
  // the guard must keep theirs. The guard map_to_gpu puts around the whole
  // body, inside which `g` lives, has its edge branches; this one none.
  CHECK(edgeKind("var g: f32 = 1.0;\n if (i < M - 1) {\n g = redomap(+, 0.0, k in 0..K) A[i][k] * "
                 "B[k][j];\n }\n C[i][j] = g;") == "lanes rows");
}

TEST_CASE("blocks run column by column when a column's blocks share a panel inside a loop") {
  // matmul's B[k][j] changes along k and x, not along y: the blocks of one
  // column read the same K x 32 panel. sqdist's threads keep `for k`
  // (each walks its own row of Y), the convolution and transpose have no
  // loop with the threads inside, and mv is one-dimensional.
  auto columnByColumn = [](const std::string &sample) {
    Function function = cpuPipelineSample(sample);
    REQUIRE(!function.kernels.empty());
    return loopc::codegen::runsColumnByColumn(function.kernels.front());
  };
  CHECK(columnByColumn("matmul"));
  for (const char *sample : {"sqdist", "conv2d_5x5", "transpose", "mv", "jacobi2d"}) {
    CAPTURE(sample);
    CHECK(!columnByColumn(sample));
  }
}

TEST_CASE("vectorized CPU loops call glibc's vector math and use 512-bit vectors where there are") {
  // softmax's `exp` in its row loops: one call of libmvec's vector exp per
  // vector (_ZGV...v_expf), not a scalar expf per lane. With AVX-512,
  // matmul's 8 x 32 accumulators are 16 zmm registers (ymm ones spill).
  auto compile = [](const std::string &sample) {
    auto compiled = loopc::test::runLoopc("compile " + loopc::test::sourcePath(sample) +
                                          " --emit llvm --target cpu");
    REQUIRE(compiled.exitCode == 0);
    return compiled.output;
  };
#if defined(__x86_64__) && defined(__GLIBC__)
  CHECK(compile("samples/softmax.loop").find("@_ZGV") != std::string::npos);
  if (__builtin_cpu_supports("avx512f"))
    CHECK(compile("samples/matmul.loop").find("@llvm.fmuladd.v16f32") != std::string::npos);
  else
    MESSAGE("skipped the 512-bit check: this CPU has no AVX-512");
#else
  MESSAGE("skipped: libmvec is glibc's, for x86-64");
#endif
}

TEST_CASE("a column's panel is read from each worker's copy of it") {
  // matmul's B[k][j]: every block of a column reads the same K x 32 panel,
  // rows of B apart in place; a worker copies it once per column into K x 32
  // consecutive elements. Offsets along x widen the panel's rows. Kernels
  // without a column order have no panel.
  // The panel of the function's last kernel; none of the others may have one.
  auto panelOf = [](Function function) {
    REQUIRE(!function.kernels.empty());
    for (size_t i = 0; i + 1 < function.kernels.size(); ++i)
      CHECK(!loopc::codegen::columnPanelOf(function.kernels[i]));
    return loopc::codegen::columnPanelOf(function.kernels.back());
  };
  auto matmul = panelOf(cpuPipelineSample("matmul"));
  REQUIRE(matmul);
  CHECK(matmul->array->name == "B");
  CHECK(matmul->rowLength == 32);
  CHECK(matmul->firstOffset == 0);
  for (const char *sample : {"sqdist", "conv2d_5x5", "transpose", "mv", "jacobi2d"}) {
    CAPTURE(sample);
    CHECK(!panelOf(cpuPipelineSample(sample)));
  }
  auto loaded = loopc::test::loadText(R"(
kernel shifted(A: in f32[M][K], B: in f32[K][W], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * (B[k][j + 2] - B[k][j]);
  }
}
)");
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  auto shifted = panelOf(loopc::test::compiledKernel(
      *loaded->program, *loaded->program->modules.front()->kernels.back(),
      loopc::passes::PipelineTarget::Cpu));
  REQUIRE(shifted);
  CHECK(shifted->rowLength == 34);
  CHECK(shifted->firstOffset == 0);
  // Offsets below the thread's column start the panel before the block's
  // first column: the first column's panel begins outside the array.
  loaded = loopc::test::loadText(R"(
kernel behind(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    if (j >= 3) {
      C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j - 3];
    } else {
      C[i][j] = 0.0;
    }
  }
}
)");
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  auto behind = panelOf(loopc::test::compiledKernel(
      *loaded->program, *loaded->program->modules.front()->kernels.back(),
      loopc::passes::PipelineTarget::Cpu));
  REQUIRE(behind);
  CHECK(behind->rowLength == 32);
  CHECK(behind->firstOffset == -3);

  auto compiled = loopc::test::runLoopc(
      "compile " + loopc::test::sourcePath("samples/matmul.loop") + " --emit llvm --target cpu");
  REQUIRE(compiled.exitCode == 0);
  // The copy's rows start on cache lines (vector loads split across two lines
  // otherwise), and a row inside B is a constant-length copy, not a memcpy call.
  CHECK(compiled.output.find("@aligned_alloc(i64 64,") != std::string::npos);
  // (A row of 32 lanes, 128 bytes, or of the register tile's width on this
  // machine's vectors: 256 bytes with AVX-512.)
  CHECK((compiled.output.find("align 64 dereferenceable(128)") != std::string::npos ||
         compiled.output.find("align 64 dereferenceable(256)") != std::string::npos ||
         compiled.output.find("align 64 dereferenceable(64)") != std::string::npos));
}

TEST_CASE("a redomap's float combine is reassociated, a sequential for's is not") {
  // mv's row sums vectorize with several partial sums only because the
  // redomap leaves the order of combination open; the same sum written as a
  // `for` loop is sequential and must stay in order.
  auto compile = [](const std::string &path) {
    auto compiled = loopc::test::runLoopc("compile " + path + " --emit llvm --target cpu");
    REQUIRE(compiled.exitCode == 0);
    return compiled.output;
  };
  CHECK(compile(loopc::test::sourcePath("samples/mv.loop")).find("fadd reassoc <") !=
        std::string::npos);
  loopc::test::TempDir directory;
  std::string sequential = directory.file("sequential_sum.loop", R"(
kernel sequential_sum(x: in f32[N], s: out f32) {
  var acc: f32;
  for k in 0..N {
    acc += x[k];
  }
  s = acc;
}
)");
  CHECK(compile(sequential).find("reassoc") == std::string::npos);
}

TEST_CASE("a row's float maximum is computed in vector lanes on the CPU") {
  // interleave_reductions: softmax's row maxima fold into lanes that LLVM
  // keeps in vector registers; without the pass each row is one dependent
  // scalar maxnum per element (LLVM 19 vectorizes no min/max reduction that
  // may see NaN or signed zeros).
  auto compile = [](const std::string &options) {
    auto compiled = loopc::test::runLoopc(
        "compile " + loopc::test::sourcePath("samples/softmax.loop") + " --emit llvm " + options);
    REQUIRE(compiled.exitCode == 0);
    return compiled.output;
  };
  CHECK(compile("").find("x float> @llvm.maxnum.v") != std::string::npos);
  CHECK(compile("--skip-pass interleave_reductions").find("x float> @llvm.maxnum.v") ==
        std::string::npos);
}

TEST_CASE("the CPU sweeps rows of kernels with small windows and keeps the tiles of the others") {
  // A row sweep needs independent threads, no loop in a thread but small
  // constant ones and every access streaming along x (CpuThreadNest.h). Per
  // kernel: its rows, slowest first, then the x block and thread loops; ""
  // for block order.
  // (jacobi2d's nests as written, not fused with a lag: fuse_with_lag_test.)
  auto sweeps = [](const std::string &sample) {
    Function function = cpuPipelineSample(sample, {"fuse_with_lag"});
    std::vector<std::string> perKernel;
    for (const KernelFunc &compiled : function.kernels) {
      std::string described;
      if (auto sweep = loopc::codegen::rowSweepOf(compiled)) {
        for (const For *row : sweep->rows)
          described += row->var + " ";
        described += "| " + sweep->xBlock->var + " " + sweep->xThread->var;
        if (sweep->row)
          described += " as " + sweep->row->as<For>()->var;
        if (sweep->spansBlocks)
          described += " spanning blocks";
      }
      perKernel.push_back(described);
    }
    return perKernel;
  };
  using Kernels = std::vector<std::string>;
  // The stencil, then the copy back, each a thread loop across the row.
  CHECK(sweeps("jacobi2d") ==
        Kernels{"i.block i.thread | j.block j.thread as j.thread.row",
                "i_2.block i_2.thread | j_2.block j_2.thread as j_2.thread.row"});
  // A 5 x 5 window (two rows a thread: their interior and edge tiles), but
  // not an 11 x 11 one.
  CHECK(sweeps("conv2d_5x5") == Kernels{"y.block y.thread | x.block x.thread as x.thread.row"});
  CHECK(sweeps("conv2d_11x11") == Kernels{""});
  CHECK(sweeps("matmul") == Kernels{""});    // for k in each thread
  CHECK(sweeps("transpose") == Kernels{""}); // B[j][i]: strided along x
  CHECK(sweeps("dot") == Kernels{"", ""});   // barriers
  // 1-D grids: each call's blocks one thread loop (wide and narrow blocks).
  CHECK(sweeps("jacobi1d") == Kernels{"| i.block i.thread as i.thread.row spanning blocks",
                                      "| i.block i.thread as i.thread.row spanning blocks",
                                      "| i_2.block i_2.thread as i_2.thread.row spanning blocks",
                                      "| i_2.block i_2.thread as i_2.thread.row spanning blocks"});
  // A 1-D span runs its points in the blocks' order: an access walking back
  // along x spans them too (one vectorized loop, where block by block each 32
  // points paid for narrowing the thread loop).
  CHECK(sweeps("reverse") == Kernels{"| i.block i.thread as i.thread.row spanning blocks",
                                     "| i.block i.thread as i.thread.row spanning blocks"});

  // A body that reads x.thread alone (here added to the value it stores)
  // keeps its blocks: a thread's index within its block is no function of
  // the row's x.
  Function jacobi = cpuPipelineSample("jacobi2d", {"fuse_with_lag"});
  class AddThreadIndex : public IRMutator {
  protected:
    Stmt visitFor(const For &node, const Stmt &self) override {
      if (node.forKind == ForKind::GpuThread && node.gpuDim == 0)
        thread_ = makeVar(node.min->type, node.var);
      return IRMutator::visitFor(node, self);
    }
    Stmt visitStore(const Store &node, const Stmt &) override {
      return std::make_shared<Store>(node.buffer, node.indices,
                                     add(node.value, castTo(node.value->type, thread_)));
    }

  private:
    Expr thread_;
  };
  KernelFunc &stencil = jacobi.kernels.front();
  stencil.body = AddThreadIndex().mutate(stencil.body);
  auto sweep = loopc::codegen::rowSweepOf(stencil);
  REQUIRE(sweep);
  CHECK(!sweep->row);
}

TEST_CASE("a multiply inside an add or subtract rounds once, on every engine") {
  // x * x is 1 + 2^-11 + 2^-24, which f32 cannot hold: rounded on its own
  // the difference with 1 + 2^-11 is 0, fused it is 2^-24. Products bound to
  // a name first, and products combined by a multiply, round on their own
  // (simplify dropped the `* 1.0` of `x * x * 1.0 - y`, which then fused:
  // found by a bug hunt).
  auto loaded = loopc::test::loadText(R"(
kernel contract(x: in f32[N], y: in f32[N], r: out f32[N][8]) {
  parfor i in 0..N {
    r[i][0] = x[i] * x[i] - y[i];
    r[i][1] = -y[i] + x[i] * x[i];
    let p = x[i] * x[i];
    r[i][2] = p - y[i];
    var s: f32 = -y[i];
    s += x[i] * x[i];
    r[i][3] = s;
    r[i][4] = y[i] - x[i] * x[i];
    r[i][5] = x[i] * x[i] * 1.0 - y[i];
    r[i][6] = 1.0 * (x[i] * x[i]) - y[i];
    r[i][7] = x[i] * x[i] / 1.0 - y[i];
  }
}
)");
  REQUIRE(loaded->program);
  const KernelDecl &kernel = *loaded->program->findKernel("contract");
  const float x = 1.0f + std::ldexp(1.0f, -12), y = 1.0f + std::ldexp(1.0f, -11);
  const float fused = std::ldexp(1.0f, -24);
  loopc::Interpreter interpreter;
  loopc::engine::CpuEngine cpu, cpuWithGpuPasses(loopc::passes::PipelineTarget::Gpu);
  for (loopc::Engine *engine :
       std::initializer_list<loopc::Engine *>{&interpreter, &cpu, &cpuWithGpuPasses}) {
    CAPTURE(engine->name());
    KernelArgs args;
    args.sizes["N"] = 3;
    args.params.emplace_back(ScalarType::F32, std::vector<int64_t>{3});
    args.params.emplace_back(ScalarType::F32, std::vector<int64_t>{3});
    args.params.emplace_back(ScalarType::F32, std::vector<int64_t>{3, 8});
    for (int i = 0; i < 3; ++i) {
      args.params[0].data<float>()[i] = x;
      args.params[1].data<float>()[i] = y;
    }
    auto ran = engine->run(*loaded->program, kernel, args);
    REQUIRE_MESSAGE(ran.has_value(), (ran ? "" : ran.error().message));
    for (int i = 0; i < 3; ++i) {
      const float *row = args.params[2].data<float>() + 8 * i;
      CHECK(row[0] == fused);
      CHECK(row[1] == fused);
      CHECK(row[2] == 0.0f);
      CHECK(row[3] == fused);
      CHECK(row[4] == -fused);
      for (int rounded = 5; rounded < 8; ++rounded)
        CHECK(row[rounded] == 0.0f);
    }
  }
}

TEST_CASE("on the CPU, combines are atomic in global memory and plain in a block's shared memory") {
  // A block's threads run one after another on one core, so the private
  // copies of privatize_combines need no atomics there; blocks run at once.
  auto compiled =
      loopc::test::runLoopc("compile " + loopc::test::sourcePath("samples/histogram.loop") +
                            " --emit llvm --target cpu --no-opt");
  REQUIRE(compiled.exitCode == 0);
  // Every count of 1 made atomically is the fallback's (the nest the host
  // keeps for bins that do not fit, in its two CPU block sizes: map_to_gpu);
  // the private copies count without.
  std::istringstream lines(compiled.output);
  int atomicIncrements = 0, atomicUpdates = 0;
  for (std::string line; std::getline(lines, line);) {
    bool atomic = line.find("atomicrmw add") != std::string::npos;
    atomicUpdates += atomic;
    atomicIncrements += atomic && line.find(", i32 1 monotonic") != std::string::npos;
  }
  CHECK(atomicIncrements == 2);
  // The merges of the private copies into the global bins are atomic.
  CHECK(atomicUpdates > 1);
}

TEST_CASE("short launches of a host loop run in the calling thread, the pool seeing one in 64") {
  auto loaded =
      loopc::test::loadText("kernel steps(n: i32, x: inout f32[N]) {\n"
                            "  for t in 0..n { parfor i in 0..N { x[i] = x[i] + 1.0; } }\n}\n");
  REQUIRE(loaded->program);
  const KernelDecl &kernel = *loaded->program->findKernel("steps");
  // The time loop kept (each point owns its element: it could be hoisted).
  loopc::passes::PassChoices choices;
  choices.skipped = {"hoist_independent_parfors"};
  loopc::engine::CpuEngine engine(loopc::passes::PipelineTarget::Cpu, choices);
  auto run = [&](int64_t points, int32_t steps) {
    KernelArgs args;
    args.sizes["N"] = points;
    args.params.emplace_back(ScalarType::I32, std::vector<int64_t>{});
    args.params[0].data<int32_t>()[0] = steps;
    args.params.emplace_back(ScalarType::F32, std::vector<int64_t>{points});
    auto ran = engine.run(*loaded->program, kernel, args);
    REQUIRE_MESSAGE(ran.has_value(), (ran ? "" : ran.error().message));
    return std::vector<float>(args.params[1].data<float>(), args.params[1].data<float>() + points);
  };
  for (int64_t points : {1, 64, 5000})
    for (int32_t steps : {0, 1, 200}) {
      CAPTURE(points);
      CAPTURE(steps);
      CHECK(run(points, steps) == std::vector<float>(points, float(steps)));
    }
  // Once the launches are cancelled (Ctrl-C), the ones run here stop within
  // 64 of the last the pool saw; then they run again.
  loopc_cpu_cancel_launches(1);
  std::vector<float> stopped = run(64, 100000);
  loopc_cpu_cancel_launches(0);
  CHECK(stopped == std::vector<float>(64, stopped[0]));
  CHECK(stopped[0] < 64.0f);
  CHECK(run(64, 10) == std::vector<float>(64, 10.0f));
}
