// Bounds checks in generated code (`--bounds-check`, PassChoices::boundsChecks):
// an index out of range in a load, a store, a combine, a 2-D access, a row
// given a block, a register-tiled nest or host code is reported by the CPU JIT
// (both pipelines' kernels) with the interpreter's own message and location,
// the checked PTX assembles, and the passes that would hide accesses are left
// out. The differential tests run every in-range program checked too.
#include "TestSupport.h"

#include "codegen/NvptxTarget.h"
#include "codegen/Ptxas.h"
#include "engine/Bindings.h"
#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"
#include "passes/analysis/BoundsProof.h"

#include <doctest/doctest.h>

#include <random>
#include <set>
#include <string>

using namespace loopc;

namespace {

// The interpreter's error for `kernel` of `source` with `values` (which must
// be `expectedMessage` unless that is empty, at `expectedAt` unless that is
// unknown), and the checked CPU engines must repeat it word for word, at the
// same place.
void checkSameError(const std::string &source, const std::string &kernelName,
                    const std::map<std::string, std::string> &values,
                    const std::string &expectedMessage = "", SourceLoc expectedAt = {}) {
  auto loaded = test::loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const KernelDecl *kernel = loaded->program->findKernel(kernelName);
  REQUIRE(kernel);
  ArgumentRequest request;
  request.seed = 7;
  request.values = values;
  Expected<KernelArgs> inputs = bindKernelArguments(*kernel, request);
  REQUIRE_MESSAGE(inputs, (inputs ? "" : inputs.error().message));

  Interpreter interpreter;
  KernelArgs reference = *inputs;
  auto expected = interpreter.run(*loaded->program, *kernel, reference);
  REQUIRE_MESSAGE(!expected, "the interpreter ran a program meant to fail");
  if (!expectedMessage.empty())
    CHECK(expected.error().message == expectedMessage);
  if (expectedAt.valid()) {
    CHECK(expected.error().range.begin.line == expectedAt.line);
    CHECK(expected.error().range.begin.col == expectedAt.col);
  }

  engine::CpuEngine cpu(passes::PipelineTarget::Cpu, {.boundsChecks = true});
  engine::CpuEngine gpuKernels(passes::PipelineTarget::Gpu, {.boundsChecks = true});
  for (Engine *engine : {static_cast<Engine *>(&cpu), static_cast<Engine *>(&gpuKernels)}) {
    CAPTURE(engine->name());
    KernelArgs args = *inputs;
    auto ran = engine->run(*loaded->program, *kernel, args);
    REQUIRE_MESSAGE(!ran, "the checked engine ran past an index out of range");
    CHECK(ran.error().message == expected.error().message);
    CHECK(ran.error().range.begin.line == expected.error().range.begin.line);
    CHECK(ran.error().range.begin.col == expected.error().range.begin.col);
  }
}

} // namespace

TEST_CASE("a load past the end, a negative store and a bad combine are caught where they are") {
  const std::string source = R"(kernel shift(x: in f32[N], y: out f32[N], k: i64) {
  parfor i in 0..N {
    y[i] = x[i + k];
  }
}
kernel reverse(x: in f32[N], y: out f32[N], k: i64) {
  parfor i in 0..N {
    y[N - 1 - i - k] = x[i];
  }
}
kernel bins(keys: in i32[N], H: out i32[B]) {
  parfor i in 0..N {
    combine(+) H[keys[i]] = 1;
  }
}
)";
  checkSameError(source, "shift", {{"N", "100"}, {"k", "3"}},
                 "index 100 out of range for dimension 0 of 'x' (extent 100)");
  checkSameError(source, "shift", {{"N", "50"}, {"k", "-1"}},
                 "index -1 out of range for dimension 0 of 'x' (extent 50)");
  checkSameError(source, "reverse", {{"N", "40"}, {"k", "2"}},
                 "index -1 out of range for dimension 0 of 'y' (extent 40)");
  // Random i32 values are in [0, 16).
  checkSameError(source, "bins", {{"N", "1000"}, {"B", "8"}});
}

TEST_CASE("of several bad accesses in one statement, the target's is reported, as by the "
          "interpreter") {
  // Found by a bug hunt: compiled code reported the first bad load of the
  // value, computed before the store's indices were checked.
  const std::string source = R"(kernel copy(x: out f32[N], y: in f32[N]) {
  for i in 0..N + 1 { x[i] = y[i] * 2.0; }
}
kernel update(A: inout f32[N][N]) {
  for i in 0..N + 1 { A[i][i] -= A[i][0] * A[0][i]; }
}
)";
  checkSameError(source, "copy", {{"N", "7"}},
                 "index 7 out of range for dimension 0 of 'x' (extent 7)");
  checkSameError(source, "update", {{"N", "5"}},
                 "index 5 out of range for dimension 0 of 'A' (extent 5)");
}

