// fuse_producers and drop_overwritten_fills: which temporaries disappear
// and which stay, one program per condition of each pass, and that both
// pipelines' kernels compute what the interpreter computes either way.
#include "TestSupport.h"
#include "support/Differential.h"

#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>

using namespace loopc;
using loopc::test::contains;

namespace {

constexpr const char *kProgram = R"(
kernel norm(x: in f32[N], y: out f32[N]) {
  var t: f32[N];
  parfor i in 0..N { t[i] = x[i] * x[i]; }
  let s = redomap(+, 0.0, i in 0..N) t[i];
  parfor i in 0..N { y[i] = x[i] / sqrt(s + 1.0); }
}

kernel chain(x: in f32[N], y: out f32[N]) {
  var a: f32[N];
  var b: f32[N];
  parfor i in 0..N { a[i] = x[i] + 1.0; }
  parfor i in 0..N { b[i] = a[i] * 2.0; }
  parfor i in 0..N { y[i] = b[i] - x[i]; }
}

kernel transposed(A: in f32[M][N], x: in f32[M], y: out f32[N]) {
  var At: f32[N][M];
  parfor i in 0..N, j in 0..M { At[i][j] = A[j][i]; }
  parfor i in 0..N { y[i] = redomap(+, 0.0, j in 0..M) At[i][j] * x[j]; }
}

kernel read_twice(x: in f32[N], y: out f32[N]) {
  var t: f32[N];
  parfor i in 0..N { t[i] = exp(x[i]); }
  parfor i in 0..N { y[i] = t[i] + t[N - 1 - i]; }
}

kernel read_shifted(x: in f32[N], y: out f32[N]) {
  var t: f32[N];
  parfor i in 0..N { t[i] = x[i] * 3.0; }
  parfor i in 0..N - 1 { y[i] = t[i + 1]; }
}

kernel read_in_time_loop(x: in f32[N], y: out f32[N], steps: i32) {
  var t: f32[N];
  parfor i in 0..N { t[i] = x[i] * 0.5; }
  for s in 0..steps {
    parfor i in 0..N { y[i] = y[i] + t[i]; }
  }
}

kernel partial_producer(x: in f32[N], y: out f32[N]) {
  var t: f32[N];
  parfor i in 1..N { t[i] = x[i] + 2.0; }
  parfor i in 0..N { y[i] = t[i]; }
}

kernel source_written_between(x: inout f32[N], y: out f32[N]) {
  var t: f32[N];
  parfor i in 0..N { t[i] = x[i] + 1.0; }
  parfor i in 0..N { x[i] = 0.0; }
  parfor i in 0..N { y[i] = t[i]; }
}

kernel divides(k: in i32[N], d: i32, y: out i32[N]) {
  var t: i32[N];
  parfor i in 0..N { t[i] = k[i] / d; }
  parfor i in 0..N { y[i] = t[i] + 1; }
}

kernel broadcast(x: in f32[N], y: out f32[M][N]) {
  var t: f32[N];
  parfor j in 0..N { t[j] = sqrt(x[j] * x[j] + 1.0); }
  parfor i in 0..M, j in 0..N { y[i][j] = t[j] * f32(i); }
}

kernel fill_whole(x: in f32[N], y: out f32[N]) {
  parfor i in 0..N { y[i] = x[i] + 1.0; }
}

kernel fill_half(x: in f32[N], y: out f32[N]) {
  parfor i in 0..N {
    if x[i] > 0.0 { y[i] = x[i]; }
  }
}

kernel calls(x: in f32[N], whole: out f32[N], half: out f32[N]) {
  fill_whole(x, whole);
  fill_half(x, half);
}
)";

const std::map<std::string, std::string> kSizes[] = {
    {{"N", "1"}, {"M", "1"}, {"d", "3"}, {"steps", "2"}},
    {{"N", "37"}, {"M", "5"}, {"d", "-2"}, {"steps", "3"}},
    {{"N", "300"}, {"M", "33"}, {"d", "7"}, {"steps", "1"}}};

