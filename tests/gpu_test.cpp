// The GPU path without a GPU: PTX for every sample and stdlib kernel assembled
// by ptxas with no spills, module files, the CLI's messages where there is no
// driver, and the GPU engine's host program on the stand-in driver. Runs on a
// real device (differential against the interpreter) only where one opens.
#include "TestSupport.h"

#include "codegen/ModuleFile.h"
#include "codegen/NvptxTarget.h"
#include "codegen/Ptxas.h"
#include "engine/Bindings.h"
#include "engine/Npy.h"
#include "engine/gpu/GpuEngine.h"
#include "interp/Interpreter.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"

#include "Differential.h"
#include "StubDriver.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <limits>

using namespace loopc;
using loopc::test::ScopedEnvironment;
using loopc::test::StubDriver;

namespace {

std::vector<std::string> loopFiles() {
  std::vector<std::string> files;
  for (const char *folder : {"samples", "stdlib"})
    for (const auto &entry : std::filesystem::directory_iterator(test::sourcePath(folder)))
      if (entry.path().extension() == ".loop")
        files.push_back(entry.path().string());
  std::ranges::sort(files);
  return files;
}

// The GPU engine over the stand-in driver for the scope of one test.
struct StubbedGpu {
  explicit StubbedGpu(const std::string &stub) : driver("LOOPC_CUDA_DRIVER", stub) {
    auto created = engine::GpuEngine::create();
    REQUIRE_MESSAGE(created, (created ? "" : created.error().message));
    engine = std::move(*created);
  }
  ScopedEnvironment driver;
  std::unique_ptr<Engine> engine;

  // Runs `kernel` on the stand-in driver; the run must succeed.
  RunStats mustRun(const Program &program, const KernelDecl &kernel, KernelArgs &args) {
    Expected<RunStats> stats = engine->run(program, kernel, args);
    REQUIRE_MESSAGE(stats, (stats ? "" : stats.error().message));
    return *stats;
  }
};

// The arguments of `kernel` at the sizes and scalars `values`, the inputs
// seeded.
KernelArgs argumentsAt(const KernelDecl &kernel, std::map<std::string, std::string> values) {
  ArgumentRequest request;
  request.values = std::move(values);
  Expected<KernelArgs> args = bindKernelArguments(kernel, request);
  REQUIRE_MESSAGE(args, (args ? "" : args.error().message));
  return std::move(*args);
}

// The GPU pipeline's IR of a program's only kernel, which must check.
ir::Function onlyKernelCompiled(const test::LoadedProgram &loaded) {
  REQUIRE_MESSAGE(loaded.program, loaded.diagnostics);
  return test::compiledKernel(*loaded.program, *loaded.program->modules.front()->kernels.front());
}

} // namespace

TEST_CASE("every sample and stdlib kernel assembles for sm_80 and sm_90 without spills") {
  std::optional<std::string> ptxas = codegen::findPtxas();
  int kernels = 0;
  for (const std::string &file : loopFiles()) {
    auto loaded = test::loadFile(file);
    REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
    for (const auto &kernel : loaded->program->modules.front()->kernels) {
      ir::Function function = test::compiledKernel(*loaded->program, *kernel);
      for (const char *gpu : {"sm_80", "sm_90"}) {
        CAPTURE(file);
        CAPTURE(kernel->name);
        CAPTURE(gpu);
        auto ptx = codegen::compileToPtx(function, gpu);
        if (!ptx && test::skippedForLibdevice(ptx.error().message))
          continue;
        REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
        CHECK(ptx->find(".target " + std::string(gpu)) != std::string::npos);
        for (const ir::KernelFunc &device : function.kernels) {
          CHECK(ptx->find(".entry " + device.name) != std::string::npos);
          if (device.maxThreadsPerBlock > 0)
            CHECK(ptx->find(".maxntid " + std::to_string(device.maxThreadsPerBlock)) !=
                  std::string::npos);
        }
        if (!ptxas)
          continue;
        auto reports = codegen::runPtxas(*ptxas, *ptx, gpu);
        REQUIRE_MESSAGE(reports, (reports ? "" : reports.error().message));
        CHECK(reports->size() == function.kernels.size());
        for (const codegen::PtxasKernelReport &report : *reports) {
          CAPTURE(report.name);
          CHECK(report.registers > 0);
          CHECK(report.spillStoreBytes == 0);
          CHECK(report.spillLoadBytes == 0);
        }
      }
      ++kernels;
    }
  }
  CHECK(kernels > 20);
  if (!ptxas)
    MESSAGE("skipped assembling the PTX: ptxas not found (set LOOPC_PTXAS)");
}

