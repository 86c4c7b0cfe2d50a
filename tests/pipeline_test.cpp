// The pass registry (passes/Pipeline.cpp) as the rest of loopc reads it:
// every pass has its file and its row in docs/architecture.md, the
// optimizations `--skip-pass` names are the registry's, and the pipeline
// runs its passes in the registry's order.
#include "TestSupport.h"

#include "lower/Lower.h"
#include "passes/Pipeline.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace loopc;

TEST_CASE("every pass of the registry has its source file and its row in the architecture") {
  std::string architecture = test::readFile(test::sourcePath("docs/architecture.md"));
  std::vector<passes::PassDescription> described = passes::describePasses();
  REQUIRE(described.size() >= 20);
  for (const passes::PassDescription &pass : described) {
    CAPTURE(pass.name);
    CHECK(std::filesystem::exists(test::sourcePath("src/passes/" + pass.name + ".cpp")));
    CHECK(test::contains(architecture, "`src/passes/" + pass.name + ".cpp`"));
    CHECK_FALSE(pass.summary.empty());
    CHECK_FALSE(pass.targets.empty());
  }
}

TEST_CASE("the skippable passes are the registry's optimizations of each target") {
  for (passes::PipelineTarget target : {passes::PipelineTarget::Gpu, passes::PipelineTarget::Cpu}) {
    std::vector<std::string> expected;
    for (const passes::PassDescription &pass : passes::describePasses())
      if (pass.skippable && std::ranges::find(pass.targets, target) != pass.targets.end())
        expected.push_back(pass.name);
    CHECK(passes::optimizationPasses(target) == expected);
  }
  passes::PipelineOptions cpu, gpu;
  cpu.target = passes::PipelineTarget::Cpu;
  CHECK(passes::passLeftOutBy("stage_shared", cpu) == "--target cpu");
  CHECK(passes::passLeftOutBy("fuse_with_lag", gpu) == "--target gpu");
  CHECK(passes::passLeftOutBy("globalize_private_arrays", cpu) == "--target cpu");
  passes::PipelineOptions skipping;
  skipping.choices.skipped = {"tile_registers", "simplify"};
  CHECK(passes::passLeftOutBy("tile_registers", skipping) == "--skip-pass tile_registers");
  CHECK(passes::passLeftOutBy("simplify", skipping) == ""); // required: it runs
}

TEST_CASE("the pipeline runs the registry's passes in its order on each target") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  for (passes::PipelineTarget target : {passes::PipelineTarget::Gpu, passes::PipelineTarget::Cpu}) {
    passes::PipelineOptions options;
    options.target = target;
    std::vector<std::string> ran;
    options.afterPass = [&](const std::string &pass, const ir::Function &) {
      if (std::ranges::find(ran, pass) == ran.end())
        ran.push_back(pass);
    };
    const KernelDecl *kernel = loaded->program->findKernel("matmul");
    REQUIRE(kernel);
    REQUIRE(passes::runPipeline(ir::lowerKernel(*loaded->program, *kernel), options));
    std::vector<std::string> expected{"lower"};
    for (const passes::PassDescription &pass : passes::describePasses())
      if (std::ranges::find(pass.targets, target) != pass.targets.end())
        expected.push_back(pass.name);
    CHECK(ran == expected);
  }
}

namespace {

// The registry as docs/architecture.md's table of passes shows it.
std::string passTable() {
  std::string table =
      "| pass | GPU | CPU | skippable | what it does |\n| --- | --- | --- | --- | --- |\n";
  for (const passes::PassDescription &pass : passes::describePasses()) {
    auto runsOn = [&](passes::PipelineTarget target) {
      return std::ranges::find(pass.targets, target) != pass.targets.end() ? "yes" : "";
    };
    table += "| `" + pass.name + "` | " + runsOn(passes::PipelineTarget::Gpu) + " | " +
             runsOn(passes::PipelineTarget::Cpu) + " | " + (pass.skippable ? "yes" : "") + " | " +
             pass.summary + " |\n";
  }
  return table;
}

} // namespace

TEST_CASE("the architecture's table of passes is the registry's") {
  const std::string begin = "<!-- passes: generated from the registry -->\n";
  const std::string end = "<!-- end of passes -->\n";
  std::string path = test::sourcePath("docs/architecture.md");
  std::string architecture = test::readFile(path);
  size_t from = architecture.find(begin), to = architecture.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  from += begin.size();
  std::string wanted = passTable();
  if (const char *update = std::getenv("LOOPC_UPDATE_GOLDENS"); update && *update) {
    architecture.replace(from, to - from, wanted);
    std::ofstream(path, std::ios::binary) << architecture;
    return;
  }
  CHECK(architecture.substr(from, to - from) == wanted);
}

TEST_CASE("the arrays a kernel writes whole before touching them otherwise are recorded") {
  // The C functions of `loopc compile --emit object` leave those `out`
  // arrays as the caller gave them instead of zeroing them first.
  auto loaded = test::loadText(R"(
kernel whole(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N], d: out f32[N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
  }
  parfor j in 0..N {
    d[j] = C[0][j];
  }
}
kernel partial(x: in f32[N], y: out f32[N], z: out f32[N], w: out f32[N]) {
  parfor i in 0..N / 2 {
    y[i] = x[i];
  }
  parfor i in 0..N {
    z[i] = z[i] + x[i];
  }
  for t in 0..2 {
    parfor i in 0..N {
      w[i] = x[i] * f32(t);
    }
  }
}
)");
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  for (passes::PipelineTarget target : {passes::PipelineTarget::Cpu, passes::PipelineTarget::Gpu}) {
    ir::Function whole =
        test::compiledKernel(*loaded->program, *loaded->program->findKernel("whole"), target);
    CHECK(whole.writtenWholeFirst == std::set<std::string>{"C", "d"});
    // Half of y, z read before written, w written by a serial loop's steps.
    ir::Function partial =
        test::compiledKernel(*loaded->program, *loaded->program->findKernel("partial"), target);
    CHECK(partial.writtenWholeFirst.empty());
  }
}
