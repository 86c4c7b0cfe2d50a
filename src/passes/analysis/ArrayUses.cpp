// Whole writes and uses of arrays (see ArrayUses.h).
#include "passes/analysis/ArrayUses.h"

#include <algorithm>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

bool isVarNamed(const Expr &expr, const std::string &name) {
  const auto *var = expr->as<Var>();
  return var && var->name == name;
}

// A store to `array` that every run of a body makes: one at its top level,
// under lets and allocations but no branch or loop.
const Store *unconditionalStore(const StmtNode *node, const BufferInfo *array) {
  if (!node)
    return nullptr;
  switch (node->kind) {
  case StmtNode::Kind::Store:
    return node->as<Store>()->buffer.get() == array ? node->as<Store>() : nullptr;
  case StmtNode::Kind::LetStmt:
    return unconditionalStore(node->as<LetStmt>()->body.get(), array);
  case StmtNode::Kind::Allocate:
    return unconditionalStore(node->as<Allocate>()->body.get(), array);
  case StmtNode::Kind::Block:
    for (const Stmt &stmt : node->as<Block>()->stmts)
      if (const Store *store = unconditionalStore(stmt.get(), array))
        return store;
    return nullptr;
  default:
    return nullptr;
  }
}

class WrittenArrays : public IRVisitor {
public:
  std::set<const BufferInfo *> arrays;

protected:
  void visitStore(const Store &node) override {
    arrays.insert(node.buffer.get());
    IRVisitor::visitStore(node);
  }
  void visitAtomicUpdate(const AtomicUpdate &node) override {
    arrays.insert(node.buffer.get());
    IRVisitor::visitAtomicUpdate(node);
  }
  void visitReduce(const Reduce &node) override {
    arrays.insert(node.accumulator.get());
    IRVisitor::visitReduce(node);
  }
  void visitScan(const Scan &node) override {
    arrays.insert(node.target.get());
    IRVisitor::visitScan(node);
  }
  void visitWarpShuffle(const WarpShuffle &node) override {
    arrays.insert(node.target.get());
    IRVisitor::visitWarpShuffle(node);
  }
  void visitAsyncCopy(const AsyncCopy &node) override {
    arrays.insert(node.target.get());
    IRVisitor::visitAsyncCopy(node);
  }
};

} // namespace

std::set<const BufferInfo *> writtenArrays(const Stmt &stmt) {
  WrittenArrays written;
  written.visit(stmt);
  return std::move(written.arrays);
}

bool isZeroConstant(const Expr &value) {
  if (const auto *integer = value->as<IntImm>())
    return integer->value == 0;
  if (const auto *real = value->as<FloatImm>())
    return real->value == 0.0;
  if (const auto *truth = value->as<BoolImm>())
    return !truth->value;
  return false;
}

std::optional<FullWrite> fullWrite(const Stmt &stmt, const BufferInfo *array) {
  FullWrite write;
  std::vector<const For *> loops;
  const StmtNode *node = skipSingletonBlocks(stmt);
  while (node && node->kind == StmtNode::Kind::For) {
    const For &loop = *node->as<For>();
    if (loop.forKind != ForKind::Parallel || !isZeroConstant(loop.min))
      return std::nullopt;
    loops.push_back(&loop);
    write.loopVars.push_back(loop.var);
    node = skipSingletonBlocks(loop.body);
  }
  const StmtNode *body = node;
  while (node && node->kind == StmtNode::Kind::LetStmt) {
    const LetStmt &let = *node->as<LetStmt>();
    write.lets.emplace_back(let.var, let.value);
    node = skipSingletonBlocks(let.body);
  }
  write.isExpression = node && node->kind == StmtNode::Kind::Store &&
                       (!array || node->as<Store>()->buffer.get() == array);
  if (write.isExpression) {
    write.store = node->as<Store>();
  } else {
    write.lets.clear();
    write.store = array ? unconditionalStore(body, array) : nullptr;
  }
  if (!write.store)
    return std::nullopt;
  const BufferInfo &written = *write.store->buffer;
  if (written.memory != MemorySpace::Global || written.shape.empty() ||
      loops.size() != written.shape.size())
    return std::nullopt;
  for (size_t dim = 0; dim < loops.size(); ++dim)
    if (!isVarNamed(write.store->indices[dim], loops[dim]->var) ||
        !sameExpr(loops[dim]->extent, written.shape[dim]))
      return std::nullopt;
  return write;
}

void ArrayUses::visitLoad(const Load &node) {
  if (node.buffer.get() == array_)
    reads.push_back({&node, loopVars_, serialDepth_ > 0, binders_});
  IRVisitor::visitLoad(node);
}

void ArrayUses::visitFor(const For &node) {
  visit(node.min);
  visit(node.extent);
  bool parallel = node.forKind == ForKind::Parallel;
  if (parallel)
    loopVars_.push_back(node.var);
  else
    ++serialDepth_;
  binders_.insert(node.var);
  visit(node.body);
  if (parallel)
    loopVars_.pop_back();
  else
    --serialDepth_;
}

void ArrayUses::visitLetStmt(const LetStmt &node) {
  visit(node.value);
  binders_.insert(node.var);
  visit(node.body);
}

void ArrayUses::visitReduce(const Reduce &node) {
  countWrite(*node.accumulator);
  for (const Expr &index : node.indices)
    visit(index);
  visit(node.neutral);
  for (const Reduce::Loop &loop : node.loops) {
    visit(loop.min);
    visit(loop.extent);
    loopVars_.push_back(loop.var);
    binders_.insert(loop.var);
  }
  visit(node.valueSetup);
  visit(node.value);
  loopVars_.resize(loopVars_.size() - node.loops.size());
}

void ArrayUses::visitScan(const Scan &node) {
  countWrite(*node.target);
  ++serialDepth_; // a scan's value may be computed more than once
  IRVisitor::visitScan(node);
  --serialDepth_;
}

void ArrayUses::visitStore(const Store &node) {
  countWrite(*node.buffer);
  IRVisitor::visitStore(node);
}

void ArrayUses::visitAtomicUpdate(const AtomicUpdate &node) {
  countWrite(*node.buffer);
  IRVisitor::visitAtomicUpdate(node);
}

void ArrayUses::visitLaunch(const Launch &node) {
  for (const Buffer &buffer : node.buffers)
    countWrite(*buffer);
  IRVisitor::visitLaunch(node);
}

void ArrayUses::countWrite(const BufferInfo &buffer) {
  if (&buffer == array_)
    ++writes;
}

} // namespace loopc::passes