TEST_CASE("a scan's element out of range is reported at its target, as by the interpreter") {
  // From a bug hunt: the compiled engines pointed at the whole scan, or at
  // the parfor around it.
  const std::string source = R"(kernel scan_oob(x: in i32[N], y: out i32[M]) {
  scan(+, 0, i in 0..N) y[i] = x[i];
}
kernel rowscan_oob(x: in i32[R][C], y: out i32[R][C2]) {
  parfor r in 0..R {
    scan(+, 0, i in 0..C) y[r][i] = x[r][i];
  }
}
assoc fn larger(a: i32, b: i32) -> i32 { return max(a, b); }
kernel user_scan(x: in i32[N], y: out i32[M]) {
  scan(larger, 0, i in 0..N) y[i] = x[i];
}
)";
  // One chunk, and many: on the GPU, blocks scanning tiles in shared memory.
  // With many, only the last element is out of range: where several are,
  // in blocks running at once, the first to fail is reported, which may be
  // any of them (a block's later element, reached before the earlier one).
  const std::pair<std::string, SourceLoc> kernelLevel[] = {{"scan_oob", {.line = 2, .col = 25}},
                                                           {"user_scan", {.line = 11, .col = 30}}};
  for (const auto &[kernel, target] : kernelLevel) {
    CAPTURE(kernel);
    checkSameError(source, kernel, {{"N", "5"}, {"M", "3"}},
                   "index 3 out of range for dimension 0 of 'y' (extent 3)", target);
    checkSameError(source, kernel, {{"N", "5000"}, {"M", "4999"}},
                   "index 4999 out of range for dimension 0 of 'y' (extent 4999)", target);
  }
  checkSameError(source, "rowscan_oob", {{"R", "2"}, {"C", "5"}, {"C2", "3"}},
                 "index 3 out of range for dimension 1 of 'y' (extent 3)", {.line = 6, .col = 27});
}

TEST_CASE("a combine in a parfor checks its target before its value, as the interpreter") {
  // From a bug hunt: compiled code computed the value (and checked its
  // index) first, so of two bad indices it reported the value's.
  const std::string source = R"(assoc fn larger(a: f32, b: f32) -> f32 { return max(a, b); }
kernel sum(x: in f32[2], t: i64, s: i64, y: out f32[2]) {
  parfor k in 0..1 { combine(+) y[t + k] = x[s + k]; }
}
kernel smallest(x: in f32[2], t: i64, s: i64, y: out f32[2]) {
  parfor k in 0..1 { combine(min) y[t + k] = x[s + k]; }
}
kernel product(x: in f32[2], t: i64, s: i64, y: out f32[2]) {
  parfor k in 0..1 { combine(*) y[t + k] = x[s + k]; }
}
kernel user(x: in f32[2], t: i64, s: i64, y: out f32[2]) {
  parfor k in 0..1 { combine(larger) y[t + k] = x[s + k]; }
}
)";
  // An atomicrmw, a compare-and-swap loop, a user operator's.
  const std::pair<std::string, SourceLoc> kernels[] = {{"sum", {.line = 3, .col = 33}},
                                                       {"smallest", {.line = 6, .col = 35}},
                                                       {"product", {.line = 9, .col = 33}},
                                                       {"user", {.line = 12, .col = 38}}};
  for (const auto &[kernel, target] : kernels) {
    CAPTURE(kernel);
    checkSameError(source, kernel, {{"t", "9"}, {"s", "7"}},
                   "index 9 out of range for dimension 0 of 'y' (extent 2)", target);
  }
}

TEST_CASE("a staged combine's target out of range is reported where the program has it") {
  // privatize_combines stages the combines of a CPU block: a target's check
  // is made after the barrier, from what the first loop stored, unless a
  // load of the body may fail too (which would then be reported first).
  const std::string source = R"(kernel bins(x: in f32[N], H: out i32[B]) {
  parfor i in 0..N {
    if i == 777 {
      combine(+) H[B + 3] = 1;
    } else {
      combine(+) H[i % B] = 1;
    }
  }
}
kernel valued(x: in f32[N], k: i64, H: out f32[B]) {
  parfor i in 0..N {
    if i == 777 {
      combine(+) H[B + 3] = x[i + k];
    } else {
      combine(+) H[i % B] = x[i];
    }
  }
}
)";
  checkSameError(source, "bins", {{"N", "5000"}, {"B", "8"}},
                 "index 11 out of range for dimension 0 of 'H' (extent 8)", {.line = 4, .col = 18});
  checkSameError(source, "valued", {{"N", "5000"}, {"B", "8"}, {"k", "9000"}},
                 "index 11 out of range for dimension 0 of 'H' (extent 8)",
                 {.line = 13, .col = 18});
  std::string checked =
      test::compiledKernelText(source, "bins", passes::PipelineTarget::Cpu, {.boundsChecks = true});
  CHECK(test::contains(checked, "check (check0.failed[i.thread] == 0) else error \"index {0} out "
                                "of range for dimension 0 of 'H' (extent {1})\""));
  checked = test::compiledKernelText(source, "valued", passes::PipelineTarget::Cpu,
                                     {.boundsChecks = true});
  CHECK(test::contains(checked, "H.private.staged0.element[i.thread] = 6144\n"));
  CHECK(!test::contains(checked, "check0.failed"));
}