// Both pipelines' kernels against the interpreter at every size.
void checkAgainstInterpreter(const Program &program, const std::string &kernelName) {
  const KernelDecl *kernel = program.findKernel(kernelName);
  REQUIRE(kernel);
  Interpreter interpreter;
  engine::CpuEngine cpu;
  engine::CpuEngine gpuKernels(test::gpuPipelineOnOneSM());
  Engine *engines[] = {&interpreter, &cpu, &gpuKernels};
  for (const auto &sizes : kSizes) {
    ArgumentRequest request;
    request.seed = 11;
    for (const auto &[name, value] : sizes)
      if (std::ranges::any_of(kernel->params, [&](const auto &p) { return p->name == name; }) ||
          std::ranges::any_of(kernel->sizes, [&](const auto &p) { return p->name == name; }))
        request.values[name] = value;
    test::DifferentialOutcome outcome = test::runDifferential(program, *kernel, request, engines);
    REQUIRE_MESSAGE(!outcome.skipped, outcome.report);
    CHECK_MESSAGE(outcome.agree, outcome.report);
  }
}

// Whether `array` is still allocated after `pass`.
bool keeps(const Program &program, const std::string &kernel, const std::string &pass,
           const std::string &declaration) {
  return contains(test::aroundPass(program, kernel, pass).second, declaration);
}

} // namespace

TEST_CASE("a temporary read once per element is computed where it is read") {
  auto loaded = test::loadText(kProgram);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const Program &program = *loaded->program;
  auto [before, after] = test::aroundPass(program, "norm", "fuse_producers");
  CHECK(contains(before, "global f32 t[N]"));
  CHECK(!contains(after, "global f32 t[N]"));
  CHECK(contains(after, "over i_2 in [0, N): x[i_2] * x[i_2]"));

  std::string chained = test::aroundPass(program, "chain", "fuse_producers").second;
  CHECK(!contains(chained, "global f32 a[N]"));
  CHECK(!contains(chained, "global f32 b[N]"));
  CHECK(contains(chained, "y[i_3] = (x[i_3] + 1.0) * 2.0 - x[i_3]"));

  std::string transposed = test::aroundPass(program, "transposed", "fuse_producers").second;
  CHECK(!contains(transposed, "At["));
  CHECK(contains(transposed, "A[j_2][i_2] * x[j_2]"));
  for (const char *kernel : {"norm", "chain", "transposed"})
    checkAgainstInterpreter(program, kernel);
}

TEST_CASE("temporaries read more than once, elsewhere or after their sources change stay") {
  auto loaded = test::loadText(kProgram);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const Program &program = *loaded->program;
  for (std::string kernel : {"read_twice", "read_shifted", "read_in_time_loop", "partial_producer",
                             "source_written_between", "broadcast"}) {
    CAPTURE(kernel);
    CHECK(keeps(program, kernel, "fuse_producers", "global f32 t[N]"));
    checkAgainstInterpreter(program, kernel);
  }
  CHECK(keeps(program, "divides", "fuse_producers", "global i32 t[N]"));
  checkAgainstInterpreter(program, "divides");

  // nbody's accelerations read the positions its second parfor updates.
  auto nbody = test::loadFile(test::sourcePath("samples/nbody.loop"));
  REQUIRE(nbody->program);
  CHECK(keeps(*nbody->program, "nbody", "fuse_producers", "global f32 acc[N][3]"));
}

TEST_CASE("a called kernel's zero fill goes when the callee writes the array whole") {
  auto loaded = test::loadText(kProgram);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  auto [before, after] = test::aroundPass(*loaded->program, "calls", "drop_overwritten_fills");
  CHECK(contains(before, "whole[whole.zero0] = 0.0"));
  CHECK(!contains(after, "whole[whole.zero0] = 0.0"));
  CHECK(contains(after, "half[half.zero0] = 0.0")); // written only where x > 0
  checkAgainstInterpreter(*loaded->program, "calls");

  // mv through a transpose: the fill of y goes, then the transpose.
  auto mv = test::loadFile(test::sourcePath("samples/mv_transposed.loop"));
  REQUIRE(mv->program);
  std::string fused =
      test::aroundPass(*mv->program, "mv_transposed_via_linalg", "fuse_producers").second;
  CHECK(!contains(fused, "zero"));
  // At is neither allocated nor written; only its size check stays (the
  // interpreter reports an At too large to allocate).
  CHECK(!contains(fused, "f32 At["));
  CHECK(!contains(fused, "At["));
  CHECK(contains(fused, "local array 'At' is too large to allocate"));
}