TEST_CASE("math without NVPTX instructions comes from libdevice, inlined") {
  auto loaded = test::loadText(R"(
kernel activate(x: in f32[N], y: out f32[N]) {
  parfor i in 0..N { y[i] = tanh(x[i]) + exp(x[i]) * sin(x[i]); }
})");
  ir::Function function = onlyKernelCompiled(*loaded);
  auto unoptimized = codegen::nvptxLlvmText(function, "sm_80", false);
  REQUIRE(unoptimized);
  CHECK(unoptimized->find("@__nv_tanhf") != std::string::npos);
  CHECK(unoptimized->find("@__nv_expf") != std::string::npos);
  CHECK(unoptimized->find("ptx_kernel") != std::string::npos);
  CHECK(unoptimized->find("llvm.nvvm.read.ptx.sreg.ctaid.x") != std::string::npos);
  auto ptx = codegen::compileToPtx(function, "sm_80");
  if (!ptx && test::skippedForLibdevice(ptx.error().message))
    return;
  REQUIRE(ptx);
  CHECK(ptx->find("call") == std::string::npos); // every libdevice function inlined
  CHECK(ptx->find("__nv_") == std::string::npos);
  CHECK(!codegen::compileToPtx(function, "sm_1000"));
}

TEST_CASE("a loop whose extent is the launch geometry is no loop on the GPU") {
  auto loaded = test::loadFile(test::sourcePath("samples/matmul.loop"));
  REQUIRE(loaded->program);
  ir::Function function =
      test::compiledKernel(*loaded->program, *loaded->program->findKernel("matmul"));
  // Two block and two thread dimensions, all matching the launch, in each
  // of its two kernels (4 x 4 and 8 x 8 tiles).
  REQUIRE(function.kernels.size() == 2);
  CHECK(codegen::launchGeometryLoops(function).size() == 2 * 4);
  // Also where the extents are i32 (the launch widens them to i64).
  auto narrow = test::loadText(R"(
kernel narrow(n: i32, m: i32, v: in i32[R], w: out i32[R][C]) {
  parfor i in 0..n, j in 0..m { w[i][j] = v[i] + i32(C); }
})");
  REQUIRE_MESSAGE(narrow->program, narrow->diagnostics);
  ir::Function narrowFunction =
      test::compiledKernel(*narrow->program, *narrow->program->modules.front()->kernels.front());
  CHECK(codegen::launchGeometryLoops(narrowFunction).size() == 4);
}

