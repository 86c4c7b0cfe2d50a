// Affine forms of array indices and the strides derived from them (see
// AccessAnalysis.h). Everything that is not affine in a loop variable is kept
// as "depends on it somehow", never guessed, so a pass that asks for a
// contiguous access gets a yes only when it is one.
#include "passes/analysis/AccessAnalysis.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"

#include <algorithm>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

const IntImm *constantOf(const Expr &rest) { return rest ? rest->as<IntImm>() : nullptr; }

// `a + scale * b` on remainders, folding constants so that a purely
// constant remainder stays one IntImm.
Expr addRest(const Expr &a, const Expr &b, int64_t scale) {
  const IntImm *constantB = constantOf(b);
  if (!b || scale == 0 || (constantB && constantB->value == 0))
    return a;
  const IntImm *constantA = constantOf(a);
  if (constantB && (!a || constantA)) {
    int64_t sum = (constantA ? constantA->value : 0) + scale * constantB->value;
    return sum == 0 ? nullptr : makeI64(sum);
  }
  if (constantA && constantA->value == 0)
    return addRest(nullptr, b, scale);
  if (constantB) { // `a + k` or `a - k`
    int64_t value = scale * constantB->value;
    return makeBinary(value < 0 ? BinaryOpKind::Sub : BinaryOpKind::Add, a,
                      makeI64(value < 0 ? -value : value));
  }
  Expr scaled = scale == 1 || scale == -1 ? b : mul(makeI64(scale), b);
  if (!a)
    return scale == -1 ? std::make_shared<Unary>(UnaryOpKind::Neg, scaled) : scaled;
  return makeBinary(scale == -1 ? BinaryOpKind::Sub : BinaryOpKind::Add, a, scaled);
}

// `a + scale * b` on whole forms.
AffineIndex combine(AffineIndex a, const AffineIndex &b, int64_t scale) {
  for (const auto &[var, coefficient] : b.coefficients) {
    int64_t sum = a.coefficient(var) + scale * coefficient;
    if (sum == 0)
      a.coefficients.erase(var);
    else
      a.coefficients[var] = sum;
  }
  a.rest = addRest(a.rest, b.rest, scale);
  a.nonAffineVars.insert(b.nonAffineVars.begin(), b.nonAffineVars.end());
  return a;
}

bool isInvariant(const AffineIndex &form) {
  return form.coefficients.empty() && form.nonAffineVars.empty();
}

// Every loop variable the form depends on, affinely or not.
std::set<std::string> dependencies(const AffineIndex &form) {
  std::set<std::string> vars = form.nonAffineVars;
  for (const auto &entry : form.coefficients)
    vars.insert(entry.first);
  return vars;
}

} // namespace

int64_t AffineIndex::coefficient(const std::string &loopVar) const {
  auto found = coefficients.find(loopVar);
  return found == coefficients.end() ? 0 : found->second;
}

bool AffineIndex::dependsOn(const std::string &loopVar) const {
  return coefficients.contains(loopVar) || nonAffineVars.contains(loopVar);
}

void AffineScope::bindLoop(const std::string &var) { loopVars_.insert(var); }

void AffineScope::bindLet(const std::string &var, const Expr &value) {
  AffineIndex form = analyze(value);
  // An invariant let stays a name: its remainder is the variable itself,
  // which is in scope wherever the let is.
  if (!isInvariant(form))
    lets_[var] = std::move(form);
}

void AffineScope::unbind(const std::string &var) {
  loopVars_.erase(var);
  lets_.erase(var);
}

