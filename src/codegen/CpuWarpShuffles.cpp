// Warp shuffles as exchanges through shared memory (see CpuWarpShuffles.h).
#include "codegen/CpuWarpShuffles.h"

#include "ir/IRVisitor.h"

#include <map>

namespace loopc::codegen {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

Expr binary(BinaryOpKind op, Expr lhs, Expr rhs) {
  return makeBinary(op, std::move(lhs), std::move(rhs));
}

class ShuffleExchanger : public IRMutator {
protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::GpuThread || thread_)
      return IRMutator::visitFor(node, self);
    // The outermost thread loop: the block's thread index over its chain of
    // thread loops, and the scratch buffers around it.
    Expr index = makeI64(0), count = makeI64(1);
    std::vector<const For *> chain;
    for (const StmtNode *loop = &node;
         loop && loop->as<For>() && loop->as<For>()->forKind == ForKind::GpuThread;
         loop = loop->as<For>()->body.get())
      chain.push_back(loop->as<For>());
    std::map<int, const For *> byDimension;
    for (const For *loop : chain)
      byDimension[loop->gpuDim] = loop;
    for (auto it = byDimension.rbegin(); it != byDimension.rend(); ++it) {
      const For &loop = *it->second;
      Expr position =
          binary(BinaryOpKind::Sub, castTo(ScalarType::I64, makeVar(loop.min->type, loop.var)),
                 castTo(ScalarType::I64, loop.min));
      Expr extent = castTo(ScalarType::I64, loop.extent);
      index = binary(BinaryOpKind::Add, binary(BinaryOpKind::Mul, index, extent), position);
      count = binary(BinaryOpKind::Mul, count, extent);
    }
    thread_ = index;
    threads_ = count;
    scratch_.clear();
    Stmt result = IRMutator::visitFor(node, self);
    for (const auto &[type, buffer] : scratch_)
      result = std::make_shared<Allocate>(buffer, result);
    thread_ = nullptr;
    return result;
  }

  Stmt visitWarpShuffle(const WarpShuffle &node, const Stmt &) override {
    ScalarType type = node.value->type;
    Buffer &scratch = scratch_[type];
    if (!scratch) {
      scratch = std::make_shared<BufferInfo>();
      scratch->name = std::string("shuffle.") + scalarTypeName(type);
      scratch->element = type;
      scratch->shape = {threads_};
      scratch->memory = MemorySpace::Shared;
      scratch->isWritten = true;
    }
    // thread ^ laneMask, for a power of two: up when that bit is clear.
    Expr mask = makeI64(node.laneMask);
    Expr bitClear =
        binary(BinaryOpKind::Eq,
               binary(BinaryOpKind::Rem, binary(BinaryOpKind::Div, thread_, mask), makeI64(2)),
               makeI64(0));
    Expr partner = select(bitClear, binary(BinaryOpKind::Add, thread_, mask),
                          binary(BinaryOpKind::Sub, thread_, mask));
    return makeBlock(
        {std::make_shared<Store>(scratch, std::vector<Expr>{thread_}, node.value),
         std::make_shared<Barrier>(),
         std::make_shared<Store>(node.target, std::vector<Expr>{},
                                 std::make_shared<Load>(scratch, std::vector<Expr>{partner})),
         std::make_shared<Barrier>()});
  }

private:
  Expr thread_, threads_;
  std::map<ScalarType, Buffer> scratch_;
};

} // namespace

Function exchangeShufflesThroughShared(Function function) {
  for (KernelFunc &kernel : function.kernels)
    kernel.body = ShuffleExchanger().mutate(kernel.body);
  return function;
}

} // namespace loopc::codegen
