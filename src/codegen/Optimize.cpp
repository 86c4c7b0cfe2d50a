// The O3 pipeline (see Optimize.h).
#include "codegen/Optimize.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/SubtargetFeature.h>

namespace loopc::codegen {

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
}

void avoidMiscompiledCpuFeatures(llvm::SubtargetFeatures &features) {
  features.AddFeature("avx512bw", false);
}

} // namespace loopc::codegen
