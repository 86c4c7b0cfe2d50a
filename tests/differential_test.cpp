// Every kernel of samples/*.loop and stdlib/*.loop on the interpreter and the
// CPU JIT with the same seeded inputs: the two must agree. One test case per
// file, so ctest spreads the files over cores, and a last case fails when a
// file has no case. Each case lists its size assignments: 1, 7, 33, about 100
// and mixed sizes that are multiples of no tile where the interpreter is fast
// enough, smaller ones for deep nests (the interpreter runs a few million
// operations a second, and a 5-deep convolution at 20 is hundreds of millions).
#include "TestSupport.h"
#include "driver/Session.h"
#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"
#include "support/Differential.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace loopc;

namespace {

// Source-relative paths of the files that have a test case.
std::set<std::string> &coveredFiles() {
  static std::set<std::string> files;
  return files;
}

bool cover(const char *file) { return coveredFiles().insert(file).second; }

// "M=7 N=33 dt=0.01" as a name -> value map.
std::map<std::string, std::string> parseAssignment(const std::string &assignment) {
  std::map<std::string, std::string> values;
  std::istringstream words(assignment);
  for (std::string word; words >> word;) {
    size_t equals = word.find('=');
    REQUIRE_MESSAGE(equals != std::string::npos, "not NAME=VALUE: " << word);
    values[word.substr(0, equals)] = word.substr(equals + 1);
  }
  return values;
}

bool kernelHasName(const KernelDecl &kernel, const std::string &name) {
  auto named = [&](const VarDeclPtr &decl) { return decl->name == name; };
  return std::ranges::any_of(kernel.params, named) || std::ranges::any_of(kernel.sizes, named);
}

// Runs every kernel of `kernels` at every assignment. One assignment serves
// all kernels: each takes the names it has. An assignment the interpreter
// cannot run for a kernel (an empty convolution output) is skipped for it, but
// every kernel must be compared at least once and every assignment must run
// some kernel, so a size meant to test an edge cannot be skipped unnoticed.
void checkKernels(const Program &program, const std::vector<std::unique_ptr<KernelDecl>> &kernels,
                  const std::string &where, std::initializer_list<const char *> assignments) {
  Interpreter interpreter;
  // One engine per pipeline for all assignments: each compiles a kernel once.
  // The GPU pipeline's kernels run on the CPU JIT too: sized for one SM
  // (register tiles at these small sizes), and for a full GPU with bounds
  // checks, which no access of these programs may fail.
  engine::CpuEngine cpu;
  engine::CpuEngine gpuKernels(test::gpuPipelineOnOneSM());
  engine::CpuEngine checkedGpuKernels(passes::PipelineTarget::Gpu, {.boundsChecks = true});
  Engine *engines[] = {&interpreter, &cpu, &gpuKernels, &checkedGpuKernels};
  std::map<std::string, int> comparedByKernel;
  std::map<std::string, std::string> lastSkip;
  for (const std::string assignment : assignments) {
    CAPTURE(assignment);
    std::map<std::string, std::string> values = parseAssignment(assignment);
    for (const auto &[name, value] : values)
      CHECK_MESSAGE(std::ranges::any_of(
                        kernels, [&](const auto &kernel) { return kernelHasName(*kernel, name); }),
                    "no kernel of " << where << " has a size or parameter named " << name);
    int comparedHere = 0;
    for (const auto &kernel : kernels) {
      ArgumentRequest request;
      request.seed = 42;
      for (const auto &[name, value] : values)
        if (kernelHasName(*kernel, name))
          request.values[name] = value;
      test::DifferentialOutcome outcome = test::runDifferential(program, *kernel, request, engines);
      if (outcome.skipped) {
        lastSkip[kernel->name] = outcome.report;
        continue;
      }
      ++comparedByKernel[kernel->name];
      ++comparedHere;
      CHECK_MESSAGE(outcome.agree, outcome.report);
    }
    CHECK_MESSAGE(comparedHere > 0, "no kernel of " << where << " ran at " << assignment);
  }
  for (const auto &kernel : kernels)
    CHECK_MESSAGE(comparedByKernel[kernel->name] > 0,
                  kernel->name << " was never compared; last skip: " << lastSkip[kernel->name]);
}

// Every kernel of `file` (not those it imports).
void checkFile(const std::string &file, std::initializer_list<const char *> assignments) {
  auto loaded = test::loadFile(test::sourcePath(file));
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  checkKernels(*loaded->program, loaded->program->modules.front()->kernels, file, assignments);
}

// Every kernel of a program written in the test.
void checkSource(const std::string &source, std::initializer_list<const char *> assignments) {
  auto loaded = test::loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  checkKernels(*loaded->program, loaded->program->modules.front()->kernels, "the program",
               assignments);
}

// Runs `kernelName` of `source` on the interpreter and the CPU JIT; they must
// agree. Returns the reference's value of every parameter by name, so the
// test can also assert what the result is.
std::map<std::string, HostArray>
runAgreeing(const std::string &source, const std::string &kernelName, ArgumentRequest request) {
  auto loaded = test::loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const KernelDecl *kernel = nullptr;
  for (const auto &candidate : loaded->program->modules.front()->kernels)
    if (candidate->name == kernelName)
      kernel = candidate.get();
  REQUIRE(kernel);
  Interpreter interpreter;
  engine::CpuEngine cpu;
  engine::CpuEngine gpuKernels(test::gpuPipelineOnOneSM());
  Engine *engines[] = {&interpreter, &cpu, &gpuKernels};
  test::DifferentialOutcome outcome =
      test::runDifferential(*loaded->program, *kernel, request, engines);
  REQUIRE_MESSAGE(!outcome.skipped, outcome.report);
  CHECK_MESSAGE(outcome.agree, outcome.report);
  std::map<std::string, HostArray> byName;
  for (size_t i = 0; i < kernel->params.size(); ++i)
    byName[kernel->params[i]->name] = outcome.reference.params[i];
  return byName;
}

HostArray i32Vector(std::initializer_list<int32_t> values) {
  HostArray array(ScalarType::I32, {static_cast<int64_t>(values.size())});
  std::ranges::copy(values, array.data<int32_t>());
  return array;
}

std::vector<int64_t> integers(const HostArray &array) {
  std::vector<int64_t> values;
  for (size_t i = 0; i < array.elementCount(); ++i)
    values.push_back(array.getAsInt(i));
  return values;
}

} // namespace

// Registers `file` as covered and defines its test case.
#define DIFFERENTIAL_CASE(file, ...)                                                               \
  [[maybe_unused]] static const bool DOCTEST_ANONYMOUS(covered_) = cover(file);                    \
  TEST_CASE(file) { checkFile(file, {__VA_ARGS__}); }

DIFFERENTIAL_CASE("samples/cnn_conv.loop", "Ic=0 Oc=2 H=5 W=5 K=3", "Ic=2 Oc=0 H=5 W=5 K=3",
                  "Ic=1 Oc=1 H=1 W=1 K=1", "Ic=2 Oc=3 H=7 W=9 K=3", "Ic=3 Oc=2 H=33 W=17 K=5",
                  "Ic=4 Oc=5 H=20 W=33 K=3", "Ic=1 Oc=2 H=5 W=6 K=7")
DIFFERENTIAL_CASE("samples/conv2d_11x11.loop", "H=10 W=10", "H=11 W=11", "H=11 W=257", "H=12 W=40",
                  "H=33 W=33", "H=100 W=61")
DIFFERENTIAL_CASE("samples/conv2d_5x5.loop", "H=4 W=4", "H=5 W=257", "H=5 W=5", "H=7 W=7",
                  "H=33 W=33", "H=100 W=100", "H=7 W=33", "H=33 W=9")
DIFFERENTIAL_CASE("samples/dot.loop", "N=0", "N=1", "N=7", "N=33", "N=100", "N=257", "N=10007")
DIFFERENTIAL_CASE("samples/gauss.loop", "N=0", "N=1", "N=7", "N=33", "N=100")
DIFFERENTIAL_CASE("samples/gaussian_blur.loop", "H=4 W=4", "H=5 W=257", "H=5 W=5", "H=7 W=7",
                  "H=33 W=33", "H=100 W=100", "H=7 W=33", "H=33 W=9")
DIFFERENTIAL_CASE("samples/histogram.loop", "N=0 B=3 lo=-0.5 hi=0.5", "N=1 B=1 lo=-1 hi=1",
                  "N=7 B=3 lo=-0.5 hi=0.5", "N=257 B=1 lo=-1 hi=1", "N=10007 B=33 lo=-0.75 hi=0.5",
                  "N=10007 B=1000 lo=-1 hi=1")
DIFFERENTIAL_CASE("samples/scan.loop", "N=0 R=0 C=3", "N=1 R=3 C=0", "N=1 R=1 C=1", "N=63 R=3 C=64",
                  "N=64 R=2 C=65", "N=65 R=7 C=33", "N=4097 R=5 C=300", "N=300001 R=1 C=7",
                  "N=1100000 R=1 C=1")
DIFFERENTIAL_CASE("samples/jacobi1d.loop", "N=0 steps=2", "N=1 steps=2", "N=257 steps=0",
                  "N=257 steps=2", "N=7 steps=2", "N=33 steps=3", "N=100 steps=2",
                  "N=10007 steps=3")
DIFFERENTIAL_CASE("samples/jacobi2d.loop", "N=0 steps=2", "N=1 steps=2", "N=2 steps=3",
                  "N=7 steps=2", "N=33 steps=3", "N=100 steps=2")
DIFFERENTIAL_CASE("samples/laplace.loop", "H=0 W=0", "H=0 W=5", "H=1 W=1", "H=3 W=257", "H=257 W=3",
                  "H=7 W=7", "H=33 W=33", "H=100 W=100", "H=7 W=33", "H=33 W=7")
DIFFERENTIAL_CASE("samples/matmul.loop", "M=0 N=3 K=4", "M=3 N=0 K=4", "M=3 N=4 K=0", "M=0 N=0 K=0",
                  "M=1 N=1 K=1", "M=257 N=3 K=2", "M=3 N=257 K=2", "M=1 N=257 K=257", "M=7 N=7 K=7",
                  "M=33 N=33 K=33", "M=100 N=100 K=100", "M=7 N=33 K=5", "M=33 N=5 K=7",
                  "M=65 N=17 K=129", "M=70 N=100 K=200", "M=9 N=33 K=33000")
DIFFERENTIAL_CASE("samples/mv.loop", "M=0 N=5", "M=5 N=0", "M=1 N=1", "M=257 N=257", "M=7 N=7",
                  "M=33 N=33", "M=100 N=100", "M=7 N=33", "M=33 N=7", "M=1000 N=77")
DIFFERENTIAL_CASE("samples/mv_transposed.loop", "M=0 N=5", "M=5 N=0", "M=1 N=1", "M=257 N=257",
                  "M=7 N=7", "M=33 N=33", "M=100 N=100", "M=7 N=33", "M=33 N=7", "M=1000 N=77")
DIFFERENTIAL_CASE("samples/nbody.loop", "N=0 dt=0.01 softening=0.1", "N=1 dt=0.01 softening=0.1",
                  "N=7 dt=0.01 softening=0.1", "N=33 dt=0.01 softening=0.1",
                  "N=100 dt=0.01 softening=0.1", "N=301 dt=0.5 softening=0.05")
DIFFERENTIAL_CASE("samples/reverse.loop", "N=0", "N=1", "N=257", "N=7", "N=33", "N=100", "N=10007")
DIFFERENTIAL_CASE("samples/row_stats.loop", "R=0 C=3", "R=3 C=0", "R=1 C=1", "R=257 C=3",
                  "R=2 C=257", "R=7 C=33", "R=33 C=100", "R=3 C=1000")
DIFFERENTIAL_CASE("samples/softmax.loop", "R=0 C=3", "R=3 C=0", "R=1 C=1", "R=257 C=3", "R=2 C=257",
                  "R=7 C=7", "R=33 C=33", "R=100 C=100", "R=7 C=33", "R=33 C=7", "R=3 C=1000")
DIFFERENTIAL_CASE("samples/sqdist.loop", "M=0 N=3 K=2", "M=3 N=2 K=0", "M=1 N=1 K=1",
                  "M=257 N=3 K=2", "M=7 N=7 K=7", "M=33 N=33 K=33", "M=100 N=100 K=100",
                  "M=7 N=33 K=5", "M=33 N=5 K=7")
DIFFERENTIAL_CASE("samples/sum_max.loop", "N=0 threshold=0.5", "N=1 threshold=0.5",
                  "N=257 threshold=0.5", "N=7 threshold=0.5", "N=33 threshold=0",
                  "N=100 threshold=0.5", "N=10007 threshold=-0.25")