AffineIndex AffineScope::analyze(const Expr &index) const {
  // The expression as an opaque atom: invariant when none of its parts
  // depends on a loop, else non-affine in the loops its parts depend on.
  auto opaqueOver = [&](const std::vector<AffineIndex> &parts) {
    AffineIndex form;
    for (const AffineIndex &part : parts) {
      std::set<std::string> vars = dependencies(part);
      form.nonAffineVars.insert(vars.begin(), vars.end());
    }
    if (form.nonAffineVars.empty())
      form.rest = toI64(index);
    return form;
  };
  auto opaque = [&](const std::vector<Expr> &parts) {
    std::vector<AffineIndex> forms;
    for (const Expr &part : parts)
      forms.push_back(analyze(part));
    return opaqueOver(forms);
  };
  switch (index->kind) {
  case ExprNode::Kind::IntImm: {
    AffineIndex form;
    form.rest = addRest(nullptr, makeI64(index->as<IntImm>()->value), 1);
    return form;
  }
  case ExprNode::Kind::Var: {
    const std::string &name = index->as<Var>()->name;
    AffineIndex form;
    if (loopVars_.contains(name))
      form.coefficients[name] = 1;
    else if (auto let = lets_.find(name); let != lets_.end())
      form = let->second;
    else
      form.rest = toI64(index);
    return form;
  }
  case ExprNode::Kind::Load: {
    // The element read may change in any loop around it (the loop may write
    // the buffer), so a loaded index depends on all of them.
    AffineIndex form;
    form.nonAffineVars = loopVars_;
    if (form.nonAffineVars.empty())
      form.rest = toI64(index);
    return form;
  }
  case ExprNode::Kind::Cast: {
    const auto &cast = *index->as<Cast>();
    // Integer widening and narrowing keep the form (indices do not wrap).
    if (isInteger(cast.type) && isInteger(cast.operand->type))
      return analyze(cast.operand);
    return opaque({cast.operand});
  }
  case ExprNode::Kind::Unary: {
    const auto &unary = *index->as<Unary>();
    if (unary.op == UnaryOpKind::Neg)
      return combine({}, analyze(unary.operand), -1);
    return opaque({unary.operand});
  }
  case ExprNode::Kind::Binary: {
    const auto &binary = *index->as<Binary>();
    switch (binary.op) {
    case BinaryOpKind::Add:
      return combine(analyze(binary.lhs), analyze(binary.rhs), 1);
    case BinaryOpKind::Sub:
      return combine(analyze(binary.lhs), analyze(binary.rhs), -1);
    case BinaryOpKind::Mul: {
      AffineIndex lhs = analyze(binary.lhs);
      AffineIndex rhs = analyze(binary.rhs);
      if (isInvariant(lhs) == isInvariant(rhs))
        return opaqueOver({lhs, rhs});
      // Integer coefficients only: a constant factor scales the other side;
      // a symbolic one (`i * N`) is not affine.
      const AffineIndex &factor = isInvariant(lhs) ? lhs : rhs;
      const AffineIndex &scaled = isInvariant(lhs) ? rhs : lhs;
      if (!factor.rest)
        return {};
      if (const IntImm *constant = constantOf(factor.rest))
        return combine({}, scaled, constant->value);
      return opaqueOver({lhs, rhs});
    }
    default:
      return opaque({binary.lhs, binary.rhs});
    }
  }
  case ExprNode::Kind::Select: {
    const auto &select = *index->as<Select>();
    return opaque({select.cond, select.thenValue, select.elseValue});
  }
  case ExprNode::Kind::Call:
    return opaque(index->as<Call>()->args);
  case ExprNode::Kind::FloatImm:
  case ExprNode::Kind::BoolImm:
    return opaque({});
  }
  return opaque({});
}

namespace {

class AccessCollector : public IRVisitor {
public:
  std::vector<BufferAccess> accesses;

protected:
  void visitLoad(const Load &node) override {
    IRVisitor::visitLoad(node);
    record(node.buffer, false, node.indices, node.source);
    accesses.back().load = &node;
  }

  void visitStore(const Store &node) override {
    IRVisitor::visitStore(node);
    record(node.buffer, true, node.indices, node.source);
  }

  // Recorded as a store: its read of the element is part of the one
  // indivisible step.
  void visitAtomicUpdate(const AtomicUpdate &node) override {
    IRVisitor::visitAtomicUpdate(node);
    record(node.buffer, true, node.indices, node.source);
  }

  void visitFor(const For &node) override {
    visit(node.min);
    visit(node.extent);
    enterLoop(node.var);
    visit(node.body);
    leaveLoop(node.var);
  }

  void visitLetStmt(const LetStmt &node) override {
    visit(node.value);
    scope_.bindLet(node.var, node.value);
    visit(node.body);
    scope_.unbind(node.var);
  }

  void visitReduce(const Reduce &node) override {
    for (const Expr &index : node.indices)
      visit(index);
    for (const Reduce::Loop &loop : node.loops) {
      visit(loop.min);
      visit(loop.extent);
      enterLoop(loop.var);
    }
    visit(node.valueSetup);
    visit(node.value);
    for (auto loop = node.loops.rbegin(); loop != node.loops.rend(); ++loop)
      leaveLoop(loop->var);
    record(node.accumulator, true, node.indices, node.source);
  }

private:
  void enterLoop(const std::string &var) {
    scope_.bindLoop(var);
    loops_.push_back(var);
  }

  void leaveLoop(const std::string &var) {
    scope_.unbind(var);
    loops_.pop_back();
  }

  void record(const Buffer &buffer, bool isStore, const std::vector<Expr> &indices,
              SourceRange source) {
    BufferAccess access{buffer, isStore, {}, loops_, source};
    for (const Expr &index : indices)
      access.indices.push_back(scope_.analyze(index));
    accesses.push_back(std::move(access));
  }

  AffineScope scope_;
  std::vector<std::string> loops_;
};

} // namespace

std::vector<BufferAccess> collectAccesses(const Stmt &stmt) {
  AccessCollector collector;
  collector.visit(stmt);
  return std::move(collector.accesses);
}

