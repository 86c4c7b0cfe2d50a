// Which Loop IR loops survive LLVM's optimization (see LoopCensus.h).
#include "codegen/LoopCensus.h"

#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/LoopUtils.h>

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

// Whether `instruction` becomes an instruction of its own in PTX: phis are
// register assignments, casts between pointers or of the same width move no
// bits, and an address computed with constant offsets is folded into the
// load or store that uses it.
bool issues(const llvm::Instruction &instruction) {
  if (llvm::isa<llvm::PHINode>(instruction) || llvm::isa<llvm::DbgInfoIntrinsic>(instruction))
    return false;
  if (auto *intrinsic = llvm::dyn_cast<llvm::IntrinsicInst>(&instruction))
    if (intrinsic->isAssumeLikeIntrinsic())
      return false;
  if (llvm::isa<llvm::BitCastInst>(instruction) ||
      llvm::isa<llvm::AddrSpaceCastInst>(instruction) ||
      llvm::isa<llvm::PtrToIntInst>(instruction) || llvm::isa<llvm::IntToPtrInst>(instruction))
    return false;
  if (auto *address = llvm::dyn_cast<llvm::GetElementPtrInst>(&instruction))
    return !address->hasAllConstantIndices();
  if (auto *branch = llvm::dyn_cast<llvm::BranchInst>(&instruction))
    return branch->isConditional();
  return true;
}

// The machine instructions an instruction that issues becomes: one, but a
// 64-bit multiply takes three (the SM multiplies 32-bit halves) and a
// division by a constant that is not a power of two a multiply-high and
// shifts (eight on 64 bits, three on 32), by a variable a routine.
int machineInstructions(const llvm::Instruction &instruction) {
  if (!issues(instruction))
    return 0;
  bool wide = instruction.getType()->isIntegerTy(64);
  switch (instruction.getOpcode()) {
  case llvm::Instruction::Mul:
    return wide ? 3 : 1;
  case llvm::Instruction::UDiv:
  case llvm::Instruction::SDiv:
  case llvm::Instruction::URem:
  case llvm::Instruction::SRem: {
    auto *divisor = llvm::dyn_cast<llvm::ConstantInt>(instruction.getOperand(1));
    if (divisor && divisor->getValue().isPowerOf2())
      return 1;
    if (divisor)
      return wide ? 8 : 3;
    return 20;
  }
  default:
    return 1;
  }
}

// The Loop IR loop a loop's `llvm.loop` properties name (the NVPTX target
// gives each loop {"loopc.loop", name}); empty when none does.
std::string loopName(const llvm::Loop &loop) {
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
    llvm::TargetLibraryInfoImpl libraryInfo(llvm::Triple(module.getTargetTriple()));
    llvm::TargetLibraryInfo library(libraryInfo, &function);
    llvm::AssumptionCache assumptions(function);
    llvm::ScalarEvolution evolution(function, library, assumptions, dominators, loops);
    std::map<std::string, CensusLoop> &kernel = census[function.getName().str()];
    for (llvm::Loop *loop : loops.getLoopsInPreorder()) {
      std::string name = loopName(*loop);
      if (name.empty())
        continue;
      CensusLoop found;
      for (llvm::BasicBlock *block : loop->blocks())
        if (loops.getLoopFor(block) == loop) // not a block of an inner loop
          for (const llvm::Instruction &instruction : *block) {
            found.globalLoads += isGlobalLoad(instruction) ? 1 : 0;
            found.instructions += machineInstructions(instruction);
          }
      // ptxas may unroll the loop only where the latch compares a counter
      // (not where LLVM turned a short loop into a flag it clears) and no
      // `nounroll` pragma (which LLVM's unroll-disable property becomes)
      // forbids it.
      if (loop->getLatchCmpInst() &&
          !llvm::getBooleanLoopAttribute(loop, "llvm.loop.unroll.disable"))
        found.constantTrips = evolution.getSmallConstantTripCount(loop);
      // A run-time unrolled loop's remainder is a loop too, with the same
      // properties: the main loop (the one with the most loads) counts.
      CensusLoop &known = kernel[name];
      if (found.globalLoads > known.globalLoads ||
          (found.globalLoads == known.globalLoads && found.instructions > known.instructions))
        known = found;
    }
  }
  return census;
}

} // namespace loopc::codegen