DIFFERENTIAL_CASE("samples/transpose.loop", "M=0 N=4", "M=4 N=0", "M=1 N=1", "M=257 N=257",
                  "M=1 N=257", "M=257 N=1", "M=7 N=7", "M=33 N=33", "M=100 N=100", "M=7 N=33",
                  "M=33 N=7", "M=130 N=67")
DIFFERENTIAL_CASE("stdlib/conv.loop", "H=1 W=1 K=1", "H=7 W=7 K=3", "H=33 W=33 K=5",
                  "H=100 W=100 K=3", "H=7 W=33 K=5", "H=33 W=9 K=7")
DIFFERENTIAL_CASE("stdlib/linalg.loop", "M=0 N=0 K=0 alpha=1.5", "M=3 N=4 K=0 alpha=1.5",
                  "M=1 N=1 K=1 alpha=1.5", "M=257 N=3 K=2 alpha=0.5", "M=3 N=257 K=2 alpha=0.5",
                  "M=7 N=7 K=7 alpha=1.5", "M=33 N=33 K=33 alpha=-0.5", "M=100 N=100 K=100 alpha=2",
                  "M=7 N=33 K=5 alpha=1.5", "M=33 N=5 K=7 alpha=1.5")
DIFFERENTIAL_CASE("stdlib/cumulative.loop", "N=0", "N=1", "N=7", "N=65", "N=4097", "N=300001")
DIFFERENTIAL_CASE("stdlib/histogram.loop", "N=0 B=3", "N=1 B=1", "N=7 B=3", "N=257 B=16",
                  "N=10007 B=5", "N=10007 B=3000")
DIFFERENTIAL_CASE("stdlib/reduce.loop", "N=0", "N=1", "N=257", "N=7", "N=33", "N=100", "N=10007")
DIFFERENTIAL_CASE("stdlib/stencil.loop", "N=0 H=0 W=0 D=0 steps=2", "N=1 H=1 W=1 D=1 steps=2",
                  "N=257 H=3 W=257 D=3 steps=1", "N=7 H=7 W=7 D=7 steps=2",
                  "N=33 H=33 W=33 D=33 steps=3", "N=100 H=100 W=100 D=20 steps=2",
                  "N=33 H=7 W=33 D=5 steps=1")

DIFFERENTIAL_CASE("bench/cpu/launch.loop", "N=0 steps=2", "N=1 steps=0", "N=1 steps=1",
                  "N=64 steps=300", "N=4000 steps=20", "N=1000000 steps=2")
DIFFERENTIAL_CASE("bench/cpu/durbin.loop", "N=0", "N=1", "N=2", "N=33", "N=1000")
DIFFERENTIAL_CASE("bench/cpu/nussinov.loop", "N=0", "N=1", "N=2", "N=33", "N=150")

TEST_CASE("every sample, stdlib and CPU benchmark file has a differential case") {
  std::set<std::string> onDisk;
  for (const char *dir : {"samples", "stdlib", "bench/cpu"})
    for (const auto &entry : std::filesystem::directory_iterator(test::sourcePath(dir)))
      if (entry.path().extension() == ".loop")
        onDisk.insert(std::string(dir) + "/" + entry.path().filename().string());
  for (const std::string &file : onDisk)
    CHECK_MESSAGE(coveredFiles().contains(file), file << " has no DIFFERENTIAL_CASE");
  for (const std::string &file : coveredFiles())
    CHECK_MESSAGE(onDisk.contains(file), file << " has a case but no file");
}

// Programs written here rather than taken from samples: each stresses one
// thing the lowering to loops and the CPU code generator must get right, at
// empty, one-element, small and 257 (a multiple of no block size) extents.

TEST_CASE("triangular nests: inner bounds depend on outer parfor variables") {
  checkSource(R"(
kernel lower_prefix(A: in f32[N][N], L: out f32[N][N]) {
  parfor i in 0..N, j in 0..i + 1 {
    L[i][j] = redomap(+, 0.0, k in j..i + 1) A[i][k];
  }
}
kernel upper_band(A: in f32[N][N], U: out f32[N][N]) {
  parfor i in 0..N {
    parfor j in i..min(N, i + 5) {
      U[i][j] = redomap(max, -inf, k in i..j + 1, l in k..j + 1) A[k][l];
    }
  }
}
)",
              {"N=0", "N=1", "N=2", "N=7", "N=33", "N=257"});
}

TEST_CASE("per-thread loops: loaded and divided bounds, divergent branches, nested loops") {
  // On the CPU each sequential loop below runs outside its thread loop
  // (CpuThreadNest.h): trip counts differ per thread, come from memory or a
  // division, and sit in both sides of a branch the threads disagree on.
  checkSource(R"(
kernel branches(x: in f32[N], idx: in i32[N], y: out f32[N]) {
  parfor i in 0..N {
    let n = i64(idx[i] % 7);
    if (i % 3 == 0) {
      var s: f32;
      for k in 0..n {
        s += x[(i + k) % N];
      }
      y[i] = s;
    } else {
      var p: f32 = 1.0;
      for k in 0..N / (i + 1) % 5 {
        for l in k..4 {
          p *= 0.5 + x[(i + l) % N];
        }
      }
      y[i] = p;
    }
  }
}
kernel columns(A: in f32[M][N], s: out f32[N]) {
  parfor j in 0..N {
    s[j] = redomap(+, 0.0, i in j % 3..M) A[i][j] * A[i][(j + 1) % N];
  }
}
)",
              {"N=0 M=0", "N=1 M=1", "N=7 M=3", "N=33 M=40", "N=257 M=5"});
}

TEST_CASE("guards on thread indices: every comparison, both signs, nested, around loops") {
  // On the CPU a guard affine in one thread index narrows the thread loop
  // instead of testing each thread (CpuThreadNest.h); guards on two indices
  // at once stay per-thread tests.
  checkSource(R"(
kernel edges(x: in f32[N], y: out f32[N]) {
  parfor i in 0..N {
    if (i >= 3 && N - i > 2) {
      if (i <= N - 3 && 1 - i < 0 && 5 - i <= 1 && N - 4 - i >= 1) {
        y[i] = x[i] * 2.0;
      }
    }
  }
}
kernel lower_triangle(A: in f32[M][N], B: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    if (j <= i && 1 < j) {
      B[i][j] = A[i][j] + 1.0;
    }
  }
}
kernel prefix(n: i32, x: in f32[N], y: out f32[N]) {
  parfor i in 0..min(n, i32(N)) {
    if (i > 0 && 2 * i < n) {
      y[i] = redomap(+, 0.0, k in 0..i) x[k] * x[i - k];
    }
  }
}
)",
              {"N=0 M=0 n=0", "N=1 M=1 n=1", "N=7 M=3 n=7", "N=33 M=40 n=30", "N=257 M=5 n=300"});
}

TEST_CASE("loop-free kernels in 2-D and 3-D, swept by rows on the CPU") {
  // CpuThreadNest.h's row sweeps: rows over the z and y blocks and threads,
  // guards on y decided per row, on x narrowing the sweep, a branch the
  // threads of a row disagree on.
  checkSource(R"(
kernel volume(A: in f32[D][M][N], B: out f32[D][M][N]) {
  parfor k in 0..D, i in 0..M, j in 0..N {
    B[k][i][j] = A[k][i][j] * 2.0 + f32(k - i);
  }
}
kernel smooth(A: in f32[M][N], B: out f32[M][N]) {
  parfor i in 1..M - 1, j in 1..N - 1 {
    if (i % 2 == 0 && j < N - 2) {
      B[i][j] = A[i - 1][j] + A[i + 1][j];
    } else {
      B[i][j] = A[i][j - 1] - A[i][j + 1];
    }
  }
}
)",
              {"D=0 M=0 N=0", "D=1 M=1 N=1", "D=3 M=7 N=9", "D=2 M=33 N=40", "D=5 M=9 N=257",
               "D=9 M=257 N=3"});
}

TEST_CASE("1-D parfors swept as one loop over each call's blocks") {
  // CpuThreadNest.h's spans: ranges starting past 0, guards at both ends,
  // neighbours read across block edges, sizes around a block and past a
  // chunk of the pool's.
  checkSource(R"(
kernel spans(A: in f32[N], B: out f32[N], C: out i32[N]) {
  parfor i in 2..N - 1 {
    B[i] = A[i - 2] * 0.25 + A[i + 1];
  }
  parfor i in 0..N {
    if (i >= 1 && i < N - 3) {
      C[i] = i32(i) * 3 - 7;
    }
  }
}
)",
              {"N=0", "N=1", "N=3", "N=4", "N=33", "N=257", "N=4001", "N=100003", "N=1000000"});
}

TEST_CASE("panels of a column copied per worker: offsets along x, edge columns, many columns") {
  // B's panel rows hold j .. j + 33 (CpuPanel.h); the copy leaves out the
  // columns past B's extent. Panels of at least 16 KiB are copied: K >= 121.
  checkSource(
      R"(
kernel shifted(A: in f32[M][K], B: in f32[K][W], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * (B[k][j + 2] - B[k][j]);
  }
}
)",
      {"M=5 N=40 K=150 W=42", "M=70 N=100 K=200 W=102", "M=9 N=31 K=129 W=33", "M=3 N=3 K=3 W=5"});
}

TEST_CASE("edge blocks running every thread: rows held, lanes past the clip, stores clipped") {
  // On the CPU an edge block of a guard around a loop with the threads
  // inside runs every thread where nothing past the guard can fault or be
  // seen (CpuThreadNest.cpp, splitEdge): the rows past it compute again
  // what the last row computes, x's lanes past it read the panel's copy or
  // what every lane reads, and only the stores keep to the guard. Past the
  // guard: epilogues that read what they overwrite, rows guarded from below,
  // and what keeps lanes (or rows) from running: a global read along x, a
  // division by a value read, a loop whose length depends on x, control
  // flow on a value read, a store beside a thread's own update, a value set
  // for the code after the guard (codegen_test checks which of these run
  // which threads).
  checkSource(
      R"(
kernel update(alpha: f32, A: in f32[M][K], B: in f32[K][N], C: inout f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = 0.5 * C[i][j] + alpha * redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
  }
}
kernel lower_rows(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    if (i >= 3 && j < N - 1) {
      C[i][j] = redomap(max, -inf, k in 0..K) A[i][k] - B[k][j];
    }
  }
}
kernel reversed(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][N - 1 - j];
  }
}
kernel kept(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    var g: f32 = 1.0;
    if (i < M - 1 && j > 2) {
      g = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
    }
    C[i][j] = g;
  }
}
kernel running(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    var s: f32;
    for k in 0..K {
      s += A[i][k] * B[k][j];
      C[i][j] = s;
    }
  }
}
kernel quotients(X: in i32[M][K], D: in i32[K][N], Q: out i32[M][N]) {
  parfor i in 0..M, j in 0..N {
    Q[i][j] = redomap(+, 0, k in 0..K) X[i][k] / (D[k][j] + 1);
  }
}
kernel triangle(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..min(j + 1, K)) A[i][k] * B[k][j];
  }
}
kernel clipped_sums(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N], E: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    var s: f32;
    var t: f32;
    for k in 0..K {
      if (B[k][j] > 0.5) {
        s += A[i][k] * B[k][j];
      } else {
        t += A[i][k];
      }
    }
    C[i][j] = s;
    E[i][j] = s - t;
  }
}
)",
      {"M=1 N=1 K=1 alpha=1.5", "M=7 N=33 K=5 alpha=-2", "M=37 N=45 K=29 alpha=0.5",
       "M=70 N=100 K=130 alpha=1", "M=9 N=70 K=200 alpha=3", "M=65 N=3 K=140 alpha=0.25"});
}

TEST_CASE("a panel that starts before the array's first column") {
  // B[k][j - 3]: the first column's panel starts at -3, so its copy starts
  // three elements in (CpuPanel.cpp clips the row copy at both ends).
  checkSource(
      R"(
kernel behind(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    if (j >= 3) {
      C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j - 3];
    } else {
      C[i][j] = 0.0;
    }
  }
}
)",
      {"M=5 N=40 K=150", "M=33 N=70 K=130", "M=9 N=3 K=129", "M=2 N=2 K=200", "M=17 N=35 K=140"});
}

TEST_CASE("a whole-array reduction over values that are reductions themselves") {
  // The inner redomap runs inside the GPU threads of the outer one's tree:
  // lower_reductions must make it a serial loop there, not a second tree.
  checkSource(R"(
kernel nested(x: in f32[N], r: out f32) {
  r = redomap(+, 0.0, i in 0..N) redomap(max, -inf, k in 0..i + 1) x[(i + k) % N];
}
)",
              {"N=1", "N=7", "N=257", "N=1000"});
}