Stride strideAlong(const BufferAccess &access, const std::string &loopVar) {
  Stride stride;
  for (const AffineIndex &index : access.indices)
    if (index.nonAffineVars.contains(loopVar)) {
      stride.kind = Stride::Kind::Unknown;
      return stride;
    }
  // Innermost dimension first, carrying the product of the extents inside
  // the current one: a constant while they are constants, then an
  // expression of the sizes.
  int64_t constantTotal = 0;
  Expr symbolicTotal;
  int64_t innerConstant = 1;
  Expr innerSymbolic; // null while the inner extents are all constants
  const std::vector<Expr> &shape = access.buffer->shape;
  for (size_t d = access.indices.size(); d-- > 0;) {
    int64_t coefficient = access.indices[d].coefficient(loopVar);
    if (coefficient != 0) {
      if (!innerSymbolic)
        constantTotal += coefficient * innerConstant;
      else
        symbolicTotal =
            addRest(symbolicTotal,
                    innerConstant == 1 ? innerSymbolic : mul(makeI64(innerConstant), innerSymbolic),
                    coefficient);
    }
    if (d >= shape.size())
      continue;
    if (const auto *extent = shape[d]->as<IntImm>())
      innerConstant *= extent->value;
    else
      innerSymbolic = innerSymbolic ? mul(innerSymbolic, toI64(shape[d])) : toI64(shape[d]);
  }
  if (symbolicTotal) {
    stride.kind = Stride::Kind::Symbolic;
    stride.symbolic = addRest(symbolicTotal, makeI64(constantTotal), 1);
    return stride;
  }
  stride.constant = constantTotal;
  stride.kind = constantTotal == 0   ? Stride::Kind::Zero
                : constantTotal == 1 ? Stride::Kind::Contiguous
                                     : Stride::Kind::Constant;
  return stride;
}

std::string Stride::str() const {
  switch (kind) {
  case Kind::Zero:
  case Kind::Contiguous:
  case Kind::Constant:
    return std::to_string(constant);
  case Kind::Symbolic:
    return toString(symbolic);
  case Kind::Unknown:
    return "unknown";
  }
  return "?";
}

bool gathersAcrossThreads(const std::vector<BufferAccess> &accesses, const std::string &loopVar,
                          const std::string &threadVar) {
  using Kind = Stride::Kind;
  for (const BufferAccess &access : accesses) {
    if (std::ranges::find(access.enclosingLoops, loopVar) == access.enclosingLoops.end())
      continue;
    if (strideAlong(access, loopVar).kind != Kind::Contiguous)
      continue;
    // A register buffer has one copy per thread, a whole buffer apart.
    if (access.buffer->memory == ir::MemorySpace::Register)
      return true;
    Kind acrossThreads = strideAlong(access, threadVar).kind;
    if (acrossThreads != Kind::Zero && acrossThreads != Kind::Contiguous)
      return true;
  }
  return false;
}

bool provenNotPositive(const ir::Expr &difference) {
  AffineScope scope;
  for (const std::string &var : ir::freeVars(difference))
    scope.bindLoop(var);
  AffineIndex form = scope.analyze(difference);
  const auto *constant = form.rest ? form.rest->as<ir::IntImm>() : nullptr;
  return form.isAffine() && form.coefficients.empty() && (!form.rest || constant) &&
         (!constant || constant->value <= 0);
}

namespace {

// `expr` with each variable of `ranges` replaced, innermost first, by the
// end of its range that makes it largest (`largest`) or smallest; null when
// it is not affine in one of them.
ir::Expr extremeOver(ir::Expr expr, const std::vector<LoopRange> &ranges, bool largest) {
  for (const LoopRange &range : ranges) {
    AffineScope scope;
    scope.bindLoop(range.var);
    AffineIndex form = scope.analyze(expr);
    if (!form.isAffine())
      return nullptr;
    int64_t coefficient = form.coefficient(range.var);
    if (coefficient == 0)
      continue;
    ir::Expr first = ir::toI64(range.min);
    ir::Expr last = ir::sub(ir::add(first, ir::toI64(range.extent)), ir::makeI64(1));
    expr = ir::substitute(expr, {{range.var, (coefficient > 0) == largest ? last : first}});
  }
  return expr;
}

} // namespace

bool provenAtLeast(const ir::Expr &value, int64_t least, const std::vector<LoopRange> &ranges) {
  ir::Expr smallest = extremeOver(ir::toI64(value), ranges, false);
  return smallest && provenNotPositive(ir::sub(ir::makeI64(least), smallest));
}

bool provenAtMost(const ir::Expr &value, int64_t most, const std::vector<LoopRange> &ranges) {
  ir::Expr largest = extremeOver(ir::toI64(value), ranges, true);
  return largest && provenNotPositive(ir::sub(largest, ir::makeI64(most)));
}

bool provenNonZero(const ir::Expr &difference, const std::vector<LoopRange> &ranges) {
  return provenAtMost(difference, -1, ranges) || provenAtLeast(difference, 1, ranges);
}

bool provenApart(const std::vector<ir::Expr> &indices, const std::vector<ir::Expr> &others,
                 const std::vector<LoopRange> &ranges) {
  for (size_t d = 0; d < indices.size() && d < others.size(); ++d)
    if (provenNonZero(ir::sub(ir::toI64(indices[d]), ir::toI64(others[d])), ranges))
      return true;
  return false;
}

} // namespace loopc::passes
