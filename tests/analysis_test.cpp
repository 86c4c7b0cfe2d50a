// The analyses the middle-end passes share (src/passes/analysis), checked on
// lowered samples and small programs: affine forms of indices, reuse and
// strides along each loop, and the coalescing-aware choice map_to_gpu makes
// from them.
#include "TestSupport.h"

#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"
#include "ir/IRPrinter.h"
#include "lower/Lower.h"
#include "passes/Passes.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/analysis/Evaluate.h"
#include "passes/analysis/WorkCount.h"
#include "support/Differential.h"

#include <doctest/doctest.h>
#include <limits>

namespace loopc::passes {

namespace {

ir::Function lowered(const std::string &text, const std::string &name) {
  auto loaded = test::loadText(text);
  INFO(loaded->diagnostics);
  REQUIRE(loaded->program);
  const KernelDecl *kernel = loaded->program->findKernel(name);
  REQUIRE(kernel);
  return ir::lowerKernel(*loaded->program, *kernel);
}

ir::Function loweredSample(const std::string &file, const std::string &name) {
  return lowered(test::readFile(test::sourcePath("samples/" + file)), name);
}

// The only access of `buffer` of the given direction in `accesses`.
const BufferAccess &only(const std::vector<BufferAccess> &accesses, const std::string &buffer,
                         bool isStore) {
  const BufferAccess *found = nullptr;
  for (const BufferAccess &access : accesses) {
    if (access.buffer->name != buffer || access.isStore != isStore)
      continue;
    REQUIRE_MESSAGE(!found, "more than one access of " << buffer);
    found = &access;
  }
  REQUIRE_MESSAGE(found, "no access of " << buffer);
  return *found;
}

// The CPU JIT runs the mapped IR (blocks and threads as loops), so it agrees
// with the interpreter only when the mapping covers every iteration once.
void checkAgainstInterpreter(const std::string &text, const std::string &name,
                             std::map<std::string, std::string> sizes) {
  auto loaded = test::loadText(text);
  REQUIRE(loaded->program);
  const KernelDecl *kernel = loaded->program->findKernel(name);
  REQUIRE(kernel);
  Interpreter interpreter;
  engine::CpuEngine cpu;
  Engine *engines[] = {&interpreter, &cpu};
  ArgumentRequest request;
  request.values = std::move(sizes);
  test::DifferentialOutcome outcome =
      test::runDifferential(*loaded->program, *kernel, request, engines);
  REQUIRE_MESSAGE(!outcome.skipped, outcome.report);
  CHECK_MESSAGE(outcome.agree, outcome.report);
}

std::string restOf(const AffineIndex &index) { return index.rest ? ir::toString(index.rest) : "0"; }

} // namespace

TEST_CASE("matmul: A is reused along j and contiguous along k, B contiguous along j") {
  ir::Function matmul = loweredSample("matmul.loop", "matmul");
  std::vector<BufferAccess> accesses = collectAccesses(matmul.body);
  const BufferAccess &a = only(accesses, "A", false);
  const BufferAccess &b = only(accesses, "B", false);
  const BufferAccess &c = only(accesses, "C", true);

  CHECK(a.enclosingLoops == std::vector<std::string>{"i", "j", "k"});
  CHECK(a.indices[0].coefficient("i") == 1);
  CHECK(a.indices[1].coefficient("k") == 1);
  CHECK_FALSE(a.indices[0].dependsOn("j"));

  CHECK(strideAlong(a, "j").kind == Stride::Kind::Zero);
  CHECK(strideAlong(a, "k").kind == Stride::Kind::Contiguous);
  CHECK(strideAlong(a, "i").kind == Stride::Kind::Symbolic);
  CHECK(strideAlong(a, "i").str() == "K");

  CHECK(strideAlong(b, "j").kind == Stride::Kind::Contiguous);
  CHECK(strideAlong(b, "k").str() == "N");
  CHECK(strideAlong(b, "i").kind == Stride::Kind::Zero);

  CHECK(strideAlong(c, "j").kind == Stride::Kind::Contiguous);
  CHECK(strideAlong(c, "k").kind == Stride::Kind::Zero);
  CHECK(strideAlong(c, "i").str() == "N");
}

TEST_CASE("transpose: the read is strided along j, the write along i") {
  ir::Function transpose = loweredSample("transpose.loop", "transpose");
  std::vector<BufferAccess> accesses = collectAccesses(transpose.body);
  // A: f32[M][N] read as A[j][i]; B: f32[N][M] written as B[i][j].
  const BufferAccess &a = only(accesses, "A", false);
  const BufferAccess &b = only(accesses, "B", true);
  CHECK(strideAlong(a, "j").str() == "N");
  CHECK(strideAlong(a, "i").kind == Stride::Kind::Contiguous);
  CHECK(strideAlong(b, "j").kind == Stride::Kind::Contiguous);
  CHECK(strideAlong(b, "i").str() == "M");
}

TEST_CASE("reverse: a negative unit stride and a remainder of the sizes") {
  ir::Function reverse = loweredSample("reverse.loop", "reverse");
  std::vector<BufferAccess> accesses = collectAccesses(reverse.body);
  const BufferAccess &x = only(accesses, "x", false);
  CHECK(x.indices[0].coefficient("i") == -1);
  CHECK(restOf(x.indices[0]) == "N - 1");
  Stride stride = strideAlong(x, "i");
  CHECK(stride.kind == Stride::Kind::Constant);
  CHECK(stride.constant == -1);
}

TEST_CASE("remainders fold their constants") {
  ir::Function function = lowered(R"(
kernel k(x: in f32[N], y: out f32[N]) {
  parfor i in 0..N { y[i] = x[2 * (i + 3) - N] + x[i + N - 4]; }
}
)",
                                  "k");
  std::vector<std::string> rests;
  for (const BufferAccess &access : collectAccesses(function.body))
    if (access.buffer->name == "x")
      rests.push_back(std::to_string(access.indices[0].coefficient("i")) + " " +
                      restOf(access.indices[0]));
  CHECK(rests == std::vector<std::string>{"2 6 - N", "1 N - 4"});
}