TEST_CASE("reductions down columns, split into parts of a thread each on the GPU") {
  // A column is a thread on the GPU (its loads are contiguous along the
  // parfor), so split_reductions sizes those parts by threads: parts =
  // min(2^18 / columns, rows / 32), the column the fast index of the flat
  // loop. R=63 and R=64 C=131073 stay whole, R=64 splits in 2, R=1001 C=257
  // in 31 (a thread per column combines them), R=4099 C=300 in 128 (a block
  // per column combines them), R=64 C=131072 in 2 at the columns' limit. The
  // CPU splits none of these (its parts are sized by blocks).
  checkSource(R"(
kernel colsum(X: in f32[R][C], s: out f32[C]) {
  parfor c in 0..C {
    s[c] = redomap(+, 0.0, r in 0..R) X[r][c];
  }
}
kernel colmax(X: in f32[R][C], hi: out f32[C]) {
  parfor c in 1..C + 1 {
    let column = c - 1;
    hi[column] = redomap(max, -inf, r in 0..R) X[r][column];
  }
}
kernel colmin_count(X: in f32[R][C], lo: out f32[C], n: out i64[C]) {
  parfor c in 0..C {
    lo[c] = redomap(min, inf, r in 0..R) X[r][c];
    n[c] = redomap(+, 0, r in 0..R) X[r][c] > 0.5 ? 1 : 0;
  }
}
kernel mv_transposed(A: in f32[M][N], x: in f32[M], y: out f32[N]) {
  parfor j in 0..N {
    y[j] = redomap(+, 0.0, i in 0..M) A[i][j] * x[i];
  }
}
)",
              {"R=0 C=0 M=0 N=0", "R=0 C=5 M=0 N=5", "R=70 C=0 M=70 N=0", "R=1 C=1 M=1 N=1",
               "R=63 C=100 M=63 N=100", "R=64 C=7 M=64 N=7", "R=1001 C=257 M=1001 N=257",
               "R=4099 C=300 M=4099 N=300", "R=64 C=131072", "R=64 C=131073"});
}

TEST_CASE("a loop-invariant remainder inside the guarded tail of a per-thread loop") {
  // The inner redomap's x[k % N] runs under the per-thread guard of the
  // outer loops' tails on the CPU; LLVM 19's vectorizer computed the
  // remainder for the first vector lane only and crashed on the others'
  // garbage address (CpuThreadNest.cpp, ConditionalDivision).
  checkSource(R"(
kernel tail_remainder(A: in f32[M][N], x: in f32[N], r: out f32) {
  r = redomap(min, 0.0, i in 0..M, j in 0..min(N, i + 2)) redomap(max, 0.0, k in 0..N) x[k % N];
}
)",
              {"M=1 N=1", "M=3 N=7", "M=40 N=9", "M=300 N=5"});
}

TEST_CASE("array extents the kernel body never names still address rows") {
  // extract_kernels must pass C to the kernel: w[i][j] is at i * C + j.
  checkSource(R"(
kernel corner(n: i32, v: in f32[R], w: out f32[R][C]) {
  parfor i in 0..n, j in 0..n {
    w[i][j] = v[i] * f32(j + 1);
  }
}
)",
              {"R=7 C=9 n=5", "R=1 C=1 n=1", "R=33 C=40 n=0", "R=40 C=33 n=33"});
}

TEST_CASE("steps in parfor, for and redomap ranges") {
  checkSource(R"(
kernel strided(x: in f32[N], y: out f32[N], s: out f32, t: out f32) {
  parfor i in 1..N by 3 {
    y[i] = x[i] * 2.0;
  }
  var acc: f32;
  for i in 2..N by 3 {
    acc += x[i];
  }
  s = acc;
  t = redomap(+, 0.0, i in 0..N by 3, j in i..N by 7) x[i] * x[j];
}
kernel strided2d(A: in f32[M][N], B: out f32[M][N]) {
  parfor i in 1..M by 2, j in i % 3..N by 3 {
    B[i][j] = A[i][j] + 1.0;
  }
}
)",
              {"N=0 M=0", "N=1 M=1", "N=2 M=3", "N=7 M=5", "N=33 M=31", "N=257 M=257"});
}

TEST_CASE("index arithmetic running backwards and around") {
  checkSource(R"(
kernel rotate_back(x: in f32[N], y: out f32[N]) {
  parfor i in 0..N {
    y[N - 1 - i] = x[i] - x[(N - 1 - i + N - 1) % N];
  }
}
kernel suffix(x: in f32[N], y: out f32[N]) {
  var acc: f32;
  for k in 0..N {
    acc += x[N - 1 - k];
    y[N - 1 - k] = acc;
  }
}
kernel flip2d(A: in f32[M][N], B: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    B[M - 1 - i][N - 1 - j] = A[i][j] - A[M - 1 - i][j];
  }
}
)",
              {"N=0 M=0", "N=1 M=1", "N=7 M=3", "N=257 M=9", "N=5 M=257"});
}

TEST_CASE("a parfor inside a sequential for inside a parfor") {
  checkSource(R"(
kernel accumulate(A: in f32[M][N], B: out f32[M][N], steps: i32) {
  parfor i in 0..M {
    for t in 0..steps {
      parfor j in 0..N {
        B[i][j] = B[i][j] + A[i][j] * f32(t + 1);
      }
    }
  }
}
)",
              {"M=0 N=4 steps=2", "M=3 N=0 steps=2", "M=1 N=1 steps=0", "M=1 N=1 steps=3",
               "M=7 N=33 steps=2", "M=257 N=5 steps=3", "M=3 N=257 steps=2"});
}

TEST_CASE("a kernel calling kernels") {
  checkSource(R"(
kernel scale(x: in f32[N], y: out f32[N], a: f32) {
  parfor i in 0..N { y[i] = a * x[i]; }
}
kernel add(x: in f32[N], y: inout f32[N]) {
  parfor i in 0..N { y[i] += x[i]; }
}
kernel scale_add(x: in f32[N], y: out f32[N], tmp: out f32[N], r: out f32) {
  scale(x, tmp, 3.0);
  add(tmp, y);
  add(x, y);
  r = redomap(+, 0.0, i in 0..N) y[i];
}
)",
              {"N=0 a=2", "N=1 a=2", "N=7 a=-1", "N=257 a=0.5"});
}

TEST_CASE("local arrays are private to a parfor iteration") {
  checkSource(R"(
kernel reversed_prefix_sums(A: in f32[M][N], B: out f32[M][N]) {
  parfor i in 0..M {
    var row: f32[N];
    for j in 0..N { row[j] = A[i][N - 1 - j]; }
    for j in 1..N { row[j] += row[j - 1]; }
    parfor j in 0..N { B[i][j] = row[j]; }
  }
}
)",
              {"M=0 N=3", "M=3 N=0", "M=1 N=1", "M=7 N=33", "M=257 N=9", "M=2 N=257"});
}

TEST_CASE("private arrays sized at run time: a slice per GPU thread, zeroed at each declaration") {
  // The GPU pipeline moves them to global memory (globalize_private_arrays);
  // an array declared inside a sequential loop starts at zero every time,
  // and a 2-D nest's threads each have their own slice.
  checkSource(R"(
kernel argmin_rows(D: in f32[N][K], best: out i32[N]) {
  parfor i in 0..N {
    var d: f32[K];
    for c in 0..K { d[c] = D[i][c]; }
    var b: i64 = 0;
    for c in 1..K { if d[c] < d[b] { b = c; } }
    best[i] = i32(b);
  }
}
kernel row_histograms(D: in f32[N][K], bins: i32, H: out i32[N][B]) {
  parfor i in 0..N {
    for pass in 0..2 {
      var h: i32[bins][2];
      for c in 0..K {
        let bin = min(i32(abs(D[i][c]) * f32(bins)), bins - 1);
        h[bin][pass] += 1;
        combine(+) h[bin][1 - pass] = 2;
      }
      for b in 0..min(i64(bins), B) { H[i][b] += h[b][pass] * 10 + h[b][1 - pass]; }
    }
  }
}
kernel host_sized(D: in f32[N][K], y: out f32[N]) {
  var w: i64 = 1;
  for step in 0..3 {
    parfor i in 0..N {
      var e: f32[w];
      for c in 0..w { e[c] = D[i][c % K] + f32(step); }
      y[i] += e[w - 1];
    }
    w = w * 2 + K;
  }
}
kernel pairs(D: in f32[N][K], S: out f32[N][N]) {
  parfor i in 0..N, j in 0..N {
    var diff: f32[K];
    for c in 0..K { diff[c] = D[i][c] - D[j][c]; }
    S[i][j] = redomap(+, 0.0, c in 0..K) diff[c] * diff[c];
  }
}
)",
              {"N=0 K=3 bins=4 B=4", "N=1 K=1 bins=1 B=1", "N=7 K=33 bins=5 B=4",
               "N=37 K=9 bins=16 B=16", "N=3 K=0 bins=2 B=3", "N=300 K=2 bins=3 B=3"});
}

TEST_CASE("user assoc fn reductions on integers and floats") {
  checkSource(R"(
assoc fn larger(a: i32, b: i32) -> i32 { return a > b ? a : b; }
assoc fn times(a: i64, b: i64) -> i64 { return a * b; }
assoc fn larger_magnitude(a: f64, b: f64) -> f64 { return max(abs(a), abs(b)); }
assoc fn sum32(a: f32, b: f32) -> f32 { return a + b; }
kernel reductions(x: in i32[N], y: in f64[N], z: in f32[N], a: out i32, p: out i64, f: out f64,
                  g: out f32, n: out i32) {
  a = redomap(larger, -2147483648, i in 0..N) x[i] - 7;
  p = redomap(times, 1, i in 0..N by 7) i64(x[i] % 3 + 1);
  f = redomap(larger_magnitude, 0.0, i in 0..N, j in i..N by 5) y[i] * y[j];
  g = redomap(sum32, 0.0, i in 0..N) z[i];
  n = redomap(+, 0, i in 0..N, j in 0..i) (x[i] > x[j] ? 1 : 0);
}
)",
              {"N=0", "N=1", "N=7", "N=33", "N=257"});
}

TEST_CASE("Rodinia's lud, whose reads the race check proves disjoint by sweeping k") {
  checkSource(R"(
kernel lud(a: inout f32[N][N]) {
  parfor d in 0..N { a[d][d] = a[d][d] + 2.0 * f32(N); }
  for i in 0..N {
    parfor j in i..N { a[i][j] = a[i][j] - redomap(+, 0.0, k in 0..i) a[i][k] * a[k][j]; }
    parfor j in i + 1..N {
      var s: f32 = 0.0;
      for k in 0..i { s += a[j][k] * a[k][i]; }
      a[j][i] = (a[j][i] - s) / a[i][i];
    }
  }
}
kernel perimeter(A: inout f64[N][N], kb: i64, ke: i64) {
  parfor j in ke..N {
    for i in kb..ke {
      A[i][j] -= redomap(+, 0.0, k in kb..i) A[i][k] * A[k][j];
    }
  }
}
kernel perimeter_by_rows(A: inout f32[N][N], kb: i64, ke: i64) {
  for i in kb..ke {
    parfor j in ke..N {
      A[i][j] -= redomap(+, 0.0, k in kb..i) A[i][k] * A[k][j];
    }
  }
}
)",
              {"N=1 kb=0 ke=1", "N=2 kb=0 ke=1", "N=17 kb=3 ke=9", "N=40 kb=16 ke=32"});
}

TEST_CASE("user operators that do not commute combine in the range's order") {
  // first and last are associative, not commutative: a reduction that walks
  // its range interleaved over threads (as builtin operators do) picks
  // another match. Matches are sparse, so most threads' chunks hold none.
  // On the GPU a thread's chunk is walked in pieces of 8 points, whose values
  // the block computes together (a chunk of several pieces from 32769
  // points on, with the one SM these tests assume).
  checkSource(R"(
assoc fn first(a: i64, b: i64) -> i64 { return a != 0 ? a : b; }
assoc fn last(a: i64, b: i64) -> i64 { return b != 0 ? b : a; }
kernel whole(x: in i32[N], f: out i64, l: out i64) {
  f = redomap(first, 0, i in 0..N) (x[i] % 23 == 5 ? i + 1 : 0);
  l = redomap(last, 0, i in 0..N) (x[i] % 23 == 5 ? i + 1 : 0);
}
kernel rows(x: in i32[R][C], f: out i64[R], l: out i64[R]) {
  parfor r in 0..R {
    f[r] = redomap(first, 0, c in 0..C) (x[r][c] % 23 == 5 ? c + 1 : 0);
    l[r] = redomap(last, 0, c in 0..C) (x[r][c] % 31 == 7 ? c + 1 : 0);
  }
}
)",
              {"N=1 R=1 C=1", "N=33 R=2 C=1000", "N=1000 R=3 C=70001", "N=2049 R=1 C=1",
               "N=32769 R=1 C=1", "N=100003 R=70 C=257", "N=1000001 R=1 C=1"});
}