TEST_CASE("an access in a called kernel names its array as the callee does") {
  // From a bug hunt: the messages named the caller's array, which the
  // callee's parameter denotes, and a local array renamed because the
  // caller has one of the same name.
  const std::string source = R"(kernel shifted(x: in f32[N], k: i64, y: out f32[N]) {
  parfor i in 0..N { y[i] = x[i + k]; }
}
kernel placed(x: in f32[N], k: i64, y: out f32[N]) {
  parfor i in 0..N { y[i + k] = x[i]; }
}
kernel scattered(x: in f32[N], k: i64, y: out f32[N]) {
  parfor i in 0..N { combine(+) y[i + k] = x[i]; }
}
kernel staged(x: in f32[N], k: i64, y: out f32[N]) {
  var t: f32[N];
  parfor i in 0..N { t[i] = x[i]; }
  parfor i in 0..N { y[i] = t[i + k]; }
}
kernel call_shifted(v: in f32[N], k: i64, w: out f32[N]) { shifted(v, k, w); }
kernel call_placed(v: in f32[N], k: i64, w: out f32[N]) { placed(v, k, w); }
kernel call_scattered(v: in f32[N], k: i64, w: out f32[N]) { scattered(v, k, w); }
kernel call_staged(v: in f32[N], k: i64, w: out f32[N]) {
  var t: f32[N];
  staged(v, k, w);
  parfor i in 0..N { w[i] += t[i]; }
}
)";
  const std::map<std::string, std::string> values = {{"N", "4"}, {"k", "1"}};
  checkSameError(source, "call_shifted", values,
                 "index 4 out of range for dimension 0 of 'x' (extent 4)", {.line = 2, .col = 29});
  checkSameError(source, "call_placed", values,
                 "index 4 out of range for dimension 0 of 'y' (extent 4)", {.line = 5, .col = 22});
  checkSameError(source, "call_scattered", values,
                 "index 4 out of range for dimension 0 of 'y' (extent 4)", {.line = 8, .col = 33});
  checkSameError(source, "call_staged", values,
                 "index 4 out of range for dimension 0 of 't' (extent 4)", {.line = 13, .col = 29});
}

TEST_CASE("the second dimension, a row on a block, a register-tiled nest and host code") {
  const std::string source = R"(kernel column(A: in f64[M][N], c: i64, y: out f64[M]) {
  parfor i in 0..M {
    y[i] = A[i][c];
  }
}
kernel row_sums(A: in f32[M][N], y: out f32[M]) {
  parfor i in 0..M {
    y[i] = redomap(+, 0.0, j in 0..N + 1) A[i][j];
  }
}
kernel matmul(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N], extra: i64) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K + extra) A[i][k] * B[k][j];
  }
}
kernel host(x: in i32[N], y: out i32[N]) {
  var total: i32 = 0;
  for t in 0..N + 1 {
    total += x[t];
  }
  parfor i in 0..N {
    y[i] = total;
  }
}
)";
  checkSameError(source, "column", {{"M", "9"}, {"N", "4"}, {"c", "4"}},
                 "index 4 out of range for dimension 1 of 'A' (extent 4)");
  checkSameError(source, "row_sums", {{"M", "5"}, {"N", "300"}},
                 "index 300 out of range for dimension 1 of 'A' (extent 300)");
  checkSameError(source, "matmul", {{"M", "37"}, {"N", "45"}, {"K", "20"}, {"extra", "1"}},
                 "index 20 out of range for dimension 1 of 'A' (extent 20)");
  checkSameError(source, "host", {{"N", "10"}},
                 "index 10 out of range for dimension 0 of 'x' (extent 10)");
}

TEST_CASE("a private array copied per register tile, or moved to global memory, keeps its name") {
  // From a bug hunt: the messages named the tile's copy 't.x0y0'.
  const std::string source = R"(
kernel tiled(A: in f32[M][K], B: in f32[K][N], W: i32, D: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    var t: f32[3];
    D[i][j] = t[W - 1] + redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
  }
}
kernel sized(A: in f32[M][K], B: in f32[K][N], W: i32, D: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    var t: f32[W];
    D[i][j] = t[W - 1] + redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
  }
}
)";
  for (const char *kernel : {"tiled", "sized"})
    checkSameError(source, kernel, {{"M", "37"}, {"N", "70"}, {"K", "5"}, {"W", "0"}},
                   "index -1 out of range for dimension 0 of 't' (extent " +
                       std::string(kernel == std::string("tiled") ? "3" : "0") + ")");
}

