// fuse_with_lag: which pairs of parfor nests the CPU pipeline fuses a few
// rows apart, the code it makes (chunks of rows swept, their edge rows
// after), and that the fused kernels compute what the interpreter computes
// at sizes whose rows fill no chunk, leave a chunk short, or fill many.
#include "TestSupport.h"
#include "support/Differential.h"

#include "engine/Bindings.h"
#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace loopc;
using loopc::test::contains;

namespace {

const char *const kStencils = R"(
kernel jacobi(steps: i32, A: inout f32[N][M], B: inout f32[N][M]) {
  for t in 0..steps {
    parfor i in 1..N - 1, j in 1..M - 1 {
      B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][j + 1] + A[i - 1][j] + A[i + 1][j]);
    }
    parfor i in 1..N - 1, j in 1..M - 1 {
      A[i][j] = B[i][j];
    }
  }
}
kernel both_ways(steps: i32, A: inout f32[N][M], B: inout f32[N][M]) {
  for t in 0..steps {
    parfor i in 1..N - 1, j in 1..M - 1 {
      B[i][j] = 0.25 * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
    }
    parfor i in 1..N - 1, j in 1..M - 1 {
      A[i][j] = 0.5 * (B[i][j] + 0.5 * (B[i - 1][j] + B[i + 1][j]));
    }
  }
}
kernel wide(steps: i32, A: inout f64[N][M], B: inout f64[N][M], w: in f64[M]) {
  for t in 0..steps {
    parfor i in 2..N - 2, j in 0..M {
      let c = j < M - 1 ? A[i][j + 1] : A[i][0];
      B[i][j] = w[j] * (A[i - 2][j] + A[i + 2][j]) + c;
    }
    parfor i in 2..N - 2, j in 0..M {
      A[i][j] = B[i][j] - 0.5 * A[i][j];
    }
  }
}
kernel along_rows(steps: i32, A: inout f32[N][M], B: inout f32[N][M]) {
  for t in 0..steps {
    parfor i in 0..N, j in 1..M - 1 {
      B[i][j] = 0.5 * A[i][j] + 0.25 * (A[i][j - 1] + A[i][j + 1]);
    }
    parfor i in 0..N, j in 1..M - 1 {
      A[i][j] = B[i][j];
    }
  }
}
kernel planes(steps: i32, u: inout f32[D][H][W]) {
  var v: f32[D][H][W];
  for t in 0..steps {
    parfor k in 1..D - 1, i in 0..H, j in 0..W {
      v[k][i][j] = u[k][i][j] + 0.1 * (u[k - 1][i][j] + u[k + 1][i][j] - 2.0 * u[k][i][j]);
    }
    parfor k in 1..D - 1, i in 0..H, j in 0..W {
      u[k][i][j] = v[k][i][j];
    }
  }
}
)";

const char *const kDeclined = R"(
kernel line(steps: i32, A: inout f32[N], B: inout f32[N]) {
  for t in 0..steps {
    parfor i in 1..N - 1 { B[i] = A[i - 1] + A[i + 1]; }
    parfor i in 1..N - 1 { A[i] = B[i]; }
  }
}
kernel far(A: inout f32[N][M], B: inout f32[N][M]) {
  parfor i in 5..N - 5, j in 0..M { B[i][j] = A[i - 5][j] + A[i + 5][j]; }
  parfor i in 5..N - 5, j in 0..M { A[i][j] = B[i][j]; }
}
kernel gathered(A: inout f32[N][M], B: inout f32[N][M]) {
  parfor i in 0..N, j in 0..M { B[i][j] = A[(i * 7) % N][j]; }
  parfor i in 0..N, j in 0..M { A[i][j] = B[i][j]; }
}
kernel triangle(A: inout f32[N][N], B: inout f32[N][N]) {
  parfor i in 1..N, j in 0..i { B[i][j] = A[i - 1][j] + 1.0; }
  parfor i in 1..N, j in 0..i { A[i][j] = B[i][j]; }
}
kernel diagonal(A: inout f32[N][N], B: inout f32[N][N]) {
  parfor i in 1..N - 1, j in 1..N - 1 { B[i][j] = A[j][i]; }
  parfor i in 1..N - 1, j in 1..N - 1 { A[i][j] = B[i][j]; }
}
)";

std::unique_ptr<test::LoadedProgram> load(const char *source) {
  auto loaded = test::loadText(source);
  INFO(loaded->diagnostics);
  REQUIRE(loaded->program);
  return loaded;
}

const KernelDecl &kernelNamed(const Program &program, const std::string &name) {
  for (const auto &kernel : program.modules.front()->kernels)
    if (kernel->name == name)
      return *kernel;
  FAIL("no kernel " << name);
  throw;
}

// The CPU JIT (and again under bounds checks) against the interpreter.
void checkAgainstInterpreter(const Program &program, const std::string &kernel,
                             const std::vector<std::map<std::string, std::string>> &assignments) {
  Interpreter interpreter;
  engine::CpuEngine cpu;
  engine::CpuEngine checked(passes::PipelineTarget::Cpu, {.boundsChecks = true});
  Engine *engines[] = {&interpreter, &cpu, &checked};
  for (const auto &values : assignments) {
    ArgumentRequest request;
    request.values = values;
    request.seed = 3;
    test::DifferentialOutcome outcome =
        test::runDifferential(program, kernelNamed(program, kernel), request, engines);
    CAPTURE(kernel);
    REQUIRE_MESSAGE(!outcome.skipped, outcome.report);
    CHECK_MESSAGE(outcome.agree, outcome.report);
  }
}

} // namespace