TEST_CASE("a scan with an operator that does not commute keeps the order: a forward fill") {
  // Each position takes the last match at or before it; the GPU scans tiles
  // of 4 consecutive points a lane, whose lanes' totals combine in order.
  checkSource(R"(
assoc fn last(a: i64, b: i64) -> i64 { return b != 0 ? b : a; }
kernel forward_fill(x: in i32[N], y: out i64[N]) {
  scan(last, 0, i in 0..N) y[i] = x[i] % 23 == 5 ? i + 1 : 0;
}
)",
              {"N=1", "N=7", "N=2047", "N=2049", "N=100003", "N=600001"});
}

TEST_CASE("combine: every operator into arrays and scalar results, from 1-D and 2-D parfors") {
  checkSource(R"(
assoc fn larger_magnitude(a: f32, b: f32) -> f32 { return max(abs(a), abs(b)); }
kernel by_key(x: in f32[N], keys: in i32[N], S: out f32[B], P: out f64[B], lo: inout f32[B],
              hi: inout i64[B], u: inout f32[B], seen: out bool[B], all: inout bool[B],
              count: out i32, total: out f64) {
  parfor i in 0..N {
    let b = i64(keys[i]) % B;
    combine(+) S[b] = x[i];
    combine(*) P[b] = 1.0 + f64(x[i]) * 0.01;
    combine(min) lo[b] = x[i];
    combine(max) hi[(i * 7) % B] = i64(x[i] * 1000.0);
    combine(larger_magnitude) u[b] = x[i];
    combine(||) seen[b] = x[i] > 0.5;
    combine(&&) all[b] = x[i] > -0.9;
    combine(+) count = 1;
    combine(+) total = f64(x[i]);
  }
}
)",
              {"N=0 B=3", "N=1 B=1", "N=7 B=3", "N=257 B=5", "N=10007 B=7", "N=1000 B=1"});
}

TEST_CASE("combine from register-tiled nests, rows given a block, loops and private arrays") {
  // The tiled nest's copies past the edge must not combine; a row's updates
  // outside its inner parfor are made once, by one thread; a private array
  // takes plain updates.
  checkSource(R"(
kernel tiled(A: in f32[M][K], Bm: in f32[K][N], C: out f32[M][N], parity: out i32[2],
             total: out f32) {
  parfor i in 0..M, j in 0..N {
    let v = redomap(+, 0.0, k in 0..K) A[i][k] * Bm[k][j];
    C[i][j] = v;
    combine(+) parity[(i + j) % 2] = 1;
    combine(+) total = v;
  }
}
kernel rows(X: in f32[R][W], sums: out f32[R], buckets: out i32[8], diagonal: out f32[8]) {
  parfor r in 0..R {
    sums[r] = redomap(+, 0.0, c in 0..W) X[r][c];
    combine(+) buckets[r % 8] = 1;
    parfor c in 0..W { combine(+) diagonal[(r + c) % 8] = X[r][c]; }
  }
}
kernel loops(X: in f32[R][W], counts: out i32[R], sign_counts: out i32[2]) {
  parfor r in 0..R {
    var mine: i32[2];
    for c in 0..W {
      combine(+) mine[X[r][c] > 0.0 ? 1 : 0] = 1;
      combine(+) sign_counts[X[r][c] > 0.0 ? 1 : 0] = 1;
    }
    counts[r] = mine[1] - mine[0];
  }
}
)",
              {"M=0 N=3 K=2 R=0 W=3", "M=1 N=1 K=1 R=1 W=1", "M=7 N=33 K=5 R=7 W=33",
               "M=65 N=17 K=9 R=3 W=257", "M=33 N=65 K=3 R=100 W=64"});
}

TEST_CASE("min and max order signed zeros and skip NaN the same way on every engine") {
  // max(-0, +0) is +0 and min(-0, +0) is -0 in either order, so reductions,
  // combines and scans may combine zeros in any order; 1 / result shows the
  // sign. The rows hold mostly one zero with a few of the other; a NaN is
  // skipped (H[2]: max of -0 and NaNs is -0).
  const char *source = R"(
kernel elementwise(x: in f32[N], a: out f32[N], b: out f32[N]) {
  parfor i in 0..N {
    let z = x[i] * 0.0;
    let w = x[(i + 1) % N] * 0.0;
    a[i] = 1.0 / max(z, w);
    b[i] = 1.0 / min(w, z);
  }
}
kernel reduced(x: in f64[R][C], hi: out f64[R], lo: out f64[R], whole: out f64, H: out f64[3],
               Y: out f64[R][C]) {
  parfor r in 0..R {
    hi[r] = 1.0 / redomap(max, -inf, c in 0..C) (x[r][c] > 0.999 ? 0.0 : -0.0);
    lo[r] = 1.0 / redomap(min, inf, c in 0..C) (x[r][c] < -0.999 ? -0.0 : 0.0);
    scan(max, -inf, c in 0..C) Y[r][c] = x[r][c] > 0.995 ? 0.0 : -0.0;
  }
  whole = 1.0 / redomap(max, -inf, r in 0..R, c in 0..C) (x[r][c] > 0.99999 ? 0.0 : -0.0);
  H[0] = -0.0;
  H[1] = 0.0;
  H[2] = -0.0;
  parfor r in 0..R, c in 0..C {
    combine(max) H[0] = x[r][c] > 0.9999 ? 0.0 : -0.0;
    combine(min) H[1] = x[r][c] < -0.9999 ? -0.0 : 0.0;
    combine(max) H[2] = x[r][c] > 0.0 ? 0.0 / 0.0 : -0.0;
  }
  parfor r in 0..R, c in 0..C {
    Y[r][c] = 1.0 / Y[r][c];
  }
  parfor i in 0..3 {
    H[i] = 1.0 / H[i];
  }
}
)";
  checkSource(source, {"N=1 R=1 C=1", "N=257 R=37 C=1000", "R=3 C=70001"});

  // The engines agree on the rule, not merely with one another.
  ArgumentRequest request;
  request.seed = 7;
  request.values = {{"R", "37"}, {"C", "1000"}};
  auto result = runAgreeing(source, "reduced", request);
  const HostArray &x = result["x"];
  const double inf = std::numeric_limits<double>::infinity();
  auto infinity = [&](bool positive) { return positive ? inf : -inf; };
  bool anyAbove = false, anyBelow = false;
  int rowsWithPositiveZero = 0;
  for (int64_t r = 0; r < 37; ++r) {
    bool above = false, below = false;
    for (int64_t c = 0; c < 1000; ++c) {
      double value = x.getAsDouble(r * 1000 + c);
      above |= value > 0.999;
      below |= value < -0.999;
      anyAbove |= value > 0.9999;
      anyBelow |= value < -0.9999;
    }
    rowsWithPositiveZero += above;
    CHECK(result["hi"].getAsDouble(r) == infinity(above));
    CHECK(result["lo"].getAsDouble(r) == infinity(!below));
  }
  CHECK(rowsWithPositiveZero > 0); // both signs occur, or the test proves nothing
  CHECK(rowsWithPositiveZero < 37);
  CHECK(anyAbove);
  CHECK(anyBelow);
  CHECK(result["H"].getAsDouble(0) == inf);
  CHECK(result["H"].getAsDouble(1) == -inf);
  CHECK(result["H"].getAsDouble(2) == -inf);
}

TEST_CASE("min and max reductions in lanes, at sizes around the lane count") {
  // interleave_reductions folds a CPU thread's row walk into 64 f32 (32 f64)
  // lanes from 128 (64) elements on, the rest after the last whole vector;
  // two reductions of a row fused into one walk get lanes each (a user's
  // commuting operator and a sum too); a column walk and a 3 x 3 window do
  // not.
  checkSource(R"(
kernel extremes(X: in f32[R][C], lo: i32, hi: out f32[R], low: out f32[R]) {
  parfor r in 0..R {
    hi[r] = redomap(max, -inf, c in lo..i32(C)) X[r][c];
    low[r] = redomap(min, inf, c in lo..i32(C)) X[r][c] * 2.0;
  }
}
kernel wide(X: in f64[R][C], hi: out f64[R], low: out f64[R]) {
  parfor r in 0..R {
    hi[r] = redomap(max, -inf, c in 0..C) abs(X[r][c]);
    low[r] = redomap(min, inf, c in 0..C) X[r][c] - 1.0;
  }
}
kernel columns(X: in f32[R][C], top: out f32[C]) {
  parfor c in 0..C { top[c] = redomap(max, -inf, r in 0..R) X[r][c]; }
}
assoc fn absmax(a: f32, b: f32) -> f32 { return max(abs(a), abs(b)); }
assoc fn magnitude(a: i64, b: i64) -> i64 { return max(abs(a), abs(b)); }
kernel norms(X: in f32[R][C], lo: i32, n: out f32[R], s: out f32[R], m: out i64[R]) {
  parfor r in 0..R {
    n[r] = redomap(absmax, 0.0, c in lo..i32(C)) X[r][c];
    s[r] = redomap(+, 0.0, c in lo..i32(C)) X[r][c];
    m[r] = redomap(magnitude, 0, c in 0..C) i64(X[r][c] * 1000.0);
  }
}
kernel pool(X: in f64[H][W], P: out f64[H - 2][W - 2]) {
  parfor i in 0..H - 2, j in 0..W - 2 {
    P[i][j] = redomap(max, -inf, a in 0..3, b in 0..3) X[i + a][j + b];
  }
}
fn sq(x: f32) -> f32 { return x * x; }
kernel energy(X: in f32[R][C], e: out f32[R], top: out f32[R]) {
  parfor r in 0..R {
    let b = redomap(+, 0.0, c in 0..C) sq(X[r][c]);
    let m = redomap(max, -inf, c in 0..C) X[r][c];
    e[r] = b; top[r] = m;
  }
}
)",
              {"R=3 C=1 lo=0 H=3 W=3", "R=2 C=63 lo=0 H=4 W=70", "R=5 C=64 lo=0", "R=2 C=127 lo=1",
               "R=4 C=128 lo=0", "R=3 C=129 lo=0", "R=7 C=1000 lo=7", "R=2 C=70001 lo=3"});
}