TEST_CASE("lets binding affine values are looked through") {
  // A stepped range lowers to `for i.t` and `let i = 1 + 2 * i.t`.
  ir::Function evens = lowered(R"(
kernel evens(x: inout f32[N][N]) {
  for i in 1..N by 2 { for j in 0..N { x[j][i] = 0.0; } }
}
)",
                               "evens");
  std::vector<BufferAccess> stepped = collectAccesses(evens.body);
  const BufferAccess &x = only(stepped, "x", true);
  CHECK(x.indices[1].coefficient("i.t") == 2);
  CHECK(restOf(x.indices[1]) == "1");
  CHECK(strideAlong(x, "i.t").constant == 2);
  CHECK(strideAlong(x, "i.t").kind == Stride::Kind::Constant);
  CHECK(strideAlong(x, "j").str() == "N");

  // map_to_gpu's `let i = i.block * 8 + i.thread` (matmul maps i to y).
  ir::Function mapped = mapToGpu(loweredSample("matmul.loop", "matmul"));
  std::vector<BufferAccess> accesses = collectAccesses(mapped.body);
  const BufferAccess &a = only(accesses, "A", false);
  CHECK(a.indices[0].coefficient("i.thread") == 1);
  CHECK(a.indices[0].coefficient("i.block") == 8);
  CHECK(strideAlong(a, "i.thread").str() == "K");
  const BufferAccess &b = only(accesses, "B", false);
  CHECK(strideAlong(b, "j.thread").kind == Stride::Kind::Contiguous);
  CHECK(strideAlong(b, "j.block").constant == 32);
}

TEST_CASE("constant extents give constant strides, and what is not affine is unknown") {
  ir::Function function = lowered(R"(
kernel k(x: in f32[N], y: out f32[N], idx: in i32[N], t: out f32[N][4][8], n: i64) {
  parfor i in 0..N {
    var local: f32[4][8];
    for r in 0..4 { local[r][2 * r + 1] = x[n]; }
    t[i][1][3] = local[1][1];
    y[i] = x[i / 2 * 2] + x[idx[i]];
  }
}
)",
                                  "k");
  std::vector<BufferAccess> accesses = collectAccesses(function.body);
  const BufferAccess &local = only(accesses, "local", true);
  CHECK(strideAlong(local, "r").constant == 10); // 1 row of 8 plus 2 columns
  CHECK(strideAlong(local, "i").kind == Stride::Kind::Zero);
  const BufferAccess &t = only(accesses, "t", true);
  CHECK(strideAlong(t, "i").constant == 32);

  int loadsOfX = 0;
  for (const BufferAccess &access : accesses) {
    if (access.buffer->name != "x" || access.isStore)
      continue;
    ++loadsOfX;
    std::string index = restOf(access.indices[0]);
    if (access.enclosingLoops.size() == 2) { // x[n] inside `for r`: reused
      CHECK(strideAlong(access, "i").kind == Stride::Kind::Zero);
      CHECK(strideAlong(access, "r").kind == Stride::Kind::Zero);
      CHECK(index == "n");
    } else { // x[i / 2 * 2] and x[idx[i]]
      CHECK_FALSE(access.indices[0].isAffine());
      CHECK(access.indices[0].dependsOn("i"));
      CHECK(strideAlong(access, "i").kind == Stride::Kind::Unknown);
      CHECK(strideAlong(access, "i").str() == "unknown");
    }
  }
  CHECK(loadsOfX == 3);
  // idx[i] itself is an affine, contiguous access.
  CHECK(strideAlong(only(accesses, "idx", false), "i").kind == Stride::Kind::Contiguous);
}

