// Whole programs written the way users write them, kept as regression tests:
// tests/programs/<suite>/ holds .loop files and cases.txt, one case a line
// (`file kernel NAME=VALUE...`). Each case runs on the interpreter, the CPU
// pipeline, the GPU pipeline's kernels on the CPU JIT, and those again with
// bounds checks, which must all agree. polybench/ is the PolyBench/C 4.2
// linear-algebra and data-mining suite ported to the language (f32; the
// factorizations build a well-conditioned matrix first); rodinia/ holds
// PolyBench's stencils and medley and Rodinia's hotspot, pathfinder,
// needleman-wunsch, srad, backprop, lud, gaussian, kmeans, nn and
// streamcluster's gain, f32 and f64; passes/ holds programs written to make
// each optimization pass fire, alone and together (fusion, dropped fills,
// split rows, rows on blocks, private histograms, sibling reductions,
// register tiles, shared staging); science/ holds programs from a bug hunt
// in scientific computing (sparse rows, Mandelbrot, Monte Carlo, k-means,
// FFT, bitonic sort, stream compaction, heat, Cholesky, attention, images,
// particles, multigrid) and functions inlined around vector math calls.
// A case marked `gpu-refuses` is a program the GPU pipeline must refuse
// (a private array sized inside its iteration): it runs on the interpreter
// and the CPU pipeline only.
#include "TestSupport.h"
#include "support/Differential.h"

#include "engine/Bindings.h"
#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>

using namespace loopc;

namespace {

struct ProgramCase {
  std::string file, kernel;
  std::map<std::string, std::string> values;
  bool gpuRefuses = false;
  int line = 0;
};

std::vector<ProgramCase> readCases(const std::string &suite) {
  std::ifstream in(test::sourcePath("tests/programs/" + suite + "/cases.txt"));
  REQUIRE_MESSAGE(in, "no cases.txt in tests/programs/" << suite);
  std::vector<ProgramCase> cases;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    std::istringstream words(text);
    ProgramCase programCase;
    programCase.line = line;
    if (!(words >> programCase.file >> programCase.kernel))
      continue;
    for (std::string assignment; words >> assignment;) {
      if (assignment == "gpu-refuses") {
        programCase.gpuRefuses = true;
        continue;
      }
      size_t equals = assignment.find('=');
      REQUIRE_MESSAGE(equals != std::string::npos, "cases.txt:" << line << ": " << assignment);
      programCase.values[assignment.substr(0, equals)] = assignment.substr(equals + 1);
    }
    cases.push_back(std::move(programCase));
  }
  return cases;
}

// The GPU pipeline refuses `kernel`, as the GPU would, at a private array.
void checkGpuPipelineRefuses(const Program &program, const KernelDecl &kernel,
                             const ArgumentRequest &request) {
  Expected<KernelArgs> args = bindKernelArguments(kernel, request);
  REQUIRE(args);
  auto ran = engine::CpuEngine(passes::PipelineTarget::Gpu).run(program, kernel, *args);
  REQUIRE_MESSAGE(!ran, "the GPU pipeline ran a case marked gpu-refuses");
  CHECK(ran.error().message.starts_with("on the GPU, the extents of the private array"));
}

void checkSuite(const std::string &suite) {
  Interpreter interpreter;
  engine::CpuEngine cpu;
  engine::CpuEngine gpuKernels(test::gpuPipelineOnOneSM());
  engine::CpuEngine checkedGpuKernels(passes::PipelineTarget::Gpu, {.boundsChecks = true});
  Engine *engines[] = {&interpreter, &cpu, &gpuKernels, &checkedGpuKernels};
  std::map<std::string, std::unique_ptr<test::LoadedProgram>> programs;
  std::vector<ProgramCase> cases = readCases(suite);
  CHECK(cases.size() >= 20);
  for (const ProgramCase &programCase : cases) {
    CAPTURE(programCase.line);
    CAPTURE(programCase.file);
    CAPTURE(programCase.kernel);
    auto &loaded = programs[programCase.file];
    if (!loaded)
      loaded = test::loadFile(test::sourcePath("tests/programs/" + suite + "/" + programCase.file));
    REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
    const KernelDecl *kernel = loaded->program->findKernel(programCase.kernel);
    REQUIRE(kernel);
    ArgumentRequest request;
    request.seed = 1;
    request.values = programCase.values;
    std::span<Engine *const> running = engines;
    if (programCase.gpuRefuses) {
      running = running.first(2);
      checkGpuPipelineRefuses(*loaded->program, *kernel, request);
    }
    test::DifferentialOutcome outcome =
        test::runDifferential(*loaded->program, *kernel, request, running);
    REQUIRE_MESSAGE(!outcome.skipped, outcome.report);
    CHECK_MESSAGE(outcome.agree, outcome.report);
  }
}

} // namespace

TEST_CASE("PolyBench's linear algebra and data mining agree on every engine") {
  checkSuite("polybench");
}

TEST_CASE("PolyBench's stencils and medley, and Rodinia's kernels agree on every engine") {
  checkSuite("rodinia");
}

TEST_CASE("programs aimed at each optimization pass agree on every engine") {
  checkSuite("passes");
}

TEST_CASE("scientific programs and inlined functions agree on every engine") {
  checkSuite("science");
}
