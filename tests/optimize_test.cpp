// codegen::optimizeModule: the O3 pipeline's guard against compile-time
// blowups (a function of many loops is unrolled only where a loop asks).
#include "codegen/Optimize.h"

#include <doctest/doctest.h>

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

namespace {

// A function of `count` loops one after the other, each of 4 constant
// trips storing into its own element of %out: loops LLVM unrolls whole. The
// first asks for it (`llvm.loop.unroll.full`), as an Unrolled loop does.
std::string functionOfLoops(int count) {
  std::string text = "define void @loops(ptr noalias %out) {\nentry:\n  br label %l0\n";
  for (int l = 0; l < count; ++l) {
    std::string n = std::to_string(l), next = "l" + std::to_string(l + 1);
    std::string exit = l + 1 == count ? "done" : next;
    text += "l" + n + ":\n  %i" + n + " = phi i64 [ 0, %" +
            (l == 0 ? "entry" : "l" + std::to_string(l - 1)) + " ], [ %n" + n + ", %l" + n + " ]\n";
    text += "  %p" + n + " = getelementptr float, ptr %out, i64 %i" + n + "\n";
    text += "  %v" + n + " = load volatile float, ptr %p" + n + "\n";
    text += "  %w" + n + " = fadd float %v" + n + ", 1.0\n";
    text += "  store volatile float %w" + n + ", ptr %p" + n + "\n";
    text += "  %n" + n + " = add i64 %i" + n + ", 1\n";
    text += "  %c" + n + " = icmp slt i64 %n" + n + ", 4\n";
    text += "  br i1 %c" + n + ", label %l" + n + ", label %" + exit +
            (l == 0 ? ", !llvm.loop !0" : "") + "\n";
  }
  text += "done:\n  ret void\n}\n!0 = distinct !{!0, !1}\n!1 = !{!\"llvm.loop.unroll.full\"}\n";
  return text;
}

// The loops of @loops after optimizeModule, and whether the first, which
// asked to be unrolled, was.
size_t loopsLeft(int count) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext context;
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> module =
      llvm::parseAssemblyString(functionOfLoops(count), error, context);
  REQUIRE_MESSAGE(module, error.getMessage().str());
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  REQUIRE(builder);
  auto machine = builder->createTargetMachine();
  REQUIRE(machine);
  module->setDataLayout((*machine)->createDataLayout());
  loopc::codegen::optimizeModule(*module, **machine, {.vectorize = true});
  llvm::Function &function = *module->getFunction("loops");
  llvm::DominatorTree dominators(function);
  llvm::LoopInfo loops(dominators);
  return loops.getLoopsInPreorder().size();
}

} // namespace

TEST_CASE("a function of a few loops is unrolled, one of hundreds only where a loop asks") {
  CHECK(loopsLeft(8) == 0);
  // 300 loops: all but the one marked for full unrolling stay loops.
  CHECK(loopsLeft(300) == 299);
}