TEST_CASE("private arrays sized at run time live in global memory, a slice per GPU thread") {
  auto loaded = test::loadText(R"(
kernel argmin_rows(D: in f32[N][K], best: out i32[N]) {
  parfor i in 0..N {
    var d: f32[K];
    for c in 0..K { d[c] = D[i][c]; }
    var b: i64 = 0;
    for c in 1..K { if d[c] < d[b] { b = c; } }
    best[i] = i32(b);
  }
})");
  ir::Function function = onlyKernelCompiled(*loaded);
  std::string printed = ir::toString(function);
  // Allocated by the host around the launch, the thread's slot last.
  CHECK(test::contains(printed, "  global f32 d[K][max((N + 256 - 1) / 256, 0) * 256]\n"
                                "  launch argmin_rows_kernel0"));
  CHECK(test::contains(printed, "d[d.0][i.block * 256 + i.thread] = 0.0\n"));
  CHECK(test::contains(printed, "d[c][i.block * 256 + i.thread] = D[i][c]\n"));
  for (const char *gpu : {"sm_80", "sm_90"}) {
    auto ptx = codegen::compileToPtx(function, gpu);
    REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
    if (std::optional<std::string> ptxas = codegen::findPtxas()) {
      auto reports = codegen::runPtxas(*ptxas, *ptx, gpu);
      CHECK_MESSAGE(reports, (reports ? "" : reports.error().message));
    }
  }

  // A host `var` is known at the launch (no iteration may write it), also
  // through the lowering's `let e.extent0 = w` (found by a bug hunt).
  auto hostSized = test::loadText(R"(
kernel k(x: in f32[N], y: out f32[N]) {
  var w: i64 = 3;
  parfor i in 0..N {
    var e: f32[w];
    e[w - 1] = x[i];
    y[i] = e[w - 1];
  }
})");
  ir::Function hostFunction = onlyKernelCompiled(*hostSized);
  CHECK(test::contains(ir::toString(hostFunction),
                       "  let e.launch0 = w\n  global f32 e[e.launch0]["));
  auto hostPtx = codegen::compileToPtx(hostFunction, "sm_90");
  CHECK_MESSAGE(hostPtx, (hostPtx ? "" : hostPtx.error().message));

  // A slice for each of a million threads is too much: the message says why
  // the GPU needs more than the array (found by a bug hunt).
  test::TempDir directory;
  std::string big = directory.file("big.loop", R"(
kernel big(x: in f32[N], K: i64, y: out f32[N]) {
  parfor i in 0..N {
    y[i] = x[i];
    if x[i] > 10.0 {
      var d: f32[K];
      d[K - 1] = x[i];
      y[i] = d[K - 1];
    }
  }
}
kernel caller(x: in f32[N], K: i64, y: out f32[N]) {
  var d: f32[2];
  big(x, K, y);
  y[0] = d[1];
})");
  // Called, the array keeps its name (the caller's `d` took it in the IR).
  for (std::string kernel : {"big", "caller"}) {
    CAPTURE(kernel);
    auto refusedRun = test::runLoopc("run " + big + " --kernel " + kernel +
                                     " --device gpu-on-cpu --set N=1000000 --set K=100000000");
    CHECK(refusedRun.exitCode == 1);
    CHECK(test::contains(refusedRun.output,
                         "big.loop:6:11: error: local array 'd' is too large to allocate (on the "
                         "GPU, a private array whose extents only the run knows takes a slice for "
                         "every thread of its kernel's grid)"));
  }

  // An extent read inside the parfor cannot size a buffer before the launch:
  // the GPU pipeline refuses it at the array, so `compile --emit ptx` and
  // `run --device gpu-on-cpu` (whose CPU could have allocated it; found by a
  // bug hunt) say the same. The CPU pipeline runs it.
  const std::string rows = directory.file("rows.loop", R"(
kernel rows(rowptr: in i32[M1], val: in i32[NNZ], out_: out i32[NNZ]) {
  parfor r in 0..M1 - 1 {
    let s = rowptr[r];
    let n = rowptr[r + 1] - s;
    var t: i32[n];
    for k in 0..n { t[k] = val[s + k]; }
    for k in 0..n { combine(+) out_[s + k] = t[k]; }
  }
})");
  auto rowSized = test::loadFile(rows);
  REQUIRE_MESSAGE(rowSized->program, rowSized->diagnostics);
  auto refused = passes::runPipeline(
      ir::lowerKernel(*rowSized->program, *rowSized->program->findKernel("rows")), {});
  REQUIRE(!refused);
  CHECK(refused.error().message ==
        "on the GPU, the extents of the private array 't' must be known when its kernel launches "
        "(built from sizes, scalar parameters and values computed before the parfor); here they "
        "depend on a value computed or read inside the parfor");
  CHECK(refused.error().range.begin.line == 6);
  CHECK(refused.error().range.begin.col == 9);
  std::string rowptr = directory.at("rowptr.npy");
  HostArray starts(ScalarType::I32, {4});
  std::ranges::copy(std::initializer_list<int32_t>{0, 2, 2, 5}, starts.data<int32_t>());
  REQUIRE(writeNpy(rowptr, starts).has_value());
  const std::string run = "run " + rows + " --in rowptr=" + rowptr + " --set NNZ=5";
  for (const std::string &command :
       {run + " --device gpu-on-cpu", "compile " + rows + " --emit ptx"}) {
    CAPTURE(command);
    auto result = test::runLoopc(command);
    CHECK(result.exitCode == 1);
    CHECK(test::contains(result.output,
                         "rows.loop:6:9: error: on the GPU, the extents of the private array 't' "
                         "must be known when its kernel launches"));
  }
  CHECK(test::runLoopc(run + " --device cpu --check").exitCode == 0);
}

