// Which Loop IR loops survive LLVM's optimization (see LoopCensus.h).
#include "codegen/LoopCensus.h"

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Instructions.h>

namespace loopc::codegen {

namespace {

// NVPTX's generic address space, where a kernel's array parameters are
// read (shared memory is addrspace(3), a thread's stack an alloca).
constexpr unsigned kGenericAddressSpace = 0;

bool isGlobalLoad(const llvm::Instruction &instruction) {
  auto *load = llvm::dyn_cast<llvm::LoadInst>(&instruction);
  return load && load->getPointerAddressSpace() == kGenericAddressSpace &&
         !llvm::isa<llvm::AllocaInst>(load->getPointerOperand()->stripInBoundsOffsets());
}

// The Loop IR variable a loop's `llvm.loop` properties name (the NVPTX
// target gives each loop {"loopc.loop", name}); empty when none does.
std::string loopVariable(const llvm::Loop &loop) {
  llvm::MDNode *id = loop.getLoopID();
  if (!id)
    return "";
  for (unsigned i = 1; i < id->getNumOperands(); ++i) {
    auto *property = llvm::dyn_cast<llvm::MDNode>(id->getOperand(i));
    if (!property || property->getNumOperands() != 2)
      continue;
    auto *key = llvm::dyn_cast<llvm::MDString>(property->getOperand(0));
    auto *value = llvm::dyn_cast<llvm::MDString>(property->getOperand(1));
    if (key && value && key->getString() == "loopc.loop")
      return value->getString().str();
  }
  return "";
}

} // namespace

LoopCensus censusLoops(llvm::Module &module) {
  LoopCensus census;
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    llvm::DominatorTree dominators(function);
    llvm::LoopInfo loops(dominators);
    std::map<std::string, int> &kernel = census[function.getName().str()];
    for (llvm::Loop *loop : loops.getLoopsInPreorder()) {
      std::string variable = loopVariable(*loop);
      if (variable.empty())
        continue;
      int globalLoads = 0;
      for (llvm::BasicBlock *block : loop->blocks())
        if (loops.getLoopFor(block) == loop) // not a block of an inner loop
          for (const llvm::Instruction &instruction : *block)
            globalLoads += isGlobalLoad(instruction) ? 1 : 0;
      // A run-time unrolled loop's remainder is a loop too, with the same
      // properties: the main loop's loads count.
      kernel[variable] = std::max(kernel[variable], globalLoads);
    }
  }
  return census;
}

} // namespace loopc::codegen