TEST_CASE("bounds checks leave out the passes that would hide an unproven access, and say why") {
  // matmul's indices are all proven in range: every pass runs.
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const KernelDecl &kernel = *loaded->program->modules.front()->kernels.back();
  std::vector<std::string> ran;
  passes::PipelineOptions options;
  options.choices.boundsChecks = true;
  options.afterPass = [&](const std::string &pass, const ir::Function &) { ran.push_back(pass); };
  auto checked = passes::runPipeline(ir::lowerKernel(*loaded->program, kernel), options);
  REQUIRE(checked);
  CHECK(checked->boundsChecked);
  CHECK(std::ranges::find(ran, "tile_registers") != ran.end());
  CHECK(std::ranges::find(ran, "stage_shared") != ran.end());
  CHECK(test::contains(ir::toString(*checked), ") bounds_checked {"));

  // A gather's index is not: staging and fusion would move it where no
  // check is made, so they do not run, and the remarks say why.
  test::TempDir dir;
  std::string path = dir.file("gather.loop", R"(
kernel gather(A: in f32[M][K], idx: in i32[K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][idx[k]] * B[k][j];
  }
}
)");
  auto explained = test::runLoopc("explain " + path + " --bounds-check --remarks");
  CHECK(explained.exitCode == 0);
  CHECK(test::contains(explained.output,
                       "remark: stage_shared: not staged: an index in this nest is not proven in "
                       "range, and a box would read it unchecked"));
  CHECK(test::contains(explained.output, "remark: bounds_checks: index idx[k] of 'A' (dimension 1) "
                                         "checked at run time"));
  auto unchecked = test::runLoopc("explain " + path + " --remarks --unsafe");
  CHECK(!test::contains(unchecked.output, "not staged: an index"));
  CHECK(!test::contains(unchecked.output, "bounds_checks"));

  // Staging is decided nest by nest: beside the gather, a proven matmul is
  // staged, and an index out of range in the gather is still reported.
  std::string both = R"(
kernel both(A: in f32[M][K], idx: in i32[K], B: in f32[K][N], C: out f32[M][N], D: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][idx[k]] * B[k][j];
  }
  parfor i in 0..M, j in 0..N {
    D[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
  }
}
)";
  std::string bothPath = dir.file("both.loop", both);
  auto staged = test::runLoopc("explain " + bothPath + " --bounds-check --remarks");
  CHECK(test::contains(staged.output, "both.loop:3:10: remark: stage_shared: not staged: an index "
                                      "in this nest is not proven in range"));
  CHECK(test::contains(staged.output, "both.loop:7:52: remark: stage_shared: 'B' staged"));
  // (random indices in [0, 16): some past K = 9)
  auto outside = test::runLoopc("run " + bothPath +
                                " --device gpu-on-cpu --set M=40 --set N=70 "
                                "--set K=9 --kernel both");
  CHECK(outside.exitCode != 0);
  CHECK(test::contains(outside.output, "out of range for dimension 1 of 'A' (extent 9)"));

  // A size compiled as its value is that constant in the arrays' extents
  // too: proj's `e < E`, E = NH * HD, with NH = 16 in the loops, is in range
  // of Wq's NH * HD columns, so its nest is staged.
  auto attention = test::runLoopc(
      "explain tests/programs/science/attn.loop --kernel block --bounds-check --remarks "
      "--set T=2048 --set D=1024 --set NH=16 --set HD=64");
  CHECK(attention.exitCode == 0);
  CHECK(test::contains(attention.output, "specialize_sizes: NH = 16 is compiled as a constant"));
  CHECK(!test::contains(attention.output, "of 'Wq' (dimension 1) checked at run time"));
  CHECK(test::contains(attention.output, "remark: stage_shared: 'Wq' staged"));

  // A histogram's bin is at least 0 only where B is (B = 0 makes it -1).
  // Compiled for a run whose B is at least 1 (recorded as a size choice),
  // the bin is proven and every pass runs; compiled for B = 0, or for no
  // run, privatize_combines still runs, checking the bin against H's extent
  // before each private update, and says so.
  auto histogram = [](const std::string &sizes) {
    return test::runLoopc("explain samples/histogram.loop --target cpu --bounds-check --remarks" +
                          sizes);
  };
  auto nonEmpty = histogram(" --set N=100000 --set B=256");
  CHECK(nonEmpty.exitCode == 0);
  CHECK(!test::contains(nonEmpty.output, "checked at run time"));
  CHECK(!test::contains(nonEmpty.output, "not run"));
  for (const std::string &sizes : {std::string(" --set N=100000 --set B=0"), std::string()}) {
    CAPTURE(sizes);
    auto unproven = histogram(sizes);
    CHECK(unproven.exitCode == 0);
    CHECK(test::contains(unproven.output, "remark: privatize_combines: index bin of 'H' (dimension "
                                          "0) checked at run time: not proven within [0, B)"));
    CHECK(test::contains(unproven.output, "remark: privatize_combines: 'H' gets a copy per block"));
  }
}

TEST_CASE("a histogram of no bins reports its first value in range, one of some bins none") {
  // B >= 1 proves the bin; the code for B = 0 keeps the check, which
  // reports the first value in range, as the interpreter does.
  auto run = [](const std::string &sizes) {
    return test::runLoopc("run samples/histogram.loop --device cpu --bounds-check --set lo=-1 "
                          "--set hi=1 --seed 3" +
                          sizes);
  };
  CHECK(run(" --set N=1000 --set B=16").exitCode == 0);
  auto empty = run(" --set N=1000 --set B=0");
  CHECK(empty.exitCode == 1);
  CHECK(test::contains(empty.output, "index -1 out of range for dimension 0 of 'H' (extent 0)"));
}

