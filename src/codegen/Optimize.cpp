// The O3 pipeline (see Optimize.h).
#include "codegen/Optimize.h"

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/SubtargetFeature.h>

namespace loopc::codegen {

namespace {

// llvm.fmuladd lets the backend fuse or not; x86 fuses only where the CPU has
// FMA. The language promises one rounding (docs/language.md), so for a CPU
// without it (`--cpu x86-64`) every fmuladd becomes llvm.fma, which the
// backend computes exactly (libm's fma where there is no instruction). Done
// after O3, whose vectorizer knows fmuladd reductions (dot products) but not
// llvm.fma.
void keepMultiplyAddsFused(llvm::Module &module, const llvm::TargetMachine &machine) {
  if (!machine.getTargetTriple().isX86() || machine.getMCSubtargetInfo()->checkFeatures("+fma"))
    return;
  std::vector<llvm::IntrinsicInst *> multiplyAdds;
  for (llvm::Function &function : module)
    for (llvm::Instruction &instruction : llvm::instructions(function))
      if (auto *intrinsic = llvm::dyn_cast<llvm::IntrinsicInst>(&instruction);
          intrinsic && intrinsic->getIntrinsicID() == llvm::Intrinsic::fmuladd)
        multiplyAdds.push_back(intrinsic);
  for (llvm::IntrinsicInst *multiplyAdd : multiplyAdds) {
    llvm::Function *fma =
        llvm::Intrinsic::getDeclaration(&module, llvm::Intrinsic::fma, {multiplyAdd->getType()});
    multiplyAdd->setCalledFunction(fma);
  }
}

// A function with more loops than this is left unrolled but where a loop
// asks for it (`llvm.loop.unroll.full`): LLVM's unrollers forget what they
// know of every loop at each unrolling, and a GPU kernel's register tile of
// a body with loops in it, its thread loops emitted for the CPU
// (gpu-on-cpu), made 650 loops that took them many seconds. The largest
// function of the samples and of tests/programs has 60.
constexpr size_t kMostLoopsUnrolled = 256;

size_t mostLoopsInAFunction(llvm::Module &module) {
  size_t most = 0;
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    llvm::DominatorTree dominators(function);
    llvm::LoopInfo loops(dominators);
    most = std::max(most, loops.getLoopsInPreorder().size());
  }
  return most;
}

// The mark preferNoGathers leaves for optimizeModule, which knows the
// target's features a function's own list must repeat.
constexpr const char *kPreferNoGathers = "loopc-prefer-no-gather";

} // namespace

void preferNoGathers(llvm::Function &function) { function.addFnAttr(kPreferNoGathers); }

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                    const OptimizeOptions &options) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PipelineTuningOptions tuning;
  if (options.vectorize) {
    if (machine.getTargetFeatureString().contains("+avx512f"))
      for (llvm::Function &function : module)
        if (!function.isDeclaration())
          function.addFnAttr("prefer-vector-width", "512");
    tuning.LoopVectorization = true;
    tuning.SLPVectorization = true;
  }
  for (llvm::Function &function : module)
    if (function.hasFnAttribute(kPreferNoGathers))
      function.addFnAttr("target-features",
                         machine.getTargetFeatureString().str() + ",+prefer-no-gather");
  if (mostLoopsInAFunction(module) > kMostLoopsUnrolled)
    tuning.LoopUnrolling = false;
  llvm::PassBuilder passes(&machine, tuning);
  if (options.vectorMath) {
    llvm::TargetLibraryInfoImpl library(machine.getTargetTriple());
    library.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86,
                                               machine.getTargetTriple());
    functions.registerPass([library] { return llvm::TargetLibraryAnalysis(library); });
  }
  passes.registerModuleAnalyses(modules);
  passes.registerCGSCCAnalyses(sccs);
  passes.registerFunctionAnalyses(functions);
  passes.registerLoopAnalyses(loops);
  passes.crossRegisterProxies(loops, functions, sccs, modules);
  passes.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, modules);
  keepMultiplyAddsFused(module, machine);
}

void avoidMiscompiledCpuFeatures(llvm::SubtargetFeatures &features) {
  features.AddFeature("avx512bw", false);
}

} // namespace loopc::codegen