TEST_CASE("a barrier inside a GPU thread loop that is not the block is an error, not a hang") {
  auto loaded = test::loadFile(test::sourcePath("samples/dot.loop"));
  REQUIRE(loaded->program);
  ir::Function function =
      test::compiledKernel(*loaded->program, *loaded->program->findKernel("dot"));
  REQUIRE(codegen::compileToPtx(function, "sm_80"));
  // The same kernel launched with a block other than its thread loop's
  // extent: the thread loop becomes strided, and its barriers uneven.
  struct WidenBlocks : ir::IRMutator {
    ir::Stmt visitLaunch(const ir::Launch &launch, const ir::Stmt &) override {
      std::vector<ir::Expr> block = launch.block;
      block[0] = ir::makeI64(512);
      return std::make_shared<ir::Launch>(launch.kernel, launch.grid, block, launch.buffers,
                                          launch.scalars, launch.source);
    }
  };
  function.body = WidenBlocks().mutate(function.body);
  auto ptx = codegen::compileToPtx(function, "sm_80");
  REQUIRE(!ptx);
  CHECK(ptx.error().message.find("a barrier inside GPU thread loop") != std::string::npos);
}

TEST_CASE("module files round-trip and reject what they are not") {
  auto loaded = test::loadFile(test::sourcePath("samples/sum_max.loop"));
  REQUIRE(loaded->program);
  ir::Function function =
      test::compiledKernel(*loaded->program, *loaded->program->findKernel("sum_and_max"));
  auto ptx = codegen::compileToPtx(function, "sm_80");
  REQUIRE(ptx);
  codegen::ModuleFile module = codegen::describeModule(function, "sm_80", *ptx, loaded->sources);
  REQUIRE(module.kernels.size() ==
          2); // the sum and the maximum in one pair (fuse_sibling_reductions)
  CHECK(module.kernels[0].launches.size() == 1);
  CHECK(module.kernels[0].launches[0].block == std::vector<std::string>{"256", "1", "1"});
  CHECK(module.kernels[0].source.find("sum_max.loop:") != std::string::npos);
  CHECK(module.parameters.front().shape == std::vector<std::string>{"N"});
  CHECK(module.hostProgram.find("launch sum_and_max_kernel0") != std::string::npos);

  auto parsed = codegen::parseModule(codegen::serializeModule(module));
  REQUIRE_MESSAGE(parsed, (parsed ? "" : parsed.error().message));
  CHECK(*parsed == module);

  CHECK(!codegen::parseModule("not json"));
  CHECK(!codegen::parseModule(R"({"format": "something else"})"));
  auto newer = codegen::parseModule(R"({"format": "loopc-module", "version": 99})");
  REQUIRE(!newer);
  CHECK(newer.error().message.find("version 99") != std::string::npos);
}

TEST_CASE("loopc compile emits PTX, NVPTX LLVM IR and module files") {
  auto ptx = test::runLoopc("compile samples/dot.loop --emit ptx --gpu sm_90");
  CHECK(ptx.exitCode == 0);
  CHECK(ptx.output.find(".target sm_90") != std::string::npos);
  auto llvm = test::runLoopc("compile samples/dot.loop --emit llvm --target gpu");
  CHECK(llvm.exitCode == 0);
  CHECK(llvm.output.find("nvptx64-nvidia-cuda") != std::string::npos);
  auto module = test::runLoopc("compile samples/dot.loop --emit module");
  CHECK(module.exitCode == 0);
  CHECK(codegen::parseModule(module.output));
  auto cpuPtx = test::runLoopc("compile samples/dot.loop --emit ptx --target cpu");
  CHECK(cpuPtx.exitCode == 1);
  CHECK(cpuPtx.output.find("needs --target gpu") != std::string::npos);
  auto badGpu = test::runLoopc("compile samples/dot.loop --emit ptx --gpu sm_7");
  CHECK(badGpu.exitCode == 1);
  CHECK(badGpu.output.find("unknown GPU 'sm_7'") != std::string::npos);
  if (!codegen::findPtxas()) {
    MESSAGE("skipped compile --verbose: ptxas not found");
    return;
  }
  auto verbose = test::runLoopc("compile samples/matmul.loop --emit ptx --verbose -o /dev/null");
  CHECK(verbose.exitCode == 0);
  CHECK(verbose.output.find("ptxas sm_80: matmul_kernel0: ") != std::string::npos);
  CHECK(verbose.output.find(" 0 bytes spill stores") != std::string::npos);
}

