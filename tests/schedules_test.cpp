// Schedules in the source (`@schedule(...)` before a kernel,
// docs/schedules.md): a schedule compiles to what the same choices on the
// command line give, the command line's parameters win over it, its results
// match the interpreter's, and what `loopc tune --write-schedule` writes reads
// back as the choices it found. Its errors are golden diagnostics
// (tests/diagnostics/kernel_schedule_errors.loop).
#include "Differential.h"
#include "TestSupport.h"

#include "driver/Session.h"
#include "driver/TuneCommand.h"
#include "engine/cpu/CpuEngine.h"
#include "frontend/Loader.h"
#include "interp/Interpreter.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"

#include <doctest/doctest.h>

#include <sstream>

using namespace loopc;
using test::contains;

namespace {

const char *const kMatmul = R"(kernel matmul(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
  }
}
)";

std::string scheduled(const std::string &schedule) {
  return "@schedule(" + schedule + ")\n" + kMatmul;
}

// The IR after the GPU pipeline of `source`'s matmul, with `choices`.
std::string gpuIr(const std::string &source, const passes::PassChoices &choices = {}) {
  return test::compiledKernelText(source, "matmul", passes::PipelineTarget::Gpu, choices);
}

// A session holding the program of `path`, as the command line loads it.
std::unique_ptr<driver::Session> sessionOf(const std::string &path) {
  auto session = driver::openSession(path);
  REQUIRE(session);
  return session;
}

} // namespace

TEST_CASE("a schedule compiles to what the same choices on the command line give") {
  passes::PassChoices asOptions =
      test::withParameters({"register_tile=8", "pipeline_depth=1", "stage_length=16"});
  asOptions.skipped.insert("partition_borders");
  std::string fromSchedule = gpuIr(scheduled("register_tile=8, pipeline_depth=1, stage_length=16, "
                                             "skip=partition_borders"));
  CHECK(fromSchedule == gpuIr(kMatmul, asOptions));
  CHECK(fromSchedule != gpuIr(kMatmul));
  // Leaving out a pass from the schedule: no shared memory.
  std::string unstaged = gpuIr(scheduled("skip=stage_shared"));
  CHECK(!contains(unstaged, "shared f32"));
  CHECK(contains(gpuIr(kMatmul), "shared f32"));
}

TEST_CASE("a parameter given on the command line wins over the schedule's, a skip adds to it") {
  std::string source = scheduled("register_tile=8, skip=stage_shared");
  passes::PassChoices given = test::withParameters({"register_tile=2"});
  given.parametersGiven = {"register_tile"};
  passes::PassChoices expected = test::withParameters({"register_tile=2"});
  expected.skipped.insert("stage_shared");
  CHECK(gpuIr(source, given) == gpuIr(kMatmul, expected));
  // The tuner's candidates are whole: the schedule does not apply to them.
  passes::PassChoices whole;
  whole.kernelSchedules = false;
  CHECK(gpuIr(source, whole) == gpuIr(kMatmul));

  test::TempDir dir;
  std::string path = dir.file("m.loop", source);
  test::CommandResult remarks =
      test::runLoopc("explain '" + path + "' --remarks --pass-param register_tile=2");
  CHECK(remarks.exitCode == 0);
  CHECK(contains(remarks.output, "m.loop:1:11: remark: schedule: register_tile=8 not applied: "
                                 "--pass-param gives register_tile for this run"));
  CHECK(contains(remarks.output,
                 "m.loop:1:28: remark: schedule: the schedule leaves out stage_shared"));
}

TEST_CASE("scheduled kernels agree with the interpreter at sizes that are multiples of no tile") {
  for (const char *schedule :
       {"register_tile=8, stage_length=8, pipeline_depth=3", "register_tile=2, skip=stage_shared",
        "register_tile=4, unclamped_tiles=1, copies_in_flight=4"}) {
    CAPTURE(schedule);
    auto loaded = test::loadText(scheduled(schedule));
    REQUIRE(loaded->program);
    test::checkGpuKernelsOnCpu(
        *loaded->program, "matmul",
        {{{"M", "33"}, {"N", "67"}, {"K", "9"}}, {{"M", "1"}, {"N", "257"}, {"K", "40"}}}, 7);
  }
}