TEST_CASE("CPU locality: column walks interchanged, parfors hoisted out of serial loops") {
  // interchange_column_walks moves a triangular nest's inner parallel loop
  // inside the serial loops that walk columns along it (statements before,
  // between and after them get loops of their own; a row walk stays; a
  // serial loop whose bounds move with j stays); hoist_independent_parfors
  // moves a parfor out of the host's serial loop when each point owns its
  // slices (lets before the nest, private arrays, 2-D nests), and not when
  // a point reads another's slice of the last step. A serial loop of the
  // host code whose iterations write their own columns and read columns
  // before its first is interchanged too (lu's), one reading its neighbour's
  // column is not.
  checkSource(R"(
kernel cov(d: in f32[N][M], e: in f32[M][N], c: out f32[M][M], n: f32) {
  parfor i in 0..M, j in i..M {
    c[i][j] = 0.0;
    for k in 0..N {
      c[i][j] += d[k][i] * d[k][j];
    }
    c[i][j] /= n;
    for k2 in 0..N {
      c[i][j] += d[k2][j] * 0.5;
    }
    for r in 0..N {
      c[i][j] -= e[j][r] * 0.25;
    }
    for q in 0..min(j, N) {
      c[i][j] += d[q][j];
    }
  }
}
kernel lower(d: in f32[N][M], c: out f32[M][M]) {
  parfor i in 0..M, j in 0..i + 1 {
    for k in 1..N {
      c[i][j] += d[k - 1][j] * d[k][i];
    }
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
kernel sym(alpha: f32, C: inout f32[M][N], A: in f32[M][M], B: in f32[M][N]) {
  for i in 0..M {
    let a = alpha * A[i][i];
    parfor j in 0..N {
      var t: f32 = 0.0;
      for k in 0..i {
        C[k][j] += alpha * B[i][j] * A[i][k];
        t += B[k][j] * A[i][k];
      }
      C[i][j] = C[i][j] + a * B[i][j] + alpha * t;
    }
  }
}
kernel planes(steps: i32, X: inout f32[M][N]) {
  for t in 0..steps {
    parfor i in 0..M, j in 0..N {
      X[i][j] = X[i][j] * 0.5 + f32(t);
    }
  }
}
kernel rows(A: inout f32[N][M]) {
  for i in 0..N {
    for j in i..M {
      A[i][j] *= 0.5;
      for k in 0..i {
        A[i][j] -= A[i][k] * A[k][j];
      }
      A[i][j] += 1.0;
    }
  }
}
kernel chained(X: inout f32[N][M]) {
  for j in 1..M {
    for k in 0..N - 1 {
      X[k][j] += X[k + 1][j - 1] * 0.5;
    }
  }
}
kernel shifted(Y: inout f32[T][N]) {
  for t in 1..T {
    parfor i in 0..N {
      Y[t][i] = Y[t - 1][(i + 1) % N] * 0.5 + Y[t][i];
    }
  }
}
)",
              {"N=0 M=0 n=3 alpha=1.5 steps=2 T=2", "N=1 M=1 n=3 alpha=1.5 steps=1 T=1",
               "N=0 M=5 n=3 alpha=1.5 steps=0 T=0", "N=7 M=1 n=3 alpha=0.5 steps=3 T=5",
               "N=7 M=33 n=3 alpha=1.5 steps=2 T=3", "N=65 M=17 n=2 alpha=1.5 steps=3 T=9",
               "N=33 M=257 n=5 alpha=0.75 steps=1 T=4"});
}

TEST_CASE("triangular loops of the host code pushing updates instead of pulling them") {
  // interchange_column_walks turns `for j { for k in [s, j) { X[j] op= X[k]
  // ...A[k][j] }; finish X[j] }` into `for k { finish X[k]; for j in
  // [k + 1, e) { ... } }`: lu's left-looking half, a column-oriented solve
  // with a vector, a triangle starting past 0, no statements after the
  // triangle; and shapes it leaves (the next element read, which a push
  // would read before its own statement finishes it; a triangle reaching
  // the written row, not proven apart from it; a statement before the
  // triangle).
  checkSource(R"(
kernel lu(A: inout f32[N][N]) {
  for i in 0..N {
    for j in 0..i {
      for k in 0..j {
        A[i][j] -= A[i][k] * A[k][j];
      }
      A[i][j] /= A[j][j] + 4.0;
    }
    for j in i..N {
      for k in 0..i {
        A[i][j] -= A[i][k] * A[k][j];
      }
    }
  }
}
kernel solve(L: in f32[N][N], x: inout f32[N]) {
  for j in 0..N {
    for k in 0..j {
      x[j] -= L[k][j] * x[k];
    }
    x[j] = x[j] / (L[j][j] + 3.0);
  }
}
kernel offset(X: inout f32[M][N], B: in f32[N][N]) {
  for i in 0..M {
    for j in 2..N {
      for k in 2..j {
        X[i][j] += X[i][k] * B[k][j] * 0.125;
      }
    }
  }
}
kernel next(A: inout f32[N][N]) {
  for i in 0..N {
    for j in 0..i {
      for k in 0..j {
        A[i][j] -= A[i][k + 1] * A[k][j] * 0.25;
      }
      A[i][j] *= 0.5;
    }
  }
}
kernel reaching(A: inout f32[N][N]) {
  for i in 0..N {
    for j in 0..i + 1 {
      for k in 0..j {
        A[i][j] -= A[i][k] * A[k][j] * 0.25;
      }
      A[i][j] *= 0.5;
    }
  }
}
kernel before(A: inout f32[N][N]) {
  for i in 0..N {
    for j in 0..i {
      A[i][j] += 1.0;
      for k in 0..j {
        A[i][j] -= A[i][k] * A[k][j] * 0.25;
      }
    }
  }
}
)",
              {"N=0 M=0", "N=1 M=1", "N=2 M=3", "N=3 M=1", "N=17 M=5", "N=64 M=2", "N=129 M=3"});
}

TEST_CASE("reductions over a triangle of the host code pushed into partial results") {
  // interchange_column_walks: a redomap over k in [s, j) inside a serial
  // loop over j, whose terms read the row's finished element k and a
  // column, becomes partial results each k combines into along a row:
  // Nussinov's max, a float sum over a triangle starting past 0, a user
  // operator that does not commute (its terms combined in increasing k);
  // and shapes it leaves (terms reading element j, which the row's own
  // statement set first; a term reading a value each j binds).
  checkSource(R"(
assoc fn lastNonzero(a: f32, b: f32) -> f32 { return b != 0.0 ? b : a; }
kernel dp(seq: in i32[N], T: out i32[N][N]) {
  for row in 0..N {
    let i = N - 1 - row;
    for j in i + 1..N {
      let pairs: i32 = (seq[i] % 4 + seq[j] % 4 == 3) && i < j - 1 ? 1 : 0;
      var best = max(T[i][j - 1], T[i + 1][j]);
      best = max(best, T[i + 1][j - 1] + pairs);
      best = max(best, redomap(max, 0, k in i + 1..j) T[i][k] + T[k + 1][j]);
      T[i][j] = best;
    }
  }
}
kernel sums(X: inout f32[M][N], B: in f32[N][N]) {
  for i in 0..M {
    for j in 1..N {
      X[i][j] = X[i][j] * 0.5 + redomap(+, 0.0, k in 1..j) X[i][k] * B[k][j];
    }
  }
}
kernel ordered(X: inout f32[M][N], B: in f32[N][N]) {
  for i in 0..M {
    for j in 0..N {
      X[i][j] = redomap(lastNonzero, 0.0, k in 0..j) X[i][k] * B[k][j] + 0.25;
    }
  }
}
kernel own(X: inout f32[M][N], B: in f32[N][N]) {
  for i in 0..M {
    for j in 0..N {
      X[i][j] = 2.0;
      X[i][j] = redomap(+, 0.0, k in 0..j) X[i][j] * B[k][j] + X[i][k];
    }
  }
}
kernel bound(X: inout f32[M][N], B: in f32[N][N]) {
  for i in 0..M {
    for j in 0..N {
      let w = B[j][j];
      X[i][j] += redomap(+, 0.0, k in 0..j) X[i][k] * B[k][j] * w;
    }
  }
}
)",
              {"N=0 M=0", "N=1 M=1", "N=2 M=3", "N=3 M=1", "N=17 M=5", "N=64 M=2", "N=129 M=3"});
}

TEST_CASE(
    "iterations of a serial loop run together: the results of every engine, and the same bits") {
  // jam_serial_chains: forward substitutions, LU's halves, chains over a
  // fixed range, a moving start; declined: a backward substitution, a chain
  // reading what the row before updates. Sizes below, at and past a group
  // of 4 and of 16 copies, and between.
  const char *const file = "tests/programs/passes/chains.loop";
  checkFile(file, {"N=0 M=0", "N=1 M=1", "N=2 M=3", "N=3 M=1", "N=4 M=4", "N=5 M=7", "N=16 M=2",
                   "N=17 M=33", "N=35 M=5", "N=100 M=19"});
  // Each element's steps run in their order, so the results do not change
  // by a bit.
  auto loaded = test::loadFile(test::sourcePath(file));
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  Interpreter interpreter;
  engine::CpuEngine jammed;
  engine::CpuEngine apart(passes::PipelineTarget::Cpu, {.skipped = {"jam_serial_chains"}});
  for (const auto &kernel : loaded->program->modules.front()->kernels)
    for (const char *n : {"3", "37", "100"}) {
      CAPTURE(kernel->name);
      CAPTURE(n);
      ArgumentRequest request;
      request.seed = 7;
      request.values["N"] = n;
      if (kernelHasName(*kernel, "M"))
        request.values["M"] = "21";
      // Without the jam, the interpreter checks the other passes' forms.
      Engine *withJam[] = {&jammed};
      Engine *withoutJam[] = {&apart, &interpreter};
      test::DifferentialOutcome a =
          test::runDifferential(*loaded->program, *kernel, request, withJam);
      test::DifferentialOutcome b =
          test::runDifferential(*loaded->program, *kernel, request, withoutJam);
      REQUIRE_MESSAGE(!a.skipped, a.report);
      REQUIRE_MESSAGE(!b.skipped, b.report);
      CHECK_MESSAGE(b.agree, b.report);
      for (size_t p = 0; p < a.reference.params.size(); ++p)
        CHECK(a.reference.params[p].bytes == b.reference.params[p].bytes);
    }
}

TEST_CASE("an element a serial loop updates kept in a register across it") {
  // promote_invariant_elements: trmm's column update (the other row walked
  // below it), a triangular solve (the finished elements before it), the
  // element read in a branch and a nested loop and after the loop, loops
  // of no iteration; and loops it leaves: another access that may be the
  // element (a row range reaching it), an element indexed by the loop.
  checkSource(R"(
kernel trmm(alpha: f32, A: in f32[M][M], B: inout f32[M][N]) {
  for i in 0..M {
    parfor j in 0..N {
      for k in i + 1..M {
        B[i][j] += A[k][i] * B[k][j];
      }
      B[i][j] = alpha * B[i][j];
    }
  }
}
kernel solve(L: in f32[N][N], x: inout f32[N]) {
  for i in 0..N {
    for j in 0..i {
      x[i] -= L[i][j] * x[j];
    }
    x[i] = x[i] / (L[i][i] + 3.0);
  }
}
kernel nested(X: inout f32[M][N], y: out f32[M]) {
  parfor i in 0..M {
    for k in 0..N {
      if (X[i][k] > 0.0) {
        y[i] = y[i] * 0.5 + X[i][k];
      } else {
        for r in 0..k {
          y[i] += X[i][r] * 0.125;
        }
        y[i] -= 1.0;
      }
    }
    y[i] += 2.0;
  }
}
kernel reaching(L: in f32[N][N], x: inout f32[N]) {
  for i in 0..N {
    for j in 0..i + 1 {
      x[i] -= L[i][j] * x[j] * 0.25;
    }
  }
}
kernel indexed(x: inout f32[N]) {
  for i in 0..N {
    x[i] = x[i] * 0.5 + 1.0;
  }
}
)",
              {"N=0 M=0 alpha=1.5", "N=1 M=1 alpha=1.5", "N=2 M=3 alpha=0.5", "N=17 M=5 alpha=1.5",
               "N=64 M=33 alpha=0.75", "N=129 M=2 alpha=1.5"});
}

TEST_CASE("combine outside any parfor is a plain update") {
  checkSource(R"(
kernel host_level(x: in f32[N], best: inout f32, H: out i32[4]) {
  combine(max) best = x[0];
  combine(+) H[1] = 5;
  parfor i in 0..N { combine(+) H[i % 4] = 1; }
  combine(*) H[1] = 2;
}
)",
              {"N=1", "N=7", "N=257"});
}

TEST_CASE("scans: user operators in order, steps, bodies with reductions, rows and time loops") {
  // first_set is associative but not commutative: a scan that combined the
  // chunks out of order would give another result.
  checkSource(
      R"(
assoc fn first_set(a: i64, b: i64) -> i64 { return a != 0 ? a : b; }
fn weight(v: f32, k: i64) -> f32 { return v * f32(k % 3 + 1); }
kernel scans(x: in f32[N], keys: in i32[N], first: out i64[N], every_third: out i64[N],
             smooth: out f32[N], rows: out i32[R][N], lowest: inout f32[2][N]) {
  scan(first_set, 0, i in 0..N) first[i] = keys[i] > 12 ? i + 1 : 0;
  scan(+, 0, i in 1..N by 3) every_third[i] = i64(keys[i]) - 7;
  scan(+, 0.0, i in 0..N) smooth[N - 1 - i] =
      weight(redomap(+, 0.0, k in 0..3) x[(i + k) % N], i) * 0.125;
  parfor r in 0..R {
    scan(+, 0, c in 0..N - r % 3) rows[r][c] = keys[(c + r) % N];
  }
  for t in 0..2 {
    scan(min, inf, i in 0..N) lowest[t][i] = x[i] + f32(t);
  }
}
)",
      {"N=0 R=2", "N=1 R=1", "N=7 R=3", "N=64 R=2", "N=65 R=5", "N=4097 R=3", "N=70000 R=1",
       "N=1100000 R=1"}); // two tiles per chunk on the GPU
}