TEST_CASE("without libdevice only GPU kernels calling math functions are refused") {
  ScopedEnvironment noLibdevice("LOOPC_LIBDEVICE", "/nonexistent/libdevice.10.bc");
  auto math = test::runLoopc("compile samples/softmax.loop --emit ptx -o /dev/null");
  CHECK(math.exitCode == 1);
  CHECK(math.output.find("the GPU code calls expf, which comes from libdevice in the CUDA toolkit, "
                         "and libdevice cannot be read at '/nonexistent/libdevice.10.bc' (") !=
        std::string::npos);
  CHECK(
      math.output.find("install the CUDA toolkit, or set LOOPC_LIBDEVICE to its libdevice.10.bc") !=
      std::string::npos);
  // The CPU engines and math-free GPU kernels need no part of the toolkit.
  CHECK(test::runLoopc("compile samples/matmul.loop --emit ptx -o /dev/null").exitCode == 0);
  CHECK(test::runLoopc("run samples/softmax.loop --set R=5 --set C=7 --device cpu --check")
            .exitCode == 0);
}

TEST_CASE("loopc run --device gpu without a driver says so") {
  ScopedEnvironment noDriver("LOOPC_CUDA_DRIVER", "/nonexistent/libcuda.so.1");
  auto result = test::runLoopc("run samples/dot.loop --set N=8 --device gpu");
  CHECK(result.exitCode == 1);
  CHECK(result.output.find("device 'gpu' is not available: no CUDA driver") != std::string::npos);
  CHECK(result.output.find("(--device gpu-on-cpu runs the GPU pipeline's kernels on the CPU)") !=
        std::string::npos);
  // The REPL refuses it at the start, not at its first run.
  auto repl = test::runShell("echo :quit | '" + test::loopcBinary() + "' repl --device gpu");
  CHECK(repl.exitCode == 1);
  CHECK(repl.output.find("device 'gpu' is not available") != std::string::npos);
  // The default device falls through to the CPU.
  auto fallback = test::runLoopc("run samples/dot.loop --set N=8");
  CHECK(fallback.exitCode == 0);
  CHECK(fallback.output.find("ran on cpu") != std::string::npos);
}

TEST_CASE("the GPU engine's host program moves reduction cells through the device") {
  const std::string stub = LOOPC_CUDA_STUB;
  // The stand-in driver keeps buffers in host memory and runs no kernel, so
  // what reaches the outputs is the host program's own work: the neutral
  // elements it stores into the reduction cells and copies to the results.
  StubbedGpu gpu(stub);
  auto loaded = test::loadFile(test::sourcePath("samples/sum_max.loop"));
  REQUIRE(loaded->program);
  const KernelDecl &kernel = *loaded->program->findKernel("sum_and_max");
  KernelArgs args = argumentsAt(kernel, {{"N", "1000"}});
  args.params[1].data<float>()[0] = 123.0f; // `out`: zeroed before the run
  RunStats stats = gpu.mustRun(*loaded->program, kernel, args);
  CHECK(args.params[1].data<float>()[0] == 0.0f);
  CHECK(args.params[2].data<float>()[0] == -std::numeric_limits<float>::infinity());
  CHECK(stats.seconds >= 0);
  // Zero-sized grids launch nothing and are no error.
  KernelArgs empty = argumentsAt(kernel, {{"N", "0"}});
  gpu.mustRun(*loaded->program, kernel, empty);
}