TEST_CASE("block_x and block_y: every pipeline's kernels agree with the interpreter in blocks of "
          "other shapes") {
  // matmul (register tiles, staged stages), conv2d_5x5 (windows), transpose
  // (the CPU's tall blocks otherwise), softmax (rows reduced by blocks) and
  // cnn_conv (a 3-D nest), at sizes no block divides.
  struct Case {
    const char *file, *kernel;
    std::vector<std::map<std::string, std::string>> sizes;
  };
  const Case cases[] = {
      {"samples/matmul.loop", "matmul", {{{"M", "37"}, {"N", "70"}, {"K", "9"}}}},
      {"samples/conv2d_5x5.loop", "conv2d_5x5", {{{"H", "23"}, {"W", "41"}}}},
      {"samples/transpose.loop", "transpose", {{{"M", "45"}, {"N", "19"}}}},
      {"samples/softmax.loop", "softmax", {{{"R", "13"}, {"C", "70"}}}},
      {"samples/cnn_conv.loop",
       "cnn_conv_valid",
       {{{"Ic", "3"}, {"Oc", "5"}, {"H", "13"}, {"W", "11"}, {"K", "3"}}}},
  };
  for (std::vector<std::string> shape : {std::vector<std::string>{"block_x=16", "block_y=16"},
                                         {"block_x=64", "block_y=4"},
                                         {"block_x=8", "block_y=64"},
                                         {"block_x=128"}}) {
    CAPTURE(shape[0]);
    passes::PassChoices choices = test::withParameters(shape);
    Interpreter interpreter;
    engine::CpuEngine cpu(passes::PipelineTarget::Cpu, choices);
    engine::CpuEngine gpuKernels(test::gpuPipelineOnOneSM(choices));
    Engine *engines[] = {&interpreter, &cpu, &gpuKernels};
    for (const Case &sample : cases) {
      CAPTURE(sample.kernel);
      auto loaded = test::loadFile(test::sourcePath(sample.file));
      REQUIRE(loaded->program);
      const KernelDecl *kernel = loaded->program->findKernel(sample.kernel);
      REQUIRE(kernel);
      test::checkAgreementAt(*loaded->program, *kernel, engines, sample.sizes);
    }
  }
  // More than a GPU block holds is an error of the GPU pipeline, not of the
  // CPU's, whose blocks are a core's work.
  auto loaded = test::loadFile(test::sourcePath("samples/transpose.loop"));
  REQUIRE(loaded->program);
  const KernelDecl *transpose = loaded->program->findKernel("transpose");
  REQUIRE(transpose);
  passes::PipelineOptions huge;
  huge.choices = test::withParameters({"block_x=64", "block_y=32"});
  auto onGpu = passes::runPipeline(ir::lowerKernel(*loaded->program, *transpose), huge);
  REQUIRE(!onGpu);
  CHECK(contains(onGpu.error().message, "block_x=64 and block_y=32 make blocks of 2048 threads; "
                                        "a GPU block holds at most 1024"));
  huge.target = passes::PipelineTarget::Cpu;
  CHECK(passes::runPipeline(ir::lowerKernel(*loaded->program, *transpose), huge));
}