// ------------------------------------------------- coalescing in map_to_gpu ---

TEST_CASE("map_to_gpu gives x to the loop along which the accesses are contiguous") {
  // Written column-first: the outer loop j indexes the contiguous dimension.
  std::string printed = ir::toString(mapToGpu(lowered(R"(
kernel copy(A: in f32[M][N], B: out f32[M][N]) {
  parfor j in 0..N, i in 0..M { B[i][j] = A[i][j]; }
}
)",
                                                      "copy")));
  INFO(printed);
  CHECK(printed.contains("gpu_block.x for j.block in [0, max((N + 32 - 1) / 32, 0)) {"));
  CHECK(printed.contains("gpu_block.y for i.block in [0, max((M + 8 - 1) / 8, 0)) {"));
  CHECK(printed.contains("gpu_thread.x for j.thread in [0, 32) {"));
  CHECK(printed.contains("gpu_thread.y for i.thread in [0, 8) {"));
  CHECK(printed.contains("let j = j.block * 32 + j.thread"));
  CHECK(printed.contains("if (j < N && i < M) {"));
}

TEST_CASE("map_to_gpu on the CPU: an outer product's blocks are the register tile of the CPU's "
          "vectors") {
  // Each step of matmul's k loop multiplies a row of B (the same for every
  // row of threads) by an element of A per row (the same along x): the block
  // is V vectors by R rows, R * V + V + 1 registers at most, loading least
  // per multiply-add. f64 accumulators have half the lanes; a CPU not known,
  // a B read down its column, a range that depends on the nest keep 32 x 8.
  auto shape = [](const std::string &source, const std::string &kernel, CpuVectors vectors) {
    std::string mapped = ir::toString(
        mapToGpu(lowered(source, kernel), PipelineTarget::Cpu, {}, 132, {}, {}, vectors));
    INFO(mapped);
    size_t x = mapped.find("gpu_thread.x for j.thread in [0, ");
    size_t y = mapped.find("gpu_thread.y for i.thread in [0, ");
    REQUIRE(x != std::string::npos);
    REQUIRE(y != std::string::npos);
    auto extent = [&](size_t at) {
      size_t from = mapped.find("[0, ", at) + 4;
      return mapped.substr(from, mapped.find(')', from) - from);
    };
    return extent(x) + " x " + extent(y);
  };
  const std::string product = R"(
kernel product(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
  }
}
)";
  CHECK(shape(product, "product", {16, 32}) == "64 x 6"); // AVX-512
  CHECK(shape(product, "product", {8, 16}) == "16 x 6");  // AVX2
  CHECK(shape(product, "product", {4, 16}) == "8 x 6");   // SSE
  CHECK(shape(product, "product", {}) == "32 x 8");
  std::string doubles = product;
  for (size_t at; (at = doubles.find("f32")) != std::string::npos;)
    doubles.replace(at, 3, "f64");
  CHECK(shape(doubles, "product", {16, 32}) == "32 x 6");
  CHECK(shape(R"(
kernel gram(A: in f32[M][K], B: in f32[N][K], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[j][k];
  }
}
)",
              "gram", {16, 32}) == "32 x 8");
  CHECK(shape(R"(
kernel band(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..min(i + 1, K)) A[i][k] * B[k][j];
  }
}
)",
              "band", {16, 32}) == "32 x 8");
  // block_x and block_y still set the shape.
  PassParameters wide;
  wide.blockY = 4;
  std::string chosen = ir::toString(mapToGpu(lowered(product, "product"), PipelineTarget::Cpu, {},
                                             132, wide, {}, CpuVectors{16, 32}));
  CHECK(chosen.contains("gpu_thread.x for j.thread in [0, 64)"));
  CHECK(chosen.contains("gpu_thread.y for i.thread in [0, 4)"));
}

