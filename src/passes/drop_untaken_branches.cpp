// drop_untaken_branches: a kernel compiled for one run keeps only the host
// branches that run. Passes leave the host a choice between versions they
// cannot make without the sizes (split_reductions' parts, map_rows_to_blocks'
// block per row, tile_registers' tile size), and a program may test its
// sizes itself; each version is a kernel to compile. An engine compiles for
// the sizes of a run (PipelineOptions::runSizes), so a host condition of
// those sizes alone, through the lets around it, is known then: the branch
// not taken goes before its kernels are extracted and compiled, and the
// condition with its outcome goes to Function::sizeChoices, which the
// engine's cache checks before it reuses the code for other sizes
// (CompiledKernelCache). Declines, leaving the branch, where the condition
// reads anything else: a host loop's variable, a scalar argument, a value in
// memory. Host code only: inside a kernel a condition may read the thread's
// indices.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/Evaluate.h"

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

class UntakenBranches : public LetTrackingMutator {
public:
  explicit UntakenBranches(const std::map<std::string, int64_t> &runSizes) : runSizes_(runSizes) {}

  std::vector<Function::SizeChoice> choices;

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::Serial)
      return self; // a kernel, or code inside one
    return LetTrackingMutator::visitFor(node, self);
  }

  Stmt visitIfThenElse(const IfThenElse &node, const Stmt &self) override {
    Expr condition = resolved(node.cond);
    std::optional<int64_t> value = evaluateInteger(*condition, runSizes_);
    if (!value)
      return LetTrackingMutator::visitIfThenElse(node, self);
    if (!freeVars(condition).empty())
      choices.push_back({condition, *value != 0});
    if (*value != 0)
      return mutate(node.thenCase);
    return node.elseCase ? mutate(node.elseCase) : makeBlock({});
  }

private:
  const std::map<std::string, int64_t> &runSizes_;
};

} // namespace

Function dropUntakenBranches(Function function, const std::map<std::string, int64_t> &runSizes) {
  if (runSizes.empty())
    return function;
  UntakenBranches dropper(runSizes);
  function.body = dropper.mutate(function.body);
  std::ranges::move(dropper.choices, std::back_inserter(function.sizeChoices));
  return function;
}

} // namespace loopc::passes