TEST_CASE("scans and inner parfors written at offsets read from arrays") {
  // From a bug hunt: an offset read from an array, directly or through a let,
  // was taken to vary with the scan or parfor variable added to it. Integer
  // inputs are 0..15, so `off` and X index rows of C + 16 and 16 elements.
  checkSource(R"(
kernel at_offsets(off: in i64[R], x: in i32[R][C], by_load: out i32[R][C + 16],
                  by_let: out i32[R][C + 16], by_var: out i64[R][C + 16],
                  inner: out i32[R][C + 16], inner_var: out i32[R][C + 16]) {
  parfor r in 0..R {
    scan(+, 0, i in 0..C) by_load[r][off[r] + i] = x[r][i];
    let q = off[r];
    scan(+, 0, i in 0..C) by_let[r][q + i] = x[r][i] * 3 - 20;
    parfor c in 0..C { inner[r][q + c] = x[r][c] + 1; }
    var p = off[r] % 7;
    scan(+, 0, i in 0..C) by_var[r][p + i] = i64(x[r][i]) - 7;
    for t in 0..2 {
      p += 4;
      parfor c in 0..C { inner_var[r][p + c] += x[r][c] * i32(t + 1); }
    }
  }
}
kernel shifted(off: in i64[2], x: in i32[C], z: out i32[C + 16]) {
  parfor i in 0..C { z[off[0] + i] = x[i] + 1; }
}
kernel staged(x: in i32[R][C], starts: out i64[R], y: out i32[R][C + 16],
              sums: out i64[R][C + 16]) {
  var base: i64[R];
  parfor r in 0..R { base[r] = (r * 5 + 3) % 16; }
  parfor r in 0..R {
    starts[r] = (r * 7) % 16;
    parfor c in 0..C { y[r][starts[r] + c] = x[r][c]; }
    scan(+, 0, i in 0..C) sums[r][base[r] + i] = i64(x[r][i]);
  }
}
)",
              {"R=0 C=3", "R=3 C=0", "R=1 C=1", "R=7 C=33", "R=33 C=7", "R=5 C=257"});
}

TEST_CASE("a row's histogram combined into by an inner parfor, read after it") {
  // From a bug hunt: iteration r combines into row r of H only, so its read
  // of the row after the inner parfor races with no other iteration.
  checkSource(R"(
kernel row_hist(X: in i32[R][C], H: out i32[R][16], nonempty: out i64[R],
                top: out i32[R][16]) {
  parfor r in 0..R {
    parfor c in 0..C { combine(+) H[r][X[r][c]] = 1; }
    nonempty[r] = redomap(+, 0, b in 0..16) H[r][b] > 0 ? i64(1) : i64(0);
    parfor c in 0..C { combine(max) top[r][X[r][c]] = i32(c) + H[r][X[r][c]]; }
    parfor c in 0..C { combine(+) top[r][(X[r][c] + 1) % 16] = 1; }
  }
}
)",
              {"R=0 C=3", "R=3 C=0", "R=1 C=1", "R=7 C=33", "R=33 C=7", "R=5 C=257"});
}

TEST_CASE("a let of a var keeps the value it had at the let") {
  // From a bug hunt: `let q = v` was taken as v itself even after v
  // changed. These keep v unchanged between the let and the parfor, so
  // rows q + 1 and v differ there.
  checkSource(R"(
kernel changed_after(A: inout f32[5][N]) {
  var v = 0;
  for t in 0..3 {
    let q = v;
    parfor i in 0..N - 1 { A[q + 1][i] = A[v][i + 1] * 0.5 + f32(t); }
    v += 1;
  }
}
kernel changed_before(A: inout f32[5][N]) {
  var v = 0;
  for t in 0..3 {
    v += 1;
    let q = v;
    parfor i in 0..N - 1 { A[q + 1][i] = A[v][i + 1] - f32(q); }
  }
}
)",
              {"N=0", "N=1", "N=2", "N=33"});
}

TEST_CASE("writes at mixed-radix indices: channel groups and im2col rows") {
  // From ML code the race check refused: a parfor over group g's channels
  // g*K..(g + 1)*K, and im2col's rows (c*K + u)*K + v.
  checkSource(R"(
kernel group_norm(shape: in f32[G][K], X: in f32[G * K][P], Y: out f32[G * K][P]) {
  parfor g in 0..G {
    let m = redomap(+, 0.0, c in g * K..(g + 1) * K, p in 0..P) X[c][p];
    parfor c in g * K..(g + 1) * K, p in 0..P { Y[c][p] = X[c][p] - m; }
  }
}
kernel reversed_groups(shape: in f32[G][K], X: in f32[G * K][P], Y: out f32[G * K][P]) {
  parfor g in 0..G {
    parfor c in (G - 1 - g) * K..(G - g) * K, p in 0..P { Y[c][p] = X[c][p] * f32(g + 1); }
  }
}
kernel quads(shape: in f32[G], X: in f32[G * 4], Y: out f32[G * 4]) {
  parfor g in 0..G { parfor c in 4 * g..4 * g + 4 { Y[c] = X[c] + f32(g); } }
}
kernel flat(A: in f32[G][K], B: out f32[G * K]) {
  parfor i in 0..G, j in 0..K { B[i * K + j] = A[i][j] * f32(i + 1); }
}
)",
              {"G=0 K=3 P=4", "G=3 K=0 P=2", "G=3 K=1 P=1", "G=5 K=7 P=33", "G=2 K=16 P=5"});
  checkSource(R"(
kernel im2col(taps: in f32[K][K], img: in f32[C][H][W], cols: out f32[C * K * K][H * W]) {
  parfor c in 0..C, u in 0..K, v in 0..K, p in 0..H * W {
    cols[(c * K + u) * K + v][p] = img[c][(p / W + u) % H][(p % W + v) % W] * taps[u][v];
  }
}
)",
              {"C=0 K=3 H=4 W=4", "C=2 K=0 H=3 W=3", "C=2 K=1 H=1 W=1", "C=3 K=3 H=5 W=7",
               "C=2 K=5 H=9 W=6"});
}

TEST_CASE("i32 arithmetic wraps and division truncates toward zero") {
  const char *source = R"(
kernel integers(x: in i32[N], s: out i32, w: out i32[N], q: out i32[N], r: out i32[N],
                d: out i64[N]) {
  s = redomap(+, 0, i in 0..N) x[i] * 268435456;
  parfor i in 0..N {
    w[i] = (x[i] - 8) * 2147483647;
    q[i] = (x[i] - 8) / 3;
    r[i] = (x[i] - 8) % 3;
    d[i] = (i64(x[i]) - 8) / -3 + (i64(x[i]) - 8) % -3 * 100;
  }
}
)";
  ArgumentRequest request;
  request.arrays["x"] = i32Vector({0, 1, 7, 8, 9, 15});
  auto result = runAgreeing(source, "integers", request);
  CHECK(integers(result["s"]) == std::vector<int64_t>{-2147483648});
  CHECK(integers(result["w"]) ==
        std::vector<int64_t>{8, -2147483641, -2147483647, 0, 2147483647, 2147483641});
  CHECK(integers(result["q"]) == std::vector<int64_t>{-2, -2, 0, 0, 0, 2});
  CHECK(integers(result["r"]) == std::vector<int64_t>{-2, -1, -1, 0, 1, 1});
  CHECK(integers(result["d"]) == std::vector<int64_t>{-198, -98, -100, 0, 100, 98});
}

TEST_CASE("integer literals of float type round once from the value written") {
  // From a bug hunt: 9223372036854775808 became INT64_MIN before its
  // negation (the sign flipped), and f32 literals rounded through f64.
  const char *source = R"(
kernel literals(x: in i32[N], f: out f32[N], d: out f64[N], g: out f32[N]) {
  parfor i in 0..N {
    f[i] = f32(x[i]) * -9223372036854775808;
    d[i] = f64(x[i]) * -9223372036854775808;
    g[i] = f32(x[i]) * 4611686293305294849;
  }
}
)";
  ArgumentRequest request;
  request.arrays["x"] = i32Vector({1});
  auto result = runAgreeing(source, "literals", request);
  CHECK(result["f"].getAsDouble(0) == -9223372036854775808.0);
  CHECK(result["d"].getAsDouble(0) == -9223372036854775808.0);
  CHECK(result["g"].getAsDouble(0) == static_cast<double>(4611686293305294849.0f));
  CHECK(result["g"].getAsDouble(0) !=
        static_cast<double>(static_cast<float>(4611686293305294849.0)));
}

TEST_CASE("guards against the ends of i32 become thread ranges without wrapping") {
  // From a bug hunt: the CPU turns `if i <= m` into a clipped range of
  // threads; its bound m + 1 was computed in i64 and narrowed to i32, so
  // m = INT32_MAX ran no thread and m = INT32_MIN - 1 all of them.
  checkSource(R"(
kernel gt(n: i32, m: i32, o: out i32[S]) { parfor i in 0..n { if i > m { o[i] = 1; } } }
kernel le(n: i32, m: i32, o: out i32[S]) { parfor i in 0..n { if i <= m { o[i] = 1; } } }
kernel lt(n: i32, m: i32, o: out i32[S]) { parfor i in 1..n { if i < m { o[i] = 1; } } }
kernel between(n: i32, lo: i32, hi: i32, o: out i32[S]) {
  parfor i in 1..n - 1 { if i >= lo && i <= hi { o[i] = i; } }
}
)",
              {"S=300 n=300 m=2147483647 lo=-2147483648 hi=2147483647",
               "S=300 n=300 m=-2147483648 lo=-2147483648 hi=-2147483648",
               "S=300 n=300 m=7 lo=5 hi=9"});
}

TEST_CASE("reductions over empty ranges give the neutral element") {
  const char *source = R"(
assoc fn larger(a: f32, b: f32) -> f32 { return a > b ? a : b; }
kernel extremes(x: in f32[N], lo: out f32, hi: out f32, user: out f32, ilo: out i32,
                ihi: out i64, all: out bool, any: out bool, product: out f64) {
  lo = redomap(min, inf, i in 0..N) x[i];
  hi = redomap(max, -inf, i in 0..N) x[i];
  user = redomap(larger, -inf, i in 0..N) x[i];
  ilo = redomap(min, 2147483647, i in 0..N) i32(x[i] * 100.0);
  ihi = redomap(max, -9223372036854775807, i in 0..N) i64(x[i] * 100.0);
  all = redomap(&&, true, i in 0..N) x[i] > 0.0;
  any = redomap(||, false, i in 0..N) x[i] > 0.0;
  product = redomap(*, 1.0, i in 0..N) f64(x[i]);
}
kernel per_element(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N], lo: out f32[M]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
  }
  parfor i in 0..M {
    lo[i] = redomap(min, inf, k in i..K) A[i][k];
  }
}
)";
  ArgumentRequest empty;
  empty.values["N"] = "0";
  auto extremes = runAgreeing(source, "extremes", empty);
  double infinity = std::numeric_limits<double>::infinity();
  CHECK(extremes["lo"].getAsDouble(0) == infinity);
  CHECK(extremes["hi"].getAsDouble(0) == -infinity);
  CHECK(extremes["user"].getAsDouble(0) == -infinity);
  CHECK(extremes["ilo"].getAsInt(0) == 2147483647);
  CHECK(extremes["ihi"].getAsInt(0) == -9223372036854775807);
  CHECK(extremes["all"].getAsInt(0) == 1);
  CHECK(extremes["any"].getAsInt(0) == 0);
  CHECK(extremes["product"].getAsDouble(0) == 1.0);

  ArgumentRequest noDepth;
  noDepth.values = {{"M", "5"}, {"N", "3"}, {"K", "0"}};
  noDepth.seed = 7;
  auto perElement = runAgreeing(source, "per_element", noDepth);
  CHECK(perElement["C"].elementCount() == 15);
  for (size_t i = 0; i < perElement["C"].elementCount(); ++i)
    CHECK(perElement["C"].getAsDouble(i) == 0.0);
  for (size_t i = 0; i < 5; ++i)
    CHECK(perElement["lo"].getAsDouble(i) == infinity);

  // Rows i >= K reduce over an empty range, the others do not.
  checkSource(source, {"N=0 M=0 K=0", "N=1 M=1 K=1", "N=7 M=9 K=4", "N=257 M=257 K=3"});
}