TEST_CASE("a Jacobi step and its copy back run as chunks of rows, the copy a row behind") {
  std::string cpu = test::compiledKernelText(kStencils, "jacobi", passes::PipelineTarget::Cpu);
  // A kernel of one thread per chunk: row r's stencil, then row r - 1's
  // copy once past the chunk's first row.
  CHECK(contains(cpu, "let i.lag.chunk_rows = max((max(N - 1 - 1, 0) + 63) / 64, 16)"));
  CHECK(contains(cpu, "gpu_block.x for i.lag.chunk in [0, i.lag.chunks) {"));
  CHECK(contains(cpu, "gpu_thread.x for i.lag.lane in [0, 1) {"));
  CHECK(contains(cpu, "for i.lag.row in [0, min(i.lag.chunk_rows, max(N - 1 - 1 - i.lag.chunk * "
                      "i.lag.chunk_rows, 0))) {"));
  CHECK(contains(cpu, "if (i.lag.row >= 2) {"));
  CHECK(contains(cpu, "let i = 1 + (i.lag.chunk * i.lag.chunk_rows + (i.lag.row - 1))"));
  // Then every chunk's first and last row, in parallel.
  CHECK(contains(cpu, "let i.lag.edge_row = select(i.lag.edge < 1, i.lag.edge, "
                      "i.lag.count - 2 + i.lag.edge)"));
  // Rows a chunk apart share nothing: the edge rows' kernel keeps one row a
  // thread (tile_registers' CPU rows are for windows).
  CHECK(!contains(cpu, "edge_row.y1"));
  // The GPU's pipeline keeps the two nests.
  std::string gpu = test::compiledKernelText(kStencils, "jacobi", passes::PipelineTarget::Gpu);
  CHECK(!contains(gpu, ".lag."));
  // The lag the farthest row read: 2 for `wide`, 1 for the others.
  CHECK(contains(test::compiledKernelText(kStencils, "wide", passes::PipelineTarget::Cpu),
                 "if (i.lag.row >= 4) {"));
  CHECK(contains(test::compiledKernelText(kStencils, "both_ways", passes::PipelineTarget::Cpu),
                 "if (i.lag.row >= 2) {"));
  // Reads along the row alone: the whole row read before any of it is
  // written, a row behind.
  CHECK(contains(test::compiledKernelText(kStencils, "along_rows", passes::PipelineTarget::Cpu),
                 "if (i.lag.row >= 2) {"));
  CHECK(contains(test::compiledKernelText(kStencils, "planes", passes::PipelineTarget::Cpu),
                 "for k.lag.row in [0, min(k.lag.chunk_rows, "));
}

TEST_CASE("fused a few rows apart, the nests compute what the interpreter computes") {
  auto loaded = load(kStencils);
  // Rows: none to fuse, fewer than 2 lags, one short chunk, chunks of 16
  // with a short last one, and 64 chunks of more than 16.
  for (const char *kernel : {"jacobi", "both_ways", "along_rows"})
    checkAgainstInterpreter(*loaded->program, kernel,
                            {{{"steps", "2"}, {"N", "2"}, {"M", "5"}},
                             {{"steps", "2"}, {"N", "3"}, {"M", "9"}},
                             {{"steps", "3"}, {"N", "13"}, {"M", "7"}},
                             {{"steps", "2"}, {"N", "37"}, {"M", "33"}},
                             {{"steps", "1"}, {"N", "1301"}, {"M", "19"}},
                             {{"steps", "0"}, {"N", "40"}, {"M", "40"}}});
  checkAgainstInterpreter(*loaded->program, "wide",
                          {{{"steps", "2"}, {"N", "4"}, {"M", "3"}},
                           {{"steps", "2"}, {"N", "7"}, {"M", "5"}},
                           {{"steps", "3"}, {"N", "71"}, {"M", "17"}},
                           {{"steps", "2"}, {"N", "2100"}, {"M", "9"}}});
  checkAgainstInterpreter(*loaded->program, "planes",
                          {{{"steps", "2"}, {"D", "3"}, {"H", "4"}, {"W", "5"}},
                           {{"steps", "3"}, {"D", "35"}, {"H", "6"}, {"W", "17"}}});
}

TEST_CASE("nests that are not a few rows apart stay as they were, and compute the same") {
  auto loaded = load(kDeclined);
  for (const char *kernel : {"line", "far", "gathered", "triangle", "diagonal"}) {
    CAPTURE(kernel);
    CHECK(!contains(test::compiledKernelText(kDeclined, kernel, passes::PipelineTarget::Cpu),
                    ".lag."));
  }
  checkAgainstInterpreter(*loaded->program, "line",
                          {{{"steps", "3"}, {"N", "1"}}, {{"steps", "3"}, {"N", "77"}}});
  for (const char *kernel : {"far", "gathered"})
    checkAgainstInterpreter(*loaded->program, kernel,
                            {{{"N", "12"}, {"M", "3"}}, {{"N", "40"}, {"M", "9"}}});
  for (const char *kernel : {"triangle", "diagonal"})
    checkAgainstInterpreter(*loaded->program, kernel, {{{"N", "3"}}, {{"N", "41"}}});
}