TEST_CASE("map_to_gpu on the CPU: a 1-D parfor of few iterations gets narrow blocks, at run time") {
  const char *heavy = R"(
kernel heavy(x: in f32[N], y: out f32[R]) {
  parfor r in 0..R {
    y[r] = redomap(+, 0.0, k in 0..N) x[k] * f32(r);
  }
}
)";
  std::string cpu = ir::toString(mapToGpu(lowered(heavy, "heavy"), PipelineTarget::Cpu));
  INFO(cpu);
  CHECK(cpu.contains("  if (R >= 4096) {\n    gpu_block.x for r.block in [0, max((R + 256 - 1) / "
                     "256, 0)) {\n      gpu_thread.x for r.thread in [0, 256) {\n"));
  CHECK(cpu.contains("  } else {\n    gpu_block.x for r.block in [0, max((R + 32 - 1) / 32, 0)) "
                     "{\n      gpu_thread.x for r.thread in [0, 32) {\n"));
  std::string gpu = ir::toString(mapToGpu(lowered(heavy, "heavy")));
  CHECK(!gpu.contains("if (R >= 4096)"));
  CHECK(gpu.contains("gpu_thread.x for r.thread in [0, 256) {"));

  // Both sides of the choice, and the edges of the narrow blocks.
  auto loaded = test::loadText(heavy);
  REQUIRE(loaded->program);
  Interpreter interpreter;
  engine::CpuEngine cpuEngine;
  Engine *engines[] = {&interpreter, &cpuEngine};
  for (const char *rows : {"1", "31", "33", "4095", "4096", "4129"}) {
    CAPTURE(rows);
    ArgumentRequest request;
    request.seed = 5;
    request.values = {{"R", rows}, {"N", "40"}};
    test::DifferentialOutcome outcome = test::runDifferential(
        *loaded->program, *loaded->program->findKernel("heavy"), request, engines);
    REQUIRE_MESSAGE(!outcome.skipped, outcome.report);
    CHECK_MESSAGE(outcome.agree, outcome.report);
  }
}

TEST_CASE("map_to_gpu: in a 3-D nest x is chosen first, y and z follow innermost first") {
  const char *planes = R"(
kernel planes(src: in f32[C][H][W], dst: out f32[C][H][W]) {
  parfor x in 0..W, c in 0..C, y in 0..H { dst[c][y][x] = 2.0 * src[c][y][x]; }
}
)";
  std::string printed = ir::toString(mapToGpu(lowered(planes, "planes")));
  INFO(printed);
  CHECK(printed.contains("gpu_thread.x for x.thread in [0, 32) {"));
  CHECK(printed.contains("gpu_thread.y for y.thread in [0, 4) {"));
  CHECK(printed.contains("gpu_thread.z for c.thread in [0, 2) {"));
  checkAgainstInterpreter(planes, "planes", {{"C", "3"}, {"H", "7"}, {"W", "45"}});
  checkAgainstInterpreter(R"(
kernel copy(A: in f32[M][N], B: out f32[M][N]) {
  parfor j in 0..N, i in 0..M { B[i][j] = A[i][j]; }
}
)",
                          "copy", {{"M", "37"}, {"N", "33"}});
}

TEST_CASE("map_to_gpu counts every access once, and keeps the innermost loop on a tie") {
  // Along j: A[k][j], once although the k loop runs it K times; along i:
  // B[j][i] and C[j][i]. i wins although it is the outer loop.
  std::string printed = ir::toString(mapToGpu(lowered(R"(
kernel k(A: in f32[K][N], B: in f32[N][N], C: out f32[N][N]) {
  parfor i in 0..N, j in 0..N {
    var s: f32 = 0.0;
    for k in 0..K { s += A[k][j]; }
    C[j][i] = s + B[j][i];
  }
}
)",
                                                      "k")));
  INFO(printed);
  CHECK(printed.contains("gpu_thread.x for i.thread in [0, 32) {"));
  CHECK(printed.contains("gpu_thread.y for j.thread in [0, 8) {"));

  // transpose: one contiguous access along each loop, so j (innermost) keeps x.
  std::string transpose = ir::toString(mapToGpu(loweredSample("transpose.loop", "transpose")));
  INFO(transpose);
  CHECK(transpose.contains("gpu_thread.x for j.thread in [0, 32) {"));
  CHECK(transpose.contains("gpu_thread.y for i.thread in [0, 8) {"));
}