// Regression: the lowering computed the trip count of a stepped i32 range in
// i32, where `hi - lo + step - 1` overflowed and the CPU JIT ran no iteration.
TEST_CASE("stepped i32 ranges spanning more than half of i32") {
  const char *source = R"(
kernel wide_steps(x: in i32[N], n: i32, c: out i32, e: out i32, y: out i32[N]) {
  var count: i32;
  for i in n - 2147483647..2147483647 by 1073741824 {
    count += 1;
  }
  c = count;
  e = redomap(+, 0, i in -2147483647..n by 1073741824, j in i..i + 5 by 2) i % 7 + x[0];
  parfor i in 0..N {
    y[i] = redomap(+, 0, k in x[i] * 0 - 2147483647..2147483647 by 536870912) k / 536870912 + x[i];
  }
}
)";
  ArgumentRequest request;
  request.arrays["x"] = i32Vector({1, 2, 3});
  request.values["n"] = "0";
  auto result = runAgreeing(source, "wide_steps", request);
  CHECK(result["c"].getAsInt(0) == 4);
  // i = -2147483647 and -1073741823 (i % 7 = -1 and 0), three j each.
  CHECK(result["e"].getAsInt(0) == 3);
  // k / 536870912 over the eight k is -3 -2 -1 0 0 1 2 3.
  CHECK(integers(result["y"]) == std::vector<int64_t>{8, 16, 24});
  checkSource(source, {"N=1 n=0", "N=7 n=5", "N=257 n=-3"});
}

// Regression (found by a bug hunt): a product returned by a function or cast
// to its own type fused with a sum around the call in the compiled engines
// (code generation saw the inlined product as the sum's operand), while the
// interpreter rounds it on its own, as docs/language.md says. The flags are
// integers, compared exactly; the written-out product fuses on every engine.
TEST_CASE("a product returned by a function or cast to its type is rounded on every engine") {
  const char *source = R"(
fn sq(a: f32) -> f32 { return a * a; }
fn product(a: f64, b: f64) -> f64 { return a * b; }
kernel rounded_products(x: in f32[N], y: in f64[N], called: out i32[N], cast: out i32[N],
                        called64: out i32[N], written: out i32[N]) {
  parfor i in 0..N {
    let p = x[i] * x[i];
    called[i] = sq(x[i]) - p == 0.0 ? 1 : 0;
    cast[i] = f32(x[i] * x[i]) - p == 0.0 ? 1 : 0;
    let q = y[i] * y[i];
    called64[i] = product(y[i], y[i]) - q == 0.0 ? 1 : 0;
    written[i] = x[i] * x[i] - p == 0.0 ? 1 : 0;
  }
}
)";
  ArgumentRequest request;
  request.values["N"] = "64";
  request.seed = 5;
  auto result = runAgreeing(source, "rounded_products", request);
  for (const char *rounded : {"called", "cast", "called64"}) {
    CAPTURE(rounded);
    CHECK(integers(result[rounded]) == std::vector<int64_t>(64, 1));
  }
  // x * x - round(x * x) is the rounding error, zero only where x * x is exact.
  CHECK(std::ranges::count(integers(result["written"]), 0) > 32);
}

// Regression (found by a bug hunt): an i64 range's span `hi - lo` wrapped
// past INT64_MAX, and the compiled engines ran no iteration of
// `-6e18..6e18 by 5e18` (three: -6e18, -1e18, 4e18).
TEST_CASE("stepped i64 ranges whose span does not fit in i64") {
  const char *source = R"(
kernel wide_i64_steps(lo: i64, hi: i64, s: i64, x: in i64[N], count: out i64, last: out i64,
                      y: out i64[N]) {
  for i in lo..hi by s {
    count += 1;
    last = i;
  }
  parfor j in 0..N {
    y[j] = redomap(+, 0, i in lo + x[j]..hi by s) 1;
  }
}
)";
  struct Case {
    const char *lo, *hi, *step;
    int64_t count, last;
  };
  const Case cases[] = {
      {"-6000000000000000000", "6000000000000000000", "5000000000000000000", 3,
       4000000000000000000},
      {"-9223372036854775808", "9223372036854775807", "9223372036854775807", 3,
       9223372036854775806},
      {"-5", "9223372036854775807", "4611686018427387904", 3, 9223372036854775803},
      {"-7", "-3", "3", 2, -4},
      {"-7", "-4", "3", 1, -7},
      {"7", "-3", "2", 0, 0},
      {"5", "5", "1", 0, 0},
  };
  for (const Case &each : cases) {
    CAPTURE(each.lo);
    CAPTURE(each.hi);
    CAPTURE(each.step);
    ArgumentRequest request;
    request.arrays["x"] = HostArray(ScalarType::I64, {2});
    request.values = {{"lo", each.lo}, {"hi", each.hi}, {"s", each.step}};
    auto result = runAgreeing(source, "wide_i64_steps", request);
    CHECK(result["count"].getAsInt(0) == each.count);
    CHECK(result["last"].getAsInt(0) == each.last);
    CHECK(integers(result["y"]) == std::vector<int64_t>{each.count, each.count});
  }
}

// Regression (found by a bug hunt): an unstepped range's count was
// `hi - lo` in the bounds' type, which wraps for bounds further apart than
// the type holds: `100..-2147483600` (empty) ran 2147483596 iterations
// compiled (a segfault when they indexed an array), `2147483647..-2147483648`
// one, and an i64 one hung.
TEST_CASE("empty ranges far below their start run no iteration, in every statement") {
  const char *source = R"(
kernel far_i32(lo: i32, hi: i32, x: in f32[N], count: out i32, H: out i32[1], y: out i32[N],
               s: out f32, z: out f32[N]) {
  for i in lo..hi { count += 1; }
  parfor i in lo..hi { combine(+) H[0] = 1; }
  parfor j in 0..N { y[j] = redomap(+, 0, i in lo..hi) 1; }
  s = redomap(+, 0.0, i in lo..hi) x[i64(i) - i64(lo)];
  scan(+, 0.0, i in lo..hi) z[i64(i) - i64(lo)] = x[i64(i) - i64(lo)];
}
kernel far_i64(lo: i64, hi: i64, count: out i64, H: out i64[1], y: out i64[N]) {
  for i in lo..hi { count += 1; }
  parfor i in lo..hi { combine(+) H[0] = 1; }
  parfor j in 0..N { y[j] = redomap(+, 0, i in lo..hi) 1; }
}
)";
  struct Case {
    const char *kernel, *lo, *hi;
    int64_t count;
  };
  const Case cases[] = {
      {"far_i32", "100", "-2147483600", 0},
      {"far_i32", "2147483647", "-2147483648", 0},
      {"far_i32", "-2147483648", "-2147483647", 1},
      {"far_i32", "-3", "2", 5},
      {"far_i64", "100", "-9223372036854775800", 0},
      {"far_i64", "9223372036854775807", "-9223372036854775808", 0},
      {"far_i64", "9223372036854775800", "9223372036854775807", 7},
  };
  for (const Case &each : cases) {
    CAPTURE(each.kernel);
    CAPTURE(each.lo);
    CAPTURE(each.hi);
    ArgumentRequest request;
    request.values = {{"lo", each.lo}, {"hi", each.hi}, {"N", "5"}};
    auto result = runAgreeing(source, each.kernel, request);
    CHECK(result["count"].getAsInt(0) == each.count);
    CHECK(result["H"].getAsInt(0) == each.count);
    CHECK(integers(result["y"]) == std::vector<int64_t>(5, each.count));
  }
}

// Regression (found by a bug hunt): the CPU turned `i < i64(t)` into the
// thread range below i64(t) - i.block * 32, which wrapped for t = -inf
// (INT64_MIN): the second block's iterations ran the guarded store.
TEST_CASE("guards against converted infinities narrow the thread ranges without wrapping") {
  const char *source = R"(
kernel extremes(t: f32, u: f32, y: out i64[N], z: out i64[N]) {
  parfor i in 0..N {
    if i < i64(t) { y[i] = i + 1; }
    if i >= i64(u) && i < N { z[i] = i + 2; }
  }
}
)";
  ArgumentRequest request;
  request.values = {{"N", "37"}, {"t", "-inf"}, {"u", "inf"}};
  auto result = runAgreeing(source, "extremes", request);
  CHECK(integers(result["y"]) == std::vector<int64_t>(37, 0));
  CHECK(integers(result["z"]) == std::vector<int64_t>(37, 0));
  checkSource(source, {"N=300 t=-inf u=inf", "N=300 t=1e30 u=-1e30", "N=65 t=40 u=7"});
}

// Regression (found by a bug hunt): `(span + step - 1) / step` overflowed
// for an i64 step near INT64_MAX, and the compiled loops ran no iteration.
TEST_CASE("i64 steps near INT64_MAX run one iteration per range") {
  const char *source = R"(
kernel huge_steps(x: in i64[N], s: i64, r: out i64, t: out i64) {
  for i in 0..10 by s { r += 1; }
  t = redomap(+, 0, i in 3..N by s) x[i];
}
)";
  ArgumentRequest request;
  HostArray x(ScalarType::I64, {5});
  std::ranges::copy(std::vector<int64_t>{0, 10, 20, 30, 40}, x.data<int64_t>());
  request.arrays["x"] = x;
  request.values["s"] = "9223372036854775807";
  auto result = runAgreeing(source, "huge_steps", request);
  CHECK(result["r"].getAsInt(0) == 1);
  CHECK(result["t"].getAsInt(0) == 30);
  checkSource(source, {"N=0 s=9223372036854775806", "N=4 s=3", "N=37 s=9223372036854775807"});
}

TEST_CASE("short loops around reductions, unrolled so their copies share one walk") {
  checkSource(R"(
fn dist(a: f32, b: f32, c: f32) -> f32 { return sqrt(a * a + b * b + c * c + 0.5); }
kernel components(X: in f32[N][3], W: in f32[N], F: out f32[N][3], S: out f32[N],
                  T: out f32[N][3], Y: out f32[N][3]) {
  parfor i in 0..N, c in 0..3 {
    F[i][c] = redomap(+, 0.0, j in 0..N)
        W[j] * (X[j][c] - X[i][c]) / dist(X[j][0] - X[i][0], X[j][1] - X[i][1], X[j][2] - X[i][2]);
  }
  parfor i in 0..N {
    var s: f32 = 0.0;
    for c in 1..4 {
      var t: f32[2];
      t[0] = redomap(max, -inf, j in 0..N) X[j][c - 1] * W[i];
      t[1] = redomap(min, inf, j in 0..N) X[j][c - 1] - W[i];
      T[i][c - 1] = t[0] - t[1];
      s += redomap(+, 0.0, j in i..N) X[j][c - 1];
    }
    S[i] = s;
  }
  parfor i in 0..N, c in 0..3 {
    Y[i][c] = redomap(+, 0.0, j in 0..c + 1) X[i][j] * 2.0;
  }
}
)",
              {"N=0", "N=1", "N=7", "N=33", "N=100", "N=301"});
}

TEST_CASE("float to integer conversions saturate, NaN gives 0, on every engine") {
  const char *source = R"(
kernel conversions(x: in f32[N], a: out i32[8], b: out i64[4]) {
  let big = 3.0e9;
  let nan = sqrt(-1.0);
  a[0] = i32(big);
  a[1] = i32(-big);
  a[2] = i32(nan);
  a[3] = i32(inf);
  a[4] = i32(-inf);
  a[5] = i32(-2.75);
  a[6] = i32(2147483647.0);
  parfor i in 0..N { a[7 + i] = i32(x[i] * 0.0 + 1.0e10); }
  b[0] = i64(inf);
  b[1] = i64(-inf);
  b[2] = i64(nan);
  b[3] = i64(1.0e30);
}
)";
  ArgumentRequest one;
  one.values["N"] = "1";
  auto converted = runAgreeing(source, "conversions", one);
  const int64_t expected32[] = {2147483647,  -2147483648, 0,          2147483647,
                                -2147483648, -2,          2147483647, 2147483647};
  for (size_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(converted["a"].getAsInt(i) == expected32[i]);
  }
  const int64_t largest = std::numeric_limits<int64_t>::max();
  const int64_t expected64[] = {largest, std::numeric_limits<int64_t>::min(), 0, largest};
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(converted["b"].getAsInt(i) == expected64[i]);
  }
}