TEST_CASE("checked PTX of every sample assembles, and reports through the error record") {
  // Kernels with an index no proof covers (a histogram's bin, a softmax's
  // row) report through the error record; those whose indices are all
  // proven in range (BoundsProof.h) have no check left.
  const std::set<std::string> allProven = {"matmul",      "jacobi2d",        "row_sums",
                                           "running_max", "exclusive_count", "prefix_sum"};
  std::optional<std::string> ptxas = codegen::findPtxas();
  for (const char *file : {"samples/matmul.loop", "samples/histogram.loop", "samples/scan.loop",
                           "samples/softmax.loop", "samples/jacobi2d.loop"}) {
    auto loaded = test::loadFile(test::sourcePath(file));
    REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
    for (const auto &kernel : loaded->program->modules.front()->kernels) {
      CAPTURE(file);
      CAPTURE(kernel->name);
      passes::PipelineOptions options;
      options.choices.boundsChecks = true;
      auto function = passes::runPipeline(ir::lowerKernel(*loaded->program, *kernel), options);
      REQUIRE(function);
      auto ptx = codegen::compileToPtx(*function, "sm_80");
      if (!ptx && test::skippedForLibdevice(ptx.error().message))
        continue;
      REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
      // The first failing site is swapped into the record's word.
      CHECK(test::contains(*ptx, "atom.global.cas.b32") != allProven.contains(kernel->name));
      if (!ptxas)
        continue;
      auto reports = codegen::runPtxas(*ptxas, *ptx, "sm_80");
      CHECK_MESSAGE(reports, (reports ? "" : reports.error().message));
    }
  }
  if (!ptxas)
    MESSAGE("skipped assembling the PTX: ptxas not found (set LOOPC_PTXAS)");
}

TEST_CASE("run --bounds-check on the CPU prints the interpreter's message and exits 1") {
  test::TempDir dir;
  std::string path = dir.file("shift.loop", "kernel shift(x: in f32[N], y: out f32[N], k: i64) {\n"
                                            "  parfor i in 0..N {\n"
                                            "    y[i] = x[i + k];\n"
                                            "  }\n"
                                            "}\n");
  auto checked =
      test::runLoopc("run " + path + " --set N=64 --set k=1 --device cpu --bounds-check");
  CHECK(checked.exitCode == 1);
  CHECK(test::contains(checked.output, "shift.loop:3:12: error: index 64 out of range for "
                                       "dimension 0 of 'x' (extent 64)"));
  auto inRange =
      test::runLoopc("run " + path + " --set N=64 --set k=0 --device cpu --bounds-check");
  CHECK(inRange.exitCode == 0);
}

namespace {

// Whether the accesses of `buffer` in the checked CPU pipeline's code of the
// program's last kernel (each kernel version, e.g. of both block widths) are
// all proven in range ("proven"), none is ("checked"), or some are ("mixed").
std::string provenAccesses(const std::string &source, const std::string &buffer) {
  auto loaded = test::loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  passes::PipelineOptions options;
  options.target = passes::PipelineTarget::Cpu;
  options.choices.boundsChecks = true;
  auto function = passes::runPipeline(
      ir::lowerKernel(*loaded->program, *loaded->program->modules.front()->kernels.back()),
      options);
  REQUIRE(function);
  passes::ProvenAccesses proven = passes::proveAccessesInBounds(*function);
  struct Accesses : ir::IRVisitor {
    const passes::ProvenAccesses &proven;
    const std::string &buffer;
    ir::Stmt body; // the host code's or a kernel's, visited now
    std::vector<bool> found;
    Accesses(const passes::ProvenAccesses &proven, const std::string &buffer)
        : proven(proven), buffer(buffer) {}
    void note(const void *access, const ir::BufferInfo &info, size_t dims) {
      if (info.name != buffer)
        return;
      bool all = true;
      for (size_t dim = 0; dim < dims; ++dim)
        all = all && proven.proven(body, access, dim);
      found.push_back(all);
    }
    void visitLoad(const ir::Load &load) override {
      IRVisitor::visitLoad(load);
      note(&load, *load.buffer, load.indices.size());
    }
    void visitStore(const ir::Store &store) override {
      IRVisitor::visitStore(store);
      note(&store, *store.buffer, store.indices.size());
    }
  } accesses(proven, buffer);
  accesses.body = function->body;
  accesses.visit(function->body);
  for (const ir::KernelFunc &kernel : function->kernels) {
    accesses.body = kernel.body;
    accesses.visit(kernel.body);
  }
  REQUIRE(!accesses.found.empty());
  if (std::ranges::all_of(accesses.found, [](bool all) { return all; }))
    return "proven";
  return std::ranges::none_of(accesses.found, [](bool all) { return all; }) ? "checked" : "mixed";
}

} // namespace

