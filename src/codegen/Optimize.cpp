// The O3 pipeline (see Optimize.h).
#include "codegen/Optimize.h"

#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>

namespace loopc::codegen {

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                    const OptimizeOptions &options) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PipelineTuningOptions tuning;
  if (options.vectorize) {
    tuning.LoopVectorization = true;
    tuning.SLPVectorization = true;
  }
  llvm::PassBuilder passes(&machine, tuning);
  passes.registerModuleAnalyses(modules);
  passes.registerCGSCCAnalyses(sccs);
  passes.registerFunctionAnalyses(functions);
  passes.registerLoopAnalyses(loops);
  passes.crossRegisterProxies(loops, functions, sccs, modules);
  passes.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, modules);
}

} // namespace loopc::codegen