TEST_CASE("the GPU engine's host program fuses a multiply-add as the kernels do") {
  // (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24 rounded once, 0 with the product
  // rounded first: host code computes what the interpreter does.
  const std::string stub = LOOPC_CUDA_STUB;
  StubbedGpu gpu(stub);
  auto loaded = test::loadText(R"(
kernel fused(a: f32, b: f32, c: f32, d: f64, s: out f32, t: out f64, u: out f32) {
  s = a * b + c;
  t = d * d - 1.0;
  u = c + a * b;
})");
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const KernelDecl &kernel = *loaded->program->findKernel("fused");
  std::map<std::string, std::string> values = {{"a", "1.000244140625"},
                                               {"b", "1.000244140625"},
                                               {"c", "-1.00048828125"},
                                               {"d", "1.000000000931322574615478515625"}};
  KernelArgs args = argumentsAt(kernel, values);
  gpu.mustRun(*loaded->program, kernel, args);
  KernelArgs reference = argumentsAt(kernel, values);
  Interpreter interpreter;
  REQUIRE(interpreter.run(*loaded->program, kernel, reference));
  CHECK(args.params[4].data<float>()[0] == std::ldexp(1.0f, -24));
  CHECK(args.params[6].data<float>()[0] == std::ldexp(1.0f, -24));
  CHECK(args.params[5].data<double>()[0] == reference.params[5].data<double>()[0]);
  CHECK(args.params[5].data<double>()[0] ==
        std::fma(1.000000000931322574615478515625, 1.000000000931322574615478515625, -1.0));
  for (size_t output : {4, 6})
    CHECK(args.params[output].data<float>()[0] == reference.params[output].data<float>()[0]);

  // Under @fp_contract(off) the product is rounded first: 0.
  auto off = test::loadText(R"(
@fp_contract(off)
kernel unfused(a: f32, b: f32, c: f32, s: out f32) {
  s = a * b + c;
})");
  REQUIRE_MESSAGE(off->program, off->diagnostics);
  const KernelDecl &unfused = *off->program->findKernel("unfused");
  KernelArgs rounded = argumentsAt(
      unfused, {{"a", "1.000244140625"}, {"b", "1.000244140625"}, {"c", "-1.00048828125"}});
  gpu.mustRun(*off->program, unfused, rounded);
  CHECK(rounded.params[3].data<float>()[0] == 0.0f);
}

TEST_CASE("the host program's temporaries are allocated once, not in every run") {
  // dot's host program allocates the reduction cell and the per-block
  // partials; a second run of the same size reuses them (cuMemAlloc in the
  // timed region would cost tens of microseconds, cuMemFree a device wait).
  const std::string stub = LOOPC_CUDA_STUB;
  StubbedGpu gpu(stub);
  StubDriver controls(stub);
  auto loaded = test::loadFile(test::sourcePath("samples/dot.loop"));
  REQUIRE(loaded->program);
  const KernelDecl &kernel = *loaded->program->findKernel("dot");
  auto runOnce = [&](const char *n) {
    KernelArgs args = argumentsAt(kernel, {{"N", n}});
    int before = controls.allocationCount();
    gpu.mustRun(*loaded->program, kernel, args);
    return controls.allocationCount() - before;
  };
  int first = runOnce("100000");
  // x, y, r and the error word each run; the cell and the partials once.
  CHECK(runOnce("100000") == first - 2);
  CHECK(runOnce("100000") == first - 2);
  // Another size: the partials no longer fit and are allocated anew.
  CHECK(runOnce("5000") == first - 1);
}

TEST_CASE("a reduction down 1024 columns of 4096 launches 2^17 threads, not 1024") {
  // Each column stays a thread (map_rows_to_blocks), so split_reductions
  // cuts the columns into 128 parts of 32 rows: 512 blocks of 256 fill an
  // H100's 132 SMs where 4 blocks did; the columns' parfor then combines
  // each column's 128 partials in a block of its own.
  const std::string stub = LOOPC_CUDA_STUB;
  StubbedGpu gpu(stub);
  StubDriver controls(stub);
  auto loaded = test::loadText(R"(
kernel colsum(X: in f32[R][C], s: out f32[C]) {
  parfor c in 0..C {
    s[c] = redomap(+, 0.0, r in 0..R) X[r][c];
  }
}
)");
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const KernelDecl &kernel = *loaded->program->findKernel("colsum");
  KernelArgs args = argumentsAt(kernel, {{"R", "4096"}, {"C", "1024"}});
  gpu.mustRun(*loaded->program, kernel, args);
  REQUIRE(controls.launchCount() == 2);
  auto threads = [&](int launch) {
    const unsigned *geometry = controls.launchGeometry(launch);
    return uint64_t{geometry[0]} * geometry[1] * geometry[2] * geometry[3] * geometry[4] *
           geometry[5];
  };
  CHECK(std::string(controls.launchKernel(0)) == "colsum_kernel0");
  CHECK(threads(0) == 128 * 1024);
  CHECK(std::string(controls.launchKernel(1)) == "colsum_kernel1");
  CHECK(controls.launchGeometry(1)[0] == 1024);
}

