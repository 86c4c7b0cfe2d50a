// A libFuzzer harness for the compiler: any bytes, taken as a .loop main
// module, go through the front end and the checker; a program they accept
// is lowered, run through both pass pipelines (the GPU's also with bounds
// checks, whose proofs then run) and emitted as CPU LLVM IR and as NVPTX
// LLVM IR. Bad input must come back as diagnostics or errors, never
// a crash, a sanitizer report, a failed assertion or an internal error (an
// invalid IR caught by the verifier, a code generator's failure): those
// abort, which is what the fuzzer looks for.
//
// Built with libFuzzer (-DLOOPC_FUZZ=ON, clang; scripts/fuzz.sh) it mutates
// a corpus; built without it (fuzz_replay.cpp), the same entry point replays
// files, which the test suite does over tests/fuzz/regressions and the
// samples.
#include "codegen/CpuJit.h"
#include "codegen/NvptxTarget.h"
#include "frontend/Loader.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace {

// Aborts on an internal error: a compiler bug, whatever the input.
void requireNoInternalError(const loopc::Error &error, const char *step) {
  if (error.message.find("internal error") == std::string::npos)
    return;
  std::fprintf(stderr, "fuzz_compile: %s: %s\n", step, error.message.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace loopc;
  SourceManager sources;
  DiagnosticEngine diagnostics(sources);
  std::unique_ptr<Program> program = loadProgramFromText(
      "fuzz.loop", std::string(reinterpret_cast<const char *>(data), size), sources, diagnostics);
  bool accepted = program && checkProgram(*program, diagnostics);
  if (accepted == diagnostics.hasErrors()) {
    std::fprintf(stderr, "fuzz_compile: %s without error diagnostics\n",
                 accepted ? "accepted with errors" : "rejected");
    std::abort();
  }
  if (!accepted)
    return 0;
  for (const auto &kernel : program->modules.front()->kernels) {
    ir::Function lowered = ir::lowerKernel(*program, *kernel);
    for (auto [target, checked] : {std::pair{passes::PipelineTarget::Cpu, false},
                                   std::pair{passes::PipelineTarget::Gpu, false},
                                   std::pair{passes::PipelineTarget::Gpu, true}}) {
      passes::PipelineOptions options;
      options.target = target;
      options.choices.boundsChecks = checked;
      // Remarks on, so what the passes work out to report is fuzzed too.
      passes::Remarks remarks;
      options.remarks = &remarks;
      Expected<ir::Function> function = passes::runPipeline(lowered, options);
      if (!function) {
        requireNoInternalError(function.error(), "pipeline");
        continue;
      }
      Expected<std::string> code = target == passes::PipelineTarget::Cpu
                                       ? codegen::cpuLlvmText(*function, /*optimize=*/false)
                                       : codegen::nvptxLlvmText(*function, "sm_80", false);
      if (!code)
        requireNoInternalError(code.error(), "code generation");
    }
  }
  return 0;
}