TEST_CASE("indices proven in range lose their checks, and only those") {
  // From loop ranges, guards (and else branches), clamps and lets; an index
  // that can leave its range, or depends on data, keeps its check, which
  // the cases above show still fires.
  // ("mixed": checked in the kernel for small sizes, proven in the one the
  // host launches from 4096 points on, whose launch says N >= 4096.)
  auto proven = [](const std::string &body, const std::string &buffer = "x") {
    return provenAccesses(
        "kernel k(x: in f32[N], idx: in i64[N], y: out f32[N]) {\n" + body + "\n}\n", buffer);
  };
  CHECK(proven("parfor i in 0..N { y[i] = x[i]; }") == "proven");
  CHECK(proven("parfor i in 0..N { y[i] = x[i]; }", "y") == "proven");
  CHECK(proven("parfor i in 0..N { y[i] = x[N - 1 - i]; }") == "proven");
  CHECK(proven("parfor i in 0..N { y[i] = x[i + 1]; }") == "checked");
  CHECK(proven("parfor i in 0..N { y[i] = x[i - 1]; }") == "checked");
  CHECK(proven("parfor i in 0..N { y[i] = x[min(i + 1, N - 1)]; }") == "proven");
  CHECK(proven("parfor i in 0..N { y[i] = x[max(i - 1, 0)]; }") == "proven");
  CHECK(proven("parfor i in 0..N { y[i] = x[max(i - 1, 1)]; }") != "proven");
  CHECK(proven("parfor i in 0..N { if (i + 1 < N) { y[i] = x[i + 1]; } }") == "proven");
  CHECK(proven("parfor i in 0..N { if (i + 1 >= N) { y[i] = 0.0; } else { y[i] = x[i + 1]; } }") ==
        "proven");
  CHECK(proven("parfor i in 0..N { if (i < 3) { y[i] = x[i + 1]; } }") != "proven");
  CHECK(proven("parfor i in 0..N { if (i >= 1 && i + 1 < N) { y[i] = x[i - 1] + x[i + 1]; } }") ==
        "proven");
  CHECK(proven("parfor i in 0..N { if (i < 1 || i + 1 >= N) { y[i] = 0.0; } else { y[i] = x[i + 1] "
               "+ x[i - 1]; } }") == "proven");
  CHECK(proven("parfor i in 0..N { if (i >= 1 || i + 1 < N) { y[i] = x[i - 1]; } }") == "checked");
  CHECK(proven("parfor i in 0..N { let j = i / 2; y[i] = x[j]; }") == "proven");
  CHECK(proven("parfor i in 0..N { let j = (i + N + 1) / 2; y[i] = x[j]; }") == "checked");
  CHECK(proven("parfor i in 0..N { y[i] = x[i % 7]; }") != "proven");
  CHECK(proven("parfor i in 0..N { if (N >= 7) { y[i] = x[i % 7]; } }") == "proven");
  CHECK(proven("parfor i in 0..N { y[i] = x[idx[i]]; }") == "checked");
  // An input's elements do not change: a test of one holds where it is used.
  CHECK(proven("parfor i in 0..N { if (idx[i] >= 0 && idx[i] < N) { y[i] = x[idx[i]]; } }") ==
        "proven");
  CHECK(proven("parfor i in 0..N { y[i] = idx[i] < N ? x[idx[i]] : 0.0; }") == "checked");
  // A float's sign from the tests around it; its conversion saturates.
  CHECK(proven("parfor i in 0..N { if (x[i] >= 0.0) { y[i] = x[min(i64(x[i] * f32(N)), N - 1)]; } "
               "}") == "proven");
  CHECK(proven("parfor i in 0..N { y[i] = x[min(i64(x[i] * f32(N)), N - 1)]; }") != "proven");
  CHECK(proven("parfor i in 0..N { let e = x[0] - 1.0; if (x[i] >= e) { y[i] = x[min(i64(x[i] * "
               "f32(N)), N - 1)]; } }") != "proven");
  CHECK(proven("parfor i in 0..N { if (x[i] >= 0.5) { y[i] = x[min(i64((x[i] - 0.5) * f32(N)), N - "
               "1)]; } }") == "proven");
  CHECK(proven("parfor i in 0..N { if (x[i] >= 0.5) { y[i] = x[min(i64((0.5 - x[i]) * f32(N)), N - "
               "1)]; } }") != "proven");
  CHECK(proven("parfor i in 0..N { y[i] = redomap(+, 0.0, k in 0..i + 1) x[k]; }") == "proven");
  CHECK(proven("parfor i in 0..N { y[i] = redomap(+, 0.0, k in i..N + 1) x[k]; }") == "checked");
  // A strided walk below its count: t * S is at most (N - i + S - 1) - S.
  auto strided = [](const std::string &count) {
    return provenAccesses(
        "kernel k(x: in f32[N], y: out f32[N], S: i64) {\n  parfor i in 0..N { if "
        "(S >= 1) { y[i] = redomap(+, 0.0, t in 0..(" +
            count + ") / S) x[i + t * S]; } }\n}\n",
        "x");
  };
  CHECK(strided("N - i + S - 1") == "proven");
  CHECK(strided("N - i + S") == "checked");
  CHECK(strided("N + S - 1") == "checked");
}