TEST_CASE("on a real GPU every sample agrees with the interpreter") {
  auto engine = engine::GpuEngine::create();
  if (!engine) {
    MESSAGE("skipped: no GPU here (" << engine.error().message << ")");
    return;
  }
  Interpreter interpreter;
  Engine *engines[] = {&interpreter, engine->get()};
  for (const char *name : {"dot", "matmul", "sum_max", "softmax", "transpose"}) {
    auto loaded = test::loadFile(test::sourcePath("samples/" + std::string(name) + ".loop"));
    REQUIRE(loaded->program);
    for (const auto &kernel : loaded->program->modules.front()->kernels) {
      ArgumentRequest request;
      for (const auto &param : kernel->params)
        if (!param->isArray() && !param->isMutable())
          request.values[param->name] = "3";
      for (const char *size : {"N", "M", "K", "rows", "cols"})
        request.values.try_emplace(size, "67");
      CAPTURE(kernel->name);
      auto outcome = test::runDifferential(*loaded->program, *kernel, request, engines);
      CHECK_MESSAGE(outcome.agree, outcome.report);
    }
  }
}

TEST_CASE("the GPU engine allocates a globalized private array and passes its extent") {
  // globalize_private_arrays' host program: a host var read into a host let
  // before the launch, the slices allocated, both given to the kernel.
  const std::string stub = LOOPC_CUDA_STUB;
  StubbedGpu gpu(stub);
  StubDriver controls(stub);
  auto loaded = test::loadText(R"(
kernel k(x: in f32[N], y: out f32[N]) {
  var w: i64 = 3;
  w = w + 2;
  parfor i in 0..N {
    var e: f32[w];
    e[w - 1] = x[i];
    y[i] = e[w - 1];
  }
})");
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const KernelDecl &kernel = *loaded->program->modules.front()->kernels.front();
  KernelArgs args = argumentsAt(kernel, {{"N", "300"}});
  gpu.mustRun(*loaded->program, kernel, args);
  ir::Function function = test::compiledKernel(*loaded->program, kernel);
  REQUIRE(function.kernels.size() == 1);
  const ir::KernelFunc &device = function.kernels.front();
  REQUIRE(controls.launchCount() == 1);
  for (size_t i = 0; i < device.buffers.size(); ++i)
    if (device.buffers[i]->name == "e")
      CHECK(controls.value<uint64_t>(0, static_cast<int>(i)) != 0); // allocated
  bool passed = false;
  for (size_t i = 0; i < device.scalars.size(); ++i)
    if (device.scalars[i].name == "e.launch0") {
      CHECK(controls.value<int64_t>(0, static_cast<int>(device.buffers.size() + i)) == 5);
      passed = true;
    }
  CHECK(passed);
}

TEST_CASE("the GPU engine passes each kernel parameter as the kernel's PTX declares it") {
  const std::string stub = LOOPC_CUDA_STUB;
  StubbedGpu gpu(stub);
  StubDriver controls(stub);
  // Every scalar type as a parameter, bool arrays, a kernel-level variable
  // (a host-side cell, passed by value) and a host loop around the parfor.
  auto loaded = test::loadText(R"(
kernel abi(x: in f32[N], flags: in bool[N], y: out f32[N], marks: out bool[N],
           alpha: f32, k: i32, on: bool, big: i64, wide: f64) {
  var s: f32 = alpha;
  s = s * 2.0;
  for t in 0..k {
    parfor i in 0..N {
      y[i] = flags[i] && on ? x[i] * s + f32(t) : f32(big) + f32(wide);
      marks[i] = !flags[i];
    }
  }
})");
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const KernelDecl &kernel = *loaded->program->modules.front()->kernels.front();
  KernelArgs args = argumentsAt(
      kernel,
      {{"N", "10"}, {"alpha", "1.5"}, {"k", "2"}, {"on", "true"}, {"big", "-7"}, {"wide", "0.25"}});
  gpu.mustRun(*loaded->program, kernel, args);

  ir::Function function = test::compiledKernel(*loaded->program, kernel);
  REQUIRE(function.kernels.size() == 1);
  const ir::KernelFunc &device = function.kernels.front();
  REQUIRE(controls.launchCount() == 2); // one launch per step of the host loop
  int errorWord = static_cast<int>(device.buffers.size() + device.scalars.size());
  std::set<uint64_t> addresses;
  for (int launch = 0; launch < 2; ++launch) {
    CAPTURE(launch);
    CHECK(std::string(controls.launchKernel(launch)) == device.name);
    REQUIRE(controls.parameterCount(launch) == errorWord + 1);
    for (int i = 0; i < static_cast<int>(device.buffers.size()); ++i) {
      auto address = controls.value<uint64_t>(launch, i);
      CHECK(address != 0);
      addresses.insert(address);
    }
    for (int i = 0; i < static_cast<int>(device.scalars.size()); ++i) {
      const ir::ScalarParam &scalar = device.scalars[i];
      int index = static_cast<int>(device.buffers.size()) + i;
      CAPTURE(scalar.name);
      CHECK(controls.parameter(launch, index).size() == scalarSize(scalar.type));
      if (scalar.name == "N")
        CHECK(controls.value<int64_t>(launch, index) == 10);
      else if (scalar.name == "on")
        CHECK(controls.value<uint8_t>(launch, index) == 1);
      else if (scalar.name == "t")
        CHECK(controls.value<int32_t>(launch, index) == launch);
      else if (scalar.name == "big")
        CHECK(controls.value<int64_t>(launch, index) == -7);
      else if (scalar.name == "wide")
        CHECK(controls.value<double>(launch, index) == 0.25);
      else if (scalar.name == "s")
        CHECK(controls.value<float>(launch, index) == 3.0f);
      else
        FAIL("unexpected kernel parameter " << scalar.name);
    }
    addresses.insert(controls.value<uint64_t>(launch, errorWord));
  }
  // Four arrays and the error word, each in its own allocation, the same in
  // both launches.
  CHECK(addresses.size() == device.buffers.size() + 1);
  CHECK(device.buffers.size() == 4);
}