TEST_CASE("stage= stages an input array stage_shared would leave to the cache, no_stage= keeps "
          "one out of shared memory") {
  const std::string conv = test::readFile(test::sourcePath("samples/conv2d_5x5.loop"));
  auto text = [&](const std::string &schedule, const passes::PassChoices &choices = {}) {
    std::string source = conv;
    if (!schedule.empty())
      source.insert(source.find("kernel conv2d_5x5"), "@schedule(" + schedule + ")\n");
    return test::compiledKernelText(source, "conv2d_5x5", passes::PipelineTarget::Gpu, choices);
  };
  // By default the window is read through L1 (each element is read fewer
  // than 16 times an iteration); at stage_min_reuse=2 it is staged, and so
  // it is when the schedule asks for it alone.
  CHECK(!contains(text(""), "I.shared"));
  CHECK(contains(text("stage=I"), "shared f32 I.shared["));
  CHECK(text("stage=I") == text("", test::withParameters({"stage_min_reuse=2"})));
  CHECK(!contains(text("stage=I, no_stage=F, stage_min_reuse=2"), "F.shared"));

  // matmul stages both operands by default; no_stage=A keeps A in global
  // memory, and the tuner's whole choices keep the schedule's staging.
  CHECK(contains(gpuIr(kMatmul), "shared f32 A.shared"));
  std::string withoutA = gpuIr(scheduled("no_stage=A"));
  CHECK(!contains(withoutA, "A.shared"));
  CHECK(contains(withoutA, "shared f32 B.shared"));
  passes::PassChoices whole;
  whole.kernelSchedules = false;
  CHECK(gpuIr(scheduled("no_stage=A, register_tile=8"), whole) == gpuIr(scheduled("no_stage=A")));

  test::TempDir dir;
  std::string path =
      dir.file("c.loop", conv.substr(0, conv.find("kernel conv2d_5x5")) + "@schedule(stage=I)\n" +
                             conv.substr(conv.find("kernel conv2d_5x5")));
  test::CommandResult remarks = test::runLoopc("explain '" + path + "' --remarks");
  CHECK(remarks.exitCode == 0);
  CHECK(contains(remarks.output, "the schedule asks for it (stage=I), where by itself "
                                 "stage_shared would not: each element is read"));
  auto loaded = test::loadText(scheduled("no_stage=A, no_stage=B"));
  REQUIRE(loaded->program);
  test::checkGpuKernelsOnCpu(*loaded->program, "matmul", {{{"M", "33"}, {"N", "67"}, {"K", "9"}}},
                             11);
  auto staged = test::loadFile(path);
  REQUIRE(staged->program);
  test::checkGpuKernelsOnCpu(*staged->program, "conv2d_5x5", {{{"H", "37"}, {"W", "70"}}}, 5);
}

