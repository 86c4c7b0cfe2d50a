// drop_untaken_branches: compiled for the sizes of a run, a kernel keeps the
// host branches those sizes take, records each choice, and the engines'
// cache reuses the code only where the choices come out the same; results
// agree with the interpreter on both sides of every choice.
#include "TestSupport.h"
#include "engine/compiled/EngineArguments.h"
#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"
#include "ir/IRPrinter.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"
#include "support/Differential.h"

#include <doctest/doctest.h>

#include <map>
#include <string>

using namespace loopc;
using loopc::test::contains;
using loopc::test::occurrences;

namespace {

ir::Function compiledFor(const Program &program, const std::string &kernelName,
                         const std::map<std::string, int64_t> &runSizes,
                         passes::PipelineTarget target = passes::PipelineTarget::Gpu) {
  const KernelDecl *kernel = program.findKernel(kernelName);
  REQUIRE_MESSAGE(kernel, "no kernel " << kernelName);
  passes::PipelineOptions options;
  options.target = target;
  options.runSizes = runSizes;
  auto function = passes::runPipeline(ir::lowerKernel(program, *kernel), options);
  REQUIRE_MESSAGE(function, (function ? "" : function.error().message));
  return std::move(*function);
}

} // namespace

TEST_CASE("softmax compiled for its sizes keeps the kernels those sizes run, and says why") {
  auto loaded = test::loadFile(test::sourcePath("samples/softmax.loop"));
  REQUIRE(loaded->program);
  // Without sizes the host chooses: a split of each row into parts when the
  // rows are few, a block per row when they are long.
  ir::Function anySizes = compiledFor(*loaded->program, "softmax", {});
  CHECK(anySizes.sizeChoices.empty());
  CHECK(contains(ir::toString(anySizes), "  if ("));
  for (auto target : {passes::PipelineTarget::Gpu, passes::PipelineTarget::Cpu}) {
    CAPTURE(static_cast<int>(target));
    ir::Function few = compiledFor(*loaded->program, "softmax", {{"R", 4}, {"C", 1 << 20}}, target);
    ir::Function many =
        compiledFor(*loaded->program, "softmax", {{"R", 8192}, {"C", 8192}}, target);
    for (const ir::Function *function : {&few, &many}) {
      std::string printed = ir::toString(*function);
      CAPTURE(printed);
      CHECK(!function->sizeChoices.empty());
      CHECK(function->kernels.size() < anySizes.kernels.size());
      CHECK(contains(printed, "// compiled for sizes where "));
      // Every host branch was decided: the host code launches and allocates.
      CHECK(!contains(printed.substr(0, printed.find("kernel ")), "  if ("));
      CHECK(passes::choicesHoldAt(
          *function, function == &few ? std::map<std::string, int64_t>{{"R", 4}, {"C", 1 << 20}}
                                      : std::map<std::string, int64_t>{{"R", 8192}, {"C", 8192}}));
    }
    // 4 long rows are split into parts, 8192 rows are not.
    CHECK(!passes::choicesHoldAt(few, {{"R", 8192}, {"C", 8192}}));
    CHECK(!passes::choicesHoldAt(many, {{"R", 4}, {"C", 1 << 20}}));
  }
}

TEST_CASE("conditions that read more than the sizes stay host branches") {
  // The test reads a scalar argument, and a host loop's variable: neither is
  // known when compiling.
  auto loaded = test::loadText(R"(
kernel scaled(t: i64, x: in f32[N], y: out f32[N]) {
  if (t > 2) {
    parfor i in 0..N { y[i] = x[i] * 2.0; }
  } else {
    parfor i in 0..N { y[i] = x[i]; }
  }
}

kernel steps(x: inout f32[N]) {
  for s in 0..4 {
    if (s * 100 < N) {
      parfor i in 0..N { x[i] = x[i] + 1.0; }
    }
  }
}

kernel sized(x: in f32[N], y: out f32[N]) {
  if (N > 64) {
    parfor i in 0..N { y[i] = x[i] * 2.0; }
  } else {
    parfor i in 0..N { y[i] = x[i] + 1.0; }
  }
}
)");
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  for (const char *kernel : {"scaled", "steps"}) {
    CAPTURE(kernel);
    ir::Function function = compiledFor(*loaded->program, kernel, {{"N", 1000}});
    CHECK(function.sizeChoices.empty());
    CHECK(function.kernels.size() == 2 - (std::string(kernel) == "steps"));
  }
  // The program's own test of a size is decided like a pass's.
  ir::Function large = compiledFor(*loaded->program, "sized", {{"N", 1000}});
  REQUIRE(large.sizeChoices.size() == 1);
  CHECK(large.sizeChoices[0].holds);
  CHECK(large.kernels.size() == 1);
  CHECK(passes::choicesHoldAt(large, {{"N", 65}}));
  CHECK(!passes::choicesHoldAt(large, {{"N", 64}}));
  test::checkGpuKernelsOnCpu(*loaded->program, "sized",
                             {{{"N", "0"}}, {{"N", "64"}}, {{"N", "65"}}, {{"N", "1000"}}}, 3);
}

TEST_CASE("one engine runs sizes on both sides of each choice, each compiled once, and agrees "
          "with the host's branches") {
  auto loaded = test::loadFile(test::sourcePath("samples/softmax.loop"));
  REQUIRE(loaded->program);
  const KernelDecl &softmax = *loaded->program->findKernel("softmax");
  struct Compiled {
    ir::Function function;
  };
  passes::PipelineOptions gpu;
  engine::CompiledKernelCache<Compiled> cache(gpu);
  int builds = 0;
  auto compiledAt = [&](int64_t rows, int64_t columns) {
    auto compiled = cache.get(*loaded->program, softmax, {{"R", rows}, {"C", columns}},
                              [&](Compiled &) -> Status {
                                ++builds;
                                return {};
                              });
    REQUIRE(compiled);
    return *compiled;
  };
  const Compiled *fewRows = compiledAt(3, 100000);
  const Compiled *manyRows = compiledAt(5000, 100);
  CHECK(fewRows != manyRows);
  CHECK(compiledAt(2, 200000) == fewRows);
  CHECK(compiledAt(6000, 90) == manyRows);
  CHECK(builds == 2);
  // Results on both sides, with the branches dropped and with the host
  // choosing (the pass skipped).
  const std::vector<std::map<std::string, std::string>> sizes = {
      {{"R", "3"}, {"C", "70001"}}, {{"R", "300"}, {"C", "33"}}, {{"R", "1"}, {"C", "1"}}};
  test::checkGpuKernelsOnCpu(*loaded->program, "softmax", sizes, 17);
  passes::PassChoices hostChooses;
  hostChooses.skipped.insert("drop_untaken_branches");
  test::checkGpuKernelsOnCpu(*loaded->program, "softmax", sizes, 17, hostChooses);
  Interpreter interpreter;
  engine::CpuEngine cpu;
  Engine *engines[] = {&interpreter, &cpu};
  for (const auto &values : sizes) {
    ArgumentRequest request;
    request.values = values;
    request.seed = 5;
    test::DifferentialOutcome outcome =
        test::runDifferential(*loaded->program, softmax, request, engines);
    REQUIRE_MESSAGE(!outcome.skipped, outcome.report);
    CHECK_MESSAGE(outcome.agree, outcome.report);
  }
}
