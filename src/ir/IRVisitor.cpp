// The shared traversal bases (IRVisitor.h) and the generic rewrites on them.
#include "ir/IRVisitor.h"

#include <algorithm>

namespace loopc::ir {

// ------------------------------------------------------------- IRVisitor ---

void IRVisitor::visit(const Expr &expr) {
  if (!expr || finished())
    return;
  switch (expr->kind) {
  case ExprNode::Kind::IntImm:
    return visitIntImm(*expr->as<IntImm>());
  case ExprNode::Kind::FloatImm:
    return visitFloatImm(*expr->as<FloatImm>());
  case ExprNode::Kind::BoolImm:
    return visitBoolImm(*expr->as<BoolImm>());
  case ExprNode::Kind::Var:
    return visitVar(*expr->as<Var>());
  case ExprNode::Kind::Load:
    return visitLoad(*expr->as<Load>());
  case ExprNode::Kind::Unary:
    return visitUnary(*expr->as<Unary>());
  case ExprNode::Kind::Binary:
    return visitBinary(*expr->as<Binary>());
  case ExprNode::Kind::Select:
    return visitSelect(*expr->as<Select>());
  case ExprNode::Kind::Cast:
    return visitCast(*expr->as<Cast>());
  case ExprNode::Kind::Call:
    return visitCall(*expr->as<Call>());
  }
}

void IRVisitor::visit(const Stmt &stmt) {
  if (!stmt || finished())
    return;
  switch (stmt->kind) {
  case StmtNode::Kind::For:
    return visitFor(*stmt->as<For>());
  case StmtNode::Kind::IfThenElse:
    return visitIfThenElse(*stmt->as<IfThenElse>());
  case StmtNode::Kind::LetStmt:
    return visitLetStmt(*stmt->as<LetStmt>());
  case StmtNode::Kind::Store:
    return visitStore(*stmt->as<Store>());
  case StmtNode::Kind::Allocate:
    return visitAllocate(*stmt->as<Allocate>());
  case StmtNode::Kind::Barrier:
    return visitBarrier(*stmt->as<Barrier>());
  case StmtNode::Kind::WarpShuffle:
    return visitWarpShuffle(*stmt->as<WarpShuffle>());
  case StmtNode::Kind::AsyncCopy:
    return visitAsyncCopy(*stmt->as<AsyncCopy>());
  case StmtNode::Kind::AsyncCommit:
    return visitAsyncCommit(*stmt->as<AsyncCommit>());
  case StmtNode::Kind::AsyncWait:
    return visitAsyncWait(*stmt->as<AsyncWait>());
  case StmtNode::Kind::Check:
    return visitCheck(*stmt->as<Check>());
  case StmtNode::Kind::Block:
    return visitBlock(*stmt->as<Block>());
  case StmtNode::Kind::Reduce:
    return visitReduce(*stmt->as<Reduce>());
  case StmtNode::Kind::Scan:
    return visitScan(*stmt->as<Scan>());
  case StmtNode::Kind::AtomicUpdate:
    return visitAtomicUpdate(*stmt->as<AtomicUpdate>());
  case StmtNode::Kind::Launch:
    return visitLaunch(*stmt->as<Launch>());
  }
}

void IRVisitor::visitLoad(const Load &node) {
  for (const Expr &index : node.indices)
    visit(index);
}
void IRVisitor::visitUnary(const Unary &node) { visit(node.operand); }
void IRVisitor::visitBinary(const Binary &node) {
  visit(node.lhs);
  visit(node.rhs);
}
void IRVisitor::visitSelect(const Select &node) {
  visit(node.cond);
  visit(node.thenValue);
  visit(node.elseValue);
}
void IRVisitor::visitCast(const Cast &node) { visit(node.operand); }
void IRVisitor::visitCall(const Call &node) {
  for (const Expr &arg : node.args)
    visit(arg);
}

void IRVisitor::visitFor(const For &node) {
  visit(node.min);
  visit(node.extent);
  visit(node.body);
}
void IRVisitor::visitIfThenElse(const IfThenElse &node) {
  visit(node.cond);
  visit(node.thenCase);
  visit(node.elseCase);
}
void IRVisitor::visitLetStmt(const LetStmt &node) {
  visit(node.value);
  visit(node.body);
}
void IRVisitor::visitStore(const Store &node) {
  for (const Expr &index : node.indices)
    visit(index);
  visit(node.value);
}
void IRVisitor::visitWarpShuffle(const WarpShuffle &node) { visit(node.value); }
void IRVisitor::visitAsyncCopy(const AsyncCopy &node) {
  for (const Expr &index : node.targetIndices)
    visit(index);
  for (const Expr &index : node.sourceIndices)
    visit(index);
  visit(node.valid);
}
void IRVisitor::visitCheck(const Check &node) {
  visit(node.condition);
  for (const Expr &value : node.values)
    visit(value);
}
void IRVisitor::visitAllocate(const Allocate &node) {
  for (const Expr &extent : node.buffer->shape)
    visit(extent);
  visit(node.body);
}
void IRVisitor::visitBlock(const Block &node) {
  for (const Stmt &stmt : node.stmts)
    visit(stmt);
}
void IRVisitor::visitReduce(const Reduce &node) {
  for (const Expr &index : node.indices)
    visit(index);
  visit(node.neutral);
  visit(node.op.combine);
  for (const Reduce::Loop &loop : node.loops) {
    visit(loop.min);
    visit(loop.extent);
  }
  visit(node.valueSetup);
  visit(node.value);
}
void IRVisitor::visitScan(const Scan &node) {
  visit(node.neutral);
  visit(node.loop.min);
  visit(node.loop.extent);
  visit(node.valueSetup);
  for (const Expr &index : node.indices)
    visit(index);
  visit(node.value);
}
// The operator's combining expression is closed (a function of its two
// operands), so traversals of the surrounding code do not enter it.
void IRVisitor::visitAtomicUpdate(const AtomicUpdate &node) {
  for (const Expr &index : node.indices)
    visit(index);
  visit(node.value);
}
void IRVisitor::visitLaunch(const Launch &node) {
  for (const Expr &extent : node.grid)
    visit(extent);
  for (const Expr &extent : node.block)
    visit(extent);
  for (const Expr &scalar : node.scalars)
    visit(scalar);
}

// ------------------------------------------------------------- IRMutator ---

Expr IRMutator::mutate(const Expr &expr) {
  if (!expr)
    return expr;
  switch (expr->kind) {
  case ExprNode::Kind::IntImm:
    return visitIntImm(*expr->as<IntImm>(), expr);
  case ExprNode::Kind::FloatImm:
    return visitFloatImm(*expr->as<FloatImm>(), expr);
  case ExprNode::Kind::BoolImm:
    return visitBoolImm(*expr->as<BoolImm>(), expr);
  case ExprNode::Kind::Var:
    return visitVar(*expr->as<Var>(), expr);
  case ExprNode::Kind::Load:
    return visitLoad(*expr->as<Load>(), expr);
  case ExprNode::Kind::Unary:
    return visitUnary(*expr->as<Unary>(), expr);
  case ExprNode::Kind::Binary:
    return visitBinary(*expr->as<Binary>(), expr);
  case ExprNode::Kind::Select:
    return visitSelect(*expr->as<Select>(), expr);
  case ExprNode::Kind::Cast:
    return visitCast(*expr->as<Cast>(), expr);
  case ExprNode::Kind::Call:
    return visitCall(*expr->as<Call>(), expr);
  }
  return expr;
}

Stmt IRMutator::mutate(const Stmt &stmt) {
  if (!stmt)
    return stmt;
  switch (stmt->kind) {
  case StmtNode::Kind::For:
    return visitFor(*stmt->as<For>(), stmt);
  case StmtNode::Kind::IfThenElse:
    return visitIfThenElse(*stmt->as<IfThenElse>(), stmt);
  case StmtNode::Kind::LetStmt:
    return visitLetStmt(*stmt->as<LetStmt>(), stmt);
  case StmtNode::Kind::Store:
    return visitStore(*stmt->as<Store>(), stmt);
  case StmtNode::Kind::Allocate:
    return visitAllocate(*stmt->as<Allocate>(), stmt);
  case StmtNode::Kind::Barrier:
    return visitBarrier(*stmt->as<Barrier>(), stmt);
  case StmtNode::Kind::WarpShuffle:
    return visitWarpShuffle(*stmt->as<WarpShuffle>(), stmt);
  case StmtNode::Kind::AsyncCopy:
    return visitAsyncCopy(*stmt->as<AsyncCopy>(), stmt);
  case StmtNode::Kind::AsyncCommit:
    return visitAsyncCommit(*stmt->as<AsyncCommit>(), stmt);
  case StmtNode::Kind::AsyncWait:
    return visitAsyncWait(*stmt->as<AsyncWait>(), stmt);
  case StmtNode::Kind::Check:
    return visitCheck(*stmt->as<Check>(), stmt);
  case StmtNode::Kind::Block:
    return visitBlock(*stmt->as<Block>(), stmt);
  case StmtNode::Kind::Reduce:
    return visitReduce(*stmt->as<Reduce>(), stmt);
  case StmtNode::Kind::Scan:
    return visitScan(*stmt->as<Scan>(), stmt);
  case StmtNode::Kind::AtomicUpdate:
    return visitAtomicUpdate(*stmt->as<AtomicUpdate>(), stmt);
  case StmtNode::Kind::Launch:
    return visitLaunch(*stmt->as<Launch>(), stmt);
  }
  return stmt;
}

bool IRMutator::mutateAll(const std::vector<Expr> &in, std::vector<Expr> &out) {
  bool changed = false;
  out.clear();
  out.reserve(in.size());
  for (const Expr &expr : in) {
    out.push_back(mutate(expr));
    changed |= out.back() != expr;
  }
  return changed;
}

Expr IRMutator::visitLoad(const Load &node, const Expr &self) {
  std::vector<Expr> indices;
  if (!mutateAll(node.indices, indices))
    return self;
  return std::make_shared<Load>(node.buffer, std::move(indices), node.source, node.speculative);
}

Expr IRMutator::visitUnary(const Unary &node, const Expr &self) {
  Expr operand = mutate(node.operand);
  if (operand == node.operand)
    return self;
  return std::make_shared<Unary>(node.op, std::move(operand));
}

Expr IRMutator::visitBinary(const Binary &node, const Expr &self) {
  Expr lhs = mutate(node.lhs);
  Expr rhs = mutate(node.rhs);
  if (lhs == node.lhs && rhs == node.rhs)
    return self;
  return std::make_shared<Binary>(node.op, std::move(lhs), std::move(rhs), node.source);
}

Expr IRMutator::visitSelect(const Select &node, const Expr &self) {
  Expr cond = mutate(node.cond);
  Expr thenValue = mutate(node.thenValue);
  Expr elseValue = mutate(node.elseValue);
  if (cond == node.cond && thenValue == node.thenValue && elseValue == node.elseValue)
    return self;
  return std::make_shared<Select>(std::move(cond), std::move(thenValue), std::move(elseValue));
}

Expr IRMutator::visitCast(const Cast &node, const Expr &self) {
  Expr operand = mutate(node.operand);
  if (operand == node.operand)
    return self;
  return std::make_shared<Cast>(node.type, std::move(operand));
}

Expr IRMutator::visitCall(const Call &node, const Expr &self) {
  std::vector<Expr> args;
  if (!mutateAll(node.args, args))
    return self;
  return std::make_shared<Call>(node.type, node.builtin, std::move(args));
}

Stmt IRMutator::visitFor(const For &node, const Stmt &self) {
  Expr min = mutate(node.min);
  Expr extent = mutate(node.extent);
  Stmt body = mutate(node.body);
  if (min == node.min && extent == node.extent && body == node.body)
    return self;
  return std::make_shared<For>(node.var, std::move(min), std::move(extent), node.forKind,
                               node.gpuDim, std::move(body), node.source);
}

Stmt IRMutator::visitIfThenElse(const IfThenElse &node, const Stmt &self) {
  Expr cond = mutate(node.cond);
  Stmt thenCase = mutate(node.thenCase);
  Stmt elseCase = mutate(node.elseCase);
  if (cond == node.cond && thenCase == node.thenCase && elseCase == node.elseCase)
    return self;
  return std::make_shared<IfThenElse>(std::move(cond), std::move(thenCase), std::move(elseCase));
}

Stmt IRMutator::visitLetStmt(const LetStmt &node, const Stmt &self) {
  Expr value = mutate(node.value);
  Stmt body = mutate(node.body);
  if (value == node.value && body == node.body)
    return self;
  return std::make_shared<LetStmt>(node.var, std::move(value), std::move(body));
}

Stmt IRMutator::visitStore(const Store &node, const Stmt &self) {
  std::vector<Expr> indices;
  bool changed = mutateAll(node.indices, indices);
  Expr value = mutate(node.value);
  std::shared_ptr<const ReductionStep> reduction = node.reduction;
  if (reduction) {
    Expr neutral = mutate(reduction->neutral);
    if (neutral != reduction->neutral)
      reduction = std::make_shared<ReductionStep>(ReductionStep{reduction->op, neutral});
  }
  if (!changed && value == node.value && reduction == node.reduction)
    return self;
  return std::make_shared<Store>(node.buffer, std::move(indices), std::move(value), node.source,
                                 std::move(reduction));
}

Stmt IRMutator::visitWarpShuffle(const WarpShuffle &node, const Stmt &self) {
  Expr value = mutate(node.value);
  if (value == node.value)
    return self;
  return std::make_shared<WarpShuffle>(node.target, std::move(value), node.laneMask);
}

Stmt IRMutator::visitAsyncCopy(const AsyncCopy &node, const Stmt &self) {
  std::vector<Expr> targetIndices, sourceIndices;
  bool changed = mutateAll(node.targetIndices, targetIndices);
  changed = mutateAll(node.sourceIndices, sourceIndices) || changed;
  Expr valid = mutate(node.valid);
  if (!changed && valid == node.valid)
    return self;
  return std::make_shared<AsyncCopy>(node.target, std::move(targetIndices), node.source,
                                     std::move(sourceIndices), node.elements, std::move(valid));
}

Stmt IRMutator::visitCheck(const Check &node, const Stmt &self) {
  Expr condition = mutate(node.condition);
  std::vector<Expr> values;
  bool changed = mutateAll(node.values, values);
  if (condition == node.condition && !changed)
    return self;
  return std::make_shared<Check>(std::move(condition), node.message, std::move(values),
                                 node.source);
}

Stmt IRMutator::visitAllocate(const Allocate &node, const Stmt &self) {
  Stmt body = mutate(node.body);
  if (body == node.body)
    return self;
  return std::make_shared<Allocate>(node.buffer, std::move(body));
}

Stmt IRMutator::visitBlock(const Block &node, const Stmt &self) {
  std::vector<Stmt> stmts;
  bool changed = false;
  for (const Stmt &stmt : node.stmts) {
    stmts.push_back(mutate(stmt));
    changed |= stmts.back() != stmt;
  }
  if (!changed)
    return self;
  return makeBlock(std::move(stmts));
}

Stmt IRMutator::visitReduce(const Reduce &node, const Stmt &self) {
  std::vector<Expr> indices;
  bool changed = mutateAll(node.indices, indices);
  Expr neutral = mutate(node.neutral);
  ReduceOperator op = node.op;
  op.combine = mutate(node.op.combine);
  std::vector<Reduce::Loop> loops;
  for (const Reduce::Loop &loop : node.loops) {
    loops.push_back({loop.var, mutate(loop.min), mutate(loop.extent)});
    changed |= loops.back().min != loop.min || loops.back().extent != loop.extent;
  }
  Stmt valueSetup = mutate(node.valueSetup);
  Expr value = mutate(node.value);
  changed |= neutral != node.neutral || op.combine != node.op.combine ||
             valueSetup != node.valueSetup || value != node.value;
  if (!changed)
    return self;
  return std::make_shared<Reduce>(node.accumulator, std::move(indices), std::move(op),
                                  std::move(neutral), std::move(loops), std::move(valueSetup),
                                  std::move(value), node.source);
}

Stmt IRMutator::visitScan(const Scan &node, const Stmt &self) {
  std::vector<Expr> indices;
  bool changed = mutateAll(node.indices, indices);
  Expr neutral = mutate(node.neutral);
  Reduce::Loop loop{node.loop.var, mutate(node.loop.min), mutate(node.loop.extent)};
  Stmt valueSetup = mutate(node.valueSetup);
  Expr value = mutate(node.value);
  changed |= neutral != node.neutral || loop.min != node.loop.min ||
             loop.extent != node.loop.extent || valueSetup != node.valueSetup ||
             value != node.value;
  if (!changed)
    return self;
  return std::make_shared<Scan>(node.target, std::move(indices), node.op, std::move(neutral),
                                std::move(loop), std::move(valueSetup), std::move(value),
                                node.source, node.targetSource);
}

Stmt IRMutator::visitAtomicUpdate(const AtomicUpdate &node, const Stmt &self) {
  std::vector<Expr> indices;
  bool changed = mutateAll(node.indices, indices);
  Expr value = mutate(node.value);
  if (!changed && value == node.value)
    return self;
  return std::make_shared<AtomicUpdate>(node.buffer, std::move(indices), node.op, std::move(value),
                                        node.source);
}

Stmt IRMutator::visitLaunch(const Launch &node, const Stmt &self) {
  std::vector<Expr> grid, block, scalars;
  bool changed = mutateAll(node.grid, grid);
  changed |= mutateAll(node.block, block);
  changed |= mutateAll(node.scalars, scalars);
  if (!changed)
    return self;
  return std::make_shared<Launch>(node.kernel, std::move(grid), std::move(block), node.buffers,
                                  std::move(scalars), node.source);
}

// ------------------------------------------------------ generic rewrites ---

namespace {

class Substituter : public IRMutator {
public:
  explicit Substituter(const std::map<std::string, Expr> &replacements)
      : replacements_(replacements) {}

protected:
  Expr visitVar(const Var &node, const Expr &self) override {
    auto found = replacements_.find(node.name);
    return found == replacements_.end() ? self : found->second;
  }

private:
  const std::map<std::string, Expr> &replacements_;
};

// Collects variables read outside the scope of their binding.
class FreeVarCollector : public IRVisitor {
public:
  std::set<std::string> free;

protected:
  void visitVar(const Var &node) override {
    if (!bound_.contains(node.name))
      free.insert(node.name);
  }
  void visitFor(const For &node) override {
    visit(node.min);
    visit(node.extent);
    bind(node.var, [&] { visit(node.body); });
  }
  void visitLetStmt(const LetStmt &node) override {
    visit(node.value);
    bind(node.var, [&] { visit(node.body); });
  }
  void visitReduce(const Reduce &node) override {
    for (const Expr &index : node.indices)
      visit(index);
    visit(node.neutral);
    if (node.op.combine) {
      bind(node.op.lhsVar, [&] { bind(node.op.rhsVar, [&] { visit(node.op.combine); }); });
    }
    visitLoops(node, 0);
  }
  void visitScan(const Scan &node) override {
    visit(node.neutral);
    visit(node.loop.min);
    visit(node.loop.extent);
    Stmt write = std::make_shared<Store>(node.target, node.indices, node.value);
    bind(node.loop.var, [&] { visit(appendAtTail(node.valueSetup, write)); });
  }

private:
  template <typename F> void bind(const std::string &name, F &&inside) {
    bound_.insert(name);
    inside();
    bound_.erase(bound_.find(name));
  }
  void visitLoops(const Reduce &node, size_t level) {
    if (level == node.loops.size()) {
      visit(node.valueSetup);
      visit(node.value);
      return;
    }
    visit(node.loops[level].min);
    visit(node.loops[level].extent);
    bind(node.loops[level].var, [&] { visitLoops(node, level + 1); });
  }
  std::multiset<std::string> bound_;
};

} // namespace

Expr substitute(const Expr &expr, const std::map<std::string, Expr> &replacements) {
  if (replacements.empty())
    return expr;
  return Substituter(replacements).mutate(expr);
}

Stmt substitute(const Stmt &stmt, const std::map<std::string, Expr> &replacements) {
  if (replacements.empty())
    return stmt;
  return Substituter(replacements).mutate(stmt);
}

Expr applyOperator(const ReduceOperator &op, Expr lhs, Expr rhs) {
  switch (op.kind) {
  case ReduceOperator::Kind::Add:
    return add(lhs, rhs);
  case ReduceOperator::Kind::Mul:
    return mul(lhs, rhs);
  case ReduceOperator::Kind::Min:
    return minOf(lhs, rhs);
  case ReduceOperator::Kind::Max:
    return maxOf(lhs, rhs);
  case ReduceOperator::Kind::And:
    return logicalAnd(lhs, rhs);
  case ReduceOperator::Kind::Or:
    return logicalOr(lhs, rhs);
  case ReduceOperator::Kind::User:
    return substitute(op.combine, {{op.lhsVar, lhs}, {op.rhsVar, rhs}});
  }
  return lhs;
}

std::set<std::string> freeVars(const Expr &expr) {
  FreeVarCollector collector;
  collector.visit(expr);
  return std::move(collector.free);
}

std::set<std::string> freeVars(const Stmt &stmt) {
  FreeVarCollector collector;
  collector.visit(stmt);
  return std::move(collector.free);
}

std::set<std::string> boundNames(const Stmt &stmt) {
  class Binder : public IRVisitor {
  public:
    std::set<std::string> names;

  protected:
    void visitFor(const For &node) override {
      names.insert(node.var);
      IRVisitor::visitFor(node);
    }
    void visitLetStmt(const LetStmt &node) override {
      names.insert(node.var);
      IRVisitor::visitLetStmt(node);
    }
    void visitReduce(const Reduce &node) override {
      for (const Reduce::Loop &loop : node.loops)
        names.insert(loop.var);
      IRVisitor::visitReduce(node);
    }
    void visitScan(const Scan &node) override {
      names.insert(node.loop.var);
      IRVisitor::visitScan(node);
    }
  } binder;
  binder.visit(stmt);
  return std::move(binder.names);
}

Expr substituteLets(Expr expr, const std::map<std::string, Expr> &lets) {
  // Lets bind each name once and only earlier names: this ends.
  for (;;) {
    std::set<std::string> free = freeVars(expr);
    if (std::ranges::none_of(free, [&](const std::string &name) { return lets.contains(name); }))
      return expr;
    expr = substitute(expr, lets);
  }
}

bool mentionsVar(const Stmt &stmt, const std::string &name) {
  class Finder : public IRVisitor {
  public:
    explicit Finder(const std::string &name) : name_(name) {}
    bool found = false;

  protected:
    bool finished() const override { return found; }
    void visitVar(const Var &node) override { found |= node.name == name_; }

  private:
    const std::string &name_;
  } finder(name);
  finder.visit(stmt);
  return finder.found;
}

bool callsMathRoutine(const Stmt &stmt) {
  class Finder : public IRVisitor {
  public:
    bool found = false;

  protected:
    bool finished() const override { return found; }
    void visitCall(const Call &node) override {
      found |= node.isMathRoutine();
      IRVisitor::visitCall(node);
    }
  } finder;
  finder.visit(stmt);
  return finder.found;
}

bool usesAnyVar(const Expr &expr, const std::set<std::string> &names) {
  for (const std::string &name : freeVars(expr))
    if (names.contains(name))
      return true;
  return false;
}

std::set<const BufferInfo *> buffersRead(const Expr &expr) {
  class Reads : public IRVisitor {
  public:
    std::set<const BufferInfo *> buffers;

  protected:
    void visitLoad(const Load &node) override {
      buffers.insert(node.buffer.get());
      IRVisitor::visitLoad(node);
    }
  } reads;
  reads.visit(expr);
  return reads.buffers;
}

Stmt retargetAccesses(const Stmt &stmt, const Buffer &from, const Buffer &to,
                      const std::function<std::vector<Expr>(std::vector<Expr>)> &reindex) {
  class Retarget : public IRMutator {
  public:
    Retarget(const Buffer &from, const Buffer &to,
             const std::function<std::vector<Expr>(std::vector<Expr>)> &reindex)
        : from_(from), to_(to), reindex_(reindex) {}

  protected:
    Expr visitLoad(const Load &node, const Expr &self) override {
      Expr mutated = IRMutator::visitLoad(node, self);
      const auto &load = *mutated->as<Load>();
      if (load.buffer != from_)
        return mutated;
      return std::make_shared<Load>(to_, indices(load.indices), load.source, load.speculative);
    }
    Stmt visitStore(const Store &node, const Stmt &self) override {
      Stmt mutated = IRMutator::visitStore(node, self);
      const auto &store = *mutated->as<Store>();
      if (store.buffer != from_)
        return mutated;
      return std::make_shared<Store>(to_, indices(store.indices), store.value, store.source,
                                     store.reduction);
    }
    Stmt visitAtomicUpdate(const AtomicUpdate &node, const Stmt &self) override {
      Stmt mutated = IRMutator::visitAtomicUpdate(node, self);
      const auto &update = *mutated->as<AtomicUpdate>();
      if (update.buffer != from_)
        return mutated;
      return std::make_shared<AtomicUpdate>(to_, indices(update.indices), update.op, update.value,
                                            update.source);
    }

  private:
    std::vector<Expr> indices(const std::vector<Expr> &original) const {
      return reindex_ ? reindex_(original) : original;
    }
    const Buffer &from_;
    const Buffer &to_;
    const std::function<std::vector<Expr>(std::vector<Expr>)> &reindex_;
  };
  return Retarget(from, to, reindex).mutate(stmt);
}

Stmt renameBindings(const Stmt &stmt, const std::string &suffix) {
  // Names are unique within a function, so one flat map per kind serves
  // every scope.
  class Renamer : public IRMutator {
  public:
    explicit Renamer(const std::string &suffix) : suffix_(suffix) {}

  protected:
    Expr visitVar(const Var &node, const Expr &self) override {
      auto renamed = names_.find(node.name);
      return renamed == names_.end() ? self : makeVar(node.type, renamed->second);
    }
    Expr visitLoad(const Load &node, const Expr &self) override {
      Expr mutated = IRMutator::visitLoad(node, self);
      const auto &load = *mutated->as<Load>();
      return std::make_shared<Load>(buffer(load.buffer), load.indices, load.source,
                                    load.speculative);
    }
    Stmt visitFor(const For &node, const Stmt &) override {
      Expr min = mutate(node.min), extent = mutate(node.extent);
      std::string var = bind(node.var);
      return std::make_shared<For>(var, std::move(min), std::move(extent), node.forKind,
                                   node.gpuDim, mutate(node.body), node.source);
    }
    Stmt visitLetStmt(const LetStmt &node, const Stmt &) override {
      Expr value = mutate(node.value);
      std::string var = bind(node.var);
      return std::make_shared<LetStmt>(var, std::move(value), mutate(node.body));
    }
    Stmt visitAllocate(const Allocate &node, const Stmt &) override {
      auto copy = std::make_shared<BufferInfo>(*node.buffer);
      copy->name += suffix_;
      copy->programName = node.buffer->nameInMessages();
      for (Expr &extent : copy->shape)
        extent = mutate(extent);
      buffers_[node.buffer.get()] = copy;
      return std::make_shared<Allocate>(copy, mutate(node.body));
    }
    Stmt visitStore(const Store &node, const Stmt &self) override {
      Stmt mutated = IRMutator::visitStore(node, self);
      const auto &store = *mutated->as<Store>();
      return std::make_shared<Store>(buffer(store.buffer), store.indices, store.value, store.source,
                                     store.reduction);
    }
    Stmt visitAtomicUpdate(const AtomicUpdate &node, const Stmt &self) override {
      Stmt mutated = IRMutator::visitAtomicUpdate(node, self);
      const auto &update = *mutated->as<AtomicUpdate>();
      return std::make_shared<AtomicUpdate>(buffer(update.buffer), update.indices, update.op,
                                            update.value, update.source);
    }
    Stmt visitWarpShuffle(const WarpShuffle &node, const Stmt &) override {
      return std::make_shared<WarpShuffle>(buffer(node.target), mutate(node.value), node.laneMask);
    }
    Stmt visitAsyncCopy(const AsyncCopy &node, const Stmt &self) override {
      Stmt mutated = IRMutator::visitAsyncCopy(node, self);
      const auto &copy = *mutated->as<AsyncCopy>();
      return std::make_shared<AsyncCopy>(buffer(copy.target), copy.targetIndices,
                                         buffer(copy.source), copy.sourceIndices, copy.elements,
                                         copy.valid);
    }
    // A user operator's combine is closed over its operands: left as is.
    Stmt visitReduce(const Reduce &node, const Stmt &) override {
      std::vector<Expr> indices;
      mutateAll(node.indices, indices);
      std::vector<Reduce::Loop> loops;
      for (const Reduce::Loop &loop : node.loops) {
        Expr min = mutate(loop.min), extent = mutate(loop.extent);
        loops.push_back({bind(loop.var), std::move(min), std::move(extent)});
      }
      Stmt valueSetup = mutate(node.valueSetup);
      return std::make_shared<Reduce>(buffer(node.accumulator), std::move(indices), node.op,
                                      mutate(node.neutral), std::move(loops), std::move(valueSetup),
                                      mutate(node.value), node.source);
    }
    Stmt visitScan(const Scan &node, const Stmt &) override {
      std::vector<Expr> indices;
      mutateAll(node.indices, indices);
      Expr min = mutate(node.loop.min), extent = mutate(node.loop.extent);
      Reduce::Loop loop{bind(node.loop.var), std::move(min), std::move(extent)};
      Stmt valueSetup = mutate(node.valueSetup);
      return std::make_shared<Scan>(buffer(node.target), std::move(indices), node.op,
                                    mutate(node.neutral), std::move(loop), std::move(valueSetup),
                                    mutate(node.value), node.source);
    }

  private:
    std::string bind(const std::string &name) { return names_[name] = name + suffix_; }
    Buffer buffer(const Buffer &original) const {
      auto renamed = buffers_.find(original.get());
      return renamed == buffers_.end() ? original : renamed->second;
    }
    const std::string &suffix_;
    std::map<std::string, std::string> names_;
    std::map<const BufferInfo *, Buffer> buffers_;
  };
  return Renamer(suffix).mutate(stmt);
}

size_t codeSize(const Stmt &stmt) {
  // The size of a math routine inlined (libdevice's sinf with its slow
  // path is a few hundred instructions; expf a few tens), as IR nodes.
  const size_t kMathRoutineSize = 50;
  class Counter : public IRVisitor {
  public:
    size_t count = 0;

  protected:
    void visitLoad(const Load &node) override {
      ++count;
      IRVisitor::visitLoad(node);
    }
    void visitBinary(const Binary &node) override {
      ++count;
      IRVisitor::visitBinary(node);
    }
    void visitCall(const Call &node) override {
      count += node.isMathRoutine() ? kMathRoutineSize : 1;
      IRVisitor::visitCall(node);
    }
    void visitStore(const Store &node) override {
      ++count;
      IRVisitor::visitStore(node);
    }
    void visitAtomicUpdate(const AtomicUpdate &node) override {
      ++count;
      IRVisitor::visitAtomicUpdate(node);
    }
  } counter;
  counter.visit(stmt);
  return counter.count;
}

Stmt LetTrackingMutator::visitLetStmt(const LetStmt &node, const Stmt &self) {
  lets_[node.var] = node.value;
  Stmt mutated = IRMutator::visitLetStmt(node, self);
  lets_.erase(node.var);
  return mutated;
}

Expr LetTrackingMutator::resolved(const Expr &expr) const { return substituteLets(expr, lets_); }

std::vector<const Load *> loadsIn(const Expr &expr) {
  class Collector : public IRVisitor {
  public:
    std::vector<const Load *> loads;

  protected:
    void visitLoad(const Load &node) override {
      loads.push_back(&node);
      IRVisitor::visitLoad(node);
    }
  } collector;
  collector.visit(expr);
  return collector.loads;
}

std::map<const For *, std::string> loopKeys(const Stmt &stmt) {
  class Namer : public IRVisitor {
  public:
    std::map<const For *, std::string> keys;

  protected:
    void visitFor(const For &node) override {
      keys.emplace(&node, node.var + "#" + std::to_string(keys.size()));
      IRVisitor::visitFor(node);
    }
  } namer;
  namer.visit(stmt);
  return namer.keys;
}

bool readsStoredElement(const Store &store) {
  return std::ranges::any_of(loadsIn(store.value), [&](const Load *load) {
    return load->buffer == store.buffer &&
           std::ranges::equal(load->indices, store.indices, sameExpr);
  });
}

bool synchronizes(const Stmt &stmt) {
  class Finder : public IRVisitor {
  public:
    bool found = false;

  protected:
    bool finished() const override { return found; }
    void visitBarrier(const Barrier &) override { found = true; }
    void visitLaunch(const Launch &) override { found = true; }
    void visitReduce(const Reduce &) override { found = true; }
    void visitScan(const Scan &) override { found = true; }
    void visitAtomicUpdate(const AtomicUpdate &) override { found = true; }
    void visitWarpShuffle(const WarpShuffle &) override { found = true; }
    void visitAsyncCopy(const AsyncCopy &) override { found = true; }
  } finder;
  finder.visit(stmt);
  return finder.found;
}

bool containsLoopOf(const Stmt &stmt, ForKind kind) {
  class Finder : public IRVisitor {
  public:
    explicit Finder(ForKind kind) : kind_(kind) {}
    bool found = false;

  protected:
    void visitFor(const For &loop) override {
      found |= loop.forKind == kind_;
      IRVisitor::visitFor(loop);
    }

  private:
    ForKind kind_;
  } finder(kind);
  finder.visit(stmt);
  return finder.found;
}

const StmtNode *skipSingletonBlocks(const Stmt &stmt) {
  const StmtNode *node = stmt.get();
  while (node && node->kind == StmtNode::Kind::Block && node->as<Block>()->stmts.size() == 1)
    node = node->as<Block>()->stmts.front().get();
  return node;
}

std::vector<const For *> parallelChain(const For &top) {
  std::vector<const For *> chain{&top};
  while (const auto *inner = chain.back()->body->as<For>()) {
    if (inner->forKind != ForKind::Parallel)
      break;
    chain.push_back(inner);
  }
  return chain;
}

bool sameExpr(const Expr &a, const Expr &b) {
  if (a == b)
    return true;
  if (!a || !b || a->kind != b->kind || a->type != b->type)
    return false;
  auto sameAll = [](const std::vector<Expr> &x, const std::vector<Expr> &y) {
    return std::ranges::equal(x, y, [](const Expr &l, const Expr &r) { return sameExpr(l, r); });
  };
  switch (a->kind) {
  case ExprNode::Kind::IntImm:
    return a->as<IntImm>()->value == b->as<IntImm>()->value;
  case ExprNode::Kind::FloatImm:
    return a->as<FloatImm>()->value == b->as<FloatImm>()->value;
  case ExprNode::Kind::BoolImm:
    return a->as<BoolImm>()->value == b->as<BoolImm>()->value;
  case ExprNode::Kind::Var:
    return a->as<Var>()->name == b->as<Var>()->name;
  case ExprNode::Kind::Load:
    return a->as<Load>()->buffer == b->as<Load>()->buffer &&
           sameAll(a->as<Load>()->indices, b->as<Load>()->indices);
  case ExprNode::Kind::Unary:
    return a->as<Unary>()->op == b->as<Unary>()->op &&
           sameExpr(a->as<Unary>()->operand, b->as<Unary>()->operand);
  case ExprNode::Kind::Binary: {
    const auto &x = *a->as<Binary>(), &y = *b->as<Binary>();
    return x.op == y.op && sameExpr(x.lhs, y.lhs) && sameExpr(x.rhs, y.rhs);
  }
  case ExprNode::Kind::Select: {
    const auto &x = *a->as<Select>(), &y = *b->as<Select>();
    return sameExpr(x.cond, y.cond) && sameExpr(x.thenValue, y.thenValue) &&
           sameExpr(x.elseValue, y.elseValue);
  }
  case ExprNode::Kind::Cast:
    return sameExpr(a->as<Cast>()->operand, b->as<Cast>()->operand);
  case ExprNode::Kind::Call:
    return a->as<Call>()->builtin == b->as<Call>()->builtin &&
           sameAll(a->as<Call>()->args, b->as<Call>()->args);
  }
  return false;
}

namespace {

class SerializeParallel : public IRMutator {
protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    Stmt result = IRMutator::visitFor(node, self);
    const auto *loop = result->as<For>();
    if (loop->forKind != ForKind::Parallel)
      return result;
    return std::make_shared<For>(loop->var, loop->min, loop->extent, ForKind::Serial, 0, loop->body,
                                 loop->source);
  }
};

} // namespace

Stmt serializeParallelLoops(const Stmt &stmt) { return SerializeParallel().mutate(stmt); }

Stmt appendAtTail(const Stmt &setup, const Stmt &tail) {
  if (!setup)
    return tail;
  if (const auto *let = setup->as<LetStmt>())
    return std::make_shared<LetStmt>(let->var, let->value, appendAtTail(let->body, tail));
  if (const auto *allocate = setup->as<Allocate>())
    return std::make_shared<Allocate>(allocate->buffer, appendAtTail(allocate->body, tail));
  if (const auto *block = setup->as<Block>()) {
    if (block->stmts.empty())
      return tail;
    std::vector<Stmt> stmts = block->stmts;
    Stmt last = stmts.back();
    stmts.pop_back();
    stmts.push_back(appendAtTail(last, tail));
    return makeBlock(std::move(stmts));
  }
  return makeBlock({setup, tail});
}

} // namespace loopc::ir