TEST_CASE(
    "what the prover follows still fails where it can: negative quotients, changed elements") {
  // Quotients and remainders of a negative dividend are negative; a test of
  // an element the code then overwrites says nothing of the new value.
  std::string source = R"(
kernel quotient(x: in f32[N], y: out f32[N]) {
  parfor i in 0..N { y[i] = x[(i - 5) / 2]; }
}
kernel remainder(x: in f32[N], y: out f32[N]) {
  parfor i in 0..N { y[i] = x[(i - 5) % 3]; }
}
kernel overwritten(x: inout f32[N], y: out f32[N], lo: f32) {
  for t in 0..1 {
    if x[0] >= lo {
      x[0] = lo - 10.0;
      y[0] = y[i64(x[0] - lo) + 1];
    }
  }
}
kernel split_past_end(A: in f32[M][N], x: in f32[N], y: out f32[M]) {
  parfor i in 0..M { y[i] = redomap(+, 0.0, j in 0..N) A[i][j] * x[min(j + 1, N)]; }
}
kernel split_row_past_end(A: in f32[M][N], y: out f32[M]) {
  parfor i in 0..M { y[i] = redomap(max, -1.0, j in 0..N) A[min(i + 1, M)][j]; }
}
kernel strided(x: in f32[N], y: out f32[N], S: i64) {
  parfor i in 0..N { y[i] = redomap(+, 0.0, t in 0..(N - i + S) / S) x[i + t * S]; }
}
kernel launched(x: in f32[N], y: out f32[N], k: i64) {
  for t in 0..2 {
    parfor i in 0..N { y[i] = x[min(i + k * t, N - 1)]; }
  }
}
)";
  checkSameError(source, "quotient", {{"N", "20"}},
                 "index -2 out of range for dimension 0 of 'x' (extent 20)");
  checkSameError(source, "remainder", {{"N", "20"}},
                 "index -2 out of range for dimension 0 of 'x' (extent 20)");
  checkSameError(source, "overwritten", {{"N", "20"}, {"lo", "-2"}},
                 "index -9 out of range for dimension 0 of 'y' (extent 20)");
  // Long rows, which both pipelines split into chunks (GPU: a block each).
  checkSameError(source, "split_past_end", {{"M", "2"}, {"N", "70001"}},
                 "index 70001 out of range for dimension 0 of 'x' (extent 70001)");
  checkSameError(source, "split_row_past_end", {{"M", "3"}, {"N", "70001"}},
                 "index 3 out of range for dimension 0 of 'A' (extent 3)");
  checkSameError(source, "strided", {{"N", "20"}, {"S", "4"}},
                 "index 20 out of range for dimension 0 of 'x' (extent 20)");
  checkSameError(source, "launched", {{"N", "20"}, {"k", "-30"}},
                 "index -30 out of range for dimension 0 of 'x' (extent 20)");
}

TEST_CASE("random indices near the edges: checked code fails exactly where the interpreter does") {
  // Indices, guards and ranges that are in range for some sizes and not for
  // others: a check proven away wrongly would let a run pass that the
  // interpreter fails (an index out of range read silently).
  std::mt19937 random(2024);
  auto pick = [&](const std::vector<std::string> &choices) {
    return choices[random() % choices.size()];
  };
  engine::CpuEngine cpu(passes::PipelineTarget::Cpu, {.boundsChecks = true});
  engine::CpuEngine gpuKernels(passes::PipelineTarget::Gpu, {.boundsChecks = true});
  Interpreter interpreter;
  int failures = 0, runs = 0;
  for (int program = 0; program < 80; ++program) {
    std::string index = pick({"i", "i + 1", "i - 1", "N - 1 - i", "N - i", "2 * i", "i / 2",
                              "min(i + 1, N - 1)", "max(i - 1, 0)", "max(i - 2, 1)",
                              "min(i + 2, N)", "k", "k - 1", "i + k", "N - 1 - k", "k + 1"});
    std::string guard = pick({"", "", "i + 1 < N", "i >= 1", "i < N - 1", "i > 0 && i + 1 < N",
                              "!(i + 1 >= N)", "i < 3", "2 * i < N"});
    std::string value = "x[" + index + "]";
    if (index.find('k') != std::string::npos)
      value = "redomap(+, 0.0, k in " + pick({"0..N", "0..i + 1", "i..N", "1..N + 1", "0..i"}) +
              ") " + value;
    std::string store = "y[i] = " + value + ";";
    std::string source = "kernel k(x: in f32[N], y: out f32[N]) {\n  parfor i in 0..N {\n    " +
                         (guard.empty() ? store : "if (" + guard + ") { " + store + " }") +
                         "\n  }\n}\n";
    CAPTURE(source);
    auto loaded = test::loadText(source);
    REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
    const KernelDecl &kernel = *loaded->program->modules.front()->kernels.front();
    for (const char *n : {"1", "2", "5", "40"}) {
      CAPTURE(n);
      ArgumentRequest request;
      request.seed = 3;
      request.values = {{"N", n}};
      Expected<KernelArgs> inputs = bindKernelArguments(kernel, request);
      REQUIRE(inputs);
      KernelArgs reference = *inputs;
      auto expected = interpreter.run(*loaded->program, kernel, reference);
      ++runs;
      failures += !expected;
      for (Engine *engine : {static_cast<Engine *>(&cpu), static_cast<Engine *>(&gpuKernels)}) {
        CAPTURE(engine->name());
        KernelArgs args = *inputs;
        auto ran = engine->run(*loaded->program, kernel, args);
        CHECK(ran.has_value() == expected.has_value());
        if (!ran && !expected)
          CHECK(test::contains(ran.error().message, "out of range"));
      }
    }
  }
  // Both outcomes occur, so the comparison means something.
  CHECK(failures > runs / 10);
  CHECK(failures < runs - runs / 10);
}

