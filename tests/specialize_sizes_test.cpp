// specialize_sizes: which run-time sizes a GPU kernel is compiled for, what
// the optimizations then make of a constant window (cnn_conv's input staged
// by stages of channels), and that specialized and generic kernels agree
// with the interpreter.
#include "TestSupport.h"
#include "ir/IRPrinter.h"
#include "lower/Lower.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"
#include "support/Differential.h"

#include <doctest/doctest.h>

#include <map>
#include <string>

using namespace loopc;

namespace {

std::unique_ptr<test::LoadedProgram> cnnConv() {
  auto loaded = test::loadFile(test::sourcePath("samples/cnn_conv.loop"));
  REQUIRE(loaded->program);
  return loaded;
}

const std::map<std::string, int64_t> kSizes = {
    {"Ic", 64}, {"Oc", 64}, {"H", 256}, {"W", 256}, {"K", 3}};

} // namespace

TEST_CASE("small sizes bounding a loop inside a parfor are specialized, on the GPU pipeline only") {
  auto loaded = cnnConv();
  ir::Function lowered =
      ir::lowerKernel(*loaded->program, *loaded->program->findKernel("cnn_conv_valid"));
  passes::PipelineOptions gpu;
  // K bounds the window loops; Ic bounds the channel loop but is large; H
  // and W bound the parfor itself.
  CHECK(passes::sizesToSpecialize(lowered, kSizes, gpu) ==
        std::map<std::string, int64_t>{{"K", 3}});
  std::map<std::string, int64_t> smallChannels = kSizes;
  smallChannels["Ic"] = 4;
  smallChannels["K"] = 17;
  CHECK(passes::sizesToSpecialize(lowered, smallChannels, gpu) ==
        std::map<std::string, int64_t>{{"Ic", 4}});
  passes::PipelineOptions cpu;
  cpu.target = passes::PipelineTarget::Cpu;
  CHECK(passes::sizesToSpecialize(lowered, kSizes, cpu).empty());
  passes::PipelineOptions skipped;
  skipped.choices.skipped = {"specialize_sizes"};
  CHECK(passes::sizesToSpecialize(lowered, kSizes, skipped).empty());
}

TEST_CASE("cnn_conv at K = 3: the input and the weights staged by stages of channels") {
  auto loaded = cnnConv();
  // The boxes and stages at K = 3, one stage at a time:
  // tests/lit/stage_shared/cnn_conv_valid_k3_stages.lir (DEPTH1).
  for (const char *k : {"1", "3", "5"})
    for (const auto &sizes : std::vector<std::map<std::string, std::string>>{
             {{"Ic", "5"}, {"Oc", "9"}, {"H", "37"}, {"W", "133"}, {"K", k}},
             {{"Ic", "8"}, {"Oc", "8"}, {"H", "6"}, {"W", "130"}, {"K", k}}}) {
      CAPTURE(k);
      test::checkGpuKernelsOnCpu(*loaded->program, "cnn_conv_valid", {sizes}, 23);
    }
  // A window too large to specialize: the generic kernel.
  test::checkGpuKernelsOnCpu(*loaded->program, "cnn_conv_valid",
                             {{{"Ic", "2"}, {"Oc", "3"}, {"H", "40"}, {"W", "41"}, {"K", "17"}}},
                             23);
}

TEST_CASE("a whole-array reduction over a constant size keeps the let its partials' shape names") {
  // simplify substitutes a let bound to a constant, but the shape of the
  // buffer of partial results still names it (buffers are not rewritten).
  auto loaded = test::loadText(R"(
kernel total(x: in f32[3], r: out f32) {
  r = redomap(+, 0.0, i in 0..3) x[i];
}
)");
  REQUIRE(loaded->program);
  test::checkGpuKernelsOnCpu(*loaded->program, "total", {{}}, 29);
}