TEST_CASE("tune --write-schedule: the choices found are written before the kernel, replace its "
          "schedule, or remove it, and read back as those choices") {
  test::TempDir dir;
  passes::PassChoices found = test::withParameters({"register_tile=8", "stage_length=16"});
  found.skipped.insert("stage_shared");

  SUBCASE("written before a kernel without one, at its indentation, after nothing else") {
    std::string path =
        dir.file("k.loop", "// matmul\n  @fp_contract(off)\n  " + std::string(kMatmul));
    auto session = sessionOf(path);
    std::ostringstream said;
    REQUIRE(driver::writeSchedule(path, *session, *session->program->modules.front()->kernels[0],
                                  found, said));
    CHECK(contains(said.str(), "wrote @schedule(register_tile=8, stage_length=16, "
                               "skip=stage_shared) before kernel 'matmul'"));
    CHECK(test::readFile(path).starts_with(
        "// matmul\n  @schedule(register_tile=8, stage_length=16, skip=stage_shared)\n"
        "  @fp_contract(off)\n  kernel matmul("));
    auto reread = sessionOf(path);
    const KernelDecl &kernel = *reread->program->modules.front()->kernels[0];
    CHECK(describeSchedule(kernel.schedule) == "register_tile=8 stage_length=16 skip=stage_shared");
    CHECK(kernel.fpContract == FpContract::Off);
  }
  SUBCASE("in place of the schedule it has, and the same code as the choices") {
    std::string path =
        dir.file("k.loop", scheduled("register_tile=2,  skip=tile_registers, no_stage=A"));
    auto session = sessionOf(path);
    std::ostringstream said;
    REQUIRE(driver::writeSchedule(path, *session, *session->program->modules.front()->kernels[0],
                                  found, said));
    // The arrays' staging, which the search does not vary, stays.
    CHECK(test::readFile(path) ==
          scheduled("register_tile=8, stage_length=16, skip=stage_shared, no_stage=A"));
    found.kernelSchedules = false;
    found.parameters.unstagedArrays = {"A"};
    CHECK(gpuIr(test::readFile(path)) == gpuIr(kMatmul, found));
  }
  SUBCASE("removed where the defaults are best; nothing written where there was none") {
    std::string path = dir.file("k.loop", scheduled("register_tile=2"));
    auto session = sessionOf(path);
    std::ostringstream said;
    REQUIRE(driver::writeSchedule(path, *session, *session->program->modules.front()->kernels[0],
                                  {}, said));
    CHECK(test::readFile(path) == kMatmul);
    auto plain = sessionOf(path);
    REQUIRE(driver::writeSchedule(path, *plain, *plain->program->modules.front()->kernels[0], {},
                                  said));
    CHECK(contains(said.str(), "fastest with the defaults: no @schedule written"));
    CHECK(test::readFile(path) == kMatmul);
  }
  SUBCASE("a schedule's own line goes whatever the indentation around it; one beside other text "
          "leaves that text") {
    const std::string matmul = kMatmul;
    for (const auto &[before, after] : std::vector<std::pair<std::string, std::string>>{
             {"  @schedule(register_tile=2)\n" + matmul, matmul},
             {"\t@fp_contract(off)\n\t@schedule(skip=stage_shared)\n\t" + matmul,
              "\t@fp_contract(off)\n\t" + matmul},
             {"@fp_contract(off) @schedule(skip=stage_shared)  " + matmul,
              "@fp_contract(off) " + matmul},
             {"@schedule(register_tile=2)\r\nkernel k(x: in f32[N]) {\r\n}\r\n",
              "kernel k(x: in f32[N]) {\r\n}\r\n"}}) {
      CAPTURE(before);
      std::string path = dir.file("k.loop", before);
      auto session = sessionOf(path);
      std::ostringstream said;
      REQUIRE(driver::writeSchedule(path, *session, *session->program->modules.front()->kernels[0],
                                    {}, said));
      CHECK(test::readFile(path) == after);
    }
  }
  SUBCASE("written with the file's line breaks and the kernel's tabs") {
    std::string path = dir.file("k.loop", "\tkernel k(x: in f32[N]) {\r\n\t}\r\n");
    auto session = sessionOf(path);
    std::ostringstream said;
    REQUIRE(driver::writeSchedule(path, *session, *session->program->modules.front()->kernels[0],
                                  found, said));
    CHECK(test::readFile(path) ==
          "\t@schedule(register_tile=8, stage_length=16, skip=stage_shared)\r\n"
          "\tkernel k(x: in f32[N]) {\r\n\t}\r\n");
  }
  SUBCASE("not into a file the program imports") {
    dir.file("lib.loop", kMatmul);
    std::string path = dir.file("main.loop", "import \"lib.loop\";\n");
    auto session = sessionOf(path);
    const KernelDecl *kernel = nullptr;
    for (const auto &module : session->program->modules)
      for (const auto &candidate : module->kernels)
        kernel = candidate.get();
    REQUIRE(kernel);
    std::ostringstream said;
    Status written = driver::writeSchedule(path, *session, *kernel, found, said);
    REQUIRE(!written);
    CHECK(contains(written.error().message, "which '" + path +
                                                "' imports: write its schedule there by hand "
                                                "(@schedule(register_tile=8, stage_length=16, "
                                                "skip=stage_shared))"));
    CHECK(test::readFile(dir.at("lib.loop")) == kMatmul);
  }
}

TEST_CASE("loopc check and explain report a schedule's errors at the choice") {
  test::TempDir dir;
  std::string path = dir.file("bad.loop", scheduled("stage_lenght=16"));
  test::CommandResult checked = test::runLoopc("check '" + path + "'");
  CHECK(checked.exitCode != 0);
  CHECK(contains(checked.output, "bad.loop:1:11: error: unknown schedule choice 'stage_lenght'; "
                                 "did you mean 'stage_length'?"));
  test::CommandResult run = test::runLoopc("run '" + path + "' --set M=4 --set N=4 --set K=4");
  CHECK(run.exitCode != 0);
  CHECK(contains(run.output, "unknown schedule choice 'stage_lenght'"));
}