TEST_CASE("the GPU pipeline's split reductions and grid-stride loops keep no checks") {
  // A chunk of a split reduction ends at the row's length or before it; a
  // grid-stride step times the stride stays below the count it was made
  // from. Both are proven at the sizes where the pipeline chooses them.
  auto kept = [](const std::string &command) {
    auto explained = test::runLoopc("explain " + command + " --remarks");
    REQUIRE(explained.exitCode == 0);
    return test::contains(explained.output, "checked at run time");
  };
  CHECK_FALSE(kept("samples/dot.loop --set N=16777216"));
  CHECK_FALSE(
      kept("samples/mv_transposed.loop --kernel mv_transposed --set M=16384 --set N=16384"));
  CHECK_FALSE(kept("samples/sum_max.loop --kernel count_above --set N=16777216"));
  CHECK_FALSE(kept("samples/mv.loop --set M=4 --set N=67108864"));
  CHECK_FALSE(kept("samples/softmax.loop --set R=64 --set C=1048576"));
  // The same pipeline keeps a check it cannot prove (a gather).
  CHECK(kept("samples/histogram.loop"));
}

TEST_CASE("a fact about an array element does not outlive a store to it") {
  // The guard holds for c[i] = 1; the store then moves c[i] past the end of
  // x. A proof from the guard would have dropped the check on the read.
  checkSameError(R"(kernel stale(x: in f32[N], c: inout i64[M], y: out f32[M]) {
  parfor i in 0..M {
    c[i] = 1;
    if (c[i] >= 1 && c[i] <= N) {
      c[i] = N + 5;
      y[i] = x[c[i] - 1];
    }
  }
}
)",
                 "stale", {{"N", "5"}, {"M", "3"}},
                 "index 9 out of range for dimension 0 of 'x' (extent 5)");
}

TEST_CASE("unsafe kernels and blocks leave their indices unchecked, and only theirs") {
  // A gather in an unsafe block, the same gather outside it, and one in an
  // unsafe kernel called from a checked one: only the second keeps its check
  // in the generated code, on both pipelines. The interpreter checks all.
  test::TempDir dir;
  std::string path = dir.file("unsafe.loop", R"(
unsafe kernel gather_unsafe(x: in f32[M], idx: in i32[N], r: out f32[N]) {
  parfor i in 0..N { r[i] = x[idx[i]]; }
}
kernel mixed(x: in f32[M], idx: in i32[N], r: out f32[N], s: out f32[N], t: out f32[N]) {
  parfor i in 0..N {
    unsafe {
      r[i] = x[idx[i]];
    }
    s[i] = x[idx[i]];
  }
  gather_unsafe(x, idx, t);
}
)");
  for (const char *target : {"cpu", "gpu"}) {
    CAPTURE(target);
    auto remarks =
        test::runLoopc("explain " + path + " --kernel mixed --remarks --target " + target);
    CHECK(remarks.exitCode == 0);
    CHECK(test::contains(remarks.output,
                         "unsafe.loop:10:12: remark: bounds_checks: index idx[i] of "
                         "'x' (dimension 0) checked at run time"));
    CHECK(!test::contains(remarks.output, "unsafe.loop:8:14:"));
    CHECK(!test::contains(remarks.output, "unsafe.loop:3:29:"));
  }
  // In range, every engine agrees.
  auto checked = test::runLoopc("run " + path +
                                " --kernel mixed --device cpu --set M=5 --set N=3 "
                                "--random-range 0:5 --check");
  CHECK(checked.exitCode == 0);
  auto interpreted = test::runLoopc("run " + path +
                                    " --kernel gather_unsafe --device interp "
                                    "--set M=5 --set N=3 --random-range 5:6");
  CHECK(interpreted.exitCode == 1);
  CHECK(test::contains(interpreted.output,
                       "unsafe.loop:3:29: error: index 5 out of range for dimension 0 of 'x'"));
}

TEST_CASE("unsafe is a keyword: not a name, and said where a statement or declaration may be") {
  test::TempDir dir;
  auto named = test::runLoopc(
      "check " + dir.file("named.loop", "kernel k(r: out f32[N]) {\n  let unsafe = 1.0;\n}\n"));
  CHECK(named.exitCode == 1);
  CHECK(test::contains(named.output, "named.loop:2:7: error:"));
  auto before = test::runLoopc(
      "check " + dir.file("before.loop", "unsafe fn f(x: f32) -> f32 { return x; }\n"));
  CHECK(before.exitCode == 1);
  CHECK(test::contains(before.output, "before.loop:1:8: error:"));
}