TEST_CASE("the GPU engine reports a device error and a kernel's failure at the parfor") {
  const std::string stub = LOOPC_CUDA_STUB;
  StubbedGpu gpu(stub);
  StubDriver controls(stub);
  auto loaded = test::loadText(R"(kernel divide(x: in i32[N], y: out i32[N], d: i32) {
  parfor i in 0..N {
    y[i] = x[i] / d;
  }
})");
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const KernelDecl &kernel = *loaded->program->modules.front()->kernels.front();
  KernelArgs args = argumentsAt(kernel, {{"N", "10"}, {"d", "0"}});

  // The kernel would find d == 0 and record the division's site (id 1).
  controls.setErrorWordOnNextLaunch(1);
  auto divided = gpu.engine->run(*loaded->program, kernel, args);
  REQUIRE(!divided);
  CHECK(divided.error().message == "integer division by zero");
  CHECK(divided.error().range.begin.line == 3);
  REQUIRE(controls.launchCount() == 1);

  // A fault the driver reports at the wait after the launch.
  constexpr int kIllegalAddress = 700; // CUDA_ERROR_ILLEGAL_ADDRESS
  controls.fail("cuCtxSynchronize", kIllegalAddress);
  auto faulted = gpu.engine->run(*loaded->program, kernel, args);
  REQUIRE(!faulted);
  CHECK(faulted.error().message.find("cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS") !=
        std::string::npos);
  CHECK(faulted.error().message.find("divide_kernel0") != std::string::npos);
  CHECK(faulted.error().range.begin.line == 2); // the parfor
}

TEST_CASE("combines are atomics in global and shared memory, compare-and-swap loops for * and "
          "user operators") {
  auto loaded = test::loadText(R"(
assoc fn larger(a: f32, b: f32) -> f32 { return max(a, b); }
kernel updates(x: in f32[N], S: out f32[B], P: inout f64[B], U: inout f32[B], C: out i32[B]) {
  parfor i in 0..N {
    combine(+) S[i % B] = x[i];
    combine(*) P[i % B] = f64(x[i]);
    combine(larger) U[i % B] = x[i];
    combine(max) C[i % B] = i32(i);
  }
})");
  ir::Function function = onlyKernelCompiled(*loaded);
  auto unoptimized = codegen::nvptxLlvmText(function, "sm_80", false);
  REQUIRE(unoptimized);
  // The private copies (shared memory, addrspace 3) and the merges (global).
  CHECK(unoptimized->find("atomicrmw fadd ptr addrspace(3)") != std::string::npos);
  CHECK(unoptimized->find("atomicrmw max ptr addrspace(3)") != std::string::npos);
  CHECK(test::occurrences(*unoptimized, "cmpxchg") >= 2); // * and larger, in the global fallback
  auto ptx = codegen::compileToPtx(function, "sm_80");
  REQUIRE(ptx);
  CHECK(ptx->find("atom.shared.add.f32") != std::string::npos);
  CHECK(ptx->find("atom.global.cas.b64") != std::string::npos);
}