// The CPU spells a saturating conversion out (a clamp, an fptosi, two
// selects) so that a loop of them vectorizes: the values at each edge of
// the integers' ranges, in a parfor long enough for vector lanes.
TEST_CASE("float to integer conversions saturate in vectorized loops, at every edge") {
  const char *source = R"(
kernel convert(f: in f32[N], d: in f64[N], fa: out i32[N], fb: out i64[N], da: out i32[N],
               db: out i64[N]) {
  parfor i in 0..N {
    fa[i] = i32(f[i]);
    fb[i] = i64(f[i]);
    da[i] = i32(d[i]);
    db[i] = i64(d[i]);
  }
}
)";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const double edges[] = {nan,
                          inf,
                          -inf,
                          0.0,
                          -0.0,
                          2.75,
                          -2.75,
                          2147483520.0, // the f32 below 2^31
                          2147483647.0,
                          2147483647.5,
                          2147483648.0,
                          -2147483648.0,
                          -2147483648.9,
                          -2147483904.0,
                          9223371487098961920.0, // the f32 below 2^63
                          9223372036854774784.0, // the f64 below 2^63
                          9223372036854775808.0,
                          -9223372036854775808.0,
                          -9223373136366403584.0,
                          1.0e30,
                          -1.0e30,
                          3.0e9,
                          -3.0e9};
  const int64_t count = std::size(edges) * 3; // the edges at three lanes each
  HostArray f(ScalarType::F32, {count}), d(ScalarType::F64, {count});
  for (int64_t i = 0; i < count; ++i) {
    f.data<float>()[i] = static_cast<float>(edges[i % std::size(edges)]);
    d.data<double>()[i] = edges[(i * 7) % std::size(edges)];
  }
  ArgumentRequest request;
  request.values["N"] = std::to_string(count);
  request.arrays = {{"f", f}, {"d", d}};
  auto converted = runAgreeing(source, "convert", request);
  auto saturated = [](double value, int bits) -> int64_t {
    double top = std::ldexp(1.0, bits - 1);
    if (std::isnan(value))
      return 0;
    if (value >= top)
      return bits == 32 ? INT32_MAX : INT64_MAX;
    if (value <= -top)
      return bits == 32 ? INT32_MIN : INT64_MIN;
    return static_cast<int64_t>(value);
  };
  for (int64_t i = 0; i < count; ++i) {
    CAPTURE(i);
    double single = f.data<float>()[i], wide = d.data<double>()[i];
    CHECK(converted["fa"].getAsInt(i) == saturated(single, 32));
    CHECK(converted["fb"].getAsInt(i) == saturated(single, 64));
    CHECK(converted["da"].getAsInt(i) == saturated(wide, 32));
    CHECK(converted["db"].getAsInt(i) == saturated(wide, 64));
  }
}

TEST_CASE("a called kernel's out parameter starts zeroed at every call") {
  const char *source = R"(
kernel interior(x: in f32[N], y: out f32[N]) {
  parfor i in 1..N - 1 { y[i] = x[i]; }
}
kernel caller(x: in f32[N], y: out f32[N], z: out f32[N]) {
  parfor i in 0..N { y[i] = 5.0; z[i] = 5.0; }
  interior(x, y);
  interior(x, z);
  parfor i in 0..N { z[i] += 1.0; }
}
)";
  ArgumentRequest seven;
  seven.values["N"] = "7";
  auto called = runAgreeing(source, "caller", seven);
  for (const char *name : {"y", "z"}) {
    CAPTURE(name);
    double edge = std::string(name) == "z" ? 1.0 : 0.0;
    CHECK(called[name].getAsDouble(0) == edge);
    CHECK(called[name].getAsDouble(6) == edge);
  }
  checkSource(source, {"N=0", "N=1", "N=2", "N=33"});
}

// The CPU engine runs a launch measured to be short in the calling thread and
// the others on its thread pool (runtime/src/CpuThreadPool.cpp), so the same
// kernel's launches change hands as their sizes change; and it runs a
// whole-array reduction of few points as a loop in the host code, of more as
// a tree of two kernels.

TEST_CASE("host loops of 0, 1 and many steps around parfors of 0, 1 and 10^6 points") {
  checkSource(R"(
kernel steps(steps: i32, x: inout f32[N], y: inout f32[N]) {
  for t in 0..steps {
    parfor i in 0..N {
      y[i] = x[i] * 0.5 + f32(t);
    }
    parfor i in 0..N {
      x[i] = y[i] - x[i];
    }
  }
}
)",
              {"N=0 steps=0", "N=0 steps=3", "N=1 steps=0", "N=1 steps=1", "N=1 steps=300",
               "N=257 steps=300", "N=1000000 steps=0", "N=1000000 steps=1", "N=1000000 steps=3"});
}

TEST_CASE("launches of one kernel alternately short and long, and a short one feeding a long one") {
  // Each launch reads what the one before wrote, whichever thread ran it.
  checkSource(R"(
kernel alternating(steps: i32, x: inout f32[N], y: inout f32[N]) {
  for t in 0..steps {
    let n = t % 3 == 2 ? N : min(N, 64);
    parfor i in 0..n {
      y[i] = x[(i + 1) % n] * 0.75 + f32(t);
    }
    parfor i in 0..n {
      x[i] = y[i];
    }
  }
}
kernel phases(x: in f32[N], y: out f32[N]) {
  var head: f32[64];
  parfor i in 0..min(N, 64) {
    head[i] = x[i] * 2.0;
  }
  parfor i in 0..N {
    y[i] = x[i] + head[i % 64];
  }
}
)",
              {"N=1 steps=4", "N=65 steps=9", "N=100000 steps=30", "N=1000000 steps=6"});
}

TEST_CASE("reductions inside serial loops, over ranges below and above a loop's size") {
  // The ranges grow past the size under which the CPU folds them in the
  // host code (float minima and maxima in vector lanes there, NaN among
  // the values); nussinov-like maxima of column sums inside two loops; a
  // user's operator that does not commute, in order either way; a 2-D range
  // (rectangular: its points counted) and a triangular one (always a tree).
  checkSource(R"(
assoc fn last_positive(a: f32, b: f32) -> f32 { return b > 0.0 ? b : a; }

kernel growing(steps: i32, x: in f32[N], y: in f32[N], s: out f32[steps], m: out f32[steps],
               p: out f32[steps], r: out f32[steps], lo: out f64[steps]) {
  for t in 0..steps {
    let n = N / i64(steps) * i64(t + 1);
    s[t] = redomap(+, 0.0, i in 0..n) x[i] * y[i];
    m[t] = redomap(max, -inf, i in 0..n) x[i] - y[i];
    p[t] = redomap(last_positive, 0.0, i in 0..n) x[i];
    r[t] = redomap(max, -inf, i in 0..n) sqrt(x[i]) - 2.0; // NaN for x < 0: skipped
    lo[t] = redomap(min, inf, i in 0..n) f64(y[i]) * 0.5;
  }
}
kernel cells(A: in i32[R][C], best: out i32[R][R]) {
  for i in 0..R {
    for j in i..R {
      best[i][j] = redomap(max, 0, k in i..j + 1) A[k][j % C] + A[i][k % C];
    }
  }
}
kernel areas(steps: i32, A: in f32[R][C], s: out f64[steps], u: out f64[steps]) {
  for t in 0..steps {
    s[t] = redomap(+, 0.0, i in 0..R / i64(t + 1), j in 0..C) f64(A[i][j]);
    u[t] = redomap(+, 0.0, i in 0..R / i64(t + 1), j in i % C..C) f64(A[i][j]);
  }
}
)",
              {"N=0 steps=1 R=0 C=1", "N=1 steps=1 R=1 C=1", "N=1000 steps=3 R=40 C=7",
               "N=100000 steps=8 R=300 C=200", "N=300000 steps=3 R=1000 C=257"});
}

TEST_CASE("whole-array reductions past the host loop's size: blocks of contiguous ranges") {
  // On the CPU each block of a tree walks a contiguous range: around whole
  // blocks (16384 points), ranges split unevenly, and siblings fused.
  checkSource(R"(
kernel stats(x: in f32[N], s: out f32, lo: out f32, hi: out f32, n: out i64) {
  s = redomap(+, 0.0, i in 0..N) x[i];
  lo = redomap(min, inf, i in 0..N) x[i];
  hi = redomap(max, -inf, i in 0..N) x[i] * x[i];
  n = redomap(+, 0, i in 1..N by 3) x[i] > 0.25 ? 1 : 0;
}
)",
              {"N=16383", "N=16384", "N=16385", "N=40000", "N=262143", "N=1000001"});
  // The CPU's grid counts every point of a rectangular range, at most a
  // block per row: few rows of many points each, a block a row.
  checkSource(R"(
kernel rows(A: in f32[R][C], s: out f64, hi: out f32) {
  s = redomap(+, 0.0, i in 0..R, j in 0..C) f64(A[i][j]);
  hi = redomap(max, -inf, i in 0..R, j in 0..C) A[i][j] * 2.0;
}
)",
              {"R=1 C=70001", "R=3 C=100003", "R=7 C=16385", "R=2000 C=9"});
}

TEST_CASE("fp_contract: off rounds every product before it is added on every engine") {
  // (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24 as one fused multiply-add and 0
  // with the product rounded first. Each output element is one way of
  // writing the sum: a * b + c, c + a * b, through a fn, compounded, and in a
  // redomap of one term (whose products are rounded either way).
  const char *source = R"(
fn mad(x: f32, y: f32, z: f32) -> f32 { return x * y + z; }
kernel sums(a: f32, b: f32, c: f32, s: out f32[N]) {
  parfor i in 0..N {
    var x = c;
    x += a * b;
    let r = c + redomap(+, 0.0, k in 0..1) a * b;
    s[i] = i == 0 ? a * b + c : i == 1 ? c + a * b : i == 2 ? mad(a, b, c) : i == 3 ? x : r;
  }
}
@fp_contract(off)
kernel sums_off(a: f32, b: f32, c: f32, s: out f32[N]) { sums(a, b, c, s); }
@fp_contract(off)
kernel rounded(a: f32, b: f32, c: f32, s: out f32[N]) {
  parfor i in 0..N {
    var x = c;
    x += a * b;
    s[i] = i == 0 ? a * b + c : i == 1 ? c + a * b : i == 2 ? mad(a, b, c) : i == 3 ? x : c - a * b;
  }
}
@fp_contract(on)
kernel fused(a: f32, b: f32, c: f32, s: out f32[N], t: out f32[N]) {
  parfor i in 0..N { s[i] = a * b + c; }
  rounded(a, b, c, t);
}
)";
  auto loaded = test::loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const float tiny = std::ldexp(1.0f, -24);
  std::map<std::string, std::string> values = {
      {"a", "1.000244140625"}, {"b", "1.000244140625"}, {"c", "-1.00048828125"}, {"N", "5"}};
  Interpreter interpreter;
  engine::CpuEngine cpu;
  engine::CpuEngine gpuKernels(test::gpuPipelineOnOneSM());
  // Each kernel's outputs, element by element (a called kernel rounds as it
  // says; a redomap's product is rounded on its own, so its element is
  // c + 1 + 2^-11 = 0 either way; `rounded`'s last is c - (1 + 2^-11)).
  const float rounded = -2.0009765625f;
  std::map<std::string, std::vector<std::vector<float>>> expected = {
      {"sums", {{tiny, tiny, tiny, tiny, 0}}},
      {"sums_off", {{tiny, tiny, tiny, tiny, 0}}}, // sums says nothing: fused
      {"rounded", {{0, 0, 0, 0, rounded}}},
      {"fused", {{tiny, tiny, tiny, tiny, tiny}, {0, 0, 0, 0, rounded}}},
  };
  auto check = [&](const std::map<std::string, std::vector<std::vector<float>>> &outputs) {
    for (const auto &[name, arrays] : outputs) {
      CAPTURE(name);
      const KernelDecl &kernel = *loaded->program->findKernel(name);
      for (Engine *engine : {static_cast<Engine *>(&interpreter), static_cast<Engine *>(&cpu),
                             static_cast<Engine *>(&gpuKernels)}) {
        CAPTURE(engine->name());
        ArgumentRequest request;
        request.values = values;
        Expected<KernelArgs> args = bindKernelArguments(kernel, request);
        REQUIRE_MESSAGE(args, (args ? "" : args.error().message));
        auto ran = engine->run(*loaded->program, kernel, *args);
        REQUIRE_MESSAGE(ran, (ran ? "" : ran.error().message));
        for (size_t output = 0; output < arrays.size(); ++output)
          for (size_t i = 0; i < arrays[output].size(); ++i) {
            CAPTURE(output);
            CAPTURE(i);
            CHECK(args->params[3 + output].data<float>()[i] == arrays[output][i]);
          }
      }
    }
  };
  check(expected);

  // --fp-contract off: the kernels that do not say round every product;
  // those that do keep their own choice.
  driver::PassChoiceOptions options;
  options.fpContract = "off";
  options.applyFpContract(*loaded->program);
  check({{"sums", {{0, 0, 0, 0, 0}}},
         {"fused", {{tiny, tiny, tiny, tiny, tiny}, {0, 0, 0, 0, rounded}}}});
  options.fpContract = "";
  options.applyFpContract(*loaded->program);
  check({{"sums", {{tiny, tiny, tiny, tiny, 0}}}});
}