TEST_CASE("work counts: extents that are expressions, scans, triangular nests, known branches") {
  // From a bug hunt: y: f32[N + 1] counted as one element (and approximate),
  // a scan as no flops, the triangular nest's inner square at k = N/2 (25%
  // low), and a branch the sizes decide as always taken.
  const char *program = R"(
kernel shifted(x: in f32[N], y: out f32[N + 1]) {
  parfor i in 0..N { y[i + 1] = x[i] * 2.0; }
}
kernel prefix(x: in f32[N], y: out f32[N]) {
  scan(+, 0.0, i in 0..N) y[i] = x[i] * 2.0;
}
kernel tri(A: inout f32[N][N]) {
  for k in 0..N {
    parfor i in k + 1..N, j in k + 1..N { A[i][j] -= A[i][k] * A[k][j]; }
  }
}
kernel decided(x: in f32[N], r: out f32) {
  if N > 1000 { r = x[0] * 2.0; } else { r = x[0] + x[1] * 3.0 - 1.0; }
}
kernel by_data(x: in f32[N], r: out f32) {
  if x[0] > 0.0 { r = x[0] * 2.0; }
}
)";
  std::map<std::string, int64_t> sizes = {{"N", 100}};
  WorkCount shifted = countWork(lowered(program, "shifted"), sizes);
  CHECK(shifted.bytes == 4 * (100 + 101));
  CHECK(shifted.flops == 100);
  CHECK_FALSE(shifted.approximate);
  WorkCount prefix = countWork(lowered(program, "prefix"), sizes);
  CHECK(prefix.flops == 200); // a multiply and a combine per element
  CHECK(prefix.bytes == 800);
  WorkCount tri = countWork(lowered(program, "tri"), sizes);
  double exact = 0;
  for (int k = 0; k < 100; ++k)
    exact += 2.0 * (99 - k) * (99 - k);
  CHECK(tri.flops == exact);
  CHECK_FALSE(tri.approximate);
  // Beyond 4096 values of k, the middle value stands for all, flagged.
  CHECK(countWork(lowered(program, "tri"), {{"N", 5000}}).approximate);
  WorkCount decided = countWork(lowered(program, "decided"), sizes);
  CHECK(decided.flops == 3);
  CHECK_FALSE(decided.approximate);
  CHECK(countWork(lowered(program, "by_data"), sizes).approximate);
}

} // namespace loopc::passes

TEST_CASE("integer evaluation: C's truncating division, nothing for a value past i64") {
  auto value = [](loopc::ir::Expr expr) {
    return loopc::passes::evaluateInteger(
        *expr, [](const std::string &name) -> std::optional<int64_t> {
          return name == "n" ? std::optional<int64_t>(4611686018427387904) : std::nullopt;
        });
  };
  using loopc::ir::BinaryOpKind;
  CHECK(value(loopc::ir::makeBinary(BinaryOpKind::Div, loopc::ir::makeI64(-7),
                                    loopc::ir::makeI64(2))) == -3);
  CHECK(value(loopc::ir::makeBinary(BinaryOpKind::Rem, loopc::ir::makeI64(-7),
                                    loopc::ir::makeI64(2))) == -1);
  CHECK(value(loopc::ir::makeBinary(BinaryOpKind::Add,
                                    loopc::ir::makeVar(loopc::ScalarType::I64, "n"),
                                    loopc::ir::makeI64(1))) == 4611686018427387905);
  CHECK(!value(loopc::ir::makeBinary(
      BinaryOpKind::Mul, loopc::ir::makeVar(loopc::ScalarType::I64, "n"), loopc::ir::makeI64(2))));
  CHECK(!value(loopc::ir::makeBinary(BinaryOpKind::Div,
                                     loopc::ir::makeI64(std::numeric_limits<int64_t>::min()),
                                     loopc::ir::makeI64(-1))));
  CHECK(!value(
      loopc::ir::makeBinary(BinaryOpKind::Rem, loopc::ir::makeI64(1), loopc::ir::makeI64(0))));
  CHECK(!value(loopc::ir::makeVar(loopc::ScalarType::I64, "m")));
}
